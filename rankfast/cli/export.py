"""``rank_export``: a trained model in a search engine's or ONNX's format.

The third program, with rank_learn's and rank_classify's conventions (their
option grammar, ``-?``, ``--version``, exit status 1 for input errors and 2
for usage errors, atomic output), taken from rankfast.cli.options and
rankfast.cli.output.  The formats themselves are rankfast.export's.
"""
from __future__ import annotations

import sys

from .. import __version__
from ..errors import InputError, UsageError
from ..export import FORMATS
from .options import any_text, one_of_words, parse_args
from .output import end_process, run

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

EXPORT_HELP = f"""rank_export {__version__}: a model of rank_learn or svm_rank_learn for serving

   usage: rank_export --format FORMAT [options] model_file output_file

Arguments:
         model_file  -> model written by rank_learn or svm_rank_learn
                        ('-' reads standard input)
         output_file -> the exported model (replaced only once complete)
Options:
         -?, --help  -> this help (and -h)
         --version   -> print the version and exit
         --format onnx|es-ltr|opensearch-ltr|solr-ltr|ranklib
                     -> onnx: a graph from the dense float32 feature matrix
                           (n x d) to the scores (needs rankfast[onnx]);
                           linear, Nystrom (kernel) and random Fourier models,
                           --normalize query (one query's rows a call) and log
                        es-ltr, opensearch-ltr: the Learning to Rank plugin's
                           _createmodel request body (model/linear)
                        solr-ltr: Solr's LinearModel JSON
                        ranklib: RankLib's linear (Coordinate Ascent) model
                        These four take linear models only (a --normalize
                        zscore model is linear; query and log are not)
         --feature-names FILE
                     -> the engine's feature names, one a line in feature
                        index order (default: the indices 1, 2, ...)
         --name NAME -> the model's name in the engine (default: the model
                        file's name without its extension)
Nothing is printed on success.
"""

EXPORT_OPTIONS = {
    "--format": ("format", one_of_words(*FORMATS)),
    "--feature-names": ("feature_names", any_text),
    "--name": ("name", any_text),
}


def main(argv: Any = None) -> int:
    """``rank_export``: run it on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return run("rank_export", _export, argv, EXPORT_HELP)


def export_command() -> None:
    """The ``rank_export`` program (console entry point): main, then the process ends."""
    end_process(main())


def _export(argv):
    options, _, positional = parse_args(argv, EXPORT_OPTIONS, {}, 2, "rank_export")
    if len(positional) < 2:
        raise UsageError("not enough input parameters: "
                         "rank_export --format FORMAT [options] model_file output_file")
    if "format" not in options:
        raise UsageError(f"--format is required: one of {', '.join(FORMATS)}")
    if options.get("name") == "":
        raise UsageError("--name must not be empty")
    from .. import export
    from ..io.files import check_output
    from ..io.model_files import read_model
    model_path, output_path = positional
    format = options["format"]
    if format == "onnx":
        export.require_onnx()                     # before the work, not after it
    check_output(output_path, (model_path,))
    names_path = options.get("feature_names")
    names = export.read_feature_names(names_path) if names_path is not None else None
    model = read_model(model_path)
    if names is not None:
        try:
            export.feature_names_of(model, names)    # too few names: the names file's fault
        except UsageError as exc:
            raise InputError(names_path, None, f"{exc} (model {model_path})") from None
    name = options.get("name") or export.default_name(model_path)
    try:
        export.write(model, output_path, format, names, name)
    except UsageError as exc:                     # the format cannot hold this model
        raise UsageError(f"{model_path}: {exc}") from None
    return 0
