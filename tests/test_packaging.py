"""The release: sdist and wheel hold what they must, install into a fresh venv and run.

The slow test (marked ``packaging``; ``-m 'not packaging'`` deselects it) builds
with ``python -m build`` (the wheel is built from the sdist, so a file missing
from the sdist breaks it), installs the wheel into a new venv with that venv's
own pip (numpy and scipy come from the package index, as for a user) and no C
compiler on PATH, and trains and classifies the examples with the installed
programs from another directory. On Linux, with auditwheel installed (the test
extra has it), the wheel installed is one that `auditwheel show` reports with a
manylinux tag: repaired first when it links libgomp from the system.
"""
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import rankfast

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_single_sourced():
    tomllib = pytest.importorskip("tomllib")              # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rankfast.__version__"}


@pytest.mark.parametrize("program", ["rank_learn", "rank_classify"])
def test_both_programs_print_their_version(program, capsys):
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    main = learn_main if program == "rank_learn" else classify_main
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"{program} (rankfast) {rankfast.__version__}\n"


def test_test_oracles_are_not_in_the_package():
    assert not (Path(rankfast.__file__).parent / "_reference.py").exists()
    for module in Path(rankfast.__file__).parent.glob("*.py"):
        assert "_reference" not in module.read_text() and "reference_impl" not in module.read_text()


def _run(args, cwd, timeout=900, env=None):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_license_is_declared_by_spdx_expression():
    tomllib = pytest.importorskip("tomllib")              # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def _optional_modules():
    """Every module a test imports through pytest.importorskip."""
    found = set()
    for path in (ROOT / "tests").glob("*.py"):
        found.update(re.findall(r"""importorskip\(\s*["']([\w.]+)["']""", path.read_text()))
    return sorted(found)


@pytest.mark.skipif(os.environ.get("CI") != "true",
                    reason="checked in CI (CI=true), which installs the test extra into a new venv")
def test_ci_has_every_module_the_tests_can_skip_without():
    """The test extra brings them all: in CI no test skips for want of one."""
    assert "dask.dataframe" in _optional_modules()
    missing = []
    for name in _optional_modules():
        try:
            importlib.import_module(name)
        except ImportError as error:
            missing.append(f"{name}: {error}")
    assert not missing, "add to the test extra in pyproject.toml: " + "; ".join(missing)


def _copy_for_build(tmp_path, kernels):
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "pyx").mkdir()
    for source in [*kernels, *(ROOT / "pyx").glob("*.pxi")]:
        shutil.copy(ROOT / "pyx" / source, tmp_path / "pyx" / Path(source).name)
    (tmp_path / "rankfast" / "_kernels").mkdir(parents=True)
    for name in ("__init__.py", "_kernels/__init__.py"):
        shutil.copy(ROOT / "rankfast" / name, tmp_path / "rankfast" / name)


@pytest.mark.packaging
def test_an_editable_build_again_compiles_nothing_but_what_changed(tmp_path):
    """As the README's two commands do: each build in a new isolated environment, as pip makes.

    pip installs Cython's and scipy's .pxd files anew (with new times) for every build and
    builds the modules in a new temporary folder; setup.py still takes the C file newer than
    its .pyx and the .pxi files, and the module in place newer than its C file.
    """
    build = pytest.importorskip("build")
    from build.env import DefaultIsolatedEnv
    project = tmp_path / "project"
    project.mkdir()
    _copy_for_build(project, ["_swapped.pyx"])
    env = dict(os.environ, RANKFAST_ONLY="_swapped", RANKFAST_DEBUG="1")      # -O0: quick

    def editable(name, isolated):
        log = tmp_path / f"{name}.log"
        with open(log, "w") as stream:
            def runner(cmd, cwd=None, extra_environ=None):
                subprocess.run(cmd, cwd=cwd, env=dict(env, **(extra_environ or {})), check=True,
                               stdout=stream, stderr=subprocess.STDOUT, timeout=600)
            builder = build.ProjectBuilder.from_isolated_env(isolated, project, runner=runner)
            isolated.install(builder.build_system_requires)
            isolated.install(builder.get_requires_for_build("editable"))
            builder.build("editable", tmp_path / name)
        return log.read_text()

    def module():
        path = next((project / "rankfast" / "_kernels").glob("_swapped*.so"))
        return path.read_bytes(), path.stat().st_mtime_ns

    with DefaultIsolatedEnv() as isolated:
        first = editable("first", isolated)
    assert "Compiling pyx/_swapped.pyx" in first
    assert "building 'rankfast._kernels._swapped'" in first
    built = module()
    with DefaultIsolatedEnv() as isolated:
        second = editable("second", isolated)
        assert "Compiling pyx/" not in second and "building 'rankfast." not in second, second
        assert second.count("not compiled again") == 2            # _swapped and _cyutility
        assert module() == built

        (project / "pyx" / "_swapped.pyx").write_text(
            (ROOT / "pyx" / "_swapped.pyx").read_text() + "\n# changed\n")
        third = editable("third", isolated)
    assert "Compiling pyx/_swapped.pyx" in third
    assert "building 'rankfast._kernels._swapped'" in third
    assert "building 'rankfast._kernels._cyutility'" not in third
    assert module()[1] > built[1]                               # compiled anew


