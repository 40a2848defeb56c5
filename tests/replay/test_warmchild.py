"""A forked replay child does only what a fresh process would, and nothing twice (issue 28 §2).

Real sessions inside a pid namespace: what a library made at import, in the warm parent, with
a finalizer to release it at exit (a temporary folder) is still there for every forked child
after the first, as it is for every fresh process; a test's own finalizers and atexit handlers
still run at the child's exit; and a forked child imports none of pytest's or statesnap's own
modules itself, even to report a failure (the warm parent preloaded them all:
statesnap.replay.warmpick.LATE follows the code).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pidns
from suite_runs import BASE_ARGS, child_env, write_suite

pytestmark = pytest.mark.needs_pidns

#: A "library" (under a site-packages folder, so the record lists it for the preload) that
#: makes a temporary folder at import and removes it at exit, as tempfile.TemporaryDirectory
#: does: the folder a warm parent made is the one every forked child sees.
TMPLIB = """
import shutil, tempfile, weakref
DIR = tempfile.mkdtemp(prefix="tmplib-")

class _Owner:
    pass

OWNER = _Owner()
weakref.finalize(OWNER, shutil.rmtree, DIR, True)
"""

SUITE = {
    "test_c.py": """
        import atexit, os, sys, weakref
        import tmplib

        def _write(name, text="done"):
            with open(os.path.join(os.environ["EXIT_DIR"], name), "w") as f:
                f.write(text)

        class _Kept:
            pass

        KEPT = _Kept()

        def _own_modules():
            _write("own-modules", "\\n".join(sorted(
                n for n in sys.modules if n.split(".")[0] in ("statesnap", "_pytest"))))

        def test_library_folder_is_there():
            assert os.path.isdir(tmplib.DIR)

        def test_leaves_a_finalizer_for_exit():
            if os.environ.get("EXIT_DIR"):
                weakref.finalize(KEPT, _write, "finalize")
                atexit.register(_own_modules)
                os.environ["WC_FLAG"] = "1"

        def test_victim_of_the_flag():
            assert "WC_FLAG" not in os.environ
        """,
}

#: Replays with one runner: the first cold (the warm parent imports), then forked ones.
REPLAYS = r"""
import json, os, sys
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
where = sys.argv[2]
runner = Runner(record, warm=True, env={**os.environ, "EXIT_DIR": where})
F, E = "test_c.py::test_library_folder_is_there", "test_c.py::test_leaves_a_finalizer_for_exit"
V = "test_c.py::test_victim_of_the_flag"
rows = []
for order in ([F], [F], [F], [F, E, V]):
    res = runner.run(order, label="r")
    rows.append({"forked": "# forked from the warm parent" in res.log.read_text(),
                 "outcomes": res.outcomes, "returncode": res.returncode})
print(json.dumps({"rows": rows, "files": sorted(os.listdir(where)),
                  "preload": record.header.get("preload"), "refused": runner.warm_refused}))
runner.close()
"""


#: Imports the preload as the warm parent does, statesnap's late modules last; prints the
#: modules outside statesnap that the late ones added, and pytest's and statesnap's modules
#: loaded in the end (what a forked child finds in sys.modules).
PRELOADED = r"""
import json, sys
from statesnap.replay.warmpick import LATE
preload = json.loads(sys.argv[1])
for name in [n for n in preload if n not in LATE]:
    try:
        __import__(name)
    except BaseException:
        pass
before = set(sys.modules)
for name in LATE:
    __import__(name)
