"""Build rankfast's Cython kernels (pyx/*.pyx) into the rankfast package.

Set RANKFAST_DEBUG=1 to compile with bounds checking and wraparound on,
for a debug test run; RANKFAST_ONLY=_name[,_name] builds just those kernels
(handy while one of them is being written).
"""
import glob
import os

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

extensions = [
    Extension(
        "rankfast." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"] if not DEBUG else ["-O0", "-g"],
    )
    for path in sorted(glob.glob(os.path.join("pyx", "*.pyx")))
    if not ONLY or os.path.splitext(os.path.basename(path))[0] in ONLY
]

setup(
    ext_modules=cythonize(extensions, include_path=["pyx"],
                          compiler_directives=DIRECTIVES),
)
