"""Every benchmark script runs end to end, at the smallest sizes its options allow.

CI does not run benchmarks/*.py, so when an internal API moves they rot unseen until
someone needs a figure (bench_threads called a Python wrapper with a kernel's
arguments, bench_svmrank a private method that had gone). Here each script runs in a
fresh process, as a user would start it, and must exit 0 and print a line of its last
stage. Timings are not checked. svm_rank and the other anchors are left out (their
environment variables are removed), so the scripts quote recorded figures instead.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import DATA, REFERENCE

ROOT = Path(__file__).resolve().parent.parent
MQ2008 = DATA / "mq2008"
MSLR = DATA / "mslr_web_fold1_5k"
TORGO = DATA / "torgo_regression"
ANCHOR_VARIABLES = ("RANKFAST_SVM_RANK", "RANKFAST_SVM_PROPRANK", "RANKFAST_LIBLINEAR_RANKSVM")

# (script, its arguments ("{tmp}" becomes a fresh directory), the paths and the modules it
# needs, a line its last stage prints)
CASES = [
    # --raw-sessions 0: no raw MSLR click file, whose -a svmrank fit takes 5 s at any size
    ("bench_clicks.py", ["--sessions", "300", "--folds", "1", "--c-grid", "1", "--repeat", "1",
                         "--raw-sessions", "0", "--plot", "{tmp}/clicks.png"],
     [MQ2008, MSLR], ["matplotlib"], "svm_proprank not run"),
    ("bench_dask.py", ["--sizes", "200k", "--shards", "2", "--features", "5"],
     [], ["distributed"], "d = 10000000: one Newton step"),
    ("bench_erfc.py", ["--max-n", "3000", "--direct-seconds", "0"], [], [], "(sampled)"),
    ("bench_kernel_recipe.py", ["--sets", "machine_cpu", "--plot", "{tmp}/recipe.png"],
     [TORGO], ["matplotlib"], "plot written to"),
    ("bench_kernels.py", ["--folds", "1", "--landmarks", "20", "--c-step", "18", "--gamma-step",
                          "14", "--seeds", "0", "1", "--oracle", "--predict-docs", "1000"],
     [MQ2008], [], "Scoring 1,000 documents"),
    ("bench_landmarks.py", ["--sets", "auto_mpg"], [TORGO], [], "| auto_mpg |"),
    ("bench_mq2008_prsvm.py", [], [MQ2008], [], "LETOR RankSVM baseline:"),
    ("bench_mq2008_rankrls.py", ["--cs", "1,100"], [MQ2008], [], "feature 39 first on every fold"),
    ("bench_prsvm.py", ["--sizes", "10k", "--cs", "1", "--repeat", "1"], [], [],
     "Fenwick kernel vs pair-enumerating twin"),
    ("bench_rankncg.py", ["--quick", "--items", "2000"], [], [], "per exact gradient"),
    ("bench_rankrls.py", ["--repeat", "1", "--greedy-docs", "2000", "--threads", "1"], [], [],
     "greedy k=10 2,000 x 200"),
    # scikit-learn's readers left out: they call scikit-learn, not rankfast, and cost 6 s
    ("bench_reader.py", ["--size-mb", "0.3", "--skip-sklearn", "--workdir", "{tmp}"], [], [],
     "rank_classify dense"),
    ("bench_real_data.py", ["--sets", "mslr+query", "--C", "1", "--anchors"], [MSLR], [],
     "mslr+query     rankrls"),
    ("bench_startup.py", ["--repeat", "1", "--loop", "1", "--large", "1000", "--compare",
                          str(ROOT)], [Path("/usr/bin/time")], [], "s per 1,000 calls"),
    ("bench_svmrank.py", ["--sizes", "10k", "--cs", "1", "--repeat", "1"], [], [],
     "Where the process's CPU time goes"),
    ("bench_svmrank.py", ["--reference"], [REFERENCE], [], "svm_rank's test loss is as"),
    ("bench_table3.py", ["--only", "diabetes", "--direct", "--prsvm"], [TORGO], [], " 1 diabetes "),
    ("bench_threads.py", ["--docs", "2000", "--repeat", "1"], [], [], "greedy step at 500k x 50"),
]


@pytest.mark.parametrize("script, arguments, paths, modules, expected", CASES,
                         ids=[f"{case[0]} {' '.join(case[1])}"[:60] for case in CASES])
def test_the_benchmark_runs(script, arguments, paths, modules, expected, tmp_path):
    for path in paths:
        if not path.exists():
            pytest.skip(f"{path} is not available")
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{script} {' '.join(arguments)} needs {module}, not installed")
    env = {name: value for name, value in os.environ.items() if name not in ANCHOR_VARIABLES}
    argv = [sys.executable, str(ROOT / "benchmarks" / script),
            *(argument.replace("{tmp}", str(tmp_path)) for argument in arguments)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert expected in done.stdout, output[-4000:]
