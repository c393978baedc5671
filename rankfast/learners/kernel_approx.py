"""Non-linear ranking by kernel approximation: map explicitly, then rank linearly.

Chen, Zhou, Zhang & Tang (2017), "Ranking Support Vector Machine with Kernel
Approximation" (Comput. Intell. Neurosci.).  Documents x are mapped to
φ(x) ∈ R^k with φ(x)ᵀφ(x') ≈ k(x, x'), and a linear ranker (PRSVM by
default) minimises, e.g.,
½‖w‖² + Σ_q c_q Σ_{(i,j) ∈ P_q} max(0, 1 − wᵀ(φ(x_i) − φ(x_j)))².
Kernels are SVM-light's (rankfast.models.KernelParams, flags -t -d -g -s -r):
(s a·b + r)^d, exp(−g ‖a − b‖²), tanh(s a·b + r).

Nyström (any of the three kernels)
    m landmarks z_1 … z_m drawn uniformly without replacement from the
    training documents (seeded), W = K(Z, Z) = U Λ Uᵀ (symmetric
    eigendecomposition), and φ(x) = Λ_k^{-1/2} U_kᵀ [k(x, z_1) … k(x, z_m)]ᵀ.
    The k kept eigenpairs are those with λ_i > rtol · max_j |λ_j| (rtol = 1e-10):
    this is the rank-k pseudo-inverse W_k⁺ = U_k Λ_k⁻¹ U_kᵀ of the paper.  It
    stays stable when W is near singular (duplicated or nearly equal
    landmarks): eigenvalues at rounding level, whose eigenvectors are noise,
    are never divided by, and dropping them changes the approximation of
    K(Z, Z) by at most rtol · ‖W‖₂.  The sigmoid kernel is
    not positive semi-definite: its negative eigenvalues are dropped as well,
    so φ approximates the positive part of W.  Either way the ranking function
    is f(x) = wᵀφ(x) = Σ_j β_j k(x, z_j) with β = U_k Λ_k^{-1/2} w: an
    SVM-light kernel model with the landmarks as support vectors, which
    svm_rank_classify evaluates with the exact kernel.  Landmarks are kept as
    float32-rounded values from the start, since that is what the model file
    holds.  Cost: O(m² d + m³) for W and its eigendecomposition, O(n m (d + k))
    to map n documents.

Random Fourier features (RBF only; Rahimi & Recht 2007)
    ω_i ~ N(0, 2γ I_d), b_i ~ U[0, 2π] (i = 1 … m, seeded) and
    φ(x) = √(2/m) [cos(ω_1ᵀx + b_1) … cos(ω_mᵀx + b_m)]ᵀ, so that
    E[φ(x)ᵀφ(x')] = exp(−γ ‖x − x'‖²).  The model needs Ω and b: it has its
    own file format (``rankfast RFF model V1``, see rankfast.io.model_files.format_rff_model), which
    svm_rank_classify refuses ("Version of model-file does not match").
    Cost O(n m d) to map n documents.  Ω is dense over every feature index up
    to the training width, so m × width is capped (RFF_MAX_VALUES): a wider
    map is refused with a ValueError before anything is drawn.

Both maps work in blocks of ``block_rows`` documents, so that at most
block_rows × m kernel values (or cosines) exist at a time; the mapped
training matrix itself is n × k.  Inputs are CSR matrices (column j is
feature j + 1) or dense arrays; features above the training width are
ignored, as svm_rank ignores features above a model's highest index.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._estimator import BaseEstimator, TransformerMixin, check_is_fitted
from .._kernels.threads import blas_single_thread, each_block, resolve_n_jobs

# The random Fourier model and its file format live in rankfast.models with the other
# formats; their names stay importable from here, where they were first documented.
from ..data.normalize import inverse_scale
from ..data.sparse import CSR, mostly_dense, scipy_csr, with_width
from ..data.validation import TrainingData, check_features
from ..model_selection import check_settings
from ..models import (
    KernelModel,
    KernelParams,
    RFFModel,
    fourier_features,
    normalized_input,
    scale_text,
)
from ._base import Ranker, fit_doc, sparse_input_tags
from ._linear import fit_documents
from .kernel_width import AUTO, SAMPLE, resolved

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any, Callable

    from .._typing import Log, Matrix, MatrixLike, VectorLike


# Ω is dense, one value per random feature and feature index, held in memory and
# written to the model file as text: at most 2**28 values (2 GB, ~5 GB of text).
RFF_MAX_VALUES = 1 << 28
APPROXIMATIONS = ("nystrom", "rff")


class _FeatureMap(TransformerMixin, BaseEstimator):
    """What the kernel maps share: transform checks X, then maps it (_transform_checked)."""

    _transform_checked: Callable[..., np.ndarray]     # each map's own, on checked X (and threads)

    def transform(self, X: MatrixLike) -> np.ndarray:
        """φ of the rows of X, shape (n, rank_), computed block_rows rows at a time.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features_in_)
            Dense input must have the training width; sparse input may differ
            (features above the training width are ignored).

        Returns
        -------
        ndarray of float64, shape (n_documents, rank_)
        """
        return self._transform_checked(_transform_input(self, X))


class NystroemMap(_FeatureMap):
    """Nyström feature map φ(x) = Λ_k^{-1/2} U_kᵀ k(Z, x) for an SVM-light kernel.

    See the module docstring for the math, the eigenvalue threshold and the cost.
    A scikit-learn transformer: ``fit(X)``, ``transform(X)``, ``fit_transform(X)``.

    Parameters
    ----------
    kernel : rankfast.models.KernelParams, optional
        Polynomial (1), RBF (2) or sigmoid (3); default RBF with gamma 1
        (svm_rank's ``-t 2``).  RBF's gamma ``"auto"``: fit sets it by the median
        heuristic on X (rankfast.learners.kernel_width), in ``kernel_``.
    landmarks : int
        m, the number of landmarks (all documents when there are fewer).
    seed : int
        Seed of the uniform landmark sample.
    rtol : float
        Eigenvalues of K(Z, Z) at most ``rtol`` times its largest |eigenvalue| are dropped.
    block_rows : int
        Documents mapped at a time.

    Attributes
    ----------
    landmarks_ : scipy.sparse.csr_matrix, shape (m, n_features_)
        The landmarks z_j, float32-rounded.
    landmark_rows_ : ndarray of int64
        Their rows in the training matrix, increasing.
    eigenvalues_ : ndarray, shape (m,)
        All eigenvalues of K(Z, Z), increasing.
    projection_ : ndarray, shape (m, k)
        U_k Λ_k^{-1/2}: φ(x) = projection_ᵀ k(Z, x).
    n_features_, n_features_in_ : int
        Training width d.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast import NystroemMap
    >>> from rankfast import KernelParams
    >>> X = np.random.default_rng(0).normal(size=(30, 4))
    >>> phi = NystroemMap(KernelParams(kernel=2, gamma=0.5), landmarks=30).fit(X)
    >>> features = phi.transform(X)
    >>> features.shape[0], bool(np.allclose(features @ features.T, np.exp(
    ...     -0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)), atol=1e-6))
    (30, True)
    """

    def __init__(self, kernel: Any = None, landmarks: int = 500, seed: int = 0, rtol: float = 1e-10,
                 block_rows: int = 4096) -> None:
        self.kernel, self.landmarks, self.seed = kernel, landmarks, seed
        self.rtol, self.block_rows = rtol, block_rows

    def fit(self, X: MatrixLike, y: VectorLike | None = None) -> NystroemMap:
        """Sample the landmarks among the rows of X and factor their kernel matrix.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features)
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad parameters, X has no row, or K(Z, Z) has no eigenvalue above the threshold.
        """
        return self._fit_checked(check_features(X)[0])

    def _fit_checked(self, X: Matrix | sp.csr_matrix) -> NystroemMap:
        """fit on X as rankfast.data.validation.check_features returns it (no check again)."""
        self.kernel_ = resolved(self.check_parameters(), X, self.seed)
        X = scipy_csr(X)
        n, self.n_features_ = X.shape
        self.n_features_in_ = self.n_features_
        m = min(int(self.landmarks), n)
        rng = np.random.default_rng(self.seed)
        self.landmark_rows_ = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
        Z = X[self.landmark_rows_]
        Z.data = Z.data.astype(np.float32).astype(np.float64)
        Z.eliminate_zeros()
        self.landmarks_ = Z
        self._dense = mostly_dense(X)
        self._Z = Z.toarray() if self._dense else Z
        W = self._finite_kernel(self._Z)
        W = 0.5 * (W + W.T)                              # exactly symmetric for eigh
        lam, U = scipy.linalg.eigh(W)
        keep = lam > self.rtol * np.abs(lam).max()
        if not keep.any():
            raise ValueError(f"the {m} landmarks' kernel matrix has no eigenvalue above "
                             f"{self.rtol:g} times its norm (largest {lam[-1]:.3g}): these "
                             f"kernel parameters give no Nyström feature")
        self.eigenvalues_ = lam
        self.projection_ = U[:, keep] / np.sqrt(lam[keep])
        return self

    def __sklearn_tags__(self):
        return sparse_input_tags(super().__sklearn_tags__())

    def check_parameters(self) -> KernelParams:
        """The kernel to use, or a ValueError for parameters no data can make work (fit calls it)."""
        kernel = _kernel_or_default(self.kernel)
        if kernel.kernel not in (1, 2, 3):
            raise ValueError(f"Nyström needs a polynomial, RBF or sigmoid kernel "
                             f"(kernel type 1, 2 or 3), not type {kernel.kernel}")
        if self.landmarks < 1:
            raise ValueError(f"the number of landmarks must be at least 1 (got {self.landmarks})")
        return kernel

    @property
    def rank_(self) -> int:
        """k, the dimension of φ."""
        return self.projection_.shape[1]

    def _transform_checked(self, X: Matrix | sp.csr_matrix, n_threads: int = 1) -> np.ndarray:
        """transform of X as rankfast.data.validation.check_features returns it (no check again),
        ``n_threads`` blocks at a time."""
        X = with_width(_map_input(self, X), self.n_features_)
        out = np.empty((X.shape[0], self.rank_))

        def map_block(start):          # out_block = K(block, Z) @ U_k Λ_k^{-1/2}
            stop = start + int(self.block_rows)
            block = X[start:stop]
            block = block.toarray() if self._dense else block
            np.matmul(self._finite_kernel(block), self.projection_, out=out[start:stop])
        each_block(map_block, range(0, X.shape[0], int(self.block_rows)), n_threads)
        return out

    def _finite_kernel(self, rows):
        """K(rows, Z); a ValueError, not inf or NaN features, when the kernel overflows."""
        with np.errstate(over="ignore", invalid="ignore"):
            K = self.kernel_(rows, self._Z)
        if not np.isfinite(K).all():
            values = [M.data if sp.issparse(M) else M for M in (rows, self._Z)]
            if any(np.isinf(v.astype(np.float32)).any() for v in values):     # not the parameters
                raise ValueError("feature values beyond the float range of svm_rank's model "
                                 "files (3.4e38) make the kernel infinite: rescale the features")
            k = self.kernel_
            settings = {1: f"polynomial, degree {k.degree}, coef_lin {k.coef_lin:g}, "
                           f"coef_const {k.coef_const:g}",
                        2: f"RBF, gamma {k.gamma:g}",
                        3: f"sigmoid, coef_lin {k.coef_lin:g}, coef_const {k.coef_const:g}"}[k.kernel]
            raise ValueError(f"the kernel ({settings}) overflows on these documents: "
                             f"choose smaller kernel parameters")
        return K

    def coefficients(self, w: VectorLike) -> np.ndarray:
        """β with Σ_j β_j k(x, z_j) = wᵀφ(x): β = U_k Λ_k^{-1/2} w."""
        return self.projection_ @ np.asarray(w, dtype=np.float64)


def _check_rff_size(m, d):
    """Refuse an Ω of m × d values above RFF_MAX_VALUES, before anything is drawn."""
    if m * d > RFF_MAX_VALUES:
        raise ValueError(f"random Fourier features need a {m} x {d} omega matrix "
                         f"({8 * m * d / 1e9:.1f} GB; feature indices go up to {d}), above "
                         f"the limit of {RFF_MAX_VALUES} values: renumber the features, or "
                         f"use fewer random features ('landmarks') or the Nyström map ('approx')")


class RandomFourierMap(_FeatureMap):
    """Random Fourier features φ(x) = √(2/m) cos(Ωx + b) for the RBF exp(−γ‖a − b‖²).

    A scikit-learn transformer: ``fit(X)``, ``transform(X)``, ``fit_transform(X)``.

    Parameters
    ----------
    kernel : rankfast.models.KernelParams, optional
        Must be the RBF kernel (type 2); its ``gamma`` is γ, or ``"auto"``: fit sets
        it by the median heuristic on X (rankfast.learners.kernel_width), in
        ``kernel_``.  Default: RBF, gamma 1.
    components : int
        m, the number of random features.
    seed : int
        Seed of Ω (drawn first, row by row) and b.
    block_rows : int
        Documents mapped at a time.

    Attributes
    ----------
    omega_ : ndarray, shape (m, n_features_)
        Rows ω_i ~ N(0, 2γ I).
    offset_ : ndarray, shape (m,)
        b_i ~ U[0, 2π].
    n_features_, n_features_in_ : int
        Training width d.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast import RandomFourierMap
    >>> from rankfast import KernelParams
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> phi = RandomFourierMap(KernelParams(kernel=2, gamma=0.1), components=20000)
    >>> features = phi.fit_transform(X)
    >>> features.shape
    (5, 20000)
    >>> exact = np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1))
    >>> bool(np.abs(features @ features.T - exact).max() < 0.05)
    True
    """

    def __init__(self, kernel: Any = None, components: int = 500, seed: int = 0,
                 block_rows: int = 4096) -> None:
        self.kernel, self.components, self.seed = kernel, components, seed
        self.block_rows = block_rows

    def fit(self, X: MatrixLike, y: VectorLike | None = None) -> RandomFourierMap:
        """Draw Ω and b for the width of X (the only thing the map takes from the data).

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features)
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad parameters, or Ω would hold more than RFF_MAX_VALUES numbers (m × width).
        """
        return self._fit_checked(check_features(X)[0])

    def _fit_checked(self, X: Matrix | sp.csr_matrix) -> RandomFourierMap:
        """fit on X as rankfast.data.validation.check_features returns it (no check again)."""
        self.kernel_ = resolved(self.check_parameters(), X, self.seed)
        self.n_features_ = X.shape[1]
        self.n_features_in_ = self.n_features_
        _check_rff_size(int(self.components), self.n_features_)
        rng = np.random.default_rng(self.seed)
        self.omega_ = rng.normal(0.0, math.sqrt(2.0 * self.kernel_.gamma),
                                 size=(int(self.components), self.n_features_))
        self.offset_ = rng.uniform(0.0, 2.0 * math.pi, size=int(self.components))
        return self

    def __sklearn_tags__(self):
        return sparse_input_tags(super().__sklearn_tags__())

    def check_parameters(self) -> KernelParams:
        """The kernel to use, or a ValueError for parameters no data can make work (fit calls it)."""
        kernel = _kernel_or_default(self.kernel)
        if kernel.kernel != 2:
            raise ValueError(f"random Fourier features need the RBF kernel (kernel type 2), "
                             f"not type {kernel.kernel}")
        if kernel.gamma != AUTO and not kernel.gamma > 0:
            raise ValueError(f"random Fourier features need gamma > 0 (got {kernel.gamma})")
        if self.components < 1:
            raise ValueError(f"the number of random features must be at least 1 "
                             f"(got {self.components})")
        return kernel

    @property
    def rank_(self) -> int:
        """m, the dimension of φ."""
        return len(self.offset_)

    def _transform_checked(self, X: Matrix | sp.csr_matrix, n_threads: int = 1) -> np.ndarray:
        """transform of X as rankfast.data.validation.check_features returns it (no check again),
        ``n_threads`` blocks at a time."""
        X = with_width(_map_input(self, X), self.n_features_)
        dense = mostly_dense(X)
        out = np.empty((X.shape[0], self.rank_))

        def map_block(start):
            stop = start + int(self.block_rows)
            block = X[start:stop]
            fourier_features(block.toarray() if dense else block, self.omega_, self.offset_,
                             out[start:stop])
        each_block(map_block, range(0, X.shape[0], int(self.block_rows)), n_threads)
        return out


def _kernel_or_default(kernel):
    """The kernel a map uses: ``kernel``, or svm_rank's ``-t 2`` (RBF, gamma 1) for None;
    a ValueError for gamma ``"auto"`` (made a number by fit) with another kernel than RBF."""
    kernel = KernelParams(kernel=2) if kernel is None else kernel
    if isinstance(kernel.gamma, str) and (kernel.gamma != AUTO or kernel.kernel != 2):
        raise ValueError(f"gamma must be a number or 'auto' (RBF kernel only), "
                         f"not {kernel.gamma!r}" + ("" if kernel.kernel == 2 else
                                                    f" with kernel type {kernel.kernel}"))
    return kernel


def _transform_input(transformer, X):
    """X checked (rankfast.data.validation.check_features) for a fitted map's transform."""
    check_is_fitted(transformer)
    return check_features(X)[0]


