"""Build rankfast's Cython kernels (pyx/*.pyx) into rankfast._kernels.

RANKFAST_DEBUG=1: bounds checks and wraparound on, -O0 -g (a debug test run); otherwise -O3,
linked stripped. RANKFAST_OPENMP=0: no OpenMP (one thread, the same results); otherwise
-fopenmp when the compiler builds an OpenMP program. RANKFAST_ONLY=_a,_b: only those kernels.
A C file newer than its .pyx and the .pxi files, and an editable install's module newer than
its C file, are not made again: after changing RANKFAST_DEBUG or RANKFAST_OPENMP, run
`rm pyx/*.c rankfast/_kernels/*.so` first.
"""
import glob
import os
import sys
import tempfile

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, LinkError
from setuptools.modified import newer_group

DEBUG = os.environ.get("RANKFAST_DEBUG", "") not in ("", "0")
ONLY = [name for name in os.environ.get("RANKFAST_ONLY", "").split(",") if name]
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
# Cython >= 3.1 writes the memoryview code every kernel would carry (half of each C file, most
# of the compile time) once, into this module.
SHARED = "rankfast._kernels._cyutility"

DIRECTIVES = {"language_level": 3, "boundscheck": DEBUG, "wraparound": DEBUG,
              "initializedcheck": DEBUG, "cdivision": True, "embedsignature": True}
# -O3: load_svmlight took 0.13-0.16 s of CPU at -O3, 0.20-0.23 s at -O2 on a 60 MB file.
# -ffp-contract=off: no fused multiply-adds, even under -march=native in CFLAGS: scores
# round after each operation, as svm_rank_classify's do, to give its bits. No -ffast-math.
COMPILE_ARGS = (["-O0", "-g"] if DEBUG else ["-O3", "-g0"]) + ["-ffp-contract=off"]
LINK_ARGS = [] if DEBUG else ["-s"]
OPENMP_PROBE = """#include <omp.h>
int main(void) { int n = 0;
#pragma omp parallel reduction(+:n)
n += 1;
return n > 0 ? 0 : 1; }"""


def openmp_flags(compiler):
    """(compile, link) flags for OpenMP when `compiler` builds and links a program with them."""
    if os.environ.get("RANKFAST_OPENMP") == "0":
        return [], []
    # Apple's clang takes OpenMP only through its preprocessor, with Homebrew's libomp.
    flags = ((["-Xpreprocessor", "-fopenmp"], ["-lomp"]) if sys.platform == "darwin"
             else (["-fopenmp"], ["-fopenmp"]))
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "openmp_probe.c")
        with open(source, "w") as stream:
            stream.write(OPENMP_PROBE)
        try:
            objects = compiler.compile([source], output_dir=tmp, extra_postargs=flags[0])
            # LDFLAGS (e.g. libomp's -L on macOS): the modules' link has them, a program's not.
            compiler.link_executable(objects, os.path.join(tmp, "probe"), extra_postargs=flags[1],
                                     extra_preargs=os.environ.get("LDFLAGS", "").split())
        except (CompileError, LinkError):
            print("rankfast: the C compiler builds no OpenMP program; single-threaded kernels",
                  file=sys.stderr)
            return [], []
    return flags


class BuildExt(build_ext):
    def build_extensions(self):
        compile_args, link_args = openmp_flags(self.compiler)
        for ext in self.extensions:
            ext.extra_compile_args = ext.extra_compile_args + compile_args
            ext.extra_link_args = ext.extra_link_args + link_args
        super().build_extensions()

    def build_extension(self, ext):
        # pip install -e builds in a new temporary folder each time: a module already in
        # rankfast/_kernels/ and newer than its C file is taken as it is, not compiled again.
        in_place = self.get_ext_filename(ext.name)       # rankfast/ is beside setup.py
        built = self.get_ext_fullpath(ext.name)
        if self.force or not self.editable_mode or newer_group(ext.sources + ext.depends, in_place):
            return super().build_extension(ext)
        print(f"rankfast: {in_place} is newer than its sources; not compiled again")
        self.mkpath(os.path.dirname(built))
        self.copy_file(in_place, built)


def source(pyx):
    """The C file generated from pyx when newer than pyx and the .pxi files, else pyx (cythonize
    would also weigh Cython's and scipy's .pxd files, which pip installs anew every build)."""
    c_file = pyx[:-4] + ".c"
    return pyx if newer_group([pyx, *glob.glob(os.path.join("pyx", "*.pxi"))], c_file) else c_file


kernels = sorted(glob.glob(os.path.join("pyx", "*.pyx")))
if not kernels:          # without its kernels the package imports nothing useful
    sys.exit(f"setup.py: no Cython kernel sources (pyx/*.pyx) under {os.getcwd()}")
extensions = [Extension("rankfast._kernels." + os.path.basename(pyx)[:-4], [source(pyx)],
                        extra_compile_args=COMPILE_ARGS, extra_link_args=LINK_ARGS)
              for pyx in kernels if not ONLY or os.path.basename(pyx)[:-4] in ONLY]
extensions.append(Extension(SHARED, ["pyx/_cyutility.c"], extra_compile_args=COMPILE_ARGS,
                            extra_link_args=LINK_ARGS))

setup(
    ext_modules=cythonize(extensions, include_path=["pyx"], compiler_directives=DIRECTIVES,
                          shared_utility_qualified_name=SHARED, nthreads=CORES),
    cmdclass={"build_ext": BuildExt},
    options={"build_ext": {"parallel": CORES}},
)
