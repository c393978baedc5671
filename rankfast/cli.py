"""The programs' entry points: ``rank_learn`` and ``rank_classify``.

The console scripts and the launchers call learn_command and
classify_command; tests and Python callers call learn_main(argv) and
classify_main(argv), which return the exit status.  Each program is a module
of its own (learn_cli, classify_cli; export_cli is rank_export), and they
share the option grammar (cli_options), what is shown and how a run ends
(cli_output: streams, progress, signals, exit status) and the reading of
data files (cli_data).  The public names that lived here before the programs
had modules of their own are imported from those modules.
"""
from __future__ import annotations

from .classify_cli import (  # noqa: F401
    CLASSIFY_HELP,
    NOTE_BLOCK,
    classify_main,
    classify_summary,
    metrics_report,
    write_predictions,
)
from .cli_options import CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, GROUP_HELP, LEARN_OPTIONS, parse_args  # noqa: F401
from .cli_output import end_process
from .learn_cli import LEARN_HELP, SCALE_SPREAD_NOTE, learn_main  # noqa: F401


def learn_command() -> None:
    """The ``rank_learn`` program (console entry point): learn_main, then the process ends."""
    end_process(learn_main())


def classify_command() -> None:
    """The ``rank_classify`` program (console entry point): classify_main, then the process ends."""
    end_process(classify_main())
