"""Records for the report tests: real JSONL written with RecordWriter, read back with read_record.

``write_record`` takes short test specs so each test says only what it is about; everything
else (header fields, phases, the footer) is filled in the way the plugin writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record

#: ``make_record(tests, name="record.jsonl", **write_record options)`` (a fixture).
RecordFactory = Callable[..., Record]

HOSTILE_IDS = (
    "tests/test_x.py::test_x[<script>window.__pwned=1</script>]",
    'tests/test_x.py::test_y["><img src=x onerror="window.__pwned=2">]',
    "tests/test_x.py::test_z[</script><script>window.__pwned=3</script>]",
    "tests/test_x.py::test_sep[\u2028\u2029&amp;]",
)

def header(worker: str = "main", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "header", "format": 1, "statesnap_version": "0.1.0", "worker": worker,
        "run_id": "r1", "pid": 4242, "started": 1_700_000_000.0,
        "python": {"version": "3.11.9", "implementation": "CPython",
                   "executable": "/usr/bin/python3"},
        "platform": {"system": "Linux", "platform": "Linux-6.1-x86_64"},
        "packages": {"pytest": "8.3.3", "psutil": "6.0.0"},
        "plugins": ["statesnap-0.1.0"], "args": ["-p", "statesnap", "tests"],
        "invocation_dir": "/src/app", "rootdir": "/src/app", "inifile": None, "seed": None,
        "probes": [{"name": "env", "status": "ok", "detail": None},
                   {"name": "syspath", "status": "ok", "detail": None}],
        "mtime_resolution": {"/src/app": {"resolution_ns": 1}},
        "env": {"HOME": "/root", "LANG": "C.UTF-8"},
    }
    data.update(extra)
    return data


def entry(index: int, nodeid: str, outcome: str = "passed", *,
              changes: Iterable[Mapping[str, Any]] = (), worker: str = "main",
              failure: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    call = {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(outcome, outcome)
    entry: dict[str, Any] = {
        "type": "test", "index": index, "nodeid": nodeid, "worker": worker,
        "outcome": outcome,
        "phases": {"setup": "passed", "call": call, "teardown": "passed"},
        "duration": 0.001 * (index + 1), "changes": [dict(c) for c in changes],
    }
    if failure is not None:
        entry["failure"] = dict(failure)
    entry.update(extra)
    return entry


def env_added(key: str, value: str, **more: Any) -> dict[str, Any]:
    return {"probe": "env", "key": key, "change": "added", "before": None, "after": value,
            "phase": "call", "severity": 3, **more}


def write_record(path: Path, tests: Iterable[Mapping[str, Any]], *,
                 head: Mapping[str, Any] | None = None, footer: bool = True,
                 running: str | None = None, errors: Iterable[Mapping[str, Any]] = (),
                 ) -> Record:
    w = RecordWriter(path)
    w.write(head if head is not None else header())
    w.write({"type": "collection", "changes": []})
    n = 0
    for t in tests:
        w.write({"type": "start", "index": t["index"], "nodeid": t["nodeid"]})
        w.write(t)
        n += 1
    for e in errors:
        w.write({"type": "probe_error", **e})
    if running is not None:
        w.write({"type": "start", "index": n, "nodeid": running})
    if footer:
        w.write({"type": "footer", "exitstatus": 1, "tests": n, "finished": 1_700_000_100.0,
                 "costs": {"env": {"total_ms": 3.0, "per_test_us": 1.5, "tokens": 2 * n,
                                   "reads": 2},
                           "syspath": {"total_ms": 1.0, "per_test_us": 0.5,
                                       "tokens": 2 * n, "reads": 1}},
                 "disabled": {}})
    w.close()
    return read_record(path)


def polluted_tests() -> list[dict[str, Any]]:
    """A polluter, a harmless test, a victim that fails because of the polluter's env var."""
    return [
        entry(0, "tests/test_a.py::test_sets_mode", changes=[env_added("ZOO_MODE", "fast")],
                  gauges={"fds": 10, "threads": 1}),
        entry(1, "tests/test_a.py::test_plain", gauges={"fds": 10, "threads": 1}),
        entry(2, "tests/test_b.py::test_reads_mode", "failed",
                  failure={"phase": "call", "exc_type": "AssertionError",
                           "message": "assert 'fast' == 'slow'", "text": "E   assert 'fast'"},
                  gauges={"fds": 13, "threads": 2}),
    ]
