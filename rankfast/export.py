"""Trained models in the formats that search engines and model servers load.

``rank_export`` (rankfast.cli.export) and the models' ``to_onnx()`` /
``to_json(format=...)`` call the functions here; nothing here prints.

Formats
-------
``es-ltr``, ``opensearch-ltr``
    The request body of the Learning to Rank plugin's ``_createmodel`` call
    (o19s/elasticsearch-learning-to-rank and its OpenSearch fork, which
    document the same body; the feature set is named in the request's path)::

        POST _ltr/_featureset/more_movie_features/_createmodel
        {
            "model": {
                "name": "my_linear_model",
                "model": {
                    "type": "model/linear",
                    "definition": "{\\"title_query\\" : 0.3, \\"body_query\\" : 0.5, ...}"
                }
            }
        }

    The definition is the documented JSON object of feature name → weight,
    sent as a string (the form both plugins' documentation shows, and the
    one every plugin version parses).  The plugin reads each weight as a
    float, and a name that is not in the feature set is an error.
``solr-ltr``
    Apache Solr's ``org.apache.solr.ltr.model.LinearModel``, as its
    documentation gives it::

        {"class": "org.apache.solr.ltr.model.LinearModel",
         "name": "myModelName",
         "features": [{"name": "userTextTitleMatch"}, {"name": "originalScore"}],
         "params": {"weights": {"userTextTitleMatch": 1.0, "originalScore": 0.5}}}
``ranklib``
    RankLib's linear model text (Coordinate Ascent), which RankLib itself
    and the plugins' ``model/ranklib`` type load: a ``## Coordinate Ascent``
    line, further ``##`` comment lines, then ``1:w1 2:w2 ...`` on one line.
    Features are ordinals, 1 for the feature set's first feature.
``onnx``
    A graph from the dense feature matrix ``features`` (float32, n × d) to
    ``scores`` (float64, n), computed in float64 as rank_classify computes
    them; linear models, Nyström (SVM-light kernel) models and random
    Fourier feature models.  Needs the ``onnx`` package (``rankfast[onnx]``).

The search-engine formats list the features with a non-zero weight (the
others weigh 0 in each of them, and a hashed feature space stays small) and
no threshold: the threshold b shifts every score by the same amount and
changes no ranking, so it is left out (ONNX keeps it).  Every weight is written as the shortest
decimal that reads back as the same float64, which is the model file's
float32 value: a float parser (the plugins, Solr) and a double parser
(RankLib, Python) get the model file's weights bit for bit.  A model that
normalises its input as rank_classify applies it (``--normalize query`` or
``log``) or a kernel model is not linear in the features, and only ONNX can
hold it; the other formats refuse it (UsageError) and say why.  A
``--normalize zscore`` model has its scaling folded into the weights and
exports like any linear model.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .errors import InputError, MissingDependencyError, UsageError
from .io.files import atomic_output, open_binary

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

FORMATS = ("onnx", "es-ltr", "opensearch-ltr", "solr-ltr", "ranklib")
DEFAULT_NAME = "rankfast_model"
SOLR_LINEAR_MODEL = "org.apache.solr.ltr.model.LinearModel"
LTR_LINEAR_TYPE = "model/linear"

# ONNX opset 17 with IR version 8 (ONNX 1.12): what ONNX Runtime 1.12 and every
# later runtime loads.  The Reduce* operators take their axes as attributes here.
ONNX_OPSET = 17
ONNX_IR_VERSION = 8
ONNX_INPUT = "features"
ONNX_OUTPUT = "scores"
ONNX_MAX_BYTES = (1 << 31) - (1 << 24)    # protobuf's 2 GB, less room for the graph itself


# ------------------------------------------------------------------ feature names

def read_feature_names(path: str) -> list[str]:
    """The feature names in ``path``: one a line, in feature index order (line 1 names feature 1).

    Surrounding blanks and a final line end are dropped.

    Parameters
    ----------
    path : str
        The file ('-' reads standard input; compressed files are read transparently).

    Returns
    -------
    list of str

    Raises
    ------
    InputError
        Unreadable file, not UTF-8, no names, an empty line or a name given
        twice (its line named).
    """
    with open_binary(path) as stream:
        try:
            raw = stream.read()
        except (OSError, EOFError, ValueError) as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(path, line, "not UTF-8 text") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    names: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        name = line.strip()
        if not name:
            raise InputError(path, number, "empty feature name (one name a line, in "
                                           "feature index order)")
        if name in seen:
            raise InputError(path, number, f"feature name {name!r} is also on line {seen[name]}")
        seen[name] = number
        names.append(name)
    if not names:
        raise InputError(path, None, "no feature names")
    return names


def model_width(model: Any) -> int:
    """d, the number of features the model reads: its training width (highest feature index − 1).

    A linear model weighing a feature above it (possible in hand-written
    files) reads up to that feature.
    """
    width = int(model.highest_feature_index) - 1
    if model.kind == "linear" and len(model.feature_ids):
        width = max(width, int(model.feature_ids.max()))
    elif hasattr(model, "support_vectors") and model.support_vectors.nnz:
        width = max(width, int(model.support_vectors.indices.max()) + 1)
    return max(width, 0)


def feature_names_of(model: Any, names: Any = None) -> list[str]:
    """The names of the features the export covers, in index order.

    Without ``names``, the features are named by their index ("1", "2", …)
    up to the model's width.  Given names must name every feature the model
    uses: each weighted feature of a linear model, every feature up to the
    width of a kernel or random Fourier model (an RBF kernel reads them all).
    More names than that are the feature set's other features.

    Parameters
    ----------
    model : LinearModel, KernelModel or rankfast.models.RFFModel
    names : sequence of str, optional

    Returns
    -------
    list of str

    Raises
    ------
    UsageError
        Too few names.
    """
    if names is None:
        return [str(i) for i in range(1, model_width(model) + 1)]
    names = [str(name) for name in names]
    if len(set(names)) != len(names):
        raise UsageError("feature names must be distinct")
    needed, why = _names_needed(model)
    if len(names) < needed:
        raise UsageError(f"{len(names)} feature names, but the model {why} {needed}: give one "
                         f"name a line for features 1 to {needed} at least")
    return names


def _names_needed(model):
    if model.kind == "linear":
        last = int(model.feature_ids.max()) if len(model.feature_ids) else 0
        return last, "weighs features up to"
    return model_width(model), "reads every feature up to"


def default_name(model_path: str) -> str:
    """A model's default name: its file name without directory and extension."""
    base = os.path.splitext(os.path.basename(model_path))[0] if model_path not in ("-", "") else ""
    return base or DEFAULT_NAME


