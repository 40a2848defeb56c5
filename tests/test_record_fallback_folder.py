"""The record's fallback folder in the shared temporary directory is this user's own.

Where pytest's cache cannot be written, the record goes to ``<tmp>/statesnap-<uid>/runs/``.
Any user can make names in the temporary directory: a link placed at ``statesnap-<uid>``
would have the session open (and truncate) a file of the link's choosing, and another user's
folder would hold this user's record.  Such a folder is refused; a fresh one is private.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from statesnap.record.paths import fallback_record_path


@pytest.fixture
def tmpdir_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared / f"statesnap-{os.getuid()}"


def test_a_fresh_fallback_folder_is_private(tmpdir_here: Path) -> None:
    path = fallback_record_path(Path("cache/statesnap/runs/1-main-2.jsonl"))
    assert path == tmpdir_here / "runs" / "1-main-2.jsonl"
    assert stat.S_IMODE(os.stat(tmpdir_here).st_mode) == 0o700
    # Used again by the next session: the same folder.
    assert fallback_record_path(Path("x/2-main-3.jsonl")).parent == path.parent


def test_a_link_in_its_place_is_refused(tmpdir_here: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "someone-elses"
    (elsewhere / "runs").mkdir(parents=True)
    tmpdir_here.symlink_to(elsewhere)
    with pytest.raises(OSError) as caught:
        fallback_record_path(Path("cache/statesnap/runs/1-main-2.jsonl"))
    assert caught.value.filename == str(tmpdir_here)

