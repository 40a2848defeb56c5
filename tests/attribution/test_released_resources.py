"""A resource an earlier test left, released during a later one by the garbage collector, is
the earlier test's leak, never the later one's (issue 29): when the collector runs is its own
timing, and charging the release to whichever test ran then made two runs of one suite list
different tests.
"""

from __future__ import annotations

from pathlib import Path

from suite_runs import run_suite, write_suite

FILES = {
    "test_sockets.py": """
        import gc
        import socket


        class Holder:
            def __init__(self):
                self.me = self          # a cycle: only the collector frees it
                self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.sock.bind(("127.0.0.1", 0))
                self.sock.listen()


        def test_leaves_a_socket():
            gc.disable()
            Holder()


        def test_collects():
            gc.enable()
            gc.collect()                # closes the earlier test's socket
        """,
}


def test_a_socket_closed_by_the_collector_is_the_test_that_left_it(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "-W", "ignore::ResourceWarning",
                    "-p", "no:unraisableexception", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    leaks = run.leak_severities()
    assert any(key.isdigit() for key, _ in leaks.get("test_leaves_a_socket", [])), leaks
    assert not any(key.isdigit() for key, _ in leaks.get("test_collects", [])), leaks
    # The record keeps the release where it happened.
    (collects,) = [t for t in run.record().tests if t.nodeid.endswith("test_collects")]
    assert any(c.probe == "fds" and c.change == "removed" for c in collects.changes)
