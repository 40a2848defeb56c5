"""The ``files`` probe's inotify instance at the session's end: watches dropped at
``stop()`` (sessionfinish), the descriptor closed at ``close()`` (pytest_unconfigure).

Why in two steps: closing an instance that still has watches waits out the kernel's grace
period (~15 ms of wall time at every session's end); with the watches gone well before, the
close is immediate.  Checked on the kernel's own account (``/proc/self/fdinfo``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext
from statesnap.probes.files.probe import INOTIFY, FilesProbe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="inotify is Linux only")


def _watches(fd: int) -> int:
    """The inotify watches the kernel lists for descriptor ``fd`` of this process."""
    text = Path(f"/proc/self/fdinfo/{fd}").read_text()
    return sum(line.startswith("inotify wd:") for line in text.splitlines())


def _inotify_fds() -> list[int]:
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify":
                out.append(int(name))
        except OSError:
            continue
    return out


def _probe(tmp_path: Path) -> FilesProbe:
    (tmp_path / "a" / "b").mkdir(parents=True)
    probe = FilesProbe()
    probe.setup(ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,)))
    assert probe.mode == INOTIFY
    return probe


def test_stop_drops_the_watches_and_close_the_descriptor(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    before = set(_inotify_fds())
    (fd,) = [f for f in before if _watches(f) == 3]  # the root, a, a/b
    probe.stop()
    assert fd in _inotify_fds() and _watches(fd) == 0
    probe.close()
    assert fd not in _inotify_fds()


def test_stop_in_a_forked_child_leaves_the_parents_watches(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    (fd,) = [f for f in _inotify_fds() if _watches(f) == 3]
    pid = os.fork()
    if pid == 0:  # the child shares the instance: its stop() must not drop the parent's watches
        try:
            probe.stop()
            probe.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert _watches(fd) == 3
    token = probe.token()
    (tmp_path / "a" / "new.txt").write_text("x")
    assert probe.token() != token  # still watching: the event arrives
    assert "a/new.txt" in probe.read()
    probe.stop()
    probe.close()


def test_a_session_drops_the_watches_before_unconfigure_and_closes_after(
        tmp_path: Path) -> None:
    """In a real session: at the user's first unconfigure hook the instance is open with no
    watch left; after pytest returns, it is closed."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import os
        import pytest

        def inotify_watches():
            found = []
            for name in os.listdir("/proc/self/fd"):
                try:
                    if os.readlink(f"/proc/self/fd/{name}") != "anon_inode:inotify":
                        continue
                    with open(f"/proc/self/fdinfo/{name}") as f:
                        found.append(sum(l.startswith("inotify wd:") for l in f))
                except OSError:
                    continue
            return found

        def pytest_runtest_call(item):
            print("\\nIN TEST", inotify_watches())

        @pytest.hookimpl(tryfirst=True)
        def pytest_unconfigure(config):
            print("\\nAT UNCONFIGURE", inotify_watches())
    """))
    (tmp_path / "sub").mkdir()
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    script = textwrap.dedent("""
        import os, sys, pytest
        code = pytest.main(sys.argv[1:])
        left = [n for n in os.listdir("/proc/self/fd")
                if os.path.exists(f"/proc/self/fd/{n}")
                and os.readlink(f"/proc/self/fd/{n}") == "anon_inode:inotify"]
        print("AFTER", len(left))
        sys.exit(code)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script, "-p", "statesnap", "-p", "no:randomly",
         "-p", "no:cacheprovider", "-s", "-q", f"--statesnap-record={tmp_path / 'r.jsonl'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "IN TEST [2]" in lines, proc.stdout  # the root and sub/
    assert "AT UNCONFIGURE [0]" in lines, proc.stdout
    assert "AFTER 0" in lines, proc.stdout
