"""rank_learn and rank_classify together: learning then classifying, svm_rank's edge cases
replayed through both programs, and what both programs share (group files, notes, help)."""

import dataclasses
import gzip
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from data_makers import raw_scale_features as _raw_scale_features
from program_runs import launch
from shared_paths import DATA, REFERENCE, require

from rankfast import KernelApproxLearner, KernelParams, RankSVM, load_svmlight, read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

PROPS_EXAMPLE3 = "5 features, 3 rankings, 12 examples"


PROPS_2_2_4 = "2 features, 2 rankings, 4 examples"


LONG_NAME = "m" * 250 + ".dat"


CHECKOUT = Path(__file__).resolve().parents[1]


RBF = KernelParams(2, gamma=0.5)


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


SYNTHETIC = [(kind, c) for kind in ("dense", "sparse") for c in ("0.01", "1", "20")]


EXAMPLE3 = REFERENCE / "example3"


def test_learn_then_classify_on_examples(tmp_path, capsys):
    model = tmp_path / "model.dat"
    assert learn_main(["-c", "0.01", str(EXAMPLES / "train.dat"), str(model)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reading training examples...done\n"
                          "Training set properties: 20 features, 120 rankings, 2666 examples\n")
    assert re.search(r"^Iter 1: ", out, re.M) and out.endswith("Writing learned model...done\n")
    text = model.read_text()
    assert text.startswith("SVM-light Version V6.20\n0 # kernel type\n")
    assert "21 # highest feature index \n2666 # number of training documents \n" in text
    assert re.search(r"#rankfast version=\S+ algorithm=prsvm C=0.01 l=1 e=0.001\n$", text)
    preds = tmp_path / "preds"
    assert classify_main([str(EXAMPLES / "test.dat"), str(model), str(preds)]) == 0
    loss = float(re.search(r"Average loss on test set: ([0-9.]+)", capsys.readouterr().out).group(1))
    assert loss < 0.12
    assert len(preds.read_text().splitlines()) == 987


def test_default_output_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert learn_main(["-v", "0", str(EXAMPLES / "train.dat")]) == 0
    assert classify_main(["-v", "0", str(EXAMPLES / "test.dat"), "svm_struct_model"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["svm_predictions", "svm_struct_model"]


def test_help_exits_0(capsys):
    assert learn_main(["-?"]) == 0 and "usage: rank_learn" in capsys.readouterr().out
    assert classify_main(["-h"]) == 0 and "usage: rank_classify" in capsys.readouterr().out


def test_examples_are_reproducible(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLES / "make_examples.py"), str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("train.dat", "test.dat", "features.txt"):
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes()


PROGRAMS = {  # svm_rank's program -> (rankfast's entry point, its name, the files it reads)
    "svm_rank_learn": (learn_main, "rank_learn", ("train.dat",)),
    "svm_rank_classify": (classify_main, "rank_classify", ("test.dat", "model.dat")),
}


# Lines svm_rank_classify prints at -y 3 from SVM-light's own reader (no rankfast twin).
SVM_LIGHT_CHATTER = re.compile(r"Reading model\.\.\.OK\. \(\d+ support vectors read\)\n"
                               r"|Scanning examples\.\.\.done\n"
                               r"|Reading examples into memory\.\.\.OK\. \(\d+ examples read\)\n")


@dataclasses.dataclass(frozen=True)
class Trained:
    """rank_learn succeeds.

    props: "N features, Q rankings, M examples" where svm_rank printed none
    (None: the line svm_rank printed).  notes: None means stderr stays empty;
    a tuple means stderr holds only "rank_learn: note:" lines, mentioning each
    string.  c: the C the model must record (where the command's parsing is
    the point).
    """

    props: Optional[str] = None
    notes: Optional[tuple[str, ...]] = None
    model: str = "model.dat"
    c: Optional[float] = None
    as_good_as_svm_rank: bool = True


@dataclasses.dataclass(frozen=True)
class Classified:
    """rank_classify succeeds.

    Predictions must equal svm_rank's bytes; where svm_rank wrote none, those
    of ``twin`` (a case with the same model and documents), and stdout must
    hold the ``summary`` lines.  notes: as for Trained.
    """

    output: str = "predictions"
    twin: Optional[str] = None
    summary: tuple[str, ...] = ()
    notes: Optional[tuple[str, ...]] = None


@dataclasses.dataclass(frozen=True)
class DataError:
    """Exit 1: one stderr line naming ``file``, its 1-based ``line`` and the quoted ``token``."""

    file: str
    line: int
    token: str


@dataclasses.dataclass(frozen=True)
class FileError:
    """Exit 1: a file cannot be opened or written; one stderr line naming it."""

    file: str


@dataclasses.dataclass(frozen=True)
class Usage:
    """Exit 2: one stderr message mentioning ``mentions``, then the "Try ..." hint."""

    mentions: str


EXPECTED = {
    # ---------------------------------------------------------------- data files, rank_learn
    "all_equal_labels_query": (0, Trained(), "copy: a query whose documents share one label "
                               "adds no pairs; the other query is learned"),
    "blank_line_end": (0, Trained(PROPS_2_2_4), "forgive: svm_rank stops at a trailing blank "
                       "line ('Parsing error in line 4'); an empty line holds no document"),
    "blank_line_middle": (0, Trained(PROPS_2_2_4), "forgive: svm_rank stops at a blank line "
                          "between queries; an empty line holds no document"),
    "comment_lines": (0, Trained(), "copy: whole-line and trailing '#' comments are skipped"),
    "crlf_endings": (0, Trained(), "copy: CRLF line ends are read as svm_rank reads them"),
    "empty_file": (1, FileError("train.dat"), "stricter: svm_rank trains an all-zero model "
                   "from an empty file; rankfast says the file has no documents"),
    "feat_decreasing": (1, DataError("train.dat", 1, "1:2"), "copy: svm_rank stops too "
                        "(indices must increase); rankfast's one line names file, line, token"),
    "feat_duplicate": (1, DataError("train.dat", 1, "1:2"), "copy: a repeated index stops "
                       "svm_rank too; rankfast's one line names file, line, token"),
    "feat_empty_value": (1, DataError("train.dat", 1, "1:"), "copy: '1:' has no value; "
                         "svm_rank stops too, rankfast names file, line, token"),
    "feat_hex_sci": (0, Trained(), "copy: values are read as strtod reads them "
                     "(0x10, 1e-1, 1E+0, .5, -0, +2)"),
    "feat_huge_index": (0, Trained("100000000 features, 1 rankings, 2 examples"),
                        "forgive: index 100,000,000 is over svm_rank's compiled MAXFEATNUM; "
                        "rankfast takes indices up to 2^31-1 and stays sparse"),
    "feat_max_index": (0, Trained(), "copy: index 99,999,999 (svm_rank's limit) trains "
                       "without a dense 10^8 vector"),
    "feat_nan_inf": (1, DataError("train.dat", 1, "1:nan"), "stricter: svm_rank trains on nan "
                     "and inf and writes a meaningless model; rankfast refuses the first one"),
    "feat_negative_index": (1, DataError("train.dat", 1, "-1:1"), "copy: svm_rank stops too "
                            "(indices start at 1); rankfast names file, line, token"),
    "feat_nonnumeric_value": (1, DataError("train.dat", 1, "1:abc"), "copy: svm_rank stops "
                              "too; rankfast names file, line, token"),
    "feat_space_colon": (1, DataError("train.dat", 1, "1"), "copy: '1 : 2' is three tokens, "
                         "none index:value; svm_rank stops too"),
    "feat_trailing_garbage": (1, DataError("train.dat", 1, "1:0.5abc"), "copy: a value with "
                              "trailing garbage stops svm_rank too"),
    "feat_zero_index": (1, DataError("train.dat", 1, "0:1"), "copy: index 0 stops svm_rank "
                        "too (indices start at 1)"),
    "indented_comment_line": (0, Trained(PROPS_2_2_4), "forgive: svm_rank stops at a comment "
                              "line that starts with blanks; it is still a comment"),
    "leading_whitespace": (0, Trained(), "copy: blanks and tabs before the target are skipped"),
    "long_comment": (0, Trained(), "copy: a very long trailing comment is skipped"),
    "long_line_200k_features": (0, Trained(), "copy: a line with 200,000 features (stored "
                                "gzipped in the reference; decompressed for the run)"),
    "long_token": (0, Trained(), "copy: a value written with hundreds of digits is read by "
                   "strtod"),
    "lossfrac_all_equal_labels": (0, Trained(), "copy: -l 2 (fraction of swapped pairs) with "
                                  "a query that has no pairs"),
    "no_features": (0, Trained(), "copy: a document without features is the zero vector"),
    "no_trailing_newline": (0, Trained("5 features, 2 rankings, 4 examples"), "forgive: "
                            "svm_rank misreads a long last line without newline and stops "
                            "('qid not increasing, line 4'); rankfast reads the line"),
    "no_trailing_newline_short": (0, Trained(), "copy: a short last line without newline"),
    "ok_baseline": (0, Trained(), "copy: plain, well-formed data"),
    "only_comments": (1, FileError("train.dat"), "stricter: a file of comments has no "
                      "documents; svm_rank trains an all-zero model, rankfast refuses"),
    "qid_after_features": (0, Trained(), "copy: a qid token after the features is still the "
                           "line's qid"),
    "qid_float": (1, DataError("train.dat", 1, "qid:1.5"), "copy: a fractional qid stops "
                  "svm_rank too; rankfast names file, line, token"),
    "qid_gaps": (0, Trained(), "copy: qids need not be consecutive numbers"),
    "qid_missing_all": (0, Trained(notes=("train.dat", "one ranking")), "copy: no qid at all "
                        "means qid 0: one ranking (with a note, as no .query file groups it)"),
    "qid_missing_first": (0, Trained(), "copy: lines without qid (qid 0) before qid 2"),
    "qid_missing_later": (0, Trained(PROPS_2_2_4), "forgive: qid 1 then lines without qid "
                          "(qid 0): decreasing qids stop svm_rank; each query's lines are "
                          "contiguous, so no note"),
    "qid_negative": (1, DataError("train.dat", 1, "qid:-1"), "copy: svm_rank stops on a "
                     "negative qid too, without naming the line; rankfast names it"),
    "qid_noncontiguous": (0, Trained(PROPS_2_2_4, notes=("train.dat", "not contiguous")),
                          "forgive: qids 1,2,1,2 stop svm_rank; rankfast groups each query's "
                          "lines and says so on stderr"),
    "qid_unsorted": (0, Trained(PROPS_2_2_4), "forgive: decreasing but contiguous qids (2,2,"
                     "1,1) stop svm_rank; the order of queries does not matter"),
    "qid_zero": (0, Trained(), "copy: qid 0 is a query like any other"),
    "sid_cost_tokens": (0, Trained(), "copy: sid: and cost: tokens are accepted"),
    "single_doc_query": (0, Trained(), "copy: a query with one document adds no pairs"),
    "tabs_separators": (0, Trained(), "copy: tabs separate tokens like blanks"),
    "target_float": (0, Trained(), "copy: real-valued targets (0.5, -1.5, 1e1, +2)"),
    "target_missing": (1, DataError("train.dat", 1, "qid:1"), "copy: a line must start with "
                       "its target; svm_rank stops too, rankfast names file, line, token"),
    "target_nonnumeric": (1, DataError("train.dat", 2, "abc"), "stricter: svm_rank reuses the "
                          "previous line's label for 'abc' (its output equals the control "
                          "case's); rankfast refuses it"),
    "target_nonnumeric_control": (0, Trained(), "copy: the control for target_nonnumeric "
                                  "(labels 3,3,1: what svm_rank silently trained on there)"),
    "target_nonnumeric_first": (1, DataError("train.dat", 1, "abc"), "stricter: svm_rank "
                                "takes 'abc' on the first line as some label and trains; "
                                "rankfast refuses it"),
    "whitespace_only_line": (0, Trained(PROPS_2_2_4), "forgive: svm_rank stops at a line of "
                             "blanks and tabs; it holds no document"),

    # ---------------------------------------------------------------- rank_learn options
    "opt_after_positional": (0, Trained(PROPS_EXAMPLE3, c=3.0), "forgive: options are read "
                             "anywhere on the line; svm_rank stops reading options at the "
                             "first file name and then asks for -c"),
    "opt_alphafile": (0, Trained(notes=("-a alphas.txt",)), "copy, with a note: -a names "
                      "svm_rank's alpha file; rankfast trains the default learner and says "
                      "that it writes no alphas (alphas.txt must not appear)"),
    "opt_c_attached": (0, Trained(PROPS_EXAMPLE3, c=3.0), "forgive: -c3 means -c 3; svm_rank "
                       "takes train.dat as C's value and model.dat as the training file"),
    "opt_c_last_no_value": (2, Usage("-c"), "usage: -c without a value (svm_rank crashes, 139)"),
    "opt_c_negative": (2, Usage("-c"), "usage: C must be > 0 (svm_rank prints its help, rc 0)"),
    "opt_c_nonnumeric": (2, Usage("-c"), "usage: -c abc is not a number (svm_rank reads C=0 "
                         "and crashes, 139)"),
    "opt_c_zero": (2, Usage("-c"), "usage: C must be > 0 (svm_rank crashes, 139)"),
    "opt_custom_double_dash": (2, Usage("--b"), "usage: unknown option --b (svm_rank prints "
                               "its help, rc 0)"),
    "opt_dash_alone": (2, Usage("model.dat"), "usage: '-' is standard input here, so "
                       "'- train.dat model.dat' is one file too many (svm_rank: unknown "
                       "option '-', help, rc 0)"),
    "opt_e0": (2, Usage("-e"), "usage: epsilon must be > 0 (svm_rank prints its help, rc 0)"),
    "opt_e_small": (0, Trained(), "copy: a tiny epsilon is valid"),
    "opt_extra_positional": (2, Usage("extra.dat"), "usage: a third file name is an error "
                             "(svm_rank silently ignores it)"),
    "opt_h0": (2, Usage("-h"), "usage: -h 0 is out of range (svm_rank prints its help)"),
    "opt_l0": (2, Usage("-l"), "usage: -l accepts 1 or 2 (svm_rank fails at runtime, rc 1)"),
    "opt_l2": (0, Trained(), "copy: -l 2, the fraction of swapped pairs per query"),
    "opt_l3": (2, Usage("-l"), "usage: -l accepts 1 or 2 (svm_rank fails at runtime, rc 1)"),
    "opt_long_path": (0, Trained(model=LONG_NAME), "copy: a 254-character model file name"),
    "opt_maxiter": (0, Trained(as_good_as_svm_rank=False, notes=("stopped before its "
                                                                 "tolerance",)),
                    "copy, with rankfast's meaning: -# caps the learner's iterations "
                    "(svm_rank's caps its QP subproblems), so a model after one Newton step "
                    "need not match svm_rank's converged one, and a note says so"),
    "opt_missing_train": (1, FileError("nonexist.dat"), "copy: a missing training file; one "
                          "line naming it"),
    "opt_no_args": (2, Usage("not enough"), "usage: no training file (svm_rank prints its "
                    "help, rc 0)"),
    "opt_no_c": (0, Trained(PROPS_EXAMPLE3, c=0.01), "forgive: svm_rank's help gives -c a "
                 "default of 0.01 but the program refuses to run without -c; rankfast uses "
                 "that default"),
    "opt_no_model_arg": (0, Trained(model="svm_struct_model"), "copy: the model goes to "
                         "svm_struct_model by default"),
    "opt_o1": (2, Usage("-o 1"), "usage: slack rescaling is not available for ranking "
               "(svm_rank fails at runtime, rc 1)"),
    "opt_o3": (2, Usage("-o"), "usage: -o accepts 1 or 2 (svm_rank prints its help)"),
    "opt_p2": (0, Trained(notes=("-p",)), "copy, with a note: -p 2 is accepted; the learner "
               "fixes its own loss and says so"),
    "opt_p3": (2, Usage("-p"), "usage: -p accepts 1 or 2 (svm_rank prints its help)"),
    "opt_q1": (2, Usage("-q"), "usage: -q must be at least 2 (svm_rank prints its help)"),
    "opt_t1": (0, Trained(), "copy: a polynomial kernel (-t 1 -d 2 -s 1 -r 1), learned by "
               "Nyström approximation (svm_rank trains the exact kernel)"),
    "opt_t2": (0, Trained(), "copy: an RBF kernel (-t 2 -g 0.5), learned by Nyström "
               "approximation"),
    "opt_t2_w4": (0, Trained(notes=("-w",)), "copy, with a note: RBF kernel; -w 4 only tunes "
                  "svm_rank's QP solver"),
    "opt_t3": (0, Trained(), "copy: a sigmoid kernel (-t 3 -s 0.1 -r 0), learned by Nyström "
               "approximation (negative eigenvalues of the landmark matrix dropped)"),
    "opt_t4": (2, Usage("-t 4"), "usage: a user-defined kernel (-t 4) cannot be supported "
               "(svm_rank trains with its compiled-in stub)"),
    "opt_unknown": (2, Usage("-z"), "usage: unknown option -z (svm_rank prints its help, rc 0)"),
    "opt_unwritable_model": (1, FileError("/nonexistent_dir/model.dat"), "copy: the model "
                             "cannot be written; one line naming it, no partial file"),
    "opt_v0": (0, Trained(), "copy: -v 0 still prints the training set properties"),
    "opt_v2": (0, Trained(), "copy: -v 2"),
    "opt_v3": (0, Trained(), "copy: -v 3"),
    "opt_verbose_word": (2, Usage("-v"), "usage: a value may be attached to a one-letter flag "
                         "(-c3), so -verbose is -v with the value 'erbose'; svm_rank looks "
                         "only at the letter and reads the next word as -v's value"),
    "opt_w0": (0, Trained(notes=("-w",)), "copy: -w 0 only picks svm_rank's QP algorithm: "
               "accepted and ignored"),
    "opt_w0_p2": (0, Trained(notes=("-w", "-p")), "copy: -w 0 -p 2, both accepted and ignored"),
    "opt_w1": (0, Trained(notes=("-w",)), "copy: -w 1 accepted and ignored"),
    "opt_w2": (0, Trained(notes=("-w",)), "copy: -w 2 accepted and ignored"),
    "opt_w4": (0, Trained(notes=("-w",)), "copy: -w 4 accepted and ignored"),
    "opt_w5": (2, Usage("-w"), "usage: -w 5 is not an algorithm (svm_rank fails, rc 1)"),
    "opt_w6": (2, Usage("-w"), "usage: -w 6 is not an algorithm (svm_rank prints its help)"),
    "opt_w9": (0, Trained(PROPS_EXAMPLE3, notes=("-w",)), "forgive: -w 9 (svm_rank's custom "
               "algorithm stub crashes, 139) is accepted and ignored"),
    "opt_y1": (0, Trained(), "copy: -y 1 (SVM-light's verbosity) is accepted"),

    # ---------------------------------------------------------------- rank_classify
    "cls_all_zero_labels": (0, Classified(), "copy: all labels equal, no pairs, same summary"),
    "cls_custom_opt": (2, Usage("--b"), "usage: unknown option --b (svm_rank prints a "
                       "message, rc 0)"),
    "cls_default_outname": (0, Classified("svm_predictions"), "copy: predictions go to "
                            "svm_predictions by default"),
    "cls_empty_file": (1, FileError("test.dat"), "stricter: an empty test file is refused "
                       "(svm_rank writes an empty prediction file and a '-nan' summary)"),
    "cls_extra_features": (0, Classified(), "copy: test features above the model's highest "
                           "index are ignored"),
    "cls_missing_model": (1, FileError("model.dat"), "copy: a missing model file; one line "
                          "naming it"),
    "cls_missing_test": (1, FileError("test.dat"), "copy: a missing test file; one line "
                         "naming it"),
    "cls_mixed": (0, Classified(), "copy: one query ranked right, one reversed"),
    "cls_no_qid": (0, Classified(notes=("test.dat", "one ranking")),
                   "copy: test lines without qid form one query (with a note, as no .query "
                   "file groups them)"),
    "cls_not_enough_args": (2, Usage("not enough"), "usage: no model file given (svm_rank "
                            "prints its help, rc 0)"),
    "cls_ties": (0, Classified(), "copy: tied scores are counted as svm_rank counts them"),
    "cls_unknown_opt": (2, Usage("-z"), "usage: unknown option -z (svm_rank prints its help, "
                        "rc 0)"),
    "cls_unsorted_qid": (0, Classified(
        twin="cls_default_outname/svm_predictions",
        summary=("Zero/one-error on test set: 0.00% (2 correct, 0 incorrect, 2 total)",
                 "Total Num Swappedpairs  :      0")),
        "forgive: qids 5,5,4,4 stop svm_rank; the documents are those of cls_default_outname "
        "under the same model, so the predictions are its bytes"),
    "cls_unwritable_pred": (1, FileError("/nonexistent_dir/predictions"), "copy: the "
                            "predictions cannot be written; one line naming the file"),
    "cls_verbosity0": (0, Classified(), "copy: -v 0 prints only the NOTE and pair counts"),
    "cls_verbosity3": (0, Classified(), "copy: -v 3 -y 3; stdout equal but for SVM-light's "
                       "own reader lines"),
    "cls_version_mismatch": (1, DataError("model.dat", 1, "SVM-light Version V6.02"), "copy: "
                             "a V6.02 model file is refused; rankfast names file, line 1 and "
                             "the version line"),
}


BUGS = {  # case -> why its row fails today (pytest.mark.xfail(strict=True))
}


def _params():
    return [pytest.param(case, id=case, marks=[pytest.mark.xfail(strict=True, reason=BUGS[case])]
                         if case in BUGS else []) for case in EXPECTED]


@pytest.fixture(scope="module")
def edge_cases(svm_rank_reference):
    path = svm_rank_reference / "edge_cases"
    if not path.is_dir():
        pytest.skip(f"{path} not found")
    return path


def test_table_covers_every_case(edge_cases):
    on_disk = {p.name for p in edge_cases.iterdir() if p.is_dir()}
    assert sorted(on_disk - set(EXPECTED)) == [], "edge cases without a row in EXPECTED"
    assert sorted(set(EXPECTED) - on_disk) == [], "rows in EXPECTED without a case directory"
    assert set(BUGS) <= set(EXPECTED)


def test_table_rows_are_consistent():
    rc_of = {Trained: 0, Classified: 0, DataError: 1, FileError: 1, Usage: 2}
    for case, (rc, check, reason) in EXPECTED.items():
        assert rc == rc_of[type(check)], case
        assert reason.split(":")[0].split(",")[0] in ("copy", "forgive", "stricter", "usage",
                                                       "usage for now"), case


@pytest.mark.parametrize("case", _params())
def test_edge_case(case, edge_cases, tmp_path, monkeypatch, capsys):
    expected_rc, check, _ = EXPECTED[case]
    reference = edge_cases / case
    words = shlex.split((reference / "cmd.txt").read_text())
    main, program, inputs = PROGRAMS[words[0]]
    argv = words[1:]
    copied = _copy_inputs(reference, inputs, tmp_path)
    if any(word.startswith("/nonexistent_dir/") for word in argv):
        assert not os.path.exists("/nonexistent_dir"), "the case needs /nonexistent_dir absent"

    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    out, err = capsys.readouterr()
    created = sorted(set(os.listdir(tmp_path)) - set(copied))

    assert "Traceback" not in err and "Traceback" not in out
    assert rc == expected_rc, f"exit status {rc}, stderr: {err!r}"
    if isinstance(check, Trained):
        _check_trained(check, reference, tmp_path, out, err, created)
    elif isinstance(check, Classified):
        _check_classified(check, reference, edge_cases, tmp_path, out, err, created)
    else:
        assert created == [], f"a failed run left files behind: {created}"
        lines = err.splitlines()
        if isinstance(check, Usage):
            assert len(lines) == 2, err
            assert lines[0].startswith(f"{program}: ") and check.mentions in lines[0], err
            assert lines[1].startswith(f"Try '{program} "), err
            assert out == "", "usage errors print no help on stdout"
        else:
            assert len(lines) == 1, err
            assert lines[0].startswith(f"{program}: ") and check.file in lines[0], err
        if isinstance(check, DataError):
            assert f"{check.file}:{check.line}:" in lines[0], err
            assert re.search(rf"['\"]{re.escape(check.token)}['\"]", lines[0]), err


def _copy_inputs(reference, names, destination):
    """Copy the files the program reads (decompressing a reference's name.gz) into destination."""
    copied = []
    for name in names:
        if (reference / name).exists():
            shutil.copyfile(reference / name, destination / name)
        elif (reference / (name + ".gz")).exists():
            packed = (reference / (name + ".gz")).read_bytes()
            (destination / name).write_bytes(gzip.decompress(packed))
        else:
            continue
        copied.append(name)
    return copied


def _check_notes(check, program, err):
    if check.notes is None:
        assert err == ""
    else:
        assert all(line.startswith(f"{program}: note: ") for line in err.splitlines()), err
        for note in check.notes:
            assert note in err, err


def _check_trained(check, reference, tmp_path, out, err, created):
    assert created == [check.model], f"files written: {created}"
    _check_notes(check, "rank_learn", err)

    props = ("Training set properties: " + check.props if check.props is not None
             else _reference_props(reference))
    assert props in out.splitlines()

    model = read_model(str(tmp_path / check.model))
    if check.c is not None:
        assert float(model.metadata["C"]) == check.c
    train = load_svmlight(str(tmp_path / "train.dat"))
    errors, pairs = _ranking_errors(model.predict(train.X), train.y, train.qid)
    assert errors <= pairs / 2, f"{errors} of {pairs} training pairs misordered"
    reference_model = reference / check.model
    if check.as_good_as_svm_rank and _reference_rc(reference) == 0 and reference_model.exists():
        theirs, _ = _ranking_errors(read_model(str(reference_model)).predict(train.X),
                                    train.y, train.qid)
        assert errors <= theirs, (f"{errors} of {pairs} training pairs misordered, "
                                  f"svm_rank's model: {theirs}")


def _check_classified(check, reference, edge_cases, tmp_path, out, err, created):
    assert created == [check.output], f"files written: {created}"
    _check_notes(check, "rank_classify", err)
    predictions = (tmp_path / check.output).read_bytes()
    if _reference_rc(reference) == 0:
        assert predictions == (reference / check.output).read_bytes()
        assert _comparable(out) == _comparable((reference / "stdout.txt").read_text())
    else:
        assert predictions == (edge_cases / check.twin).read_bytes()
        for line in check.summary:
            assert line in out.splitlines()


def _reference_props(reference):
    lines = [line for line in (reference / "stdout.txt").read_text().splitlines()
             if line.startswith("Training set properties: ")]
    assert len(lines) == 1, "svm_rank printed no properties line: give them in the row"
    return lines[0]


def _reference_rc(reference):
    return int((reference / "rc.txt").read_text())


def _comparable(stdout):
    """stdout without the Runtime line and SVM-light's reader lines (-y 3)."""
    return [line for line in SVM_LIGHT_CHATTER.sub("", stdout).splitlines()
            if not line.startswith("Runtime")]


def _ranking_errors(scores, labels, qid):
    """(misordered pairs, pairs) over documents of one query with different labels.

    A pair whose scores tie counts half.
    """
    errors, pairs = 0.0, 0
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        s, y = scores[rows], labels[rows]
        above = y[:, None] > y[None, :]
        pairs += int(above.sum())
        errors += float((above & (s[:, None] < s[None, :])).sum())
        errors += 0.5 * float((above & (s[:, None] == s[None, :])).sum())
    return errors, pairs


def run_limited(program, *args, cwd, limit=3 << 29):
    """Run a launcher of the checkout with its address space capped at ``limit`` bytes (1.5 GB)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run([sys.executable, str(CHECKOUT / program), *map(str, args)],
                          cwd=cwd, preexec_fn=cap, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(CHECKOUT), OPENBLAS_NUM_THREADS="1",
                                   OMP_NUM_THREADS="1"))     # BLAS threads reserve memory too


def test_huge_feature_index_trains_and_classifies_in_little_memory(tmp_path):
    """Nothing is allocated per possible feature index: 2**31 − 1 scores as 3 would."""
    lines = "3 qid:1 1:1 {big}:1\n2 qid:1 1:0 2:1\n1 qid:2 1:1\n2 qid:2 2:1\n"
    predictions = []
    for big in (2**31 - 1, 3):
        data, model, pred = (tmp_path / f"{name}{big}" for name in ("data", "model", "pred"))
        data.write_text(lines.format(big=big))
        learn = run_limited("rank_learn", "-v", "0", "-t", "2", "-c", "1", data, model, cwd=tmp_path)
        assert learn.returncode == 0, learn.stderr
        classify = run_limited("rank_classify", "-v", "0", data, model, pred, cwd=tmp_path)
        assert classify.returncode == 0, classify.stderr
        assert model.read_text().split("\n")[7].split()[0] == str(big + 1)
        predictions.append(pred.read_text())
    assert predictions[0] == predictions[1]
    rff = run_limited("rank_learn", "-t", "2", "--approx", "rff", tmp_path / f"data{2**31 - 1}",
                      tmp_path / "rff", cwd=tmp_path)
    assert rff.returncode == 1 and "500 x 2147483647 omega matrix" in rff.stderr, rff.stderr
    assert not (tmp_path / "rff").exists()


def _raw_ranking_files(tmp_path, rng, n_queries=12, per_query=15):
    """Training and test files of raw-scale features whose relevance is not linear in them."""
    from rankfast import dump_svmlight
    paths = []
    for name in ("train", "test"):
        X = _raw_scale_features(rng, n_queries * per_query)
        X[:, 0] *= rng.uniform(0.1, 10, n_queries).repeat(per_query)      # scales vary by query
        y = np.round(2 * np.sin(3 * X[:, 1]) + (X[:, 2] > 25)).clip(0, 3)
        path = tmp_path / f"{name}.dat"
        dump_svmlight(X, y, np.repeat(np.arange(n_queries), per_query), str(path))
        paths.append(path)
    return paths


@pytest.mark.parametrize("approx", ["nystrom", "rff"])
@pytest.mark.parametrize("kind", ["query", "log"])
def test_normalize_with_a_kernel_scores_as_the_normalised_files_would(tmp_path, kind, approx):
    """--normalize query|log with -t 2: the model records it, and rank_classify on the raw test
    file scores as the model trained on normalised files scores the normalised test file."""
    from rankfast import dump_svmlight
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    from rankfast.data.normalize import Normalizer
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(7))
    flags = ["-v", "0", "-t", "2", "-g", "0.5", "-c", "1", "--approx", approx, "--landmarks", "40"]
    assert learn_main(flags + ["--normalize", kind, str(train), str(tmp_path / "m")]) == 0
    model_text = (tmp_path / "m").read_text()
    assert f"normalize={kind}" in model_text
    if approx == "nystrom":                      # svm_rank's users are told it is not theirs
        assert f"rankfast normalize={kind}: only rank_classify applies this model" in model_text
    for name, source in (("train", train), ("test", test)):
        data = load_svmlight(str(source), dtype=np.float32)
        scaled = Normalizer(kind).transform(data.X, data.qid)
        dump_svmlight(scaled, data.y, data.qid, str(tmp_path / f"{name}_scaled.dat"))
    assert learn_main(flags + [str(tmp_path / "train_scaled.dat"), str(tmp_path / "m_scaled")]) == 0
    assert classify_main(["-v", "0", str(test), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    assert classify_main(["-v", "0", str(tmp_path / "test_scaled.dat"), str(tmp_path / "m_scaled"),
                          str(tmp_path / "p_scaled")]) == 0
    ours, theirs = np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_scaled")
    assert np.ptp(ours) > 0                                      # a model that ranks
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * np.abs(theirs).max())
    model = read_model(str(tmp_path / "m"))
    data = load_svmlight(str(test))
    np.testing.assert_allclose(model.predict(data.X, data.qid), ours, rtol=1e-6, atol=1e-8)  # %.8f
    if kind == "query":
        with pytest.raises(ValueError, match="pass qid"):
            model.predict(data.X)


def test_normalising_kernel_models_ignore_features_above_their_width(tmp_path):
    """A test file naming feature 2**31 - 1 (negative: a query's columns would be made dense)."""
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(9))
    lines = test.read_text().splitlines()
    wide = tmp_path / "wide.dat"
    wide.write_text("".join(line + (" 2147483647:-1\n" if i % 2 else "\n")
                            for i, line in enumerate(lines)))
    for approx in ("nystrom", "rff"):
        model = tmp_path / f"m_{approx}"
        assert learn_main(["-v", "0", "-t", "2", "-g", "0.5", "--approx", approx, "--landmarks",
                           "30", "--normalize", "query", str(train), str(model)]) == 0
        for name, data in (("p", test), ("p_wide", wide)):
            assert classify_main(["-v", "0", str(data), str(model), str(tmp_path / name)]) == 0
        np.testing.assert_array_equal(np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_wide"))
        first = model.read_text().splitlines()[0]
        assert first == ("rankfast RFF model V2" if approx == "rff" else "SVM-light Version V6.20")
    X = load_svmlight(str(train))
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30, normalize="query").fit(
        X.X, X.y, X.qid)
    W = load_svmlight(str(wide))
    T = load_svmlight(str(test))
    np.testing.assert_array_equal(ranker.predict(W.X, W.qid), ranker.predict(T.X, T.qid))


def test_both_programs_say_which_figures_no_ranking_could_change(tmp_path, capsys):
    """Queries of 4 documents with graded labels 1-3: LETOR's NDCG@10 is 0 and P@10, MAP and MRR
    are 1 whatever the model.  rank_learn chooses C by pair accuracy and says why;
    rank_classify --metrics prints the figures and a note on each group of alike ones."""
    rng = np.random.default_rng(3)
    lines = []
    for q in range(40):
        for _ in range(4):
            x = rng.normal(size=3)
            label = 1 + int(np.clip(np.round(x[0] + 0.5 * rng.normal()), 0, 2))
            lines.append(f"{label} qid:{q} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    train = tmp_path / "train.dat"
    train.write_text("\n".join(lines) + "\n")
    assert learn_main(["-c", "0.001,1,1000", str(train), str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert ("rank_learn: note: NDCG@10 (LETOR) is the same for every ranking of the held-out "
            "queries: every query has fewer than 10 documents") in captured.err
    assert "chosen by pair accuracy" in captured.out
    assert classify_main(["--metrics", "--ndcg-at", "3,10", str(train), str(tmp_path / "m"),
                          str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    assert "NDCG@10 (LETOR): 0.0000" in captured.out and "MAP: 1.0000" in captured.out
    notes = [line for line in captured.err.splitlines() if "is the same" in line or
             "are the same" in line]
    assert notes == [
        "rank_classify: note: NDCG@10 (LETOR) is the same for every ranking of these 40 queries: "
        "every query has fewer than 10 documents (LETOR's NDCG@10 scores such a query 0; the "
        "standard convention evaluates it over its whole list)",
        "rank_classify: note: P@3, P@10, MAP and MRR are the same for every ranking of these 40 "
        "queries: every query has only relevant documents (label > 0)"]
    assert classify_main(["--metrics", "--ndcg", "standard", str(train), str(tmp_path / "m"),
                          str(tmp_path / "p")]) == 0
    assert "NDCG@10 (standard)" not in capsys.readouterr().err          # it can tell models apart


@pytest.mark.parametrize("kind, c", SYNTHETIC)
def test_test_loss_is_at_most_svm_rank_plus_0_002(tmp_path, capsys, kind, c):
    base = require(REFERENCE / "synthetic")
    model = tmp_path / "model"
    assert learn_main(["-v", "0", "-c", c, str(base / f"{kind}_train.dat.gz"), str(model)]) == 0
    assert classify_main(["-v", "1", str(base / f"{kind}_test.dat.gz"), str(model), str(tmp_path / "p")]) == 0
    ours = float(re.search(r"Average loss on test set: ([0-9.]+)", capsys.readouterr().out).group(1))
    theirs = float(re.search(r"Average loss on test set: ([0-9.]+)",
                             (base / f"{kind}_classify_c{c}.stdout").read_text()).group(1))
    assert ours <= theirs + 0.002


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n  # and another\n"])
def test_empty_training_and_test_files_are_errors_naming_the_file(tmp_path, capsys, content):
    require(EXAMPLE3)
    path = tmp_path / "empty.dat"
    path.write_text(content)
    assert load_svmlight(str(path)).n_documents == 0         # the API still reads it
    rc = learn_main([str(path), str(tmp_path / "model")])
    err = capsys.readouterr().err
    assert rc == 1 and f"{path}: no documents" in err and not (tmp_path / "model").exists()
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "pred")])
    out, err = capsys.readouterr()
    assert rc == 1 and f"{path}: no documents" in err and "nan" not in out
    assert not (tmp_path / "pred").exists()


NO_QIDS = ("3 1:1 2:0.5\n2 1:0.5 2:1\n1 1:0 2:0.2\n"
           "2 1:0.9 2:0.1\n1 1:0.3 2:0.8\n0 1:0.1 2:0.1\n")


@pytest.fixture
def no_qids(tmp_path):
    data = tmp_path / "d.dat"
    data.write_text(NO_QIDS)
    return data


def run_both(data, tmp_path, models, *flags):
    """[(status, stderr)] of rank_learn and of rank_classify (a linear model) run on data."""
    results = []
    for program, args in (("rank_learn", [data, tmp_path / "m"]),
                          ("rank_classify", [data, models["linear"], tmp_path / "p"])):
        result = launch(program, *flags, *args)
        results.append((result.returncode, result.stderr))
    return results


@pytest.mark.parametrize("where", ["sidecar", "--group"])
@pytest.mark.parametrize("token, says", [
    ("9" * 5000, ":2: group size '" + "9" * 40 + "... (5000 bytes)' is not a positive integer"),
    ("1" + "0" * 19, ":2: group size '1" + "0" * 19 + "' is not a positive integer"),
    ("0" * 4400 + "3", None),                 # leading zeros: a size of 3, as the data grammar
], ids=["5000 digits", "10**19", "leading zeros"])
def test_a_huge_group_size_is_one_line_in_both_programs(no_qids, tmp_path, models, where, token,
                                                        says):
    group = tmp_path / ("d.dat.query" if where == "sidecar" else "sizes")
    group.write_text(f"3\n{token}\n")
    flags = ["--group", str(group)] if where == "--group" else []
    for status, err in run_both(no_qids, tmp_path, models, *flags):
        if says is None:
            assert status == 0 and "Traceback" not in err, err[-3000:]
            continue
        assert status == 1 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
        assert f"{group}{says}" in err
    if says is not None:
        assert not (tmp_path / "m").exists() and not (tmp_path / "p").exists()


@pytest.mark.parametrize("content", [b"\xef\xbb\xbf3\n3\n", b"\xef\xbb\xbf3\r\n3\r\n", b"3\r\n3"],
                         ids=["bom", "bom crlf", "crlf"])
def test_group_files_skip_a_bom_and_accept_crlf(no_qids, tmp_path, models, content):
    (tmp_path / "d.dat.group").write_bytes(content)
    for status, err in run_both(no_qids, tmp_path, models, "-v", "1"):
        assert status == 0, err
        assert "2 queries from" in err
    from rankfast.io.groups import read_group_file
    assert list(read_group_file(str(tmp_path / "d.dat.group"))) == [3, 3]


def test_a_corrupt_compressed_group_file_is_one_line(no_qids, tmp_path, models):
    import gzip
    packed = gzip.compress(b"3\n3\n" * 1000)
    (tmp_path / "d.dat.query").write_bytes(packed[:len(packed) // 2])
    for status, err in run_both(no_qids, tmp_path, models):
        assert status == 1 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
        assert f"{tmp_path / 'd.dat.query'}: cannot read" in err


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, capsys):
    """rank_classify test model model replaced the model with predictions (so does svm_rank)."""
    from rankfast.cli.classify import classify_main
    data = tmp_path / "train.dat"
    data.write_text("2 qid:1 1:1 2:0\n0 qid:1 1:0 2:1\n1 qid:2 1:1 2:1\n0 qid:2 1:0 2:0\n")
    model = tmp_path / "model"
    assert learn_main(["-v", "0", str(data), str(model)]) == 0
    kept = data.read_bytes(), model.read_bytes()
    link = tmp_path / "link"
    link.symlink_to(model)
    for run, argv in [(learn_main, [str(data), str(data)]),
                      (classify_main, [str(data), str(model), str(model)]),
                      (classify_main, [str(data), str(model), str(data)]),
                      (classify_main, [str(data), str(model), str(link)])]:
        assert run(argv) == 1
        assert "cannot write: it is also the input file" in capsys.readouterr().err
    assert (data.read_bytes(), model.read_bytes()) == kept
    assert classify_main(["-v", "0", str(data), str(model), str(tmp_path / "p")]) == 0


def test_the_letor_example_runs_the_protocol_on_mq2008_in_one_command(tmp_path):
    """examples/letor_mq2008.sh: train on S1-S3, choose C on S4, test on S5."""
    mq = require(DATA / "mq2008")
    script = Path(__file__).resolve().parents[1] / "examples" / "letor_mq2008.sh"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    done = subprocess.run(["sh", str(script), str(mq), str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Validation (" in done.stdout and "157 queries" in done.stdout
    assert "<- chosen" in done.stdout and "NDCG@10 (LETOR): " in done.stdout
    model = read_model(str(tmp_path / "model.dat"))
    assert model.metadata["grid"] == "0.001,0.01,0.1,1,10,100"
