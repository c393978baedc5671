"""scikit-learn's estimator protocol, without importing scikit-learn until it asks.

rankfast depends on numpy and scipy only; ``pip install rankfast[sklearn]``
makes the estimators work in scikit-learn (``clone``, ``GridSearchCV``,
``Pipeline``, metadata routing, ``check_estimator``).  LightGBM's and XGBoost's
``compat`` modules import scikit-learn when it is installed; that costs rank_learn
a second of start-up, so here the protocol is implemented directly and
scikit-learn's own classes (tags, metadata requests, NotFittedError) are
imported only inside the methods scikit-learn calls, or when an error is raised:

* parameters: ``get_params`` / ``set_params`` from the constructor's signature
  (constructors only store their arguments), ``__repr__``;
* ``__sklearn_tags__`` (scikit-learn >= 1.6 asks for it);
* metadata routing: ``set_fit_request`` / ``set_score_request`` record which of
  fit's and score's parameters (``qid``, ``group``) the caller routes, and
  ``get_metadata_routing`` turns that into scikit-learn's MetadataRequest;
* ``NotFittedError``: scikit-learn's class when it is installed (so that
  ``except sklearn.exceptions.NotFittedError`` catches it), else a local one
  that is also a ValueError and an AttributeError.
"""
from __future__ import annotations

import importlib.util
import inspect

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from ._typing import MatrixLike, VectorLike


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):           # a finder that refuses it, a broken install
        return False


SKLEARN_INSTALLED = _installed("sklearn")


