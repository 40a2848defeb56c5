"""A folder nobody can write in, root included: for the tests of unwritable output paths.

As root a mode of 0o500 stops nothing, so there the folder is made immutable (``chattr +i``,
which root's writes obey too); without chattr support the test fails under CI=true and skips
elsewhere, saying why.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only_dir(path: Path) -> Iterator[str]:
    """Make ``path`` (an existing folder) unwritable; yields the error text a write meets."""
    if os.geteuid() != 0:
        path.chmod(0o500)
        try:
            yield os.strerror(13)  # Permission denied
        finally:
            path.chmod(0o700)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        why = f"root, and chattr +i failed here: {made.stderr.strip() or made.returncode}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield os.strerror(1)  # Operation not permitted
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
