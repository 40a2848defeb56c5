"""The ``files`` probe against a real tree under tmp_path, with inotify and without."""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.fsinfo import REWRITTEN_STAT_KEPT, SIZE_CHANGED_MTIME_KEPT, mtime_resolution
from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.files.probe import INOTIFY, SCAN, FilesProbe
from statesnap.state.diff import diff_maps

LINUX = sys.platform.startswith("linux")
MODES = [True, False] if LINUX else [False]
needs_inotify = pytest.mark.skipif(not LINUX, reason="inotify is Linux only")

Factory = Callable[..., FilesProbe]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Factory]:
    made: list[FilesProbe] = []

    def factory(use_inotify: bool = True, exclude: tuple[str, ...] = (),
                ctx: ProbeContext | None = None, **kw: Any) -> FilesProbe:
        p = FilesProbe(use_inotify=use_inotify, **kw)
        p.setup(ctx or ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,),
                                    watch_exclude=exclude))
        made.append(p)
        return p

    yield factory
    for p in made:
        p.close()


def _changes(probe: FilesProbe, before: dict[str, Any]) -> list[tuple[str, str]]:
    probe.token()
    return [(c.key, c.change) for c in diff_maps("files", before, probe.read())]


@pytest.mark.parametrize("use_inotify", MODES, ids=lambda v: "inotify" if v else "scan")
def test_created_modified_deleted(make: Factory, tmp_path: Path, use_inotify: bool) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "keep.txt").write_text("keep")
    (tmp_path / "doomed.txt").write_text("x")
    probe = make(use_inotify)
    assert probe.mode == (INOTIFY if use_inotify else SCAN)
    token, before = probe.token(), probe.read()
    assert before["pkg/keep.txt"]["size"] == 4
    assert probe.token() == token  # nothing happened

    (tmp_path / "pkg" / "new.txt").write_text("new")
    (tmp_path / "pkg" / "keep.txt").write_text("changed")
    (tmp_path / "doomed.txt").unlink()
    assert probe.token() != token
    after = probe.read()
    assert [(c.key, c.change) for c in diff_maps("files", before, after)] == [
        ("doomed.txt", "removed"), ("pkg/keep.txt", "changed"), ("pkg/new.txt", "added"),
    ]
    assert after["pkg/keep.txt"]["size"] == 7
    assert "flag" not in after["pkg/keep.txt"]
    assert probe.severity_of("pkg/new.txt", None, after["pkg/new.txt"]) is Severity.MEDIUM
    assert "tmp_path" in (probe.hint("pkg/new.txt", "added") or "")


@pytest.mark.parametrize("use_inotify", MODES, ids=lambda v: "inotify" if v else "scan")
def test_size_changed_with_the_mtime_put_back(
    make: Factory, tmp_path: Path, use_inotify: bool
) -> None:
    target = tmp_path / "cached.py"
    target.write_text("x = 1\n")
    probe = make(use_inotify)
    before = probe.read()
    old = target.stat()
    target.write_text("x = 12345\n")
    os.utime(target, ns=(old.st_atime_ns, old.st_mtime_ns))  # what fudge-the-mtime code does
    probe.token()
    after = probe.read()
    fp = after["cached.py"]
    assert fp == {"size": 10, "mtime_ns": old.st_mtime_ns, "flag": SIZE_CHANGED_MTIME_KEPT}
    assert probe.severity_of("cached.py", before["cached.py"], fp) is Severity.HIGH
    assert "mtime unchanged" in (probe.detail("cached.py", before["cached.py"], fp) or "")
    assert "mtime" in (probe.hint("cached.py", "changed") or "")
    # A later ordinary write clears the marker.
    target.write_text("x = 3\n")
    os.utime(target, ns=(old.st_atime_ns, old.st_mtime_ns + 10**9))
    probe.token()
    assert "flag" not in probe.read()["cached.py"]


@needs_inotify
def test_rewrite_with_same_size_and_mtime_is_flagged(make: Factory, tmp_path: Path) -> None:
    target = tmp_path / "same.txt"
    target.write_text("aaaa")
    probe = make()
    before = probe.read()
    old = target.stat()
    target.write_text("bbbb")
    os.utime(target, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert _changes(probe, before) == [("same.txt", "changed")]
    assert probe.read()["same.txt"]["flag"] == REWRITTEN_STAT_KEPT
    # A chmod alone is not a write: no change, the marker stays.
    marked = probe.read()
    target.chmod(0o600)
    assert _changes(probe, marked) == []


@needs_inotify
def test_new_directories_are_watched_as_they_appear(make: Factory, tmp_path: Path) -> None:
    probe = make()
    before = probe.read()
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "early.txt").write_text("1")
    # Each new directory is a key of its own (its mtime is no part of it).
    assert _changes(probe, before) == [("a/", "added"), ("a/b/", "added"), ("a/b/c/", "added"),
                                       ("a/b/c/early.txt", "added")]
    mid = probe.read()
    (deep / "late.txt").write_text("2")  # only seen if c/ got its own watch
    assert _changes(probe, mid) == [("a/b/c/late.txt", "added")]


