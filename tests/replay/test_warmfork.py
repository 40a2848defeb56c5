"""Replays forked from a warm parent give what a fresh interpreter gives (issue 28 §2).

Real sessions inside a pid namespace (replays start and signal processes): a warm and a cold
replay of the same orders agree on outcomes, failure signatures and the state each test
changed; a preload that starts a thread makes replays fall back cold, saying so on one line;
a library that sets a module global at import is fresh in every forked child; and a verified
finding's printed line is run once, exactly as printed, warm or cold.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pidns
from suite_runs import BASE_ARGS, child_env, write_suite

pytestmark = pytest.mark.needs_pidns

#: A "library": found on sys.path under a site-packages folder, so the record lists it for
#: the preload; it sets a module global when imported.
POLLIB = """
import os
STATE = {"calls": 0}
"""

#: Started at import: a thread that a fork would not carry into the child.
THREADLIB = """
import threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
"""

SUITE = {
    "test_w.py": """
        import os, subprocess, threading, time
        import pollib

        def test_a_polluter():
            pollib.STATE["calls"] += 1
            os.environ["WF_FLAG"] = "1"
            open("leftover.txt", "w").write("x")
            threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
            subprocess.Popen(["sleep", "3"], stdout=subprocess.DEVNULL)

        def test_b_global_victim():
            assert pollib.STATE["calls"] == 0

        def test_c_env_victim():
            assert "WF_FLAG" not in os.environ

        def test_d_file_victim():
            assert not os.path.exists("leftover.txt")
        """,
}

#: Runs each order warm and cold with the record's own runner; prints what each gave.
COMPARE = r"""
import json, os, sys
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
orders = json.loads(sys.argv[2])
out = {}
for mode in ("warm", "cold"):
    runner = Runner(record, warm=mode == "warm")
    rows = []
    for order in orders:
        for leftover in ("leftover.txt",):
            if os.path.exists(leftover):
                os.remove(leftover)
        res = runner.run(order, label=mode)
        child = read_record(res.record)
        changes = sorted([t.nodeid, c.probe, c.key] for t in child.tests for c in t.changes
                         if not c.key.startswith("run.logs/")
                         and c.probe in ("env", "modules", "cwd", "files", "threads",
                                         "children", "module_attrs"))
        rows.append({"outcomes": res.outcomes, "returncode": res.returncode,
                     "signatures": {n: res.signature(n).text() for n in order
                                    if res.failed(n)},
                     "changes": changes})
    out[mode] = {"rows": rows, "warm_runs": runner.warm_runs, "cold_runs": runner.cold_runs,
                 "refused": runner.warm_refused}
    runner.close()
print(json.dumps(out))
"""


def _suite(tmp_path: Path, lib: str = POLLIB, name: str = "pollib") -> tuple[Path, dict[str, str]]:
    root = write_suite(tmp_path / "suite", SUITE)
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / f"{name}.py").write_text(lib, encoding="utf-8")
    if name != "pollib":
        (site / "pollib.py").write_text(POLLIB, encoding="utf-8")
        test = root / "test_w.py"
        test.write_text(f"import {name}\n" + test.read_text(encoding="utf-8"), "utf-8")
    return root, child_env({"PYTHONPATH": str(site)})


def _session(root: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
            f"--statesnap-record={root / 'run.jsonl'}", *extra]
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    return proc


def _compare(root: Path, env: dict[str, str], orders: list[list[str]]) -> dict[str, object]:
    argv = [sys.executable, "-c", COMPARE, str(root / "run.jsonl"), json.dumps(orders)]
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


A, B, C, D = (f"test_w.py::test_{x}" for x in ("a_polluter", "b_global_victim",
                                                "c_env_victim", "d_file_victim"))


def test_warm_and_cold_replays_agree_and_a_library_global_is_fresh_in_every_child(
        tmp_path: Path) -> None:
    pidns.require()
    root, env = _suite(tmp_path)
    proc = _session(root, env, "--statesnap-verify-budget=0")
    assert proc.returncode == 1, proc.stdout[-3000:]
    header = json.loads((root / "run.jsonl").read_text().splitlines()[0])
    assert header["type"] == "header"
    collection = [json.loads(line) for line in (root / "run.jsonl").read_text().splitlines()
                  if '"type":"collection"' in line.replace(" ", "")]
    preload = collection[0]["preload"]
    assert "pollib" in preload and "pytest" in preload and "test_w" not in preload
    assert "conftest" not in preload
    # statesnap's own modules come after the libraries, by full name (its start in each child).
    own = [n for n in preload if n.split(".")[0] == "statesnap"]
    assert "statesnap.plugin.core" in own and preload[-len(own):] == own

    orders = [[A, B, C, D], [B], [C], [D], [A, B], [B, B.replace("b_", "b_")]]
    out = _compare(root, env, orders[:5])
    warm, cold = out["warm"], out["cold"]
    assert isinstance(warm, dict) and isinstance(cold, dict)
    # The first replay runs cold while the warm parent imports; the rest are forked.
    assert warm["refused"] is None and warm["warm_runs"] == 4 and warm["cold_runs"] == 1
    assert cold["warm_runs"] == 0 and cold["cold_runs"] == 5
    assert warm["rows"] == cold["rows"]
    # The library's global is fresh in every forked child: alone, the victims pass.
    rows = warm["rows"]
    assert rows[0]["outcomes"] == {A: "passed", B: "failed", C: "failed", D: "failed"}
    assert rows[1]["outcomes"] == {B: "passed"}
    assert rows[4]["outcomes"] == {A: "passed", B: "failed"}
    assert "replays run cold" not in str(out["stderr"])
    # statesnap was imported before the child's -p statesnap: pytest says nothing about it.
    forked = [p for p in (root / "run.logs").glob("*-warm.log")
              if "# forked from the warm parent" in p.read_text()]
    assert len(forked) == 4
    assert not any("already imported" in p.read_text() for p in forked)


#: Sets a variable when imported: a fork would inherit the polluted environment.
ENVLIB = """
import os
os.environ["ENVLIB_LOADED"] = "1"
"""


#: Each leaves behind, at import, something a fork would carry into every child.
CHILDLIB = """
import subprocess
PROC = subprocess.Popen(["sleep", "60"])
"""
SOCKLIB = """
import socket
SOCK = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
"""
FILELIB = """
import os
FILE = open(os.devnull, "rb")
"""
CWDLIB = """
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
"""
#: A stand-in for torch whose CUDA is initialised (no GPU here): what the check asks torch.
CUDALIB = """
class cuda:
    @staticmethod
    def is_initialized():
        return True