def test_setup_refuses_to_build_without_kernel_sources(tmp_path):
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "no Cython kernel sources (pyx/*.pyx)" in done.stderr
    assert not list(tmp_path.rglob("*.so"))


@pytest.mark.packaging
def test_sdist_and_wheel_install_into_a_fresh_venv_and_run(tmp_path):
    pytest.importorskip("build")
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=tmp_path)
    said = built.stdout + built.stderr
    assert not re.findall(r".*(?:[Dd]eprecat|no files found matching|no previously-included).*", said)
    version = rankfast.__version__
    sdist = dist / f"rankfast-{version}.tar.gz"
    wheels = list(dist.glob(f"rankfast-{version}-*.whl"))
    assert sdist.exists() and len(wheels) == 1, sorted(p.name for p in dist.iterdir())

    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    sources = sorted(p.name for p in (ROOT / "pyx").iterdir() if p.suffix in (".pyx", ".pxi"))
    kernels = [name for name in sources if name.endswith(".pyx")]          # one module each
    assert {f"pyx/{name}" for name in sources} <= names
    assert {"LICENSE", "README.md", "setup.py", "pyproject.toml", "examples/make_examples.py",
            "examples/train.dat", "examples/test.dat", "tests/reference_impl.py",
            "tests/shared_paths.py", "tests/conftest.py", "benchmarks/README.md"} <= names
    assert not [n for n in names if n.endswith((".so", ".c"))]

    with zipfile.ZipFile(wheels[0]) as whl:
        members = whl.namelist()
    for k in kernels:
        assert any(m.startswith(f"rankfast/_kernels/{k[:-4]}.") and m.endswith(".so")
                   for m in members), k
    assert not [m for m in members if "_reference" in m or m.startswith("tests/")]
    with zipfile.ZipFile(wheels[0]) as whl:
        modules = {m: whl.read(m) for m in members if m.endswith(".so")}
        metadata = whl.read(next(m for m in members if m.endswith(".dist-info/METADATA"))).decode()
    # Linked stripped (setup.py: -g0, -s): no symbol table, no DWARF sections.
    assert not [m for m, data in modules.items() if b".symtab" in data or b".debug_info" in data]
    assert "License-Expression: BSD-3-Clause" in metadata.splitlines()
    assert any(m.endswith(".dist-info/licenses/LICENSE") or m.endswith("LICENSE")
               for m in members)

    wheel = _manylinux(wheels[0], tmp_path / "wheelhouse")

    # A user's machine: the new venv's bin alone on PATH, so no C compiler to fall back on.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    clean["PATH"] = str(env_dir / "bin")
    assert not [cc for cc in ("gcc", "cc", "clang") if shutil.which(cc, path=clean["PATH"])]
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path, env=clean)

    work = tmp_path / "elsewhere"
    work.mkdir()
    for name in ("train.dat", "test.dat"):
        shutil.copy(ROOT / "examples" / name, work / name)
    bin_dir = env_dir / "bin"
    learned = _run([str(bin_dir / "rank_learn"), "-c", "0.01", "train.dat", "model.dat"],
                   cwd=work, env=clean)
    assert "Writing learned model" in learned.stdout
    classified = _run([str(bin_dir / "rank_classify"), "--metrics", "test.dat", "model.dat",
                       "predictions"], cwd=work, env=clean)
    assert "NDCG@10" in classified.stdout
    assert len((work / "predictions").read_text().splitlines()) == 987
    shown = _run([str(bin_dir / "rank_learn"), "--version"], cwd=work, env=clean)
    assert shown.stdout.strip() == f"rank_learn (rankfast) {version}"

    code = ("import rankfast, importlib.util as u; print(rankfast.__version__, rankfast.__file__); "
            "print(u.find_spec('rankfast._reference'))")
    shown = _run([str(python), "-c", code], cwd=work, env=clean)
    installed_version, location = shown.stdout.split("\n")[0].split()
    assert installed_version == version
    assert str(env_dir) in location and str(ROOT) not in location
    assert shown.stdout.split("\n")[1] == "None"

    if wheel != wheels[0]:           # repaired: the kernels load the OpenMP runtime it vendors
        code = ("from rankfast._kernels import _predict; print(*sorted({line.split()[-1] "
                "for line in open('/proc/self/maps') if 'gomp' in line}))")
        loaded = _run([str(python), "-c", code], cwd=work, env=clean).stdout.split()
        assert len(loaded) == 1 and "/rankfast.libs/libgomp" in loaded[0], loaded


def _manylinux(wheel, wheelhouse):
    """The wheel, or on Linux with auditwheel its repaired copy: one that `auditwheel show`
    reports with a manylinux tag (repair vendors libgomp, which the kernels link for OpenMP)."""
    if not sys.platform.startswith("linux") or importlib.util.find_spec("auditwheel") is None:
        return wheel

    def tag(path):
        shown = _run([sys.executable, "-m", "auditwheel", "show", str(path)], cwd=path.parent)
        return re.search(r'platform\s+tag:\s+"([^"]+)"', shown.stdout + shown.stderr).group(1)

    if tag(wheel).startswith("manylinux"):
        return wheel
    _run([sys.executable, "-m", "auditwheel", "repair", "-w", str(wheelhouse), str(wheel)],
         cwd=wheel.parent)
    repaired = next(wheelhouse.glob("*.whl"))
    assert tag(repaired).startswith("manylinux") and "manylinux" in repaired.name
    return repaired