class _LocalNotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit`` (without scikit-learn)."""


def not_fitted_error() -> Any:
    """The NotFittedError class: scikit-learn's if it is installed, else rankfast's own."""
    if SKLEARN_INSTALLED:
        from sklearn.exceptions import NotFittedError
        return NotFittedError
    return _LocalNotFittedError


def __getattr__(name):
    if name == "NotFittedError":                # rankfast._estimator.NotFittedError, on first use
        return not_fitted_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_is_fitted(estimator: Any, attributes: Any = None) -> None:
    """NotFittedError unless ``estimator`` has fitted attributes (names ending in '_').

    Parameters
    ----------
    estimator : object
    attributes : str or list of str, optional
        Attributes that must exist; by default any attribute ending in '_'
        (scikit-learn's rule).

    Returns
    -------
    None

    Examples
    --------
    >>> from rankfast._estimator import check_is_fitted
    >>> from rankfast import RankSVM
    >>> try:
    ...     check_is_fitted(RankSVM())
    ... except ValueError as error:
    ...     print(error)
    This RankSVM instance is not fitted yet. Call 'fit' with appropriate arguments
    before using this estimator.
    """
    names = [attributes] if isinstance(attributes, str) else attributes
    if names is None:
        fitted = any(v.endswith("_") and not v.startswith("__") for v in vars(estimator))
    else:
        fitted = all(hasattr(estimator, name) for name in names)
    if not fitted:
        raise not_fitted_error()(f"This {type(estimator).__name__} instance is not fitted yet. "
                                 f"Call 'fit' with appropriate arguments before using this "
                                 f"estimator.")


class BaseEstimator:
    """Parameters, tags and metadata requests as scikit-learn's BaseEstimator has them."""

    @classmethod
    def _get_param_names(cls):
        signature = inspect.signature(cls.__init__)
        return sorted(name for name, p in signature.parameters.items()
                      if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters.

        Parameters
        ----------
        deep : bool
            Also those of nested estimators, as ``name__parameter``.

        Returns
        -------
        dict
        """
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            params[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", v) for key, v in value.get_params().items())
        return params

    def set_params(self, **params: Any) -> BaseEstimator:
        """Set parameters (``name`` or ``nested__name``).

        Parameters
        ----------
        **params
            New values.

        Returns
        -------
        self
        """
        valid = self._get_param_names()
        nested: dict = {}
        for key, value in params.items():
            name, _, rest = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator "
                                 f"{type(self).__name__}; valid parameters: {', '.join(valid)}")
            if rest:
                nested.setdefault(name, {})[rest] = value
            else:
                setattr(self, name, value)
        for name, values in nested.items():
            getattr(self, name).set_params(**values)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None,
                    input_tags=InputTags())

    # ---- metadata routing: which of fit's / score's parameters the caller routes

    def _metadata_params(self, method):
        """The metadata ``method`` takes (qid, group, ...), read from its signature as
        scikit-learn reads its own estimators': every parameter but the data (X, y) and
        rank_learn's progress callback (log)."""
        function = getattr(self, method, None)
        if function is None:
            return ()
        return tuple(name for name, p in inspect.signature(function).parameters.items()
                     if name not in _NOT_METADATA
                     and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def _request(self, method, params):
        known = self._metadata_params(method)
        for name in params:
            if name not in known:
                raise TypeError(f"{type(self).__name__}.{method} has no metadata parameter "
                                f"{name!r} (it has: {', '.join(known) or 'none'})")
        requests = _Requests(getattr(self, "_metadata_request", None) or {})
        requests[method] = {**requests.get(method, {}), **params}
        self._metadata_request = requests               # the name sklearn.base.clone copies
        return self

    def set_fit_request(self, **params: Any) -> Any:
        """Which of fit's parameters scikit-learn's metadata routing passes (e.g. ``qid=True``).

        Parameters
        ----------
        **params : bool, None or str
            True: route it; False: do not; a string: route the metadata of that name.

        Returns
        -------
        self
        """
        return self._request("fit", params)

    def set_score_request(self, **params: Any) -> Any:
        """Which of score's parameters scikit-learn's metadata routing passes (e.g. ``qid=True``).

        Parameters
        ----------
        **params : bool, None or str

        Returns
        -------
        self
        """
        return self._request("score", params)

    def get_metadata_routing(self) -> Any:
        """scikit-learn's MetadataRequest: fit's and score's metadata, as requested above.

        Every metadata parameter is listed, unrequested (None) until
        ``set_fit_request`` / ``set_score_request`` says otherwise, as
        scikit-learn's own estimators list theirs: so a search given ``qid``
        for an estimator that did not request it raises scikit-learn's
        UnsetMetadataPassedError instead of training every fold on one ranking.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRequest
        """
        requests = {method: dict.fromkeys(self._metadata_params(method))
                    for method in _ROUTED_METHODS}
        for method, params in (getattr(self, "_metadata_request", None) or {}).items():
            requests[method].update(params)
        return metadata_request(type(self).__name__, requests)


_NOT_METADATA = frozenset({"self", "X", "y", "log"})
_ROUTED_METHODS = ("fit", "score")


class _Requests(dict):
    """``{method: {param: request}}``; sklearn.base.clone copies it with the estimator."""

    def __sklearn_clone__(self):
        return _Requests({method: dict(params) for method, params in self.items()})


class TransformerMixin:
    """``fit_transform`` from ``fit`` and ``transform``, and the transformer tags."""

    def fit_transform(self, X: MatrixLike, y: VectorLike | None = None) -> np.ndarray:
        """``fit(X, y)`` then ``transform(X)``.

        Parameters
        ----------
        X : array-like or sparse matrix
        y : ignored

        Returns
        -------
        ndarray
        """
        return self.fit(X, y).transform(X)  # type: ignore[attr-defined]  # the subclass's

    def __sklearn_tags__(self):
        from sklearn.utils import TransformerTags
        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags


def metadata_request(owner: Any, requests: Any) -> Any:
    """scikit-learn's MetadataRequest from ``{method: {param: True/False/None/alias}}``."""
    from sklearn.utils.metadata_routing import MetadataRequest
    request = MetadataRequest(owner=owner)
    for method, params in requests.items():
        for param, alias in params.items():
            getattr(request, method).add_request(param=param, alias=alias)
    return request


def score_request(owner: str, params: Any) -> Any:
    """A metadata request for ``params`` at ``score`` (for a scorer object)."""
    return metadata_request(owner, {"score": dict.fromkeys(params, True)})


# NotFittedError is served by the module's __getattr__ (scikit-learn's class, or rankfast's).
__all__ = ["BaseEstimator", "NotFittedError", "SKLEARN_INSTALLED",  # noqa: F822
           "TransformerMixin", "check_is_fitted", "not_fitted_error", "score_request"]