@needs_inotify
def test_directory_removed_and_moved(make: Factory, tmp_path: Path) -> None:
    for d in ("gone", "moving"):
        (tmp_path / d / "sub").mkdir(parents=True)
        (tmp_path / d / "sub" / "f.txt").write_text(d)
    probe = make()
    before = probe.read()
    shutil.rmtree(tmp_path / "gone")
    (tmp_path / "moving").rename(tmp_path / "moved")
    assert sorted(_changes(probe, before)) == [
        ("gone/", "removed"), ("gone/sub/", "removed"), ("gone/sub/f.txt", "removed"),
        ("moved/", "added"), ("moved/sub/", "added"), ("moved/sub/f.txt", "added"),
        ("moving/", "removed"), ("moving/sub/", "removed"), ("moving/sub/f.txt", "removed"),
    ]
    mid = probe.read()
    (tmp_path / "moved" / "sub" / "g.txt").write_text("g")  # watched under its new name
    assert _changes(probe, mid) == [("moved/sub/g.txt", "added")]


@pytest.mark.parametrize("use_inotify", MODES, ids=lambda v: "inotify" if v else "scan")
def test_caches_vcs_venvs_and_excluded_globs_are_out_of_view(
    make: Factory, tmp_path: Path, use_inotify: bool
) -> None:
    venv = tmp_path / "env"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    for d in (".git", "__pycache__", "node_modules", ".pytest_cache", "build"):
        (tmp_path / d).mkdir()
    probe = make(use_inotify, exclude=("build", "*.log"))
    token, before = probe.token(), probe.read()
    assert before == {}
    (venv / "lib.py").write_text("")
    (tmp_path / ".git" / "index").write_text("")
    (tmp_path / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "stray.pyc").write_bytes(b"")
    (tmp_path / "node_modules" / "x.js").write_text("")
    (tmp_path / ".pytest_cache" / "statesnap-record.jsonl").write_text("{}\n")
    (tmp_path / "build" / "out.o").write_text("")
    (tmp_path / "run.log").write_text("")
    (tmp_path / ".mypy_cache").mkdir()
    (tmp_path / ".mypy_cache" / "3.11.json").write_text("")
    mtime_resolution(tmp_path)  # statesnap's own probe file comes and goes unseen
    assert probe.token() == token
    assert probe.read() == {}


@needs_inotify
def test_inotify_descriptor_is_registered_as_statesnaps_own(tmp_path: Path) -> None:
    ctx = ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,))
    probe = FilesProbe()
    probe.setup(ctx)
    (fd,) = ctx.own_fds
    assert os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
    assert ctx.notes["files"].startswith("inotify: 1 directories watched")
    probe.close()
    assert ctx.own_fds == set()


@needs_inotify
def test_watch_limit_falls_back_to_scanning(make: Factory, tmp_path: Path) -> None:
    for d in "abcde":
        (tmp_path / d).mkdir()
    (tmp_path / "c" / "f.txt").write_text("f")
    ctx = ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,))
    probe = make(ctx=ctx, max_watches=3)
    assert probe.mode == SCAN
    assert "more than 3 directories" in probe.mode_reason
    assert ctx.notes["files"].startswith("scan of 1 files")
    assert ctx.own_fds == set()  # the inotify descriptor was closed again
    before = probe.read()
    (tmp_path / "e" / "g.txt").write_text("g")
    assert _changes(probe, before) == [("e/g.txt", "added")]


@needs_inotify
def test_limit_reached_at_runtime_switches_to_scanning(make: Factory, tmp_path: Path) -> None:
    probe = make(max_watches=2)
    assert probe.mode == INOTIFY
    before = probe.read()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "f.txt").write_text("f")
    assert _changes(probe, before) == [("one/", "added"), ("two/", "added"),
                                       ("two/f.txt", "added")]
    assert probe.mode == SCAN


def test_roots_outside_the_rootdir_get_absolute_keys(make: Factory, tmp_path: Path) -> None:
    inside, outside = tmp_path / "project", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    probe = make(ctx=ProbeContext(rootdir=inside, watch_roots=(inside, outside)))
    before = probe.read()
    (inside / "a.txt").write_text("a")
    (outside / "b.txt").write_text("b")
    assert _changes(probe, before) == [
        (str(outside.resolve() / "b.txt"), "added"), ("a.txt", "added"),
    ]


@needs_inotify
def test_token_does_not_stat_the_tree(
    make: Factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40):
        d = tmp_path / f"d{i}"
        d.mkdir()
        for j in range(50):
            (d / f"f{j}.txt").write_text("x")
    probe = make()
    before = probe.read()
    assert len(before) == 2000 + 40  # the files and their directories
    calls: list[str] = []

    def spy(name: str) -> None:
        real = getattr(os, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)

    for name in ("stat", "lstat", "scandir", "listdir"):
        spy(name)
    token = probe.token()
    for _ in range(100):
        assert probe.token() == token
    assert calls == []  # a hundred quiet tokens looked at none of the 2000 files
    (tmp_path / "d7" / "f3.txt").write_text("changed")
    assert probe.token() != token
    after = probe.read()
    assert calls == ["lstat"]  # the one file the events named
    assert [c.key for c in diff_maps("files", before, after)] == ["d7/f3.txt"]


