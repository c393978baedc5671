"""scikit-learn's base classes when it is installed, small stand-ins otherwise.

rankfast depends on numpy and scipy only.  With scikit-learn installed
(``pip install rankfast[sklearn]``) the estimators are real scikit-learn
estimators: they derive from ``sklearn.base.BaseEstimator`` (parameters,
``clone``, tags, metadata routing's ``set_fit_request``), raise
``sklearn.exceptions.NotFittedError`` and use ``check_is_fitted``.  Without
it, the stand-ins below give the same ``get_params`` / ``set_params`` /
``NotFittedError`` behaviour, so fitting and predicting work the same way.
This is the pattern of LightGBM's and XGBoost's ``compat`` modules; nothing
else in rankfast imports scikit-learn.
"""
import inspect

try:
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted
    SKLEARN_INSTALLED = True
except ImportError:
    SKLEARN_INSTALLED = False

    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit`` (scikit-learn's, when installed)."""

    class BaseEstimator:
        """Parameters as scikit-learn's BaseEstimator handles them: the constructor's arguments."""

        @classmethod
        def _get_param_names(cls):
            signature = inspect.signature(cls.__init__)
            return sorted(name for name, p in signature.parameters.items()
                          if name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            """The constructor's parameters (``deep``: also those of nested estimators)."""
            params = {}
            for name in self._get_param_names():
                value = getattr(self, name)
                params[name] = value
                if deep and hasattr(value, "get_params") and not isinstance(value, type):
                    params.update((f"{name}__{key}", v) for key, v in value.get_params().items())
            return params

        def set_params(self, **params):
            """Set parameters (``name`` or ``nested__name``); returns self."""
            valid = self._get_param_names()
            for key, value in params.items():
                name, _, rest = key.partition("__")
                if name not in valid:
                    raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                     f"valid parameters: {', '.join(valid)}")
                if rest:
                    getattr(self, name).set_params(**{rest: value})
                else:
                    setattr(self, name, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:
        """``fit_transform`` from ``fit`` and ``transform``."""

        def fit_transform(self, X, y=None):
            """``fit(X, y)`` then ``transform(X)``."""
            return self.fit(X, y).transform(X)

    def check_is_fitted(estimator, attributes=None):
        """NotFittedError unless ``estimator`` has fitted attributes (names ending in '_')."""
        names = [attributes] if isinstance(attributes, str) else attributes
        if names is None:
            fitted = any(v.endswith("_") and not v.startswith("__") for v in vars(estimator))
        else:
            fitted = all(hasattr(estimator, name) for name in names)
        if not fitted:
            raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. "
                                 f"Call 'fit' with appropriate arguments before using this "
                                 f"estimator.")


def score_request(owner, params):
    """A metadata-routing request for ``params`` at ``score``, for a scorer object.

    Only scikit-learn's routing calls this (through the scorer's
    ``get_metadata_routing``), so scikit-learn is there.
    """
    from sklearn.utils.metadata_routing import MetadataRequest
    request = MetadataRequest(owner=owner)
    for param in params:
        request.score.add_request(param=param, alias=True)
    return request


__all__ = ["BaseEstimator", "NotFittedError", "SKLEARN_INSTALLED", "TransformerMixin",
           "check_is_fitted", "score_request"]
