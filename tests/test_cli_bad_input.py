"""Every program against every class of bad input, with its outputs already in place: each
exits with its status (1: a file's fault, 2: the command line's) and leaves every output's
bytes as they were, with no temporary file behind; so does a run interrupted after it wrote
an output (rankfast.io.files.deferred_outputs)."""

import os

import pytest

from rankfast.cli.classify import classify_main, proprank_classify_main
from rankfast.cli.clicks import simulate_main
from rankfast.cli.export import main as export_main
from rankfast.cli.learn import learn_main, proprank_learn_main

OLD = b"an output from before\n"

LABELLED = "2 qid:1 1:1 2:0\n0 qid:1 1:0 2:1\n1 qid:2 1:0.5 2:0.2\n0 qid:2 1:0 2:1\n" \
           "1 qid:3 1:1 2:1\n0 qid:3 1:0 2:0\n"
CLICKS = "1 qid:1 cost:2 1:1 2:0\n0 qid:1 1:0 2:1\n1 qid:2 cost:1 1:0.5 2:0.2\n" \
         "0 qid:2 1:0 2:1\n1 qid:3 cost:3 1:1 2:1\n0 qid:3 1:0 2:0\n"

# What each class of bad input looks like (the files a case names, as text).
BAD = {
    "data: a bad line": "1 qid:1 1:1\n0 qid:1 1:x\n",
    "data: empty": "",
    "data: features out of order": "1 qid:1 2:1 1:0\n0 qid:1 1:1\n",
    "model: not a model": "hello\n",
    "model: cut short": "SVM-light Version V6.20\n0 # kernel type\n3 # kernel parameter -d\n",
    "clicks: cost:0": "1 qid:1 cost:0 1:1\n0 qid:1 1:0\n",
    "clicks: cost:-1": "1 qid:1 cost:-1 1:1\n0 qid:1 1:0\n",
    "clicks: a query without a click": "1 qid:1 cost:1 1:1\n0 qid:1 1:0\n0 qid:2 1:1\n0 qid:2 1:0\n",
    "clicks: no qid": "1 cost:1 1:1\n0 1:0\n",
    "weights: not a number": "1\nx\n3\n",
    "weights: too few": "1\n",
    "group: sizes that do not add up": "2\n7\n",
}


def good_model(tmp_path):
    path = tmp_path / "good.model"
    train = tmp_path / "good.dat"
    train.write_text(LABELLED)
    assert learn_main(["-c", "1", "-v", "0", str(train), str(path)]) == 0
    return path


# (program, argv with {bad} {data} {clicks} {model} {out} {out2}, the bad input's class, status)
CASES = [
    (learn_main, "{bad} {out}", "data: a bad line", 1),
    (learn_main, "{bad} {out}", "data: empty", 1),
    (learn_main, "{bad} {out}", "data: features out of order", 1),
    (learn_main, "--plot {out2} -c 1,10 {bad} {out}", "data: a bad line", 1),
    (learn_main, "-c 1,10 --valid {bad} {data} {out}", "data: a bad line", 1),
    (learn_main, "--weights {bad} {data} {out}", "weights: not a number", 1),
    (learn_main, "--weights {bad} {data} {out}", "weights: too few", 1),
    (learn_main, "--group {bad} {nogroups} {out}", "group: sizes that do not add up", 1),
    (learn_main, "--clicks {bad} {out}", "clicks: cost:0", 1),
    (learn_main, "--clicks {bad} {out}", "clicks: cost:-1", 1),
    (learn_main, "--clicks {bad} {out}", "clicks: a query without a click", 1),
    (learn_main, "--clicks {bad} {out}", "clicks: no qid", 1),
    (learn_main, "--clicks -c 1,10 --valid {bad} {clicks} {out}", "clicks: cost:0", 1),
    (learn_main, "-c -1 {data} {out}", None, 2),
    (proprank_learn_main, "{bad} {out}", "clicks: cost:-1", 1),
    (proprank_learn_main, "{bad} {out}", "clicks: no qid", 1),
    (proprank_learn_main, "{bad} {out}", "data: a bad line", 1),
    (classify_main, "{bad} {model} {out}", "data: a bad line", 1),
    (classify_main, "{bad} {model} {out}", "data: empty", 1),
    (classify_main, "{data} {bad} {out}", "model: not a model", 1),
    (classify_main, "{data} {bad} {out}", "model: cut short", 1),
    (classify_main, "--group {bad} {nogroups} {model} {out}", "group: sizes that do not add up", 1),
    (classify_main, "--clicks {bad} {model} {out}", "clicks: cost:0", 1),
    (classify_main, "--clicks {bad} {model} {out}", "clicks: cost:-1", 1),
    (classify_main, "--clicks {bad} {model} {out}", "clicks: a query without a click", 1),
    (classify_main, "--clicks {bad} {model} {out}", "clicks: no qid", 1),
    (classify_main, "--clicks {bad} {model} {out}", "data: a bad line", 1),
    (classify_main, "--ndcg-at 0 --metrics {data} {model} {out}", None, 2),
    (proprank_classify_main, "{bad} {model} {out}", "clicks: cost:0", 1),
    (proprank_classify_main, "{bad} {model} {out}", "clicks: a query without a click", 1),
    (proprank_classify_main, "{clicks} {bad} {out}", "model: not a model", 1),
    (export_main, "--format solr-ltr {bad} {out}", "model: not a model", 1),
    (export_main, "--format ranklib {bad} {out}", "model: cut short", 1),
    (simulate_main, "{bad} {model} {out}", "data: a bad line", 1),
    (simulate_main, "{data} {bad} {out}", "model: not a model", 1),
    (simulate_main, "--eta -1 {data} {model} {out}", None, 2),
]