def test_nothing_to_watch_is_unavailable(tmp_path: Path) -> None:
    from statesnap.probes.base import ProbeUnavailable

    with pytest.raises(ProbeUnavailable):
        FilesProbe().setup(ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path / "nope",)))


def _queue_limit() -> int:
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except OSError:
        return 0


@needs_inotify
@pytest.mark.skipif(not 0 < _queue_limit() <= 65536, reason="needs a modest inotify queue")
def test_event_queue_overflow_rescans(make: Factory, tmp_path: Path) -> None:
    probe = make()
    before = probe.read()
    burst = tmp_path / "burst"
    burst.mkdir()
    token = probe.token()  # watches burst/ before the flood
    # Each new file raises three events (create, modify, close): enough to overflow the queue.
    count = _queue_limit() // 3 + 100
    for i in range(count):
        (burst / f"{i}.txt").write_text("x")
    assert probe.token() != token
    after = probe.read()
    assert len([k for k in after if k not in before]) == count + 1  # and burst/
    # In a diff, so many files in one new folder are one summarised change of the folder.
    summary = [(c.key, c.change, c.after["folder"]["files"])
               for c in diff_maps("files", before, after)]
    assert summary == [("burst/", "added", count)]
    mid = probe.read()
    (burst / "0.txt").write_text("after the flood")  # the watches still work after a rescan
    assert _changes(probe, mid) == [("burst/0.txt", "changed")]


@needs_inotify
def test_forked_child_gets_its_own_queue(make: Factory, tmp_path: Path) -> None:
    ctx = ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,))
    probe = make(ctx=ctx)
    before = probe.read()
    parent_fd = next(iter(ctx.own_fds))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only plain calls, then _exit
        try:
            probe.token()  # notices the fork, watches on a fresh instance
            (tmp_path / "from-child.txt").write_text("c")
            changes = _changes(probe, before)
            fds = sorted(ctx.own_fds)
            os.write(w, repr((changes, fds)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        child_changes, child_fds = ast.literal_eval(f.read().decode())
    os.waitpid(pid, 0)
    assert child_changes == [("from-child.txt", "added")]
    assert len(child_fds) == 1
    # The parent's queue was not drained by the child: it sees the file too.
    assert ctx.own_fds == {parent_fd}
    assert _changes(probe, before) == [("from-child.txt", "added")]


@pytest.mark.parametrize("use_inotify", MODES, ids=lambda v: "inotify" if v else "scan")
def test_a_key_replay_removes_what_was_made_since_the_save(
    make: Factory, tmp_path: Path, use_inotify: bool
) -> None:
    (tmp_path / "work" / "inbox").mkdir(parents=True)
    (tmp_path / "work" / "kept.txt").write_text("k")
    (tmp_path / "gone").mkdir()
    probe = make(use_inotify=use_inotify)
    probe.token()
    saved = probe.save()
    (tmp_path / "work" / "shelf" / "box").mkdir(parents=True)
    (tmp_path / "work" / "shelf" / "box" / "lid.txt").write_text("l")
    (tmp_path / "work" / "new.txt").write_text("n")
    (tmp_path / "work" / "kept.txt").write_text("changed")
    (tmp_path / "gone").rmdir()
    probe.token()
    keys = ["work/shelf/", "work/new.txt", "gone/", "work/kept.txt", "work/inbox/"]
    done = probe.restore(saved, keys)
    # Made since: removed (the directory with all in it); removed since: made again, empty;
    # a file changed since cannot be put back; a directory there all along stays as it is.
    assert sorted(done) == ["gone/", "work/inbox/", "work/new.txt", "work/shelf/"]
    assert not (tmp_path / "work" / "shelf").exists()
    assert not (tmp_path / "work" / "new.txt").exists()
    assert (tmp_path / "gone").is_dir() and (tmp_path / "work" / "inbox").is_dir()
    assert (tmp_path / "work" / "kept.txt").read_text() == "changed"
    probe.token()
    after = probe.read()
    assert {k for k in after if k.startswith(("work/shelf", "work/new"))} == set()
    assert after["gone/"] == "directory"


def test_only_a_directorys_coming_and_going_is_a_change(make: Factory, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    probe = make()
    before = probe.read()
    assert before["d/"] == "directory"
    (tmp_path / "d" / "f.txt").write_text("f")  # the directory's mtime moves: no change of it
    assert _changes(probe, before) == [("d/f.txt", "added")]
    assert "d/" in probe.hint("d/", "added") and "remove it" in probe.hint("d/", "added")
