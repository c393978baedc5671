"""The compiled kernels, built from the Cython sources in the top-level ``pyx/``.

Each kernel takes and fills C-contiguous arrays and imports nothing from rankfast;
the Python modules that call them check their input first.  ``threads`` decides
how many threads they run on and how queries are cut into chunks for them.
"""