"""


@pytest.mark.parametrize(("lib", "name", "why"), [
    (THREADLIB, "threadlib", "the preload started a thread"),
    (ENVLIB, "envlib", "the preload changed the environment (ENVLIB_LOADED)"),
    (CHILDLIB, "childlib", "the preload started a child process"),
    (SOCKLIB, "socklib", "the preload opened a socket"),
    (FILELIB, "filelib", "the preload left files open (/dev/null)"),
    (CWDLIB, "cwdlib", "the preload changed the working directory"),
    (CUDALIB, "torch", "the preload initialised CUDA"),
])
def test_a_preload_that_a_fork_would_carry_falls_back_cold_saying_so_once(
        tmp_path: Path, lib: str, name: str, why: str) -> None:
    pidns.require()
    root, env = _suite(tmp_path, lib, name)
    _session(root, env, "--statesnap-verify-budget=0")
    out = _compare(root, env, [[A, B], [B]])
    warm = out["warm"]
    assert isinstance(warm, dict)
    assert warm["refused"] == why
    assert warm["warm_runs"] == 0 and warm["cold_runs"] == 2
    lines = [line for line in str(out["stderr"]).splitlines() if "replays run cold" in line]
    assert lines == [f"statesnap: replays run cold, each in a fresh interpreter: {why}"]
    assert warm["rows"] == out["cold"]["rows"]  # type: ignore[index]


def test_session_verdicts_match_warm_and_cold_and_each_verified_line_runs_as_printed(
        tmp_path: Path) -> None:
    pidns.require()
    root, env = _suite(tmp_path)
    verdicts = {}
    for mode in ("on", "off"):
        for leftover in root.glob("leftover.txt"):
            leftover.unlink()
        proc = _session(root, env, f"--statesnap-replay-warm={mode}")
        assert proc.returncode == 1
        section = proc.stdout[proc.stdout.index("finding(s):"):]
        verdicts[mode] = [line.strip() for line in section.splitlines()
                          if line.strip().startswith(("[", "polluted by", "reproduce"))]
        logs = sorted(p.name for p in root.glob("run.logs/*.log"))
        # The printed lines run: the first pair of a victim (as printed) or a confirmation.
        printed = [n for n in logs if n.endswith(("-confirm.log", "-pair-printed.log"))]
        verified = sum(1 for v in verdicts[mode] if v.startswith("[VERIFIED]"))
        lines = [v.split("reproduce: ", 1)[1] for v in verdicts[mode]
                 if v.startswith("reproduce: ")]
        assert verified == 3 and len(lines) >= 3, (verdicts, logs)
        heads = {}
        for name in printed:
            text = (root / "run.logs" / name).read_text()
            assert text.startswith("$ python -m pytest "), text[:300]
            assert "# forked from the warm parent" not in text, text[:300]
            heads[name] = text.splitlines()[0][2:]
        # Warm or cold, each verified finding's printed line ran as printed.
        for line in lines:
            assert line in heads.values(), (line, heads)
        if mode == "on":
            forked = [p for p in root.glob("run.logs/*.log")
                      if "# forked from the warm parent" in p.read_text()]
            assert forked
        shutil.rmtree(root / "run.logs")
    assert verdicts["on"] == verdicts["off"]


#: Three tests that each wait, in a replay, until all three are running: they pass only when
#: their replays are in flight at the same time.  In the recorded session (no BARRIER_DIR)
#: they do not wait.
BARRIER_SUITE = {
    "test_bar.py": """
        import os, time

        def _meet(name):
            where = os.environ.get("BARRIER_DIR")
            if not where:
                return
            open(os.path.join(where, name), "w").close()
            deadline = time.monotonic() + 30
            while len(os.listdir(where)) < 3:
                assert time.monotonic() < deadline, "the other replays never ran beside it"
                time.sleep(0.05)

        def test_plain():
            pass

        def test_one():
            _meet("one")

        def test_two():
            _meet("two")
            assert False, "two fails on its own"

        def test_three():
            _meet("three")
        """,
}

#: One runner, three threads replaying at once; prints each thread's result.
THREADED = r"""
import json, os, sys, threading
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
runner = Runner(record, warm=True, env={**os.environ, "BARRIER_DIR": sys.argv[2]})
first = runner.run(["test_bar.py::test_plain"], label="first")  # cold: the parent loads
results = {}
def replay(name):
    res = runner.run([f"test_bar.py::test_{name}"], label=name)
    log = res.log.read_text()
    pid = log.split("# forked from the warm parent (pid ", 1)[1].split(",")[0] \
        if "# forked from the warm parent" in log else None
    results[name] = {"outcomes": res.outcomes, "returncode": res.returncode, "pid": pid}
