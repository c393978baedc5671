"""The build backend: setuptools' own, asking for Cython only when the C files must be generated.

pip installs a build's requirements into a new, isolated environment every time; Cython
and scipy (whose .pxd files the kernels cimport), with NumPy under scipy, take most of
that. setup.py's build_requirements() says whether the kernels' C files are current (its
stamps under build/); when they are, as for the README's second command, the build needs
setuptools alone. This is setuptools' documented way of adding build requirements.
"""
import runpy

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 (every hook not redefined here)


def _cython_requirements():
    return runpy.run_path("setup.py", run_name="rankfast_setup")["build_requirements"]()


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _cython_requirements()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _cython_requirements()
