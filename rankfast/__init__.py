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
"""
import importlib
import os

__version__ = "0.1.0"

# The kernels' OpenMP threads sleep between parallel regions instead of spinning
# (GNU OpenMP spins by default): spinning threads take cores from the Python
# code between kernel calls, and on a busy machine made -j 2 slower than -j 1.
# An explicit OMP_WAIT_POLICY wins; it is read when libgomp loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    from . import _svmlight  # noqa: F401  (compiled kernels present?)
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "rankfast's compiled kernels are missing; build them with "
        "'pip install -e .' (or 'python setup.py build_ext --inplace')") from exc

from .data import Dataset, dump_svmlight, load_svmlight  # noqa: E402
from .errors import InputError, RankfastError, UsageError  # noqa: E402
from .model import KernelModel, LinearModel, read_model, write_model  # noqa: E402



_SUBMODULES = ("metrics", "ranksvm", "rankncg", "rankrls", "kernels", "erfc", "learners")


def __getattr__(name):
    """rankfast.erfc_sum and the submodules above, imported on first use.

    The programs import only what a run needs (erfc_sum needs scipy.special).
    """
    if name == "erfc_sum":
        from .erfc import erfc_sum
        return erfc_sum
    if name == "objective":
        return importlib.import_module(".objectives", __name__).objective
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'rankfast' has no attribute {name!r}")


__all__ = ["Dataset", "InputError", "KernelModel", "LinearModel", "RankfastError",
           "UsageError", "dump_svmlight", "erfc_sum", "load_svmlight", "read_model", "write_model"]
