"""Build rankfast's Cython kernels (pyx/*.pyx) into the rankfast package.

Set RANKFAST_DEBUG=1 to compile with bounds checking and wraparound on,
for a debug test run; RANKFAST_ONLY=_name[,_name] builds just those kernels
(handy while one of them is being written).  The kernels run their queries on
several threads through OpenMP when the compiler accepts -fopenmp (tried on a
tiny program first); RANKFAST_OPENMP=0 builds them without it (one thread, the
same results).
"""
import glob
import os
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("RANKFAST_DEBUG", "") not in ("", "0")
ONLY = [name for name in os.environ.get("RANKFAST_ONLY", "").split(",") if name]

if not glob.glob(os.path.join("pyx", "*.pyx")):
    # Without its kernels the package imports nothing useful: never build it empty.
    raise SystemExit(f"setup.py: no Cython kernel sources (pyx/*.pyx) under {os.getcwd()}; "
                     f"build rankfast from a full checkout or an sdist that contains pyx/")

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

OPENMP_PROBE = """#include <omp.h>
int main(void) { int n = 0;
#pragma omp parallel reduction(+:n)
n += 1;
return n > 0 && omp_get_max_threads() > 0 ? 0 : 1; }
"""


def openmp_flags():
    """["-fopenmp"] when the C compiler builds and links an OpenMP program, else [].

    RANKFAST_OPENMP=0 forces [] (the serial build, for testing that path).
    """
    if os.environ.get("RANKFAST_OPENMP", "") == "0":
        return []
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.c")
        with open(source, "w") as stream:
            stream.write(OPENMP_PROBE)
        try:
            built = subprocess.run(compiler + ["-fopenmp", source, "-o", os.path.join(tmp, "probe")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        except OSError:
            built = False
    if not built:
        print("rankfast: the C compiler does not accept -fopenmp; building single-threaded kernels",
              file=sys.stderr)
    return ["-fopenmp"] if built else []


OPENMP = openmp_flags()

extensions = [
    Extension(
        "rankfast." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=(["-O3"] if not DEBUG else ["-O0", "-g"]) + OPENMP,
        extra_link_args=OPENMP,
    )
    for path in sorted(glob.glob(os.path.join("pyx", "*.pyx")))
    if not ONLY or os.path.splitext(os.path.basename(path))[0] in ONLY
]

setup(
    ext_modules=cythonize(extensions, include_path=["pyx"],
                          compiler_directives=DIRECTIVES),
)
