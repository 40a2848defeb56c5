"""The backfill's state in OUTDIR: every finished replay, so a resumed backfill skips it.

``OUTDIR/.backfill/journal.jsonl``: one line per finished replay, keyed by what determines its
outcome, written after its log and record are in place.  See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from statesnap.base.atomic import write_atomic
from statesnap.base.text import FILE_ERRORS

JOURNAL_FORMAT = 1


def replay_key(**parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", FILE_ERRORS)).hexdigest()[:24]


class Journal:
    def __init__(self, outdir: Path) -> None:
        self.dir = outdir / ".backfill"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "journal.jsonl"
        self.blobs = self.dir / "blobs"
        self.blobs.mkdir(exist_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.resumed = 0
        if self.path.exists():
            for line in self.path.read_text("utf-8", "replace").splitlines():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the line a kill cut short
                if isinstance(obj, dict) and obj.get("format") == JOURNAL_FORMAT:
                    self.done[str(obj["key"])] = obj["result"]
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def get(self, key: str) -> dict[str, Any] | None:
        found = self.done.get(key)
        if found is None:
            return None
        out = dict(found)
        for name in ("log", "record"):
            blob = self.blobs / f"{key}.{name}"
            out[name] = blob.read_text("utf-8", "replace") if blob.exists() else None
        return out

    def put(self, key: str, result: dict[str, Any]) -> None:
        small = {k: v for k, v in result.items() if k not in ("log", "record")}
        for name in ("log", "record"):
            if result.get(name) is not None:
                write_atomic(self.blobs / f"{key}.{name}", str(result[name]))
        line = json.dumps({"format": JOURNAL_FORMAT, "key": key, "result": small},
                          ensure_ascii=False, default=str) + "\n"
        with self._lock:
            os.write(self._fd, line.encode("utf-8", FILE_ERRORS))
            self.done[key] = small

    def close(self) -> None:
        os.close(self._fd)