# ------------------------------------------------------------------ linear formats

def linear_weights(model: Any, format: str, names: Any = None) -> Any:
    """(names, weights) of a linear model's weighted features, or the UsageError why not.

    The features with a non-zero weight, in index order, named by ``names``
    (line i names feature i) or by their index; the weights as float64 (the
    model file's float32 values).  A feature left out weighs 0 in every
    format, so a model over a wide (hashed) feature space stays as small as
    its file.
    """
    if model.kind != "linear":
        raise UsageError(f"{_kind(model)} is not linear in the features: {format} stores one "
                         f"weight per feature; export it with 'format' onnx")
    kind = model.metadata.get("normalize", "none")
    if kind == "query":
        raise UsageError(f"the model was trained with 'normalize' query: it scores each "
                         f"query's documents after mapping every feature to (x-min)/(max-min) "
                         f"over that query, which {format}'s linear weights cannot express; "
                         f"export it with 'format' onnx")
    if kind == "log":
        raise UsageError(f"the model was trained with 'normalize' log: it scores "
                         f"sign(x)*log(1+|x|) of every feature value, which {format}'s linear "
                         f"weights cannot express; export it with 'format' onnx")
    _check_normalize(kind)
    if names is not None:
        names = feature_names_of(model, names)
    weights = np.asarray(model.weights, dtype=np.float64)
    if not np.all(np.isfinite(weights)):
        raise UsageError("the model has a weight that is not finite")
    ids = [int(i) for i in model.feature_ids]
    return [names[i - 1] if names is not None else str(i) for i in ids], weights.tolist()


