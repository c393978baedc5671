"""The docstrings' Examples run, and the public API documents itself (numpydoc sections)."""
import doctest
import importlib
import inspect
import pkgutil

import pytest

import rankfast

# Every Python module of the package, subpackages included (not the compiled kernels).
MODULES = sorted(info.name for info in pkgutil.walk_packages(rankfast.__path__, "rankfast.")
                 if not info.name.startswith("rankfast._kernels"))


@pytest.mark.parametrize("name", MODULES)
def test_examples_in_docstrings_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                       # examples write only temporary files
    if name == "rankfast.sklearn":
        pytest.importorskip("sklearn")                # rankfast.sklearn's wrappers need it
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
                             verbose=False, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def _public_api():
    from rankfast import metrics
    from rankfast.data import queries, validation
    from rankfast.io import groups
    functions = [rankfast.load_svmlight, rankfast.dump_svmlight, rankfast.read_model,
                 rankfast.write_model, rankfast.erfc_sum, rankfast.LinearModel.from_dense,
                 metrics.swapped_pairs, metrics.swapped_fraction, metrics.pairwise_accuracy,
                 metrics.ndcg, metrics.mean_average_precision, metrics.ndcg_scorer,
                 metrics.map_scorer, queries.group_to_qid, groups.read_group_file,
                 groups.group_sidecar, validation.query_ids, validation.check_features]
    estimators = [rankfast.RankSVM, rankfast.RankSVML1, rankfast.RankNCG, rankfast.RankRLS,
                  rankfast.GreedyRankRLS, rankfast.KernelApproxLearner, rankfast.NystroemMap,
                  rankfast.RandomFourierMap]
    return functions, estimators


FUNCTIONS, ESTIMATORS = _public_api()


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__qualname__)
def test_public_functions_have_numpydoc_sections(function):
    doc = inspect.getdoc(function)
    for section in ("Returns", "Examples"):
        assert f"\n{section}\n---" in doc, f"{function.__qualname__}: no {section} section"
    if inspect.signature(function).parameters:
        assert "\nParameters\n---" in doc, f"{function.__qualname__}: no Parameters section"


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda c: c.__name__)
def test_estimators_have_numpydoc_sections(estimator):
    doc = inspect.getdoc(estimator)
    for section in ("Parameters", "Attributes", "Examples"):
        assert f"\n{section}\n---" in doc, f"{estimator.__name__}: no {section} section"
    for method in ("fit", "predict", "transform"):
        if hasattr(estimator, method):
            method_doc = inspect.getdoc(getattr(estimator, method))
            assert "\nParameters\n---" in method_doc and "\nReturns\n---" in method_doc, \
                f"{estimator.__name__}.{method}"
