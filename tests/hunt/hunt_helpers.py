"""Helpers for the hunt's tests: records written by hand, and real recorded runs.

Recorded runs put their record outside the inner rootdir, so the ``files`` probe never sees
it change; the hunt's replays then run in fresh pytest processes with ``-p no:randomly``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record


def change(probe: str, key: str, after: Any, before: Any = None, severity: int = 3,
           kind: str | None = None, **extra: Any) -> dict[str, Any]:
    """A change line as the plugin writes it."""
    if kind is None:
        kind = "added" if before is None else ("removed" if after is None else "changed")
    return {"probe": probe, "key": key, "change": kind, "before": before, "after": after,
            "phase": "call", "severity": severity, **extra}


def entry(index: int, nodeid: str, outcome: str = "passed", worker: str = "main",
              changes: Sequence[dict[str, Any]] = (), failure: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    call = "failed" if outcome == "failed" else outcome
    line: dict[str, Any] = {
        "type": "test", "index": index, "nodeid": nodeid, "worker": worker,
        "outcome": outcome,
        "phases": {"setup": "passed", "call": call, "teardown": "passed"},
        "duration": 0.001, "changes": list(changes),
    }
    if failure is not None:
        line["failure"] = failure
    return line


def write_record(path: Path, tests: Sequence[dict[str, Any]], worker: str = "main",
                 rootdir: Path | None = None, running: str | None = None) -> Record:
    """A record with ``tests`` (from :func:`entry`), read back."""
    writer = RecordWriter(path)
    root = str(rootdir or path.parent)
    writer.write({"type": "header", "format": 1, "worker": worker, "rootdir": root,
                  "invocation_dir": root, "args": ["-p", "statesnap"],
                  "replay": {"cwd": root, "args": ["-p", "statesnap"]}})
    writer.write({"type": "collection", "changes": []})
    for line in tests:
        writer.write({"type": "start", "index": line["index"], "nodeid": line["nodeid"]})
        writer.write(line)
    if running is not None:
        writer.write({"type": "start", "index": len(tests), "nodeid": running})
    else:
        writer.write({"type": "footer", "exitstatus": 0, "tests": len(tests)})
    writer.close()
    return read_record(path)


@dataclass
class Suite:
    """A suite on disk and a way to record a run of it."""

    root: Path
    out: Path

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def record(self, *args: str, name: str = "record.jsonl") -> Path:
        """Run the suite once with statesnap; the record's path (the run itself must pass)."""
        record = self.out / name
        cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly", "-q",
               f"--statesnap-record={record}", *args]
        proc = subprocess.run(cmd, cwd=self.root, capture_output=True, text=True, timeout=300)
        assert record.exists(), proc.stdout + proc.stderr
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        return record
