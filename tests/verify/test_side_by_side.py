"""Replays side by side (issue 28 §3): real sessions whose victims are verified by several
replay workers at once, each run inside a fresh pid namespace (``tests/pidns.py``).

- the same verdicts with 1 worker and with 3, and replays that really overlapped with 3;
- two victims whose tests write the same file and bind the same fixed port: right verdicts
  side by side (each worker replays in a scratch copy; a port taken beside another replay
  is replayed alone);
- one progress line per victim and one shared budget with several replays in flight;
- the option's bad values (pytest and ``statesnap explain``).

Ctrl-C with several replays in flight: ``tests/chaos/test_chaos_sidebyside.py``.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pidns
from suite_runs import BASE_ARGS, child_env, write_suite

TRACEBACKS = ("Traceback (most recent call last)", "INTERNALERROR")

#: Three polluters of three kinds (one writes a file under the project: scratch copies), their
#: victims, and a genuine bug.  Every victim notes when it ran and in which process.
SUITE = {
    "zoo.py": 'LEVEL = "info"\n',
    "test_zoo.py": """
        import os, pathlib, time
        import zoo

        def _traced():
            t0 = time.time()
            time.sleep(0.4)
            with open(os.environ["SBS_TRACE"], "a") as f:
                f.write(f"{os.getpid()} {t0} {time.time()}\\n")

        def test_a_env_polluter():
            os.environ["SBS_MODE"] = "fast"

        def test_b_attr_polluter():
            zoo.LEVEL = "debug"

        def test_c_file_polluter():
            pathlib.Path("cache.txt").write_text("stale")

        def test_d_env_victim():
            _traced()
            assert os.environ.get("SBS_MODE") is None, "SBS_MODE leaked"

        def test_e_attr_victim():
            _traced()
            assert zoo.LEVEL == "info", "zoo.LEVEL leaked"

        def test_f_file_victim():
            _traced()
            assert not pathlib.Path("cache.txt").exists(), "cache.txt left behind"

        def test_g_genuine_bug():
            _traced()
            assert 1 + 1 == 3
        """,
}

#: Two victims whose tests write the same file and bind the same fixed port for a second.
SHARED = {
    "test_shared.py": """
        import os, pathlib, socket, time

        def _serve():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", int(os.environ["SBS_PORT"])))
                s.listen(1)
                time.sleep(1.0)
            finally:
                s.close()

        def _shared():
            p = pathlib.Path("shared.txt")
            return p.read_text() if p.exists() else None

        def test_a_polluter():
            pathlib.Path("shared.txt").write_text("a")

        def test_a_victim():
            _serve()
            assert _shared() != "a", "a left shared.txt"

        def test_b_polluter():
            pathlib.Path("shared.txt").write_text("b")

        def test_b_victim():
            _serve()
            assert _shared() != "b", "b left shared.txt"
        """,
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session(root: Path, out: Path, *args: str, env: dict[str, str] | None = None
             ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """A statesnap session in ``root`` inside a pid namespace; its process and findings."""
    pidns.require()
    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap", "-q",
            f"--statesnap-json={out / 'summary.json'}",
            f"--statesnap-record={out / 'run.jsonl'}", *args]
    tmp = out / "tmp"  # the scratch copies go there, and must be gone after
    tmp.mkdir()
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=child_env({**(env or {}),
                                                                     "TMPDIR": str(tmp)}),
                          capture_output=True, text=True, timeout=600)
    assert not list(tmp.glob("statesnap-replay-*")), list(tmp.iterdir())
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    for text in TRACEBACKS:
        assert text not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return proc, list(data["findings"])


def _verdicts(findings: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {f["victim"].split("::")[-1]: (f["status"], tuple(f["polluters"]), f["probe"],
                                          f["key"], tuple(f.get("proven_keys") or []),
                                          f.get("repro"))
            for f in findings}


def _overlaps(trace: Path) -> int:
    """Pairs of victims that ran at the same time in two different processes (replays)."""
    spans = [(int(p), float(a), float(b)) for p, a, b in
             (line.split() for line in trace.read_text().splitlines())]
    return sum(1 for i, (p1, a1, b1) in enumerate(spans) for p2, a2, b2 in spans[i + 1:]
               if p1 != p2 and a1 < b2 and a2 < b1)


@pytest.mark.needs_pidns
def test_a_project_too_large_to_copy_replays_one_at_a_time(tmp_path: Path) -> None:
    # A 2 GiB data file (sparse: it takes no room) in a project whose tests write files:
    # one copy per worker would be 2 GiB each in the temporary folder.  Not copied, said in
    # one line, and the victims are still proven, one at a time in the checkout.
    root = write_suite(tmp_path / "suite", SHARED)
    with open(root / "big.dat", "wb") as f:
        f.truncate(2 << 30)
    proc, findings = _session(root, tmp_path / "out", "--statesnap-replay-workers=2",
                              env={"SBS_PORT": str(_free_port())})
    out = proc.stdout + proc.stderr
    assert ("statesnap: cannot copy the project for replays side by side (the project holds "
            "2048 MiB to copy, more than 1024 MiB): replays run one at a time") in out, out[-3000:]
    verdicts = _verdicts(findings)
    assert verdicts["test_a_victim"][:2] == ("verified", ("test_shared.py::test_a_polluter",))
    assert verdicts["test_b_victim"][:2] == ("verified", ("test_shared.py::test_b_polluter",))


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_the_same_verdicts_with_one_worker_and_with_three(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    runs: dict[int, dict[str, tuple[Any, ...]]] = {}
    overlaps: dict[int, int] = {}
    for workers in (1, 3):
        shutil.rmtree(root, ignore_errors=True)  # the run before left cache.txt
        write_suite(root, SUITE)
        trace = tmp_path / f"trace-{workers}.txt"
        proc, findings = _session(root, tmp_path / f"out{workers}",
                                  f"--statesnap-replay-workers={workers}",
                                  "--statesnap-verify-budget=300",
                                  env={"SBS_TRACE": str(trace)})
        assert proc.returncode == 1, proc.stdout[-3000:]
        runs[workers] = _verdicts(findings)
        overlaps[workers] = _overlaps(trace)
    expected = {
        "test_d_env_victim": ("verified", ("test_zoo.py::test_a_env_polluter",), "env",
                              "SBS_MODE"),
        "test_e_attr_victim": ("verified", ("test_zoo.py::test_b_attr_polluter",),
                               "attributes", "zoo:LEVEL"),
        "test_f_file_victim": ("verified", ("test_zoo.py::test_c_file_polluter",), "files",
                               "cache.txt"),
        "test_g_genuine_bug": ("not-order-dependent", (), None, None),
    }
    assert {v: r[:4] for v, r in runs[1].items()} == expected, runs[1]
    assert runs[3] == runs[1]
    # One at a time, no two replays ran together; with three workers some did.
    assert overlaps[1] == 0
    assert overlaps[3] > 0


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_explain_verify_side_by_side_proves_what_the_session_would(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    trace = tmp_path / "trace.txt"
    _session(root, tmp_path / "out", "--statesnap-verify-budget=0",
             env={"SBS_TRACE": str(trace)})
    (root / "cache.txt").unlink()  # the checkout as the run started (the CI artifact case)
    proc = subprocess.run(pidns.wrap([sys.executable, "-m", "statesnap", "explain",
                                      str(tmp_path / "out" / "run.jsonl"), "--verify",
                                      "--replay-workers", "3", "--json"]),
                          cwd=root, env=child_env({"SBS_TRACE": str(trace)}),
                          capture_output=True, text=True, timeout=600)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    verdicts = {v: r[:4] for v, r in _verdicts(json.loads(proc.stdout)).items()}
    assert verdicts == {
        "test_d_env_victim": ("verified", ("test_zoo.py::test_a_env_polluter",), "env",
                              "SBS_MODE"),
        "test_e_attr_victim": ("verified", ("test_zoo.py::test_b_attr_polluter",),
                               "attributes", "zoo:LEVEL"),
        "test_f_file_victim": ("verified", ("test_zoo.py::test_c_file_polluter",), "files",
                               "cache.txt"),
        "test_g_genuine_bug": ("not-order-dependent", (), None, None),
    }, proc.stderr[-3000:]
    assert _overlaps(trace) > 0  # the replays ran side by side
    assert not (root / "cache.txt").exists()  # they wrote in copies of their own


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_victims_writing_one_file_and_binding_one_port_side_by_side(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SHARED)
    proc, findings = _session(root, tmp_path / "out", "--statesnap-replay-workers=2",
                              "--statesnap-verify-budget=300",
                              env={"SBS_PORT": str(_free_port())})
    context = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 1, context
    verdicts = {v: r[:5] for v, r in _verdicts(findings).items()}
    assert verdicts == {
        "test_a_victim": ("verified", ("test_shared.py::test_a_polluter",), "files",
                          "shared.txt", ("files:shared.txt",)),
        "test_b_victim": ("verified", ("test_shared.py::test_b_polluter",), "files",
                          "shared.txt", ("files:shared.txt",)),
    }, context
    for f in findings:
        # A port another replay held is no answer: no replay kept says the bind failed, and
        # no finding calls the victim brittle over it.
        assert not f["note"], f
        assert "OSError" not in json.dumps(f["replays"]), f
        # The first pair is the printed line, run as printed: it confirms it too.
        assert [r["label"] for r in f["replays"]] == ["alone", "pair-printed", "key"], f
    # The checkout is as the run left it: every replay wrote in a copy of its own.
    assert (root / "shared.txt").read_text() == "b"


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_one_progress_line_per_victim_and_one_budget_side_by_side(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    proc, findings = _session(root, tmp_path / "out", "--statesnap-replay-workers=3",
                              "--statesnap-verify-budget=300",
                              env={"SBS_TRACE": str(tmp_path / "trace.txt"), "CI": "true"})
    lines = [ln for ln in proc.stdout.splitlines() + proc.stderr.splitlines()
             if ln.startswith("statesnap: [")]
    counts = [re.match(r"statesnap: \[(\d+)/4\] (\S+) (\S+) \((\d+) replay", ln) for ln in lines]
    assert all(counts), lines
    assert [int(m.group(1)) for m in counts if m] == [1, 2, 3, 4], lines
    assert sorted(m.group(3) for m in counts if m) == sorted(f["victim"] for f in findings)
    for m in counts:
        assert m is not None
        [f] = [f for f in findings if f["victim"] == m.group(3)]
        assert (m.group(2), int(m.group(4))) == (f["status"], len(f["replays"]))
    assert not any("replaying" in ln for ln in proc.stdout.splitlines())


#: Each victim sleeps past the whole budget: a replay started is the only one of its worker.
SLOW = {
    "test_slow.py": """
        import os, time

        def test_a_polluter():
            os.environ["SBS_SLOW"] = "1"

        def test_b_victim():
            time.sleep(2)
            assert "SBS_SLOW" not in os.environ

        def test_c_victim():
            time.sleep(2)
            assert "SBS_SLOW" not in os.environ

        def test_d_victim():
            time.sleep(2)
            assert "SBS_SLOW" not in os.environ

        def test_e_victim():
            time.sleep(2)
            assert "SBS_SLOW" not in os.environ
        """,
}


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_the_budget_is_one_for_all_workers(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SLOW)
    proc, findings = _session(root, tmp_path / "out", "--statesnap-replay-workers=2",
                              "--statesnap-verify-budget=1")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert len(findings) == 4
    for f in findings:
        assert f["status"] == "suspected", f
        assert "the verification budget was spent" in (f["note"] or ""), f
    # Two workers, one deadline: no worker started a replay once it had passed.
    assert sum(len(f["replays"]) for f in findings) <= 2, [f["replays"] for f in findings]


@pytest.mark.parametrize("value, said", [("0", "must be 1 or more: '0'"),
                                         ("-3", "must be 1 or more: '-3'"),
                                         ("two", "not an integer: 'two'")])
def test_bad_replay_workers_is_one_usage_error(tmp_path: Path, value: str, said: str) -> None:
    root = write_suite(tmp_path / "suite", {"test_x.py": "def test_x():\n    pass\n"})
    proc = subprocess.run([sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
                           f"--statesnap-replay-workers={value}"], cwd=root, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"--statesnap-replay-workers: {said}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    cli = subprocess.run([sys.executable, "-m", "statesnap", "explain", "--verify",
                          "--replay-workers", value, str(tmp_path / "none.jsonl")],
                         cwd=root, env=child_env(), capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert f"--replay-workers: {said}" in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stdout + cli.stderr


def test_the_option_is_in_the_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
                           "--help"], env=child_env(), capture_output=True, text=True,
                          timeout=120)
    assert "--statesnap-replay-workers=N" in proc.stdout
    cli = subprocess.run([sys.executable, "-m", "statesnap", "explain", "--help"],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert "--replay-workers N" in cli.stdout
