"""Backfills on a real LocalCluster of 2 worker processes, from a real CI run's console log.

Each runs ``statesnap backfill`` as a user would (a subprocess), then checks OUTDIR and runs the
printed reproduction under plain pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from backfill_suite import GENUINE, VICTIMS, CiRun, git_init

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def backfill(root: Path, *args: str, env: dict[str, str] | None = None,
             timeout: float = 540) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", "backfill", *args],
                          cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def plain_pytest(root: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A printed ``python -m pytest ...`` line, run in the checkout with the venv first."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(shlex.split(command), cwd=root, capture_output=True, text=True,
                          env=env, check=False, timeout=120)


def test_finds_and_minimises_two_planted_polluters(project: CiRun) -> None:
    out = project.root / "out"
    proc = backfill(project.root, "ci/console.log", "-o", str(out), "--workers", "2",
                    "--repeat", "2", "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = summary(out)
    found = {f["victim"]: f for f in data["findings"]}
    for victim, polluters in VICTIMS.items():
        f = found[victim]
        assert f["status"] == "verified", f
        assert f["polluters"] == polluters  # minimised: the fillers before it are gone
        assert f["hint_proven"] is True
    assert found[VICTIMS and "tests/test_admin.py::test_default_mode_is_slow"]["key"] == \
        "ZOO_MODE"
    assert found[GENUINE]["status"] == "not-order-dependent"
    assert data["backfill"]["workers"] == 2
    assert data["backfill"]["bad_artifacts"] == []
    # The order-only records and the state replay's records are real records.
    assert len(data["backfill"]["shards"]) == 2
    assert (out / "pollution.html").read_text().startswith("<!DOCTYPE html>")
    texts = {p.name: p.read_text() for p in (out / "findings").glob("*.md")}
    assert len(texts) == 3
    for victim, polluters in VICTIMS.items():
        (text,) = [t for t in texts.values() if t.startswith(f"# `{victim}` fails when")]
        repro = text.split("## Reproduce\n\n```sh\n", 1)[1].split("\n", 1)[0]
        alone = text.split("## The victim alone passes\n\n```sh\n", 1)[1].split("\n", 1)[0]
        assert ": the victim FAILED." in text and ": the victim PASSED." in text
        assert "## State" in text and "## Fix hint" in text and "## Environment" in text
        assert f"- commit: `{project.commit}`" in text
        assert "ci/console.log" in text
        # The printed reproduction, under plain pytest: the victim fails after its polluter
        # and passes alone.
        ran = plain_pytest(project.root, repro + " -rA")
        assert ran.returncode == 1 and f"FAILED {victim}" in ran.stdout, ran.stdout
        assert repro.split()[-2:] == [*polluters[-1:], victim]
        ran = plain_pytest(project.root, alone)
        assert ran.returncode == 0, ran.stdout


def journal_keys(out: Path) -> list[str]:
    path = out / ".backfill" / "journal.jsonl"
    keys = []
    for line in path.read_text().splitlines():
        try:
            keys.append(json.loads(line)["key"])
        except json.JSONDecodeError:
            pass  # a line cut by the kill
    return keys


def test_sigkill_halfway_then_resume_runs_no_finished_replay_twice(project: CiRun) -> None:
    out = project.root / "out"
    args = [sys.executable, "-m", "statesnap", "backfill", "ci/console.log", "-o", str(out),
            "--workers", "2", "--repeat", "1", "-q"]
    proc = subprocess.Popen(args, cwd=project.root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    journal = out / ".backfill" / "journal.jsonl"
    deadline = time.monotonic() + 400
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal_keys(out)) >= 5:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the backfill ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        # The machine is "lost": its orphaned Dask processes go with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    before = journal_keys(out)
    assert len(before) >= 5
    assert not (out / "summary.json").exists()  # killed before its outputs
    done = backfill(project.root, "ci/console.log", "-o", str(out), "--workers", "2",
                    "--repeat", "1", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    after = journal_keys(out)
    assert len(after) == len(set(after)), "a finished replay ran again"
    assert after[:len(before)] == before
    data = summary(out)
    assert data["backfill"]["replays_from_journal"] >= len(before)
    assert data["backfill"]["replays"] == len(after) - len(before)
    statuses = {f["victim"]: f["status"] for f in data["findings"]}
    assert statuses == {**{v: "verified" for v in VICTIMS}, GENUINE: "not-order-dependent"}


SLOW_SUITE = {
    "tests/__init__.py": "",
    "tests/test_slow.py": """
        import os, pathlib, time

        def test_filler():
            pass

        def test_polluter():
            os.environ["ZOO_MODE"] = "fast"
            marks = pathlib.Path(os.environ["BACKFILL_MARKS"])
            runs = len(list(marks.glob("run-*")))
            (marks / f"run-{runs}").write_text("")
            if runs == 1:  # the second replay with the polluter: the victim's own worker
                (marks / "worker.pid").write_text(str(os.getppid()))
                time.sleep(20)

        def test_victim():
            assert os.environ.get("ZOO_MODE", "slow") == "slow"
    """,
}


def test_a_worker_killed_mid_task_has_its_replay_run_elsewhere(tmp_path: Path) -> None:
    import textwrap

    root = tmp_path / "proj"
    for name, text in SLOW_SUITE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    (root / "pytest.ini").write_text("[pytest]\n")
    git_init(root)
    marks = tmp_path / "marks"
    marks.mkdir()
    log = root / "ci.log"
    log.write_text("tests/test_slow.py::test_filler PASSED [ 33%]\n"
                   "tests/test_slow.py::test_polluter PASSED [ 66%]\n"
                   "tests/test_slow.py::test_victim FAILED [100%]\n")
    env = {**os.environ, "BACKFILL_MARKS": str(marks)}
    proc = subprocess.Popen([sys.executable, "-m", "statesnap", "backfill", str(log), "-o",
                             str(tmp_path / "out"), "--workers", "2", "--repeat", "1", "-q"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        pidfile = marks / "worker.pid"
        deadline = time.monotonic() + 300
        while not pidfile.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert pidfile.exists(), "the victim's replay never started"
        worker = psutil.Process(int(pidfile.read_text()))
        assert "multiprocessing" in " ".join(worker.cmdline())  # a Dask worker process
        assert proc.pid in [p.pid for p in worker.parents()]
        worker.kill()
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stdout + stderr
    data = summary(tmp_path / "out")
    (victim,) = data["backfill"]["victims"]
    assert victim["status"] == "verified"
    assert victim["lost_workers"], victim
    assert victim["lost_workers"][0] not in victim["workers"]
    (finding,) = data["findings"]
    assert finding["polluters"] == ["tests/test_slow.py::test_polluter"]
    assert "died during a replay" in finding["note"]


ONE_VICTIM = {
    "tests/__init__.py": "",
    "tests/test_one.py": """
        import os

        def test_polluter():
            os.environ["ZOO_MODE"] = "fast"

        def test_victim():
            assert os.environ.get("ZOO_MODE", "slow") == "slow"
    """,
}
ONE_LOG = ("tests/test_one.py::test_polluter PASSED [ 50%]\n"
           "tests/test_one.py::test_victim FAILED [100%]\n")


#: A LocalCluster of one worker process, run by a process of its own: a cluster started in the
#: test process would leave multiprocessing's helper processes behind as its children (which
#: the children probe's own tests would then see).
CLUSTER_SCRIPT = """
import sys
from distributed import LocalCluster
cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0")
print(cluster.scheduler_address, flush=True)
sys.stdin.read()
cluster.close()
"""


def start_cluster() -> tuple[subprocess.Popen[str], str]:
    """A real cluster in its own process group, and its scheduler's address."""
    proc = subprocess.Popen([sys.executable, "-c", CLUSTER_SCRIPT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    address = proc.stdout.readline().strip()
    if not address.startswith("tcp://"):
        stop_cluster(proc)
        raise AssertionError(f"the cluster did not start: {address!r}")
    return proc, address


def stop_cluster(proc: subprocess.Popen[str]) -> None:
    """Close the cluster (end of its stdin), then make sure its whole group is gone."""
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_scheduler_with_checkout_mapping_and_a_worker_at_another_commit(
        tmp_path: Path) -> None:
    import textwrap

    root = tmp_path / "here"
    for name, text in ONE_VICTIM.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    git_init(root)
    (root / "ci.log").write_text(ONE_LOG)
    # The workers' own checkout of the same commit, elsewhere.
    there = tmp_path / "there"
    subprocess.run(["git", "clone", "-q", str(root), str(there)], check=True)
    cluster, address = start_cluster()
    try:
        proc = backfill(root, "ci.log", "-o", str(tmp_path / "out"), "--scheduler",
                        address, "--checkout", str(there), "--repeat", "1",
                        "-q")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        (finding,) = summary(tmp_path / "out")["findings"]
        assert finding["status"] == "verified"
        assert finding["polluters"] == ["tests/test_one.py::test_polluter"]
        assert str(there) not in finding["repro"]  # the line is for this checkout
        # The workers' checkout moves to another commit: every replay is refused.
        (there / "tests" / "test_one.py").write_text("def test_victim():\n    pass\n")
        subprocess.run(["git", "-C", str(there), "-c", "user.name=t", "-c",
                        "user.email=t@t.invalid", "commit", "-qam", "moved"], check=True)
        proc = backfill(root, "ci.log", "-o", str(tmp_path / "out2"), "--scheduler",
                        address, "--checkout", str(there), "-q")
    finally:
        stop_cluster(cluster)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    refused = [ln for ln in proc.stderr.splitlines() if "is at" in ln]
    assert len(refused) == 1, proc.stderr
    assert f"checkout {there} is at " in refused[0] and "the backfill is at" in refused[0]
    assert "Traceback" not in proc.stderr
