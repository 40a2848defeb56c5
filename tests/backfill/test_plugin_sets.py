"""Backfill replays load the pytest plugins CI loaded, and no others.

Real CI runs (``pytest -v``) of a small suite with different plugin sets, each backfilled on a
real LocalCluster as a user would (``statesnap backfill`` in a subprocess):

- CI ran with ``-p no:straythread`` (the plugin keeps a thread in every session, as
  pytest-rerunfailures' server does) and the backfill machine has it installed: the victim,
  which checks for stray threads, must still come out order-dependent, as it was in CI;
- CI loaded a plugin the backfill machine lacks: the finding and the summary name it, and a
  victim that fails alone is not called "not order-dependent";
- a JUnit XML artifact names no plugins: the finding says so.

The plugins are real distributions (a ``dist-info`` with a ``pytest11`` entry point) on a
``PYTHONPATH`` given only to the side that has them.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from backfill_suite import git_init

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent

SUITE = {
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
    "tests/__init__.py": "",
    "tests/test_threads.py": """
        import os
        import threading

        def test_filler():
            pass

        def test_sets_mode():
            os.environ["PLUGSET_MODE"] = "fast"

        def test_no_stray_threads():
            stray = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
            assert stray == [], f"stray threads: {stray}"
            assert os.environ.get("PLUGSET_MODE", "slow") == "slow"

        def test_broken_alone():
            assert False, "broken on its own"
    """,
}
VICTIM = "tests/test_threads.py::test_no_stray_threads"
POLLUTER = "tests/test_threads.py::test_sets_mode"
GENUINE = "tests/test_threads.py::test_broken_alone"

STRAY = """
import threading, time

def pytest_configure(config):
    # As pytest-rerunfailures' server: a thread kept for the whole session.
    threading.Thread(target=time.sleep, args=(3600,), name="stray-server", daemon=True).start()
"""


def make_plugin(where: Path, dist: str, version: str, module: str, source: str) -> Path:
    """A real installed pytest plugin: a module and its dist-info with a pytest11 entry."""
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{module}.py").write_text(source, encoding="utf-8")
    info = where / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
                                   encoding="utf-8")
    entry = dist.removeprefix("pytest-")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{entry} = {module}\n", encoding="utf-8")
    return where


def project(tmp: Path) -> Path:
    root = tmp / "proj"
    for name, text in SUITE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    git_init(root)
    return root


def env_with(pythonpath: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTHONPATH")
           and not k.startswith(("PYTEST_XDIST", "STATESNAP_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def run_ci(root: Path, pythonpath: Path | None, *args: str) -> Path:
    """The CI run: plain pytest -v (no statesnap), its console log kept."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:randomly",
                           "-p", "no:cacheprovider", *args], cwd=root, text=True,
                          capture_output=True, env=env_with(pythonpath), timeout=300,
                          check=False)
    assert proc.returncode == 1, proc.stdout[-3000:]
    log = root / "ci" / "console.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return log


def backfill(root: Path, artifact: Path, pythonpath: Path | None) -> tuple[dict[str, Any], str]:
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "statesnap", "backfill", str(artifact),
                           "-o", str(out), "--workers", "1", "--repeat", "1"], cwd=root,
                          capture_output=True, text=True, env=env_with(pythonpath),
                          timeout=540, check=False)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    data: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return data, proc.stdout


def finding(data: dict[str, Any], victim: str) -> dict[str, Any]:
    found = [f for f in data["findings"] if f["victim"] == victim]
    assert len(found) == 1, data["findings"]
    return found[0]


def test_plugins_ci_did_not_load_are_blocked_in_the_replays(tmp_path: Path) -> None:
    """The hidden-style case: CI ran ``pytest -v -p no:rerunfailures`` (its server thread
    fails the victim), and the backfill machine has rerunfailures and straythread (another
    thread keeper, installed only there): the verdict is CI's (order-dependent)."""
    plug = make_plugin(tmp_path / "site", "pytest-straythread", "1.0", "straythread", STRAY)
    root = project(tmp_path)
    log = run_ci(root, None, "-p", "no:rerunfailures")
    header = log.read_text(encoding="utf-8").split("plugins: ", 1)[1].splitlines()[0]
    assert "rerunfailures" not in header and "straythread" not in header
    data, stdout = backfill(root, log, plug)
    f = finding(data, VICTIM)
    assert f["status"] == "verified", f
    assert f["polluters"] == [POLLUTER]
    assert "-p no:rerunfailures -p no:straythread" in f["repro"]
    assert finding(data, GENUINE)["status"] == "not-order-dependent"
    shard = data["backfill"]["shards"][0]
    assert shard["plugins"]["blocked"] == ["rerunfailures", "straythread"]
    assert shard["plugins"]["missing"] == [] and shard["plugins"]["other_version"] == []
    assert "blocked in the replays (CI did not load them): rerunfailures, straythread" in stdout
    # The printed reproduction fails the victim on this machine, plugin installed, as printed.
    proc = subprocess.run(shlex.split(f["repro"]), cwd=root, capture_output=True, text=True,
                          env={**env_with(plug), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
                          timeout=120, check=False)
    assert proc.returncode == 1 and "stray threads: [" not in proc.stdout
    assert "assert 'fast' == 'slow'" in proc.stdout


def test_a_plugin_ci_had_and_this_machine_lacks_is_named(tmp_path: Path) -> None:
    plug = make_plugin(tmp_path / "site", "pytest-ciextra", "2.0", "ciextra", "X = 1\n")
    root = project(tmp_path)
    log = run_ci(root, plug, "-p", "no:rerunfailures")
    assert "ciextra-2.0" in log.read_text(encoding="utf-8")
    data, stdout = backfill(root, log, None)
    shard = data["backfill"]["shards"][0]
    assert shard["plugins"]["missing"] == ["ciextra-2.0"]
    assert "CI loaded ciextra-2.0, not installed here" in stdout
    # Failing alone is no proof of order-independence when the replays lacked a plugin.
    genuine = finding(data, GENUINE)
    assert genuine["status"] == "unexplained", genuine
    assert "CI loaded ciextra-2.0, not installed here" in genuine["note"]
    md = next(Path(p) for p in data["backfill"]["findings_markdown"] if "broken_alone" in p)
    heading = md.read_text(encoding="utf-8").splitlines()[0]
    assert "not order-dependent" not in heading and "could not load CI's pytest plugins" \
        in heading
    victim = finding(data, VICTIM)
    assert victim["status"] == "verified"
    assert "ciextra-2.0" in victim["note"]


def test_a_junit_artifact_says_the_plugin_set_is_unknown(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "ci").mkdir()
    xml = root / "ci" / "junit.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly",
                           "-p", "no:cacheprovider", f"--junitxml={xml}"], cwd=root, text=True,
                          capture_output=True, env=env_with(None), timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:]
    data, _ = backfill(root, xml, None)
    assert data["backfill"]["shards"][0]["plugins"]["unknown"] is True
    genuine = finding(data, GENUINE)
    assert "CI's pytest plugins are unknown (JUnit XML artifacts do not name them)" \
        in genuine["note"]
