"""Build rankfast's Cython kernels (pyx/*.pyx) into the rankfast package.

Set RANKFAST_DEBUG=1 to compile with bounds checking and wraparound on and with
debug symbols (-O0 -g), for a debug test run; without it the modules are built
at -O3 without debug symbols and linked stripped (-g0, -s). RANKFAST_ONLY=_name[,_name]
builds just those kernels (handy while one of them is being written). The kernels
run their queries on several threads through OpenMP when the compiler accepts
-fopenmp (tried on a tiny program first); RANKFAST_OPENMP=0 builds them without it
(one thread, the same results). RANKFAST_JOBS=N runs N compilers at once (default:
every core this process may use).

How the build is kept short (issue 22):
- the memoryview code that Cython would paste into every kernel (half of each
  generated C file, most of the compile time) is generated once, into the module
  rankfast._cyutility (Cython >= 3.1's shared utility module);
- Cython and the C compiler run on every core, the largest files first;
- each step leaves a stamp under build/stamps/: a C file generated from the same
  .pyx and .pxi files with the same directives is not generated again, and a module
  already in rankfast/ that was compiled from the same C file with the same compiler,
  flags and Python is not compiled again. When every C file is current, Cython
  (and scipy, whose .pxd files the kernels cimport) is not even installed:
  _build/backend.py asks pip for them only when build_requirements() says so. So the
  README's second command (`pip install -e ".[test]"`) compiles nothing that the
  first built.
No kernel cimports numpy (they take memoryviews), so NumPy is not needed to build.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("RANKFAST_DEBUG", "") not in ("", "0")
ONLY = [name for name in os.environ.get("RANKFAST_ONLY", "").split(",") if name]
JOBS = (int(os.environ.get("RANKFAST_JOBS") or 0)
        or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
SHARED = "rankfast._kernels._cyutility"      # Cython's memoryview utility code, shared by every kernel
SHARED_C = os.path.join("build", "cython", "_cyutility.c")   # under build/: never in the sdist
STAMPS = os.path.join("build", "stamps")
CYTHON_REQUIREMENTS = ["Cython>=3.1", "scipy>=1.8"]     # scipy: _rankrls cimports cython_blas/lapack

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


def kernel_sources():
    """pyx/*.pyx, or the RANKFAST_ONLY ones; never none."""
    paths = sorted(glob.glob(os.path.join("pyx", "*.pyx")))
    if not paths:
        # Without its kernels the package imports nothing useful: never build it empty.
        raise SystemExit(f"setup.py: no Cython kernel sources (pyx/*.pyx) under {os.getcwd()}; "
                         f"build rankfast from a full checkout or an sdist that contains pyx/")
    return [path for path in paths if not ONLY or _stem(path) in ONLY]


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def _digest(*parts):
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part if isinstance(part, bytes) else repr(part).encode())
        sha.update(b"\0")
    return sha.hexdigest()


def _file_digest(path):
    with open(path, "rb") as stream:
        return _digest(stream.read())


def _code_digest(path):
    """Digest of a generated C file without Cython's metadata block (it names the include
    directories, which pip's isolated build environment puts under a new temporary name)."""
    with open(path, "rb") as stream:
        code = stream.read()
    start, end = code.find(b"/* BEGIN: Cython Metadata"), code.find(b"END: Cython Metadata */")
    return _digest(code[:start] + code[end:] if 0 <= start < end else code)


def _stamp_path(name):
    return os.path.join(STAMPS, name + ".stamp")


def _stamp_matches(name, *fields):
    try:
        with open(_stamp_path(name)) as stream:
            return stream.read().split() == list(fields)
    except OSError:
        return False


def _write_stamp(name, *fields):
    os.makedirs(STAMPS, exist_ok=True)
    with open(_stamp_path(name), "w") as stream:
        stream.write(" ".join(fields) + "\n")


def _cython_recipe(pyx):
    """What a kernel's C file is generated from: its .pyx, every .pxi/.pxd beside it, the
    directives. (Not Cython's version: C files that one Cython generated stay valid.)"""
    included = sorted(glob.glob(os.path.join("pyx", "*.px[di]")))
    return _digest(DIRECTIVES, SHARED, [(path, _file_digest(path)) for path in [pyx] + included])


def c_files_are_current(pyx_files):
    """Whether every kernel's C file (and the shared module's) was generated from its sources as
    they are now, by one Cython: the stamps written after the last Cython run say so."""
    try:
        shared = _file_digest(SHARED_C)
        return all(_stamp_matches(_stem(pyx) + ".c", _cython_recipe(pyx),
                                  _file_digest(pyx[:-4] + ".c"), shared) for pyx in pyx_files)
    except OSError:
        return False


