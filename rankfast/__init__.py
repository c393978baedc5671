"""rankfast: fast learning to rank, a drop-in for svm_rank's programs and files.

The public names, each imported on first use (so that a program imports only what
its run needs: classifying with a linear model needs neither scipy nor the learners):

Learners (``fit(X, y, qid)``, ``predict(X)``, ``to_model()``)
    RankSVM (PRSVM, ``-a prsvm``), RankSVML1 (svm_rank's objective, ``-a svmrank``),
    RankNCG, RankRLS, GreedyRankRLS, KernelApproxLearner with NystroemMap and
    RandomFourierMap: the table of rankfast.learners.registry, with any learner
    registered there.
Data and models
    load_svmlight, dump_svmlight, Dataset; read_model, write_model, LinearModel,
    KernelModel, RFFModel, KernelParams.
Numerics
    erfc_sum (Σ_i q_i erfc(y_j − z_i) at many targets, ε-accurate in O(p(N + M))),
    objective (svm_rank's or PRSVM's objective of a model on a dataset).
Modules
    metrics, model_selection; beside them, imported only when asked for:
    sklearn (scikit-learn's isinstance and checks), dask, export, plot.

The layout: cli/ (the programs), io/ (files), data/ (queries, sparse rows, the
checked training data, normalisation), learners/, optimize/ (solvers that know
no objective), model_selection/, metrics, models; the compiled kernels in
_kernels/, built from the top-level pyx/.
"""
import os

__version__ = "0.2.0"

try:
    from ._kernels import _svmlight  # noqa: F401  (compiled kernels loadable?)
    from ._kernels.threads import load_openmp_runtime
    # The kernels' OpenMP threads sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE
    # while the runtime loads, not left in os.environ for other libraries or children).
    load_openmp_runtime()
except ImportError as exc:  # pragma: no cover - only without a build or without memory
    import importlib.machinery
    _here = os.path.dirname(os.path.abspath(__file__))
    if not any(os.path.exists(os.path.join(_here, "_kernels", "_svmlight" + suffix))
               for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        raise ImportError(
            "rankfast's compiled kernels are missing; build them with "
            "'pip install -e .' (or 'python setup.py build_ext --inplace')") from exc
    raise ImportError(f"rankfast's compiled kernels are built but could not be loaded "
                      f"(out of memory or address space? ulimit -v): {exc}") from exc

# The names beside the estimators (those are rankfast.learners.registry's table: the
# learners' classes and the kernel approximation's), each with its module.
_ATTRIBUTES = {
    "Dataset": "io.svmlight", "dump_svmlight": "io.svmlight", "load_svmlight": "io.svmlight",
    "read_model": "io.model_files", "write_model": "io.model_files",
    "KernelModel": "models", "LinearModel": "models", "RFFModel": "models", "KernelParams": "models",
    "InputError": "errors", "RankfastError": "errors", "UsageError": "errors",
    "erfc_sum": "losses.erfc", "objective": "learners.objectives",
}
_SUBMODULES = ("metrics", "model_selection", "sklearn", "dask", "export", "plot", "errors",
               "io", "data", "learners", "optimize", "models", "cli")


def _estimators():
    """{class name: module} of the estimators in the registry's table as it stands now."""
    from .learners import registry
    return registry.exported()


def __getattr__(name):
    """The API names above, the registry's estimators and the submodules, imported on first use.

    ``__all__`` is computed too: a learner registered at run time is in it (and an
    estimator is not kept here, so that one unregistered is gone).
    """
    import importlib
    if name in _ATTRIBUTES:
        value = getattr(importlib.import_module(f".{_ATTRIBUTES[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    estimators = _estimators()
    if name in estimators:
        return getattr(importlib.import_module(estimators[name]), name)
    if name == "__all__":
        return sorted([*_ATTRIBUTES, *estimators])
    raise AttributeError(f"module 'rankfast' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ATTRIBUTES) | set(_estimators()) | set(_SUBMODULES))