def to_json(model: Any, format: str = "es-ltr", feature_names: Any = None, name: Any = DEFAULT_NAME) -> str:
    """The text of a linear model in a search engine's format (see the module's docstring).

    Only the features with a non-zero weight are listed (in index order): the
    others weigh 0 in every format.  The threshold b is left out.

    Parameters
    ----------
    model : LinearModel
    format : {"es-ltr", "opensearch-ltr", "solr-ltr", "ranklib"}
        "ranklib" gives RankLib's model text, not JSON.
    feature_names : sequence of str, optional
        The engine's feature set in index order (default: features are
        named by their index, "1", "2", …).
    name : str
        The model's name in the engine.

    Returns
    -------
    str

    Raises
    ------
    UsageError
        An unknown format, too few feature names, or a model the format
        cannot hold (a kernel model, ``--normalize query`` or ``log``), with
        the reason.

    Examples
    --------
    >>> import json
    >>> from rankfast import LinearModel
    >>> model = LinearModel.from_dense([0.5, 0.0, -2.0])
    >>> body = json.loads(model.to_json("solr-ltr", ["title", "body", "age"], name="m"))
    >>> body["features"], body["params"]["weights"]
    ([{'name': 'title'}, {'name': 'age'}], {'title': 0.5, 'age': -2.0})
    >>> print(model.to_json("ranklib"), end="")
    ## Coordinate Ascent
    ## rankfast linear model rankfast_model (threshold left out: it ranks alike)
    1:0.5 3:-2.0
    """
    if format not in FORMATS or format == "onnx":
        allowed = ", ".join(f for f in FORMATS if f != "onnx")
        raise UsageError(f"format must be one of {allowed} (got {format!r}); ONNX: to_onnx()")
    names, values = linear_weights(model, format, feature_names)
    if format == "ranklib":
        ids = [int(i) for i in model.feature_ids] or [1]       # no weight at all: 1:0.0
        pairs = " ".join(f"{i}:{_number(w)}" for i, w in zip(ids, values or [0.0]))
        return (f"## Coordinate Ascent\n"
                f"## rankfast linear model {name} (threshold left out: it ranks alike)\n"
                f"{pairs}\n")
    definition = dict(zip(names, values))
    if format == "solr-ltr":
        body = {"class": SOLR_LINEAR_MODEL, "name": name,
                "features": [{"name": n} for n in names],
                "params": {"weights": definition}}
    else:
        body = {"model": {"name": name, "model": {
            "type": LTR_LINEAR_TYPE,
            "definition": json.dumps(definition, ensure_ascii=False, allow_nan=False)}}}
    return json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _number(value):
    """The shortest text that reads back as this float64 (Python's repr, Java's parseDouble)."""
    return repr(float(value))


def _kind(model):
    if model.kind == "kernel":
        approx = model.metadata.get("approx")
        what = {1: "polynomial", 2: "RBF", 3: "sigmoid"}.get(model.kernel.kernel, "custom")
        what += " kernel"
        return f"a kernel model ({what}{', Nyström' if approx == 'nystrom' else ''})"
    return "a random Fourier feature model (RBF kernel)"


def _check_normalize(kind):
    if kind not in ("none", "zscore", "query", "log"):
        raise UsageError(f"the model asks for normalize={kind}, which this rankfast cannot "
                         f"apply (a newer rankfast?)")


# ------------------------------------------------------------------ ONNX

def require_onnx() -> Any:
    """The onnx module, or MissingDependencyError with the pip command."""
    try:
        import onnx
    except ImportError:
        raise MissingDependencyError("ONNX export needs the onnx package: "
                                     "pip install rankfast[onnx]") from None
    return onnx