def build_requirements():
    """What the build needs besides setuptools (for _build/backend.py)."""
    return [] if c_files_are_current(kernel_sources()) else CYTHON_REQUIREMENTS


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


def kernel_extension(pyx):
    """The module built from pyx, named by its .pyx file (so that the sdist carries that, not
    the C file); BuildExt compiles the C file generated from it. The source is set after the
    constructor, which, when Cython is not installed, would name the C file instead."""
    ext = Extension("rankfast._kernels." + _stem(pyx), [])
    ext.sources = [pyx]
    return ext


class BuildExt(build_ext):
    """Generates the C files when they are not current, then compiles several modules at once,
    the largest C files first (the last compiler to finish started early). Built in place
    (setup.py build_ext --inplace, pip install -e), a module already in rankfast/ that its
    stamp shows was compiled from the same C file and flags is kept as it is."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = JOBS

    def run(self):
        # setuptools clears self.inplace while the modules are built (and copies them
        # into rankfast/ afterwards); remember whether that copy will happen.
        self.into_source = bool(self.inplace)
        pyx_files = kernel_sources()
        if not c_files_are_current(pyx_files):
            self.generate_c(pyx_files)
        openmp = openmp_flags()
        # Python's own CFLAGS carry -g and -O3; these come later and win. -O3, not -O2: at
        # -O2 load_svmlight took 0.20-0.23 s of CPU instead of 0.13-0.16 s on a 60 MB file
        # (issue 22), for 3 s less of compiling in all.
        # -ffp-contract=off: no fused multiply-adds, even where CFLAGS ask for a CPU that has
        # them (-march=native); scores and dot products must round after each operation, as
        # svm_rank_classify's do, to give its bits.
        compile_args = (["-O0", "-g"] if DEBUG else ["-O3", "-g0"]) + ["-ffp-contract=off"] + openmp
        link_args = openmp + ([] if DEBUG else ["-s"])
        for ext in self.extensions:
            ext.sources = ([SHARED_C] if ext.name == SHARED else
                           [re.sub(r"\.pyx$", ".c", source) for source in ext.sources])
            ext.extra_compile_args, ext.extra_link_args = compile_args, link_args
        self.extensions.sort(key=lambda ext: -os.path.getsize(ext.sources[0]))
        super().run()

    def generate_c(self, pyx_files):
        from Cython.Build import cythonize

        os.makedirs(os.path.dirname(SHARED_C), exist_ok=True)
        cythonize([Extension("rankfast._kernels." + _stem(pyx), [pyx]) for pyx in pyx_files]
                  + [Extension(SHARED, [SHARED_C])],
                  include_path=["pyx"], compiler_directives=DIRECTIVES,
                  nthreads=JOBS if JOBS > 1 else 0, force=True,
                  shared_utility_qualified_name=SHARED)
        shared = _file_digest(SHARED_C)
        for pyx in pyx_files:
            _write_stamp(_stem(pyx) + ".c", _cython_recipe(pyx), _file_digest(pyx[:-4] + ".c"),
                         shared)

    def _module_recipe(self, ext):
        """Everything a module's bits depend on, but the build directories' temporary names."""
        return _digest(_code_digest(ext.sources[0]), ext.extra_compile_args, ext.extra_link_args,
                       ext.define_macros, self.compiler.compiler_so, self.compiler.linker_so,
                       sysconfig.get_config_var("EXT_SUFFIX"), sys.version)

    def build_extension(self, ext):
        if not self.into_source:
            return super().build_extension(ext)
        inplace_file, built_file = self._get_inplace_equivalent(
            self.get_finalized_command("build_py"), ext)
        recipe = self._module_recipe(ext)
        if os.path.exists(inplace_file) and _stamp_matches(ext.name, recipe,
                                                          _file_digest(inplace_file)):
            print(f"rankfast: {inplace_file} is current (compiled from the same C file with the "
                  f"same flags); not compiled again")
            os.makedirs(os.path.dirname(built_file), exist_ok=True)
            shutil.copyfile(inplace_file, built_file)      # setuptools copies it back in place
            return
        super().build_extension(ext)
        _write_stamp(ext.name, recipe, _file_digest(built_file))


if __name__ == "__main__":
    setup(
        cmdclass={"build_ext": BuildExt},
        # The shared module's source, generated, is named only when it is built (BuildExt.run).
        ext_modules=[kernel_extension(pyx) for pyx in kernel_sources()] + [Extension(SHARED, [])],
    )
