"""Whole-file writes: the old file or the new one is there, never a part of the new one.

For the outputs written at once (a merged record, the summary JSON, the HTML report, a
backfill's Markdown and journal state), where a reader must never find half a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from statesnap.base.text import FILE_ERRORS


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write a whole file via a temporary sibling, so a failure leaves no partial file.

    ``text`` may come in pieces (an iterable of strings): the report of a record of 267,000
    tests is some 80 MB, which need never stand whole in memory.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        # Valid UTF-8 whatever the text holds (statesnap.base.text).
        with open(tmp, "w", encoding="utf-8", errors=FILE_ERRORS) as f:
            if isinstance(text, str):
                f.write(text)
            else:
                for chunk in text:
                    f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