def to_onnx(model: Any, feature_names: Any = None, name: Any = DEFAULT_NAME) -> Any:
    """An ONNX graph that scores a dense feature matrix as rank_classify scores its rows.

    Input ``features``: float32, shape (n, d), column j holding feature j + 1
    (d = the number of feature names, by default the model's width).  Output
    ``scores``: float64, shape (n,).  Inside, the values are widened to
    float64 and scored as rank_classify does (model values are the model
    file's float32 numbers), so the scores agree with its predictions to
    rounding (about 1e-12 relative, not bit for bit: the sums run in another
    order).

    * linear: ``features @ w − b``;
    * ``--normalize log``: every value x first becomes sign(x)·log(1 + |x|);
    * ``--normalize query``: each feature first becomes (x − min)/(max − min)
      over the rows given, 0 where max = min, so **one query's documents
      make one call**;
    * Nyström / SVM-light kernel model: Σ_i α_i k(x, s_i) − b with the
      polynomial (s x·s_i + r)^d, RBF exp(−g‖x − s_i‖²) or sigmoid
      tanh(s x·s_i + r) kernel;
    * random Fourier features: √(2/m) Σ_i w_i cos(ω_iᵀx + b_i) − bias.

    Columns beyond the model's width are ignored, as rank_classify ignores
    features above a model's highest index.

    Parameters
    ----------
    model : LinearModel, KernelModel or rankfast.models.RFFModel
    feature_names : sequence of str, optional
        Recorded in the graph's metadata (``feature_names``, a JSON list)
        and fixing d; default "1" … width.
    name : str
        The graph's name.

    Returns
    -------
    onnx.ModelProto
        Opset 17, IR version 8; ``onnx.save(proto, path)`` writes it.

    Raises
    ------
    MissingDependencyError
        The onnx package is not installed.
    UsageError
        Too few feature names, or a kernel type ONNX cannot be given.
    """
    onnx = require_onnx()
    from onnx import TensorProto, helper, numpy_helper
    width = model_width(model)
    names = feature_names_of(model, feature_names) if feature_names is not None else None
    d = len(names) if names is not None else width
    kind = model.metadata.get("normalize", "none")
    _check_normalize(kind)
    rows = 1 if model.kind == "linear" else \
        len(model.alphas if model.kind == "kernel" else model.offset)
    size = 8 * rows * (d if model.kind == "linear" else width)
    if size > ONNX_MAX_BYTES:                     # checked before anything that large exists
        raise UsageError(f"the graph's numbers would take {size / 1e9:.1f} GB, above the 2 GB "
                         f"that one ONNX file (a protobuf message) can hold")
    names = names if names is not None else feature_names_of(model)
    graph = _Graph(numpy_helper)
    x = graph.node("Cast", [ONNX_INPUT], to=TensorProto.DOUBLE)
    scale = model.input_scale if model.kind == "kernel" else None
    if kind == "log":
        x = graph.node("Mul", [graph.node("Sign", [x]),
                               graph.node("Log", [graph.node("Add", [graph.node("Abs", [x]),
                                                                     graph.constant(1.0)])])])
    elif kind == "query":
        x = _query_min_max(graph, x)
    elif scale is not None:                         # a Nyström zscore's x/σ (others fold it)
        from .data.normalize import inverse_scale
        inverse = np.zeros(d)
        scale = inverse_scale(scale)
        inverse[:min(d, len(scale))] = scale[:d]
        x = graph.node("Mul", [x, graph.constant(inverse)])
    if model.kind == "linear":
        out = graph.node("MatMul", [x, graph.constant(model.dense_weights(d))])
    else:
        if d > width:
            x = graph.node("Slice", [x, graph.constant(np.array([0], np.int64)),
                                     graph.constant(np.array([width], np.int64)),
                                     graph.constant(np.array([1], np.int64))])
        if model.kind == "kernel":
            if kind in ("query", "log") or scale is not None:   # as KernelModel.predict: the
                # normalised values a file would hold (float32)
                x = graph.node("Cast", [graph.node("Cast", [x], to=TensorProto.FLOAT)],
                               to=TensorProto.DOUBLE)
            out = _kernel_scores(graph, x, model, width)
        else:
            out = _fourier_scores(graph, x, model, width)
    graph.node("Sub", [out, graph.constant(float(model.bias))], output=ONNX_OUTPUT)
    inputs = [helper.make_tensor_value_info(ONNX_INPUT, TensorProto.FLOAT, ["n", d])]
    outputs = [helper.make_tensor_value_info(ONNX_OUTPUT, TensorProto.DOUBLE, ["n"])]
    doc = _onnx_doc(model, kind, d)
    proto = helper.make_model(
        helper.make_graph(graph.nodes, name, inputs, outputs, graph.initializers, doc_string=doc),
        opset_imports=[helper.make_opsetid("", ONNX_OPSET)], ir_version=ONNX_IR_VERSION,
        producer_name="rankfast", producer_version=_version(), doc_string=doc)
    metadata = {"feature_names": json.dumps(names, ensure_ascii=False), "normalize": kind,
                "rankfast_model": type(model).__name__,
                "per_query": "true" if kind == "query" else "false"}
    for key, value in model.metadata.items():
        metadata.setdefault(f"rankfast.{key}", str(value))
    helper.set_model_props(proto, metadata)
    onnx.checker.check_model(proto)
    return proto


def _onnx_doc(model, kind, d):
    text = (f"rankfast {type(model).__name__}: scores = f(features), features float32 "
            f"(n, {d}), column j = feature j + 1; scores float64 (n,), as rank_classify.")
    if kind == "query":
        text += (" Trained with normalize=query: each call must hold one query's documents "
                 "(features are min-max normalised over the rows of the call).")
    elif kind == "log":
        text += " Trained with normalize=log: sign(x)*log(1+|x|) is applied inside."
    return text


class _Graph:
    """Nodes and initializers of a graph being built, with generated names."""

    def __init__(self, numpy_helper):
        self.nodes, self.initializers = [], []
        self._numpy_helper = numpy_helper
        self._count = 0

    def _name(self, stem):
        self._count += 1
        return f"{stem}_{self._count}"

    def node(self, op, inputs, output=None, **attributes):
        from onnx import helper
        output = output or self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [output], name=self._name(op), **attributes))
        return output

    def constant(self, value):
        """An initializer: a float becomes a float64 scalar, arrays keep their dtype."""
        array = np.asarray(value, dtype=np.float64) if isinstance(value, float) else \
            np.ascontiguousarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float64)
        name = self._name("const")
        self.initializers.append(self._numpy_helper.from_array(array, name))
        return name


