"""fsinfo: mtime resolution of a real filesystem, fingerprints, and the replay restore plan."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.fsinfo import (
    PROBE_FILE_PREFIX,
    SIZE_CHANGED_MTIME_KEPT,
    FileState,
    _granularity,
    file_fingerprint,
    filesystem_of,
    mtime_resolution,
    parse_file_fingerprint,
    restore_plan,
    symlink_fingerprint,
)
from statesnap.probes.base import ProbeContext
from statesnap.probes.files.probe import FilesProbe
from statesnap.state.diff import Change, diff_maps


def test_resolution_of_a_real_filesystem(tmp_path: Path) -> None:
    info = mtime_resolution(tmp_path)
    assert "error" not in info
    assert info["root"] == str(tmp_path)
    assert info["resolution_ns"] in (1, 10, 100, 1000, 10**6, 10**7, 10**9, 2 * 10**9)
    # The value set with utime, truncated to the resolution, is what a file there keeps.
    probe = tmp_path / "check"
    probe.write_text("")
    os.utime(probe, ns=(1_700_000_001_123_456_789,) * 2)
    kept = probe.stat().st_mtime_ns
    assert kept % info["resolution_ns"] == 0
    assert abs(1_700_000_001_123_456_789 - kept) < info["resolution_ns"]
    if os.path.exists("/proc/mounts"):
        assert isinstance(info["fs_type"], str) and info["fs_type"]
        assert tmp_path.resolve().as_posix().startswith(info["mount_point"])
    assert [p.name for p in tmp_path.iterdir()] == ["check"]  # its own file is gone


def test_temp_file_is_removed_even_on_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "utime", refuse)
    info = mtime_resolution(tmp_path)
    assert info["resolution_ns"] is None
    assert "PermissionError" in info["error"]
    assert list(tmp_path.iterdir()) == []


def test_unwritable_root_reports_an_error(tmp_path: Path) -> None:
    info = mtime_resolution(tmp_path / "missing")
    assert info["resolution_ns"] is None
    assert "FileNotFoundError" in info["error"]


def test_probe_file_name_is_dot_prefixed() -> None:
    assert PROBE_FILE_PREFIX.startswith(".")


@pytest.mark.parametrize(
    ("got", "tick"),
    [
        (1_700_000_001_123_456_789, 1),  # ext4, xfs, tmpfs
        (1_700_000_001_123_456_700, 100),  # NTFS
        (1_700_000_001_123_000_000, 1_000_000),
        (1_700_000_001_000_000_000, 1_000_000_000),  # ext3, HFS+
        (1_700_000_000_000_000_000, 2_000_000_000),  # FAT
    ],
)
def test_granularity_from_a_readback(got: int, tick: int) -> None:
    assert _granularity(1_700_000_001_123_456_789, got) == tick


def test_granularity_of_nonsense_is_none() -> None:
    assert _granularity(1_700_000_001_123_456_789, 5) is None


def test_filesystem_of_reads_escaped_mount_points(tmp_path: Path) -> None:
    spaced = tmp_path / "my disk"
    (spaced / "sub").mkdir(parents=True)
    mounts = tmp_path / "mounts"
    escaped = str(spaced).replace(" ", "\\040")
    mounts.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        f"tmpfs {tmp_path} tmpfs rw 0 0\n"
        f"/dev/sdb1 {escaped} vfat rw 0 0\n"
    )
    assert filesystem_of(spaced / "sub", str(mounts)) == (str(spaced), "vfat")
    assert filesystem_of(tmp_path, str(mounts)) == (str(tmp_path), "tmpfs")
    assert filesystem_of(tmp_path, str(tmp_path / "none")) is None


def test_fingerprints_round_trip() -> None:
    fp = file_fingerprint(3, 42, SIZE_CHANGED_MTIME_KEPT)
    assert fp == {"size": 3, "mtime_ns": 42, "flag": SIZE_CHANGED_MTIME_KEPT}
    assert parse_file_fingerprint(fp) == FileState(3, 42, flag=SIZE_CHANGED_MTIME_KEPT)
    assert parse_file_fingerprint(file_fingerprint(1, 2)) == FileState(1, 2)
    assert parse_file_fingerprint(symlink_fingerprint("../x")) == FileState(symlink="../x")
    assert parse_file_fingerprint(None) is None
    assert parse_file_fingerprint({"size": "3"}) is None


def test_restore_plan_from_a_real_probe_run(tmp_path: Path) -> None:
    (tmp_path / "edited.txt").write_text("old")
    (tmp_path / "deleted.txt").write_text("bye")
    (tmp_path / "untouched.txt").write_text("same")
    original = (tmp_path / "edited.txt").stat().st_mtime_ns
    probe = FilesProbe()
    probe.setup(ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,)))
    try:
        changes: list[Change] = []
        before = probe.read()

        def step() -> None:
            nonlocal before
            probe.token()
            after = probe.read()
            changes.extend(diff_maps("files", before, after))
            before = after

        (tmp_path / "made.txt").write_text("new")  # "test 1"
        (tmp_path / "edited.txt").write_text("newer")
        step()
        (tmp_path / "edited.txt").write_text("newest")  # "test 2"
        (tmp_path / "deleted.txt").unlink()
        (tmp_path / "brief.txt").write_text("tmp")
        step()
        (tmp_path / "brief.txt").unlink()  # "test 3"
        step()
    finally:
        probe.close()
    records = [c.to_json() for c in changes]  # as they come back from a record
    records.append({"probe": "env", "key": "made.txt", "change": "added", "before": None,
                    "after": "ignored: another probe"})
    for source in (changes, records):
        plan = restore_plan(source)
        assert plan.created == ["made.txt"]
        assert plan.mtimes == {"edited.txt": original}
        assert plan.deleted == ["deleted.txt"]


def test_next_fingerprint_rules() -> None:
    from statesnap.base.fsinfo import REWRITTEN_STAT_KEPT, next_fingerprint

    old = file_fingerprint(3, 100)
    assert next_fingerprint(None, old, written=True) == old  # new file: as it is
    assert next_fingerprint(old, file_fingerprint(5, 200), False) == file_fingerprint(5, 200)
    assert next_fingerprint(old, file_fingerprint(5, 100), False) == file_fingerprint(
        5, 100, SIZE_CHANGED_MTIME_KEPT
    )
    assert next_fingerprint(old, file_fingerprint(3, 100), True) == file_fingerprint(
        3, 100, REWRITTEN_STAT_KEPT
    )
    marked = file_fingerprint(5, 100, SIZE_CHANGED_MTIME_KEPT)
    assert next_fingerprint(marked, file_fingerprint(5, 100), False) is marked  # chmod only
    link = symlink_fingerprint("a")
    assert next_fingerprint(old, link, False) == link


def test_stat_fingerprint_of_real_entries(tmp_path: Path) -> None:
    from statesnap.base.fsinfo import stat_fingerprint

    f = tmp_path / "f"
    f.write_bytes(b"12345")
    assert stat_fingerprint(str(f)) == file_fingerprint(5, f.stat().st_mtime_ns)
    (tmp_path / "l").symlink_to("f")
    assert stat_fingerprint(str(tmp_path / "l")) == symlink_fingerprint("f")
    os.mkfifo(tmp_path / "fifo")
    assert stat_fingerprint(str(tmp_path / "fifo")) is None
    assert stat_fingerprint(str(tmp_path / "missing")) is None