added = sorted(n for n in set(sys.modules) - before if n.split(".")[0] != "statesnap")
loaded = sorted(n for n in sys.modules if n.split(".")[0] in ("statesnap", "_pytest"))
print(json.dumps({"added": added, "late": all(n in preload for n in LATE), "loaded": loaded}))
"""


def test_a_forked_child_leaves_the_preloads_finalizers_runs_its_own_and_imports_no_statesnap(
        tmp_path: Path) -> None:
    pidns.require()
    root = write_suite(tmp_path / "suite", SUITE)
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "tmplib.py").write_text(TMPLIB, encoding="utf-8")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = child_env({"PYTHONPATH": str(site), "TMPDIR": str(tmp)})
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
            f"--statesnap-record={root / 'run.jsonl'}", "--statesnap-verify-budget=0"]
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-3000:]  # no EXIT_DIR: the victim passes
    where = tmp_path / "exits"
    where.mkdir()
    out = _replayed(REPLAYS, [str(root / "run.jsonl"), str(where)], root, env)
    rows = out["rows"]
    assert [r["forked"] for r in rows] == [False, True, True, True]
    # The warm parent's folder outlives each forked child's exit, as a fresh process's own
    # folder is there for it: every replay passes.
    for row in rows[:3]:
        assert row["outcomes"] == {"test_c.py::test_library_folder_is_there": "passed"}, rows
        assert row["returncode"] == 0
    # The last one leaks state into a victim that fails: the child reports it, as a replay of
    # a polluter and its victim does.
    assert rows[3]["outcomes"] == {"test_c.py::test_library_folder_is_there": "passed",
                                   "test_c.py::test_leaves_a_finalizer_for_exit": "passed",
                                   "test_c.py::test_victim_of_the_flag": "failed"}
    # What the test left for the exit ran in the forked child: its finalizer and atexit.
    assert out["files"] == ["finalize", "own-modules"]
    # Every module of pytest's and statesnap's that the child had at its exit, the ones its
    # failure's report needed included, was in the warm parent already: the child imported
    # none of them itself.  And statesnap's late modules bring no other module in with them:
    # a module a test imports is new to a forked child's sys.modules when it is to a fresh one.
    child_modules = (where / "own-modules").read_text().split()
    assert "statesnap.plugin.core" in child_modules and "_pytest.junitxml" in child_modules
    late = subprocess.run([sys.executable, "-c", PRELOADED, json.dumps(out["preload"])],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert late.returncode == 0, late.stderr[-3000:]
    parent = json.loads(late.stdout)
    assert parent["added"] == [] and parent["late"] is True
    assert sorted(set(child_modules) - set(parent["loaded"])) == []


#: A session that loads pytester (a builtin plugin outside pytest's defaults, loaded after its
#: assertion rewriter is installed): preloaded, pytest would warn in every forked child that
#: it was imported before it could be rewritten.
PYTESTER_SUITE = {
    "conftest.py": """
        pytest_plugins = ["pytester"]
        """,
    "test_p.py": """
        def test_uses_pytester(pytester):
            pytester.makepyfile("def test_inner():\\n    pass\\n")
            pytester.runpytest_inprocess().assert_outcomes(passed=1)
        """,
}

PYTESTER_REPLAYS = r"""
import json, sys
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
runner = Runner(record, warm=True)
logs = []
for _ in range(2):
    res = runner.run(["test_p.py::test_uses_pytester"], label="p")
    logs.append({"outcomes": res.outcomes, "log": res.log.read_text()})
print(json.dumps({"logs": logs, "preload": record.header.get("preload"),
                  "refused": runner.warm_refused}))
runner.close()
"""


def test_pytester_loaded_by_the_session_is_not_preloaded_and_no_child_warns(
        tmp_path: Path) -> None:
    pidns.require()
    root = write_suite(tmp_path / "suite", PYTESTER_SUITE)
    env = child_env({})
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
            f"--statesnap-record={root / 'run.jsonl'}", "--statesnap-verify-budget=0"]
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-3000:]
    out = _replayed(PYTESTER_REPLAYS, [str(root / "run.jsonl")], root, env)
    preload = out["preload"]
    assert "_pytest.junitxml" in preload
    assert not [n for n in preload if n.startswith(("_pytest.pytester", "_pytest.pytester_"))]
    forked = out["logs"][1]
    assert "# forked from the warm parent" in forked["log"]
    assert forked["outcomes"] == {"test_p.py::test_uses_pytester": "passed"}
    assert "already imported" not in forked["log"] and "Warning" not in forked["log"]


def _replayed(program: str, args: list[str], root: Path, env: dict[str, str]) -> Any:
    """What ``program`` (replays of the record, run in a pid namespace) printed last, as
    JSON; the warm parent was not refused."""
    run = subprocess.run(pidns.wrap([sys.executable, "-c", program, *args]),
                         cwd=root, env=env, capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert pidns.bystander_survived(run.stderr), run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["refused"] is None
    return out