def _query_min_max(graph, x):
    """(x − min)/(max − min) per column over the rows (0 where max = min): LETOR's QueryLevelNorm."""
    low = graph.node("ReduceMin", [x], axes=[0], keepdims=1)
    high = graph.node("ReduceMax", [x], axes=[0], keepdims=1)
    span = graph.node("Sub", [high, low])
    varies = graph.node("Greater", [span, graph.constant(0.0)])
    safe = graph.node("Where", [varies, span, graph.constant(1.0)])
    scaled = graph.node("Div", [graph.node("Sub", [x, low]), safe])
    return graph.node("Where", [varies, scaled, graph.constant(0.0)])


def _kernel_scores(graph, x, model, width):
    """Σ_i α_i k(x, s_i) over the support vectors (KernelParams' kernels)."""
    from .data.sparse import with_width
    k = model.kernel
    sv = with_width(model.support_vectors, width).toarray()
    sv = sv.astype(np.float32).astype(np.float64)            # the file's floats, as predict
    dot = graph.node("MatMul", [x, graph.constant(np.ascontiguousarray(sv.T))])
    if k.kernel == 0:
        values = dot
    elif k.kernel == 2:                 # exp(−g (|x|² − 2 x·s + |s|²))
        x_norms = graph.node("ReduceSumSquare", [x], axes=[1], keepdims=1)
        s_norms = np.einsum("ij,ij->i", sv, sv)[None, :]
        exponent = graph.node("Sub", [
            graph.node("Sub", [graph.node("Mul", [dot, graph.constant(2.0 * k.gamma)]),
                               graph.node("Mul", [x_norms, graph.constant(float(k.gamma))])]),
            graph.constant(k.gamma * s_norms)])
        values = graph.node("Exp", [exponent])
    elif k.kernel in (1, 3):
        affine = graph.node("Add", [graph.node("Mul", [dot, graph.constant(float(k.coef_lin))]),
                                    graph.constant(float(k.coef_const))])
        values = (graph.node("Pow", [affine, graph.constant(float(k.degree))]) if k.kernel == 1
                  else graph.node("Tanh", [affine]))
    else:
        raise UsageError(f"kernel type {k.kernel} (user-defined) cannot be exported")
    return graph.node("MatMul", [values, graph.constant(np.asarray(model.alphas, np.float64))])


def _fourier_scores(graph, x, model, width):
    """√(2/m) Σ_i w_i cos(ω_iᵀx + b_i) (rankfast.learners.kernel_approx' random Fourier features)."""
    omega = np.zeros((len(model.offset), width))
    shared = min(width, model.omega.shape[1])
    omega[:, :shared] = model.omega[:, :shared]
    phase = graph.node("Add", [graph.node("MatMul", [x, graph.constant(np.ascontiguousarray(omega.T))]),
                               graph.constant(model.offset)])
    features = graph.node("Mul", [graph.node("Cos", [phase]),
                                  graph.constant(float(np.sqrt(2.0 / len(model.offset))))])
    return graph.node("MatMul", [features, graph.constant(model.weights)])


def _version():
    from . import __version__
    return __version__


# ------------------------------------------------------------------ files

def export_bytes(model: Any, format: str, feature_names: Any = None, name: Any = DEFAULT_NAME) -> bytes:
    """The exported file's content (bytes) in ``format``: what rank_export writes."""
    if format == "onnx":
        return to_onnx(model, feature_names, name).SerializeToString()
    return to_json(model, format, feature_names, name).encode("utf-8")


def write(model: Any, path: str, format: str, feature_names: Any = None, name: Any = DEFAULT_NAME) -> None:
    """Write ``model`` in ``format`` to ``path``, atomically (nothing is left on an error).

    The whole content is built before the file is opened, so a model the
    format refuses creates no file.

    Parameters
    ----------
    model : LinearModel, KernelModel or rankfast.models.RFFModel
    path : str
        Where to write (a device such as /dev/stdout is written in place).
    format : {"onnx", "es-ltr", "opensearch-ltr", "solr-ltr", "ranklib"}
    feature_names : sequence of str, optional
    name : str

    Raises
    ------
    UsageError
        A model the format cannot hold, or too few feature names.
    MissingDependencyError
        ``onnx`` without the onnx package.
    InputError
        The file cannot be written.
    """
    content = export_bytes(model, format, feature_names, name)
    with atomic_output(path, "wb") as out:
        out.write(content)
