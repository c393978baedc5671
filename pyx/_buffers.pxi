# Buffers of the reader, included by _svmlight.pyx: array.array and bytearray buffers
# made without zeroing, grown by realloc, and their pages faulted in ahead of the parser.
from cpython.array cimport array, clone, resize
from cpython.bytearray cimport PyByteArray_FromStringAndSize


def empty_bytearray(Py_ssize_t n):
    """A bytearray of n bytes, not initialised (bytearray(n) writes n zeros first).

    For read buffers: the read writes every byte that is used, and a fresh
    buffer's pages are then first touched by the read, without the GIL held,
    rather than by zeroing them while holding it, while the threads that
    would parse wait for the GIL.
    """
    if n < 0:
        raise ValueError("negative size")
    return PyByteArray_FromStringAndSize(NULL, n)


def empty_array(str typecode, Py_ssize_t n):
    """An array.array of n items of typecode, not initialised.

    array.array(typecode, bytes(size)) allocates zeros and copies them, touching
    every page twice; the parser then writes what it uses.
    """
    return clone(array(typecode), n, False)


cdef extern from *:
    """
    #define rankfast_array_exports(a) (((arrayobject*)(a))->ob_exports)
    """
    int array_exports "rankfast_array_exports"(array a)


def resize_array(array a, Py_ssize_t n):
    """Make ``a`` (an array.array) n items long, its first items kept, new ones not initialised.

    By realloc, which moves the pages of a buffer malloc has mapped on its own
    (mremap; glibc maps buffers from 128 KB to 32 MB up, as its threshold has
    moved) instead of copying them, so arrays can grow as a file is read
    without a counting pass first, and shrink to what was read.  An array with a buffer exported (a
    memoryview or numpy array of it) raises BufferError, as array.array's own
    resizing does.
    """
    if n < 0:
        raise ValueError("negative size")
    if array_exports(a) > 0:
        raise BufferError("cannot resize an array.array that is exported")
    resize(a, n)


cdef extern from *:
    """
    /* Fault in the whole pages of [start, stop) for writing, in one system call (Linux
       5.14's MADV_POPULATE_WRITE) instead of a page fault each 4 KB page; elsewhere, or
       where the kernel refuses, nothing: the first writes fault them in, as without it.
       No advice on page sizes: the pages are what the system gives by default. */
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <unistd.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    #endif
    static void rankfast_populate(char* start, char* stop) {
    #if defined(__linux__)
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t first = ((uintptr_t)start + page - 1) & ~(page - 1);
        uintptr_t last = (uintptr_t)stop & ~(page - 1);
        if (page > 1 && last > first)
            (void)madvise((void*)first, last - first, MADV_POPULATE_WRITE);
    #else
        (void)start; (void)stop;
    #endif
    }
    """
    void populate_span "rankfast_populate"(char* start, char* stop) noexcept nogil


def populate(array a, Py_ssize_t start, Py_ssize_t stop):
    """Fault in the pages of items start .. stop of ``a`` (an array.array) ahead of writing them.

    One system call instead of a page fault for each 4 KB page (the figures:
    benchmarks/README.md, "Without the huge-page policy").  The span is clipped to ``a``.
    """
    cdef Py_ssize_t n = len(a), size = a.ob_descr.itemsize
    start, stop = max(start, 0), min(stop, n)
    if stop > start:
        with nogil:
            populate_span(a.data.as_chars + start * size, a.data.as_chars + stop * size)
