"""The programs: ``rank_learn``, ``rank_classify`` and ``rank_export``; and for clicks
``svm_proprank_learn``, ``svm_proprank_classify`` and ``rank_simulate_clicks``.

Each program is a module with a ``main(argv) -> int`` (learn.learn_main,
classify.classify_main, export.main); they share the option grammar (options),
what is shown and how a run ends (output: streams, progress, signals, exit
status), the reading of data files (data) and the table of learners behind
``-a`` (learners).  Only this package knows flag names or ends the process.
The console scripts and the launchers call the ``*_command`` functions below,
which import their program on first use, so that starting one program does not
import the others.
"""
import sys


def _main(module: str, name: str, program: str):
    """The main function ``name`` of the program module ``module``; Ctrl-C while it imports
    ends the process with one line and status 130, as a run interrupted later does."""
    import importlib
    try:
        return getattr(importlib.import_module(f".{module}", __name__), name)
    except KeyboardInterrupt:
        sys.stderr.write(f"{program}: interrupted\n")
        raise SystemExit(130) from None


def learn_command() -> None:
    """The ``rank_learn`` program (console entry point): learn_main, then the process ends."""
    main = _main("learn", "learn_main", "rank_learn")
    from .output import end_process
    end_process(main())


def classify_command() -> None:
    """The ``rank_classify`` program (console entry point): classify_main, then the process ends."""
    main = _main("classify", "classify_main", "rank_classify")
    from .output import end_process
    end_process(main())


def proprank_learn_command() -> None:
    """``svm_proprank_learn`` (console entry point): rank_learn -a svmrank --clicks, under its
    own name (learn.proprank_learn_main), then the process ends."""
    main = _main("learn", "proprank_learn_main", "svm_proprank_learn")
    from .output import end_process
    end_process(main())


def proprank_classify_command() -> None:
    """``svm_proprank_classify`` (console entry point): rank_classify --clicks with
    svm_proprank's output (classify.proprank_classify_main), then the process ends."""
    main = _main("classify", "proprank_classify_main", "svm_proprank_classify")
    from .output import end_process
    end_process(main())


def simulate_command() -> None:
    """``rank_simulate_clicks`` (console entry point): clicks.simulate_main, then the process
    ends."""
    main = _main("clicks", "simulate_main", "rank_simulate_clicks")
    from .output import end_process
    end_process(main())
