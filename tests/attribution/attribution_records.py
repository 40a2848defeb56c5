"""Records for the attribution tests, written with RecordWriter and read back with read_record.

Tests say only what they are about: ``t(0, "a", env("X", None, "1"))`` is the first test, which
added ``X``; ``failing(...)`` is a failed test with a failure text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record

ROOT = "/src/app"


def header(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "header", "format": 1, "statesnap_version": "0.1.0", "worker": "main",
        "python": {"version": "3.11.9", "executable": "/nonexistent/python3"},
        "platform": {"platform": "Linux-6.1-x86_64"}, "packages": {"pytest": "8.3.3"},
        "plugins": [], "args": ["-p", "statesnap", "tests"], "rootdir": ROOT,
        "invocation_dir": ROOT, "seed": None, "probes": [], "mtime_resolution": {},
        "replay": {"cwd": ROOT, "args": ["-p", "statesnap"]},
    }
    data.update(extra)
    return data


def change(probe: str, key: str, before: Any, after: Any, *, removed: bool = False,
           severity: int = 3, **more: Any) -> dict[str, Any]:
    kind = "removed" if removed else "added" if before is None else "changed"
    return {"probe": probe, "key": key, "change": kind, "before": before,
            "after": None if removed else after, "phase": more.pop("phase", "call"),
            "severity": severity, **more}


def env(key: str, before: str | None, after: str | None, **more: Any) -> dict[str, Any]:
    """An env change; ``after=None`` removes the variable."""
    return change("env", key, before, after, removed=after is None, **more)


def t(index: int, name: str, *changes: Mapping[str, Any], worker: str = "main",
      outcome: str = "passed", failure: Mapping[str, Any] | None = None) -> dict[str, Any]:
    call = "failed" if outcome == "failed" else "passed"
    entry: dict[str, Any] = {
        "type": "test", "index": index, "nodeid": f"tests/test_x.py::{name}",
        "worker": worker, "outcome": outcome,
        "phases": {"setup": "passed", "call": call, "teardown": "passed"},
        "duration": 0.001, "changes": [dict(c) for c in changes],
    }
    if failure is not None:
        entry["failure"] = dict(failure)
    return entry


def failing(index: int, name: str, code: str = "", said: str = "",
            exc_type: str = "AssertionError", **kw: Any) -> dict[str, Any]:
    """A failed test whose traceback shows ``code`` and whose ``E`` lines say ``said``."""
    text = "\n".join([f">       {code}" if code else "", *(f"E       {line}" for line in
                                                             said.splitlines())])
    first = said.splitlines()[0] if said else ""
    return t(index, name, outcome="failed",
             failure={"phase": "call", "exc_type": exc_type, "message": first, "text": text},
             **kw)


def nodeid(name: str) -> str:
    return f"tests/test_x.py::{name}"


def write(path: Path, tests: Iterable[Mapping[str, Any]], *, running: str | None = None,
          footer: bool = True, head: Mapping[str, Any] | None = None) -> Record:
    w = RecordWriter(path)
    w.write(head or header())
    w.write({"type": "collection", "changes": []})
    n = 0
    for entry in tests:
        w.write({"type": "start", "index": entry["index"], "nodeid": entry["nodeid"]})
        w.write(entry)
        n = max(n, int(entry["index"]) + 1)
    if running is not None:
        w.write({"type": "start", "index": n, "nodeid": nodeid(running)})
    if footer and running is None:
        w.write({"type": "footer", "exitstatus": 1, "tests": n})
    w.close()
    return read_record(path)
