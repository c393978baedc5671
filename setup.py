"""Build rankfast's Cython kernels (pyx/*.pyx) into the rankfast package.

Set RANKFAST_DEBUG=1 to compile with bounds checking and wraparound on and with
debug symbols (-O0 -g), for a debug test run; without it the modules are built
at -O2 and linked stripped (-g0 -s). RANKFAST_ONLY=_name[,_name] builds just those
kernels (handy while one of them is being written). The kernels run their
queries on several threads through OpenMP when the compiler accepts -fopenmp
(tried on a tiny program first); RANKFAST_OPENMP=0 builds them without it (one
thread, the same results). RANKFAST_JOBS=N runs N compilers at once (default:
every core this process may use).

Build time (issue 22): the memoryview code that Cython would paste into every
kernel (about half of each generated C file) is generated once, into
rankfast._cyutility (Cython >= 3.1's shared utility module); Cython and the C
compiler run in parallel. An in-place or editable build (pip install -e) keeps
a kernel module that is already in rankfast/ when it was built from the same C
file with the same compiler, flags, Python and NumPy (a stamp under build/ says
so), so a second `pip install -e` does not compile again what the first built.
"""
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("RANKFAST_DEBUG", "") not in ("", "0")
ONLY = [name for name in os.environ.get("RANKFAST_ONLY", "").split(",") if name]
JOBS = int(os.environ.get("RANKFAST_JOBS") or 0) or len(os.sched_getaffinity(0))
SHARED = "rankfast._cyutility"      # Cython's memoryview utility code, shared by every kernel

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
# Python's own CFLAGS carry -g (and -O3); the later flags win. -O2: see benchmarks/README.md,
# "Build flags": -O3 bought nothing measurable for these kernels and costs compile time.
COMPILE = (["-O0", "-g"] if DEBUG else ["-O2", "-g0"]) + OPENMP
LINK = OPENMP + ([] if DEBUG else ["-s"])


def kernel(path):
    return Extension(
        "rankfast." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=COMPILE,
        extra_link_args=LINK,
    )


extensions = [kernel(path) for path in sorted(glob.glob(os.path.join("pyx", "*.pyx")))
              if not ONLY or os.path.splitext(os.path.basename(path))[0] in ONLY]
# Cython writes the shared module's C file itself (pyx/_cyutility.c); it needs no NumPy.
extensions.append(Extension(SHARED, [os.path.join("pyx", "_cyutility.c")],
                            extra_compile_args=COMPILE, extra_link_args=LINK))


def _digest(*parts):
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part if isinstance(part, bytes) else repr(part).encode())
        sha.update(b"\0")
    return sha.hexdigest()


def _file_digest(path):
    with open(path, "rb") as stream:
        return _digest(stream.read())


class BuildExt(build_ext):
    """build_ext that compiles several modules at once and, in place, keeps what is current.

    The largest C files go first, so that the last compiler to finish started early.
    """

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = JOBS

    def run(self):
        # setuptools clears self.inplace while the modules are built (and copies them
        # into rankfast/ afterwards); remember whether that copy will happen.
        self.into_source = bool(self.inplace)
        self.extensions.sort(key=lambda ext: -os.path.getsize(ext.sources[0]))
        super().run()

    def _recipe(self, ext):
        """Everything the module's bits depend on, but the include paths' temporary names."""
        return _digest(_file_digest(ext.sources[0]), ext.extra_compile_args, ext.extra_link_args,
                       ext.define_macros, self.compiler.compiler_so, self.compiler.linker_so,
                       sysconfig.get_config_var("EXT_SUFFIX"), sys.version, numpy.__version__)

    def build_extension(self, ext):
        if not self.into_source:
            return super().build_extension(ext)
        inplace_file, built_file = self._get_inplace_equivalent(
            self.get_finalized_command("build_py"), ext)
        stamp = os.path.join("build", "inplace", ext.name + ".stamp")
        recipe = self._recipe(ext)
        try:
            with open(stamp) as stream:
                kept = stream.read().split() == [recipe, _file_digest(inplace_file)]
        except OSError:
            kept = False
        if kept:
            print(f"rankfast: {inplace_file} is current (built from the same C file and flags); "
                  f"not compiled again")
            os.makedirs(os.path.dirname(built_file), exist_ok=True)
            shutil.copyfile(inplace_file, built_file)
            return
        super().build_extension(ext)
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as stream:          # the module goes to inplace_file unchanged
            stream.write(f"{recipe} {_file_digest(built_file)}\n")


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=cythonize(extensions, include_path=["pyx"], compiler_directives=DIRECTIVES,
                          nthreads=JOBS if JOBS > 1 else 0,
                          shared_utility_qualified_name=SHARED),
)
