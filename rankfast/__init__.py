"""rankfast: fast learning to rank, a drop-in for svm_rank's programs and files.

Python API
----------
load_svmlight, dump_svmlight   read / write SVMlight data with qids
read_model, write_model        svm_rank's (SVM-light V6.20) model files
LinearModel, KernelModel       models; ``model.predict(X)`` scores documents
metrics                        swapped pairs, pairwise accuracy, NDCG@k, MAP
erfc_sum                       Σ_i q_i erfc(y_j − z_i) at many targets, ε-accurate in O(p(N + M))
learners                       ranksvm.RankSVM, rankncg.RankNCG, rankrls.RankRLS,
                               rankrls.GreedyRankRLS, kernels.KernelApproxLearner:
                               fit(X, y, qid), predict(X), to_model()
sklearn                        the learners as scikit-learn estimators (import
                               rankfast.sklearn; needs scikit-learn): routing of
                               qid through searches, check_estimator

Every name is imported on first use, so a program imports only what its run
needs (classifying with a linear model needs neither scipy nor the learners).
"""
import os

__version__ = "0.2.0"

try:
    from . import _svmlight  # type: ignore[attr-defined]  # noqa: F401  (compiled kernels loadable?)
    from ._threads import load_openmp_runtime
    # The kernels' OpenMP threads sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE
    # while the runtime loads, not left in os.environ for other libraries or children).
    load_openmp_runtime()
except ImportError as exc:  # pragma: no cover - only without a build or without memory
    import importlib.machinery
    _here = os.path.dirname(os.path.abspath(__file__))
    if not any(os.path.exists(os.path.join(_here, "_svmlight" + suffix))
               for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        raise ImportError(
            "rankfast's compiled kernels are missing; build them with "
            "'pip install -e .' (or 'python setup.py build_ext --inplace')") from exc
    raise ImportError(f"rankfast's compiled kernels are built but could not be loaded "
                      f"(out of memory or address space? ulimit -v): {exc}") from exc

_ATTRIBUTES = {
    "Dataset": "data", "dump_svmlight": "data", "load_svmlight": "data",
    "InputError": "errors", "RankfastError": "errors", "UsageError": "errors",
    "KernelModel": "model", "LinearModel": "model", "read_model": "model", "write_model": "model",
    "erfc_sum": "erfc",
}
_SUBMODULES = ("metrics", "ranksvm", "rankncg", "rankrls", "kernels", "erfc", "learners",
               "data", "model", "errors", "files", "cli")


def __getattr__(name):
    """The API names above and the submodules, imported on first use."""
    import importlib
    if name in _ATTRIBUTES:
        value = getattr(importlib.import_module(f".{_ATTRIBUTES[name]}", __name__), name)
        globals()[name] = value
        return value
    if name == "objective":
        return importlib.import_module(".objectives", __name__).objective
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'rankfast' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ATTRIBUTES) | set(_SUBMODULES))


__all__ = ["Dataset", "InputError", "KernelModel", "LinearModel", "RankfastError",
           "UsageError", "dump_svmlight", "erfc_sum", "load_svmlight", "read_model", "write_model"]
