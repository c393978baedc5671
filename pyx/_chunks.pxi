# Helpers of the chunked parallel kernels (_prsvm, _rankrls, _erfc), included in each:
# the caller has cimported int64_t and imported numpy as np.

cdef const int64_t[::1] chunk_list(const int64_t[::1] chunks, Py_ssize_t n_queries):
    """chunks, or, when None, the one chunk of every query."""
    if chunks is None:
        return np.array([0, max(n_queries, 0)], dtype=np.int64)
    return chunks


cdef check_chunks(const int[::1] status):
    """MemoryError when a chunk could not allocate its scratch space."""
    cdef Py_ssize_t k
    for k in range(status.shape[0]):
        if status[k] != 0:
            raise MemoryError()