def _map_input(transformer, X):
    """Checked X (CSR or float64 ndarray) for a fitted map: the training width (dense), scipy's CSR."""
    if not isinstance(X, CSR):
        if X.shape[1] != transformer.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(transformer).__name__} is "
                             f"expecting {transformer.n_features_in_} features as input")
        return X
    return scipy_csr(X)


class KernelApproxLearner(Ranker):
    """A linear ranker trained on an explicit kernel feature map (Chen et al. 2017).

    ``fit`` maps the training documents (Nyström or random Fourier features,
    see the module docstring), then fits ``base_learner`` on them; the
    ranking function is f(x) = wᵀφ(x).  Any learner with ``fit(X, y, qid,
    log=None)``, ``feature_ids_`` / ``weights_`` (and ``name``) fits here;
    its ``to_model`` is only asked for its metadata.  Cost: the map's plus
    the base learner's on an n × k dense matrix.

    Parameters
    ----------
    base_learner : object, optional
        The linear ranker (default rankfast.learners.prsvm.RankSVM()); fit trains a clone.
    kernel : rankfast.models.KernelParams, optional
        Default: RBF with gamma 1 (svm_rank's ``-t 2``).  An RBF kernel's gamma
        may be ``"auto"``: fit takes the median heuristic on the (normalised)
        training documents, rankfast.learners.kernel_width.median_gamma, and
        ``map_.kernel_.gamma`` is the number used.  On raw features
        ``normalize="zscore"`` with gamma ``"auto"`` is the recipe.
    approx : {"nystrom", "rff"}
    landmarks : int
        m: landmarks (Nyström) or random features (RFF).
    seed : int
        Seed of the landmark sample or of Ω and b.
    normalize : {"none", "zscore", "query", "log"}
        rank_learn's --normalize, applied to the documents before the map
        (rankfast.data.normalize): ``zscore`` divides each feature by its
        standard deviation over the training documents (a kernel of raw
        features of very different scales sees only the largest), ``query``
        maps each feature to (x − min)/(max − min) within each query, ``log``
        to sign(x)·log(1 + |x|).  The model records it and normalises what it
        scores (``predict`` needs qid for ``query``): a Nyström model keeps the
        deviations in its file (``scale=``), which svm_rank_classify cannot
        apply; a random Fourier model folds them into Ω.  (The mean is not
        subtracted, as for the linear learners: the RBF kernel depends on
        differences only, and sparse data stays sparse.)

    Attributes
    ----------
    map_ : NystroemMap or RandomFourierMap
    learner_ : object
        The fitted base learner (a copy of ``base_learner``).
    weights_ : ndarray, shape (map_.rank_,)
        w over the mapped features.
    n_features_in_ : int
    feature_importances_ : not defined
        f(x) = wᵀφ(x) has no weight per original feature (φ mixes them all),
        so there is no |w|-based importance, unlike the linear learners.  A
        model-agnostic measure applies: e.g. the drop of NDCG per query
        (rankfast.metrics.ndcg with qid) when one column of a validation X is
        permuted, as sklearn.inspection.permutation_importance computes.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast import KernelApproxLearner
    >>> from rankfast import KernelParams
    >>> from rankfast import RankSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(60, 2))
    >>> y = (X ** 2).sum(axis=1)          # relevance grows away from the origin: not linear
    >>> qid = np.repeat([1, 2, 3], 20)
    >>> ranker = KernelApproxLearner(RankSVM(C=10.0), KernelParams(kernel=2, gamma=1.0),
    ...                              landmarks=30).fit(X, y, qid)
    >>> bool(ranker.score(X, y, qid) > 0.9)
    True
    """

    normalize = "none"             # what an instance pickled before the parameter existed did

    def __init__(self, base_learner: Any = None, kernel: Any = None, approx: str = "nystrom",
                 landmarks: int = 500, seed: int = 0, normalize: str = "none") -> None:
        self.base_learner, self.kernel, self.approx = base_learner, kernel, approx
        self.landmarks, self.seed, self.normalize = landmarks, seed, normalize

    def _new_map(self):
        if self.approx not in APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {', '.join(APPROXIMATIONS)} "
                             f"(got {self.approx!r})")
        kind = NystroemMap if self.approx == "nystrom" else RandomFourierMap
        return kind(self.kernel, self.landmarks, self.seed)

    def check_parameters(self) -> None:
        """ValueError for an unknown approximation, normalisation or kernel settings it cannot
        use (fit calls it)."""
        if self.normalize not in ("none", "zscore", "query", "log"):
            raise ValueError(f"normalize must be 'none', 'zscore', 'query' or 'log' "
                             f"(got {self.normalize!r})")
        if getattr(self.base_learner, "normalize", "none") != "none":
            raise ValueError("the base learner would normalise the mapped features, which no "
                             "model file can hold: give normalize to KernelApproxLearner, which "
                             "normalises the documents before the map")
        self._new_map().check_parameters()
        base = self._base()                 # the base learner's, as its own fit checks them
        if hasattr(base, "check_parameters"):
            base.check_parameters()
            check_settings(base)

    def _base(self):
        """A copy of the base learner, its Newton solves preconditioned with the Hessian itself
        where it can be (a map's dense features: rankfast.optimize.precondition)."""
        if self.base_learner is None:
            from .prsvm import RankSVM
            base = RankSVM()
        else:
            base = copy.deepcopy(self.base_learner)
        if hasattr(base, "solver_preconditioner"):
            base.solver_preconditioner = "hessian"
        return base

    @property
    def name(self) -> str:
        return (self.base_learner or self._base()).name

    def fit(self, X: MatrixLike, y: VectorLike, qid: VectorLike | None = None,
            group: VectorLike | None = None, sample_weight: VectorLike | None = None,
            eval_set: Sequence[tuple[MatrixLike, VectorLike]] | None = None,
            eval_qid: Sequence[VectorLike] | None = None,
            eval_group: Sequence[VectorLike] | None = None, log: Log = None) -> KernelApproxLearner:
        self._check_fit_parameters()
        data = self._training_data(X, y, qid, group)        # checked: finite, aligned
        evals = self._evaluation_sets(eval_set, eval_qid, eval_group)
        return self._fit_checked(data, sample_weight, evals, log)

    fit.__doc__ = fit_doc("Map the documents X (n × d), then train the base learner on φ(X), y "
                          "and the queries.",
                          "Query weights, passed to the base learner's fit (the map does not "
                          "use them).")

    def _fit_checked(self, data: TrainingData, sample_weight: VectorLike | None = None, evals: Any = (),
                     log: Log = None) -> KernelApproxLearner:
        """fit on a TrainingData and parameters checked already, taken as they are (fit's and
        fit_data's second half; cross-validation's folds): ``evals`` are checked ValidationSets."""
        mapped, normalizer = self._mapped(data, log)
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        base = self._base()
        if hasattr(base, "_fit_checked"):
            # rankfast's learners: φ(X), a new matrix, checked (finite) once; y and qid not again
            fitted = base._fit_checked(mapped, log=log, **weights)
        else:                                   # any other linear learner takes arrays
            fitted = base.fit(mapped.X, mapped.y, mapped.qid, log=log, **weights)
        self._take(fitted, normalizer)
        self._record_evals(evals)
        return self

    def fit_path(self, X: MatrixLike, y: VectorLike, qid: VectorLike | None, Cs: Sequence[float],
                 sample_weight: VectorLike | None = None) -> Iterator[KernelApproxLearner]:
        """Fitted copies for each C of Cs (the base learner's C, ascending) from one map of
        the documents, each solve started at the previous optimum where the base learner has
        a C path (cross-validation's ``base_learner__C`` grid: a map per fold and gamma, not
        per C)."""
        self.check_parameters()
        return self._fit_path_checked(self._training_data(X, y, qid, None), Cs, sample_weight)

    def _fit_path_checked(self, data: TrainingData, Cs: Sequence[float],
                          sample_weight: VectorLike | None = None) -> Iterator[KernelApproxLearner]:
        """fit_path on a TrainingData checked already, taken as it is (cross-validation's folds)."""
        mapped, normalizer = self._mapped(data, None)
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        base = self._base()
        if hasattr(base, "_fit_path_checked"):
            path = base._fit_path_checked(mapped, Cs, **weights)
        else:
            path = (copy.deepcopy(base).set_params(C=C).fit(mapped.X, mapped.y, mapped.qid,
                                                            **weights) for C in Cs)
        for C, fitted in zip(Cs, path):
            learner = copy.copy(self)
            learner.base_learner = copy.deepcopy(self.base_learner)
            if learner.base_learner is not None:
                learner.base_learner.C = C
            learner._take(fitted, normalizer)
            yield learner

    @blas_single_thread
    def _mapped(self, data, log):
        """(the TrainingData of φ(X), normalised first as ``normalize`` says; the Normalizer).

        BLAS on one thread, the map's blocks on the base learner's ``n_jobs`` threads: the
        same bits at any ``n_jobs`` (rankfast._kernels.threads)."""
        self._record_input(data)
        from ..data.normalize import Normalizer
        normalizer = Normalizer(self.normalize).fit(data.X, data.qid)
        if self.normalize != "none":
            data = data.with_features(check_features(normalizer.transform(data.X, data.qid))[0])
        start = time.perf_counter()
        self.map_ = self._new_map()._fit_checked(data.X)
        n_threads = resolve_n_jobs(getattr(self.base_learner or self._base(), "n_jobs", 1),
                                   data.X.shape[0] * self.map_.rank_)
        features = self.map_._transform_checked(data.X, n_threads)
        if log is not None:
            what = (f"Nyström map: {len(self.map_.landmark_rows_)} landmarks, rank "
                    f"{self.map_.rank_}" if self.approx == "nystrom"
                    else f"random Fourier features: m = {self.map_.rank_}")
            if _kernel_or_default(self.kernel).gamma == AUTO:
                log(f"'gamma' = {self.map_.kernel_.gamma:g} (auto: 1 / the median ||a-b||^2 "
                    f"over the pairs of {min(data.X.shape[0], SAMPLE)} training documents"
                    f"{'' if self.normalize == 'none' else ', normalised'})", 1)
            log(f"{what}, mapped {features.shape[0]} documents in "
                f"{time.perf_counter() - start:.2f} s", 1)
        return data.with_features(check_features(features)[0]), normalizer

    def _take(self, fitted, normalizer):
        """Record a fitted base learner (on this map) as the model's weights."""
        self.learner_ = fitted
        ids = np.asarray(fitted.feature_ids_, dtype=np.int64)
        self.weights_ = np.zeros(self.map_.rank_)
        self.weights_[ids - 1] = fitted.weights_
        self.normalizer_ = None if self.normalize == "none" else normalizer

    def _applied_normalizer(self):
        """The Normalizer predict applies (query, log), or None (rankfast.data.validation.predicted)."""
        return getattr(self, "normalizer_", None)

    def _score_checked(self, X: Matrix, qid: VectorLike | None = None) -> np.ndarray:
        """decision_function of X checked already (check_features' form), taken as it is."""
        normalizer = self._applied_normalizer()
        if normalizer is not None:                # as the model (file) scores: the same function
            X = check_features(normalized_input(normalizer.kind, X, qid, self.map_.n_features_,
                                                normalizer.scale))[0]
        return self.map_._transform_checked(X) @ self.weights_

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """KernelModel (Nyström: landmarks as SVs, β as alphas) or RFFModel, bias 0.

        ``n_features`` is the training width recorded in the file (highest
        feature index − 1); it defaults to the width the map was fitted on.
        """
        from .. import __version__
        check_is_fitted(self)
        width = self.map_.n_features_ if n_features is None else int(n_features)
        documents = fit_documents(self, n_documents)
        metadata: dict[str, Any] = {"version": __version__, "algorithm": self.name}
        if hasattr(self.learner_, "to_model"):
            metadata.update(self.learner_.to_model(n_features=self.map_.rank_).metadata)
        metadata.update({"approx": self.approx, "landmarks": self.landmarks, "seed": self.seed})
        normalizer = self._applied_normalizer()
        if normalizer is not None:                  # what fit applied, whatever set_params said since
            metadata["normalize"] = normalizer.kind
        if self.approx == "rff":
            omega = np.zeros((self.map_.rank_, width))          # recorded width: pad or cut
            shared = min(width, self.map_.n_features_)
            omega[:, :shared] = self.map_.omega_[:, :shared]
            if normalizer is not None and normalizer.kind == "zscore":
                omega[:, :shared] *= inverse_scale(normalizer.scale[:shared])   # Ω x/σ, folded
            return RFFModel(self.map_.kernel_.gamma, omega, self.map_.offset_.copy(),
                            self.weights_.copy(), 0.0, width + 1, documents, metadata)
        metadata["rank"] = self.map_.rank_
        if normalizer is not None and normalizer.kind == "zscore":
            metadata["scale"] = scale_text(normalizer.scale, width + 1)   # landmarks are x/σ
        support = with_width(self.map_.landmarks_, width)
        return KernelModel(dataclasses.replace(self.map_.kernel_), self.map_.coefficients(self.weights_),
                           support, 0.0, width + 1, documents, metadata)