@pytest.mark.parametrize("main, template, kind, status", CASES,
                         ids=[f"{m.__module__.rsplit('.', 1)[1]}.{m.__name__}: {t} ({k})"
                              for m, t, k, _ in CASES])
def test_bad_input_touches_no_output(tmp_path, capsys, main, template, kind, status):
    paths = {"data": tmp_path / "data.dat", "clicks": tmp_path / "clicks.dat",
             "nogroups": tmp_path / "nogroups.dat", "bad": tmp_path / "bad.input",
             "out": tmp_path / "out", "out2": tmp_path / "out2.png"}
    paths["data"].write_text(LABELLED)
    paths["clicks"].write_text(CLICKS)
    paths["nogroups"].write_text("".join(line.split(" ", 2)[0] + " " + line.split(" ", 2)[2]
                                         for line in LABELLED.splitlines(True)))
    paths["model"] = good_model(tmp_path)
    if kind is not None:
        paths["bad"].write_text(BAD[kind])
    for name in ("out", "out2"):
        paths[name].write_bytes(OLD)
    before = sorted(os.listdir(tmp_path))
    argv = template.format(**{k: str(v) for k, v in paths.items()}).split()
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()
    if kind is not None and kind.split(":")[0] in ("data", "clicks") and "empty" not in kind:
        assert f"{paths['bad']}:" in err                # the file, and its line where it has one
    assert paths["out"].read_bytes() == OLD and paths["out2"].read_bytes() == OLD
    assert sorted(os.listdir(tmp_path)) == before        # no temporary file left behind


def test_a_run_interrupted_after_writing_its_output_leaves_the_old_one(tmp_path, capsys,
                                                                        monkeypatch):
    """Ctrl-C while rank_classify --clicks prints its estimates, the predictions written:
    the old predictions stay, as after any failure."""
    clicks = tmp_path / "clicks.dat"
    clicks.write_text(CLICKS)
    model, out = good_model(tmp_path), tmp_path / "predictions"
    out.write_bytes(OLD)

    def interrupted(*_):
        raise KeyboardInterrupt
    monkeypatch.setattr("rankfast.cli.classify.click_estimates", interrupted)
    assert classify_main(["--clicks", str(clicks), str(model), str(out)]) == 130
    assert out.read_bytes() == OLD
    assert sorted(os.listdir(tmp_path)) == sorted(["clicks.dat", "good.dat", "good.model",
                                                   "predictions"])
    monkeypatch.undo()
    assert classify_main(["--clicks", str(clicks), str(model), str(out)]) == 0
    assert out.read_bytes() != OLD and len(out.read_text().splitlines()) == 6
