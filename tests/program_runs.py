"""Running the programs and reading what they write (processes, outputs, figures)."""

import gzip
import os
import re
import resource
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def without_runtime(text):
    return re.sub(r"Runtime \(without IO\) in cpu-seconds: [0-9.]+\n", "", text)


def launch_bytes(program, *args, timeout=120, **kwargs):
    """Run ./rank_learn or ./rank_classify on this checkout; returns CompletedProcess (bytes)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(ROOT / program), *map(str, args)], env=env,
                          timeout=timeout, **kwargs)


def leftovers(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith(".rankfast-"))


def check_figure_file(path, kind):
    data = path.read_bytes()
    assert len(data) > 2000
    if kind == "png":
        assert data.startswith(PNG_SIGNATURE)
    else:
        assert ET.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"
    return data


def run_python(code, limit_bytes=None):
    """Run code in a fresh interpreter (a crash is a failed test, not a dead pytest)."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, preexec_fn=limit, timeout=120)


def launch(program, *args, timeout=300, **kwargs):
    """Run ./rank_learn or ./rank_classify on this checkout; returns CompletedProcess (text)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(ROOT / program), *map(str, args)], env=env,
                          timeout=timeout, capture_output=True, text=True, **kwargs)


def read_text(path):
    return gzip.open(path, "rt").read() if str(path).endswith(".gz") else open(path).read()


def svm_rank_pval(stdout):
    return float(re.search(r"pval=([0-9.]+)", stdout.read_text()).group(1))
