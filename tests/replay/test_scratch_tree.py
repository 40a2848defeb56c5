"""A scratch copy that cannot be made leaves nothing behind (replay/scratch.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from statesnap.replay.scratch import ScratchTree


def test_a_copy_that_fails_leaves_no_partial_tree(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.txt").write_text("kept in the checkout\n")
    os.mkfifo(project / "pipe")  # shutil refuses to copy a named pipe: the copy fails
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(shutil.Error):
        ScratchTree(project, prefix="statesnap-replay-")
    assert list(scratch.iterdir()) == []
    assert (project / "data.txt").read_text() == "kept in the checkout\n"


def test_a_copy_follows_the_checkout_again_on_reset(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "a.txt").write_text("a\n")
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref\n")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tree = ScratchTree(project, prefix="statesnap-replay-")
    try:
        assert not (tree.tree / ".git").exists()  # version control is never copied
        (tree.tree / "pkg" / "a.txt").write_text("changed by a replay\n")
        (tree.tree / "left.txt").write_text("made by a replay\n")
        tree.reset()
        assert (tree.tree / "pkg" / "a.txt").read_text() == "a\n"
        assert not (tree.tree / "left.txt").exists()
    finally:
        tree.remove()
    assert not tree.base.exists()


def test_a_project_past_the_limit_is_not_copied(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.bin").write_bytes(b"x" * 4096)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(OSError, match="more than 0 MiB") as info:
        ScratchTree(project, prefix="statesnap-replay-", most=1024)
    assert info.value.strerror.startswith("the project holds 0 MiB to copy")
    assert list(scratch.iterdir()) == []
    ScratchTree(project, prefix="statesnap-replay-", most=8192).remove()  # under it: copied
    assert list(scratch.iterdir()) == []