threads = [threading.Thread(target=replay, args=(n,)) for n in ("one", "two", "three")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"first": first.outcomes, "results": results, "warm_runs": runner.warm_runs,
                  "cold_runs": runner.cold_runs, "refused": runner.warm_refused}))
runner.close()
"""


def test_replays_in_flight_at_once_share_one_warm_parent_each_with_its_own_answer(
        tmp_path: Path) -> None:
    pidns.require()
    root = write_suite(tmp_path / "suite", BARRIER_SUITE)
    env = child_env({})
    proc = _session(root, env, "--statesnap-verify-budget=0")
    assert proc.returncode == 1, proc.stdout[-3000:]  # test_two fails
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    argv = [sys.executable, "-c", THREADED, str(root / "run.jsonl"), str(barrier)]
    run = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(run.stderr), run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["refused"] is None and out["first"] == {"test_bar.py::test_plain": "passed"}
    res = out["results"]
    # Each thread got its own child's answer: the failing one's exit code, the others' zeros.
    assert res["one"] == {"outcomes": {"test_bar.py::test_one": "passed"}, "returncode": 0,
                          "pid": res["one"]["pid"]}
    assert res["two"]["outcomes"] == {"test_bar.py::test_two": "failed"}
    assert res["two"]["returncode"] == 1
    assert res["three"]["outcomes"] == {"test_bar.py::test_three": "passed"}
    assert res["three"]["returncode"] == 0
    # All three forked from one warm parent, none cold.
    assert res["one"]["pid"] is not None
    assert res["one"]["pid"] == res["two"]["pid"] == res["three"]["pid"]
    assert out["warm_runs"] == 3 and out["cold_runs"] == 1
    assert sorted(p.name for p in barrier.iterdir()) == ["one", "three", "two"]


#: What a test leaves for the interpreter's exit: an atexit handler and a non-daemon thread,
#: each writing a file; a forked child must run both, as a fresh process does.
EXIT_SUITE = {
    "test_exit.py": """
        import atexit, os, threading, time

        def _write(name):
            with open(os.path.join(os.environ["EXIT_DIR"], name), "w") as f:
                f.write("done")

        def test_plain():
            pass

        def test_leaves_work_for_exit():
            if not os.environ.get("EXIT_DIR"):
                return
            atexit.register(_write, "atexit")
            threading.Thread(target=lambda: (time.sleep(0.5), _write("thread"))).start()
        """,
}

EXITING = r"""
import json, os, sys
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
runner = Runner(record, warm=True, env={**os.environ, "EXIT_DIR": sys.argv[2]})
runner.run(["test_exit.py::test_plain"], label="first")  # cold: the parent loads
res = runner.run(["test_exit.py::test_leaves_work_for_exit"], label="exit")
print(json.dumps({"forked": "# forked from the warm parent" in res.log.read_text(),
                  "returncode": res.returncode, "outcomes": res.outcomes,
                  "files": sorted(os.listdir(sys.argv[2]))}))
runner.close()
"""


def test_a_forked_child_exits_as_a_fresh_process_does_atexit_and_threads_run(
        tmp_path: Path) -> None:
    pidns.require()
    root = write_suite(tmp_path / "suite", EXIT_SUITE)
    env = child_env({})
    assert _session(root, env, "--statesnap-verify-budget=0").returncode == 0
    where = tmp_path / "exits"
    where.mkdir()
    argv = [sys.executable, "-c", EXITING, str(root / "run.jsonl"), str(where)]
    run = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(run.stderr), run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["forked"] is True and out["returncode"] == 0
    assert out["outcomes"] == {"test_exit.py::test_leaves_work_for_exit": "passed"}
    assert out["files"] == ["atexit", "thread"]
