"""Verdicts on real runs where "not order-dependent" used to be wrong, and their neighbours.

Each suite really does what the verdict is about (a socket held on a port, a file left by an
earlier run, a failure that moves when the victim runs alone); each printed reproduction is
run under plain pytest and must fail its victim.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import psutil
from verdict_runs import assert_repros_fail, blocks

from suite_runs import child_env, run_suite, statesnap_cli, write_suite


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_victim_failing_alone_differently_is_order_dependent(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_cache.py": '''
        import os

        def test_a_points_cache_nowhere():
            os.environ["ZOO_CACHE"] = "/nonexistent/zoo-cache"

        def test_b_uses_cache():
            where = os.environ["ZOO_CACHE"]          # alone: KeyError here
            assert os.path.isdir(where), where       # in the run: AssertionError here
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_uses_cache")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_cache.py::test_a_points_cache_nowhere"]
    assert (f["exc_type"], f["where"]) == ("AssertionError", "test_cache.py:8")
    assert f["alone_failure"] == "KeyError at test_cache.py:7"
    assert "differently (KeyError at test_cache.py:7" in f["note"]
    assert "brittle" in f["note"]
    assert (f["probe"], f["key"]) == ("env", "ZOO_CACHE")
    assert assert_repros_fail(run.output, root) == 1


def test_same_type_at_another_line_is_a_different_failure(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_lines.py": '''
        import os

        def test_a_sets_level():
            os.environ["ZOO_LEVEL"] = "9"

        def test_b_level():
            level = os.environ.get("ZOO_LEVEL")
            assert level is not None                 # alone: fails here
            assert int(level) < 5                    # in the run: fails here
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_level")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_lines.py::test_a_sets_level"]
    assert f["alone_failure"] == "AssertionError at test_lines.py:8"
    assert f["where"] == "test_lines.py:9"
    assert assert_repros_fail(run.output, root) == 1


def test_a_genuine_failure_shows_no_state_and_labels_earlier_changes(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_broken.py": '''
        import os

        def test_a_leaks():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_broken():
            assert os.environ.get("ZOO_MODE", "") + "x" == "never"
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_broken")
    assert f["status"] == "not-order-dependent"
    assert (f["probe"], f["key"], f["hint"], f["cleaners"]) == (None, None, None, [])
    cand = f["candidates"][0]
    assert (cand["probe"], cand["key"]) == ("env", "ZOO_MODE")
    assert any(r.startswith("not the cause") for r in cand["reasons"])
    block = "\n".join(blocks(run.output)["test_broken.py::test_b_broken"])
    assert "state:" not in block
    assert "fix:" not in block
    assert "earlier change, not the cause: env:ZOO_MODE by test_broken.py::test_a_leaks" in block
    assert assert_repros_fail(run.output, root) == 1


def test_a_file_left_by_an_earlier_run_is_named_with_its_writer(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {
        "test_export.py": '''
            from pathlib import Path

            def test_export_writes_report():
                Path("export.csv").write_text("a,b\\n")   # never removed
            ''',
        "test_fresh.py": '''
            from pathlib import Path

            def test_workspace_is_clean():
                assert not Path("export.csv").exists()
            ''',
    })
    # The earlier run: the default record folder, as a user's run leaves it.
    first = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "statesnap",
         "--statesnap-verify-budget=0", "test_export.py"],
        cwd=root, env=child_env(), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout[-2000:]
    assert (root / "export.csv").read_text() == "a,b\n"
    (root / "export.csv").write_text("the user's own edit\n")  # must survive the replays
    run = run_suite(root, tmp_path / "out", "test_fresh.py")
    f = run.finding("test_workspace_is_clean")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_export.py::test_export_writes_report"]
    assert [lo["path"] for lo in f["leftovers"]] == ["export.csv"]
    assert f["leftovers"][0]["writer"] == "test_export.py::test_export_writes_report"
    assert (f["probe"], f["key"]) == ("files", "export.csv")
    assert "an earlier run left export.csv on disk" in f["note"]
    assert ("left on disk by an earlier run: export.csv (written by "
            "test_export.py::test_export_writes_report)") in run.output
    assert (root / "export.csv").read_text() == "the user's own edit\n"
    assert not list((tmp_path / "out").glob("run.logs/aside*")), "a stash was left behind"
    assert assert_repros_fail(run.output, root) == 1


def test_a_port_held_by_the_session_does_not_make_a_genuine_failure(tmp_path: Path) -> None:
    port = _free_port()
    root = write_suite(tmp_path / "suite", {"test_port.py": '''
        import os
        import socket

        PORT = int(os.environ["ZOO_PORT"])
        _servers = []

        def test_1_sets_mode():
            os.environ["ZOO_MODE"] = "a"

        def test_2_starts_server():
            s = socket.socket()
            s.bind(("127.0.0.1", PORT))
            s.listen()
            _servers.append(s)              # never closed

        def test_3_resets_mode():
            del os.environ["ZOO_MODE"]      # puts back an unrelated variable

        def test_4_sets_mode_again():
            os.environ["ZOO_MODE"] = "b"

        def test_5_binds_the_port():
            assert os.environ.get("ZOO_MODE") != "zzz"
            with socket.socket() as s:
                s.bind(("127.0.0.1", PORT))
        '''})
    env = {"ZOO_PORT": str(port)}
    run = run_suite(root, tmp_path / "out", env=env)
    f = run.finding("test_5_binds_the_port")
    assert f["status"] == "verified", run.output[-4000:]
    assert f["polluters"] == ["test_port.py::test_2_starts_server"]
    assert any(c["probe"] == "fds" and f"127.0.0.1:{port} LISTEN" in str(c["after"])
               for c in f["candidates"] if c["nodeid"].endswith("test_2_starts_server"))
    # test_3 put back ZOO_MODE, not the socket: it cleans nothing here.
    assert f["cleaners"] == [] and "cleaned by" not in run.output
    assert f"before replaying, let go of socket tcp 127.0.0.1:{port} LISTEN" in run.output
    assert run.proc.returncode == 1
    # The same verdict from a process that never held the port.
    cli = statesnap_cli("explain", str(run.record_path), "--verify", "--json", cwd=root,
                        env=env)
    after = [g for g in json.loads(cli.stdout)
             if g["victim"].endswith("test_5_binds_the_port")]
    assert [(g["status"], g["polluters"], g["probe"], g["key"]) for g in after] == [
        (f["status"], f["polluters"], f["probe"], f["key"])], cli.stdout[-3000:]
    assert assert_repros_fail(run.output, root, env) == 1


def test_a_child_process_holding_a_port_is_never_signalled(tmp_path: Path) -> None:
    """A server process a test started and left holds the victim's port.  statesnap signals
    only processes it started, so the replays run beside it: the victim fails alone too, and
    the verdict says that this is not proven either way (never "a genuine failure")."""
    port = _free_port()
    root = write_suite(tmp_path / "suite", {"test_child.py": '''
        import os
        import socket
        import subprocess
        import sys
        import time

        PORT = int(os.environ["ZOO_PORT"])
        SERVER = (
            "import socket, sys, time\\n"
            "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\\n"
            "print('up', flush=True); time.sleep(600)\\n")
        _procs = []

        def test_1_starts_server_process():
            p = subprocess.Popen([sys.executable, "-c", SERVER, str(PORT)],
                                 stdout=subprocess.PIPE)
            assert p.stdout.readline() == b"up\\n"
            p.stdout.close()
            _procs.append(p)                   # never stopped

        def test_2_binds_the_port():
            with socket.socket() as s:
                s.bind(("127.0.0.1", PORT))
        '''})
    env = {"ZOO_PORT": str(port)}
    run = run_suite(root, tmp_path / "out", env=env)
    try:
        f = run.finding("test_2_binds_the_port")
        assert f["status"] == "unexplained", run.output[-4000:]
        assert "left running" in f["note"] and "never signals" in f["note"], f["note"]
        assert "replaying beside (statesnap signals only processes it started) child process" \
            in run.output
        assert "let go of child process" not in run.output
        assert "reproduce:" not in run.output.split("test_2_binds_the_port", 1)[-1]
        [action] = run.record().released
        pid = int(action["what"].split("(pid ", 1)[1].split(",", 1)[0])
        assert psutil.pid_exists(pid)  # still running: statesnap never signalled it
    finally:
        _end_left_servers(run)


def test_restore_mode_does_not_blame_a_key_it_put_back(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_restored.py": '''
        import os

        def test_a_sets_mode():
            os.environ["ZOO_MODE"] = "fast"     # restore mode puts it back

        def test_b_wants_mode():
            assert os.environ.get("ZOO_MODE") == "fast"
        '''})
    run = run_suite(root, tmp_path / "out", "--statesnap-restore", budget=0)
    record = run.record()
    assert record.test_by_id("test_restored.py::test_a_sets_mode").extra["restored"] == [
        "env:ZOO_MODE"]
    f = run.finding("test_b_wants_mode")
    assert f["polluters"] == [] and f["candidates"] == [], f
    assert "polluted by" not in run.output
    # And the replays agree: it fails alone (it needs the state, which restore mode removed).
    cli = statesnap_cli("explain", str(run.record_path), "--verify", "--json", cwd=root)
    (g,) = json.loads(cli.stdout)
    assert g["status"] == "not-order-dependent", cli.stdout[-2000:]


def test_unexplained_prints_no_reproduction(tmp_path: Path) -> None:
    flag = tmp_path / "outside" / "first-run"
    flag.parent.mkdir()
    root = write_suite(tmp_path / "suite", {"test_once.py": '''
        import os
        from pathlib import Path

        def test_a_sets_mode():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_fails_the_first_time():
            flag = Path(os.environ["ZOO_FLAG"])
            first = not flag.exists()
            flag.touch()
            assert not first, os.environ.get("ZOO_MODE")
        '''})
    run = run_suite(root, tmp_path / "out", env={"ZOO_FLAG": str(flag)})
    f = run.finding("test_b_fails_the_first_time")
    assert f["status"] == "unexplained", run.output[-3000:]
    assert (f["polluters"], f["probe"], f["repro"]) == ([], None, "")
    assert "outside the suite's order" in f["note"]
    assert assert_repros_fail(run.output, root) == 0
    block = "\n".join(blocks(run.output)["test_once.py::test_b_fails_the_first_time"])
    assert "reproduce:" not in block and "state:" not in block and "polluted by" not in block
    # alone, the pair (as printed, then replayed), then the whole prefix: no ddmin after a
    # prefix that passed
    logs = sorted(p.name for p in (tmp_path / "out" / "run.logs").glob("*.log"))
    assert [n.split("-", 1)[1] for n in logs] == ["alone.log", "pair-printed.log", "pair.log",
                                                  "ddmin.log"]


def test_minimising_the_whole_prefix_when_no_recorded_change_explains_it(
        tmp_path: Path) -> None:
    # Only the env probe: the gates are state no probe of this run sees.
    root = write_suite(tmp_path / "suite", {
        "pytest.ini": "[pytest]\nstatesnap_probes = env\n",
        "zoo_state.py": "GATES = []\n",
        "test_gates.py": '''
            import os
            import zoo_state

            def test_1_env():
                os.environ["ZOO_A"] = "1"

            def test_2_opens_gate():
                zoo_state.GATES.append("north")

            def test_3_env():
                os.environ["ZOO_B"] = "1"

            def test_4_opens_gate():
                zoo_state.GATES.append("south")

            def test_5_neutral():
                pass

            def test_6_needs_gates_closed():
                assert len(zoo_state.GATES) < 2
            ''',
    })
    # ddmin needs about ten replays: a budget no loaded CI machine runs out of.
    run = run_suite(root, tmp_path / "out", budget=1200, timeout=1500)
    f = run.finding("test_6_needs_gates_closed")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_gates.py::test_2_opens_gate",
                              "test_gates.py::test_4_opens_gate"]
    assert f["probe"] is None and "recorded no state change" in f["note"]
    orders = [json.loads(p.read_text()) for p in
              sorted((tmp_path / "out" / "run.logs").glob("*-ddmin.order.json"))]
    assert orders[0] == ["test_gates.py::test_1_env", "test_gates.py::test_3_env",
                         "test_gates.py::test_6_needs_gates_closed"]  # the suspects first
    assert orders[1] == [f"test_gates.py::test_{n}" for n in (
        "1_env", "2_opens_gate", "3_env", "4_opens_gate", "5_neutral",
        "6_needs_gates_closed")]  # then the whole prefix
    assert assert_repros_fail(run.output, root) == 1


def test_a_victim_that_does_not_run_alone_says_so(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {
        "libs/zoolib.py": "NAME = 'zoo'\n",
        "test_a_setup.py": '''
            import os
            import sys

            sys.path.insert(0, os.path.join(os.path.dirname(__file__), "libs"))

            def test_pollutes():
                os.environ["ZOO_MODE"] = "fast"
            ''',
        "test_b_victim.py": '''
            import os
            import zoolib   # importable only after test_a_setup.py was collected

            def test_victim():
                assert os.environ.get("ZOO_MODE") is None, zoolib.NAME
            ''',
    })
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_victim")
    assert f["status"] == "suspected", run.output[-3000:]
    # Collected alone, its module cannot import: the victim's id does not exist there.
    assert f["note"].startswith("a replay could not run: "), f["note"]
    assert "no longer exist: test_b_victim.py::test_victim" in f["note"]
    assert len(f["logs"]) == 1  # nothing was replayed after it
    cli = statesnap_cli("explain", str(run.record_path), "--verify", cwd=root)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "no longer exist: test_b_victim.py::test_victim" in cli.stderr
    assert len([ln for ln in cli.stderr.splitlines() if "error:" in ln]) == 1
    assert "Traceback" not in cli.stderr


def _end_left_servers(run: object) -> None:
    """The test (not statesnap) ends the server the inner suite left running."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for action in run.record().released:  # type: ignore[attr-defined]
            pid = int(action["what"].split("(pid ", 1)[1].split(",", 1)[0])
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()

