"""Benchmark pollution.html: a 10,000-test record with leaks on 10% of the tests.

Writes a real JSONL record with :class:`~statesnap.record.journal.RecordWriter` (env, sys.path,
module,
attribute and nested logging leaks, some failures, fd/thread gauges with a few polluter
steps), then times reading it back and rendering the report, and prints the figures.

    .venv/bin/python bench/bench_report.py [--tests 10000] [--leak-share 0.1] [--out DIR]

Targets (issue "pollution.html"): under 5 s to render, under 10 MB on disk.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Candidate, Finding
from statesnap.output.report import write_report
from statesnap.record.journal import RecordWriter
from statesnap.record.reader import read_record

TARGET_SECONDS = 5.0
TARGET_BYTES = 10 * 1024 * 1024


def _leak(rng: random.Random, i: int) -> dict[str, Any]:
    kind = rng.choice(("env", "env", "syspath", "modules", "attributes", "logging"))
    if kind == "env":
        return {"probe": "env", "key": f"BENCH_VAR_{i % 97}", "change": "added",
                "before": None, "after": f"value-{i}", "phase": "call", "severity": 3}
    if kind == "syspath":
        before = [f"/venv/lib/site-{n}" for n in range(12)]
        return {"probe": "syspath", "key": "sys.path", "change": "changed", "before": before,
                "after": [*before, f"/tmp/plugin-{i}"], "phase": "call", "severity": 3}
    if kind == "modules":
        return {"probe": "modules", "key": f"bench_pkg.mod_{i % 40}", "change": "added",
                "before": None, "after": f"<module bench_pkg.mod_{i % 40}>", "phase": "call",
                "severity": 1}
    if kind == "attributes":
        return {"probe": "attributes", "key": f"app.settings.CACHE_{i % 13}",
                "change": "changed", "before": {"len": 3, "id": 1000 + i},
                "after": {"len": 4, "id": 1000 + i}, "phase": "setup", "fixture": "cfg",
                "scope": "module", "severity": 2}
    before_cfg = {"level": "WARNING", "handlers": ["StreamHandler(stderr)"], "propagate": True,
                  "disabled": False}
    after_cfg = {**before_cfg, "level": "DEBUG",
                 "handlers": ["StreamHandler(stderr)", f"FileHandler(/tmp/log-{i})"]}
    return {"probe": "logging", "key": f"logger:app.part{i % 7}", "change": "changed",
            "before": before_cfg, "after": after_cfg, "phase": "call", "severity": 2}


def write_bench_record(path: Path, tests: int, leak_share: float, seed: int = 1) -> int:
    """The record; returns how many tests leaked."""
    rng = random.Random(seed)
    w = RecordWriter(path)
    w.write({
        "type": "header", "format": 1, "statesnap_version": "bench", "worker": "main",
        "python": {"version": "3.11.9", "implementation": "CPython",
                   "executable": "/usr/bin/python3"},
        "platform": {"platform": "Linux-bench"}, "packages": {"pytest": "8.3.3"},
        "plugins": ["statesnap-0.1.0"], "args": ["-p", "statesnap", "tests"],
        "rootdir": "/src/bench", "seed": None, "mtime_resolution": {},
        "probes": [{"name": n, "status": "ok", "detail": None}
                   for n in ("env", "syspath", "modules", "attributes", "logging", "fds",
                             "threads")],
        "env": {"HOME": "/root", "CI": "true"},
    })
    fds, threads, leaked = 12, 2, 0
    for i in range(tests):
        nodeid = f"tests/test_mod{i // 250:02d}.py::test_case_{i}[param-{i % 7}]"
        changes = []
        if rng.random() < leak_share:
            leaked += 1
            changes = [_leak(rng, i) for _ in range(rng.choice((1, 1, 2, 3)))]
        if i % 2500 == 1200:  # a polluter step on both gauges
            fds += 3
            threads += 1
            changes.append({"probe": "fds", "key": f"fd:{fds}", "change": "added",
                            "before": None, "after": "socket:[1234]", "phase": "call",
                            "severity": 3})
        failed = i % 700 == 699
        entry: dict[str, Any] = {
            "type": "test", "index": i, "nodeid": nodeid, "worker": "main",
            "outcome": "failed" if failed else ("skipped" if i % 97 == 0 else "passed"),
            "phases": {"setup": "passed", "call": "failed" if failed else "passed",
                       "teardown": "passed"},
            "duration": round(rng.uniform(0.0005, 0.01), 6), "changes": changes,
            "gauges": {"fds": fds + (i % 3 == 0), "threads": threads},
        }
        if failed:
            entry["failure"] = {"phase": "call", "exc_type": "AssertionError",
                                "message": f"assert 'value-{i - 1}' is None",
                                "text": "E   AssertionError\n" * 40}
        w.write({"type": "start", "index": i, "nodeid": nodeid})
        w.write(entry)
    w.write({"type": "footer", "exitstatus": 1, "tests": tests, "costs": {
        n: {"total_ms": 12.5, "per_test_us": 1.25, "tokens": tests * 4, "reads": 200}
        for n in ("env", "syspath", "modules", "attributes", "logging", "fds", "threads")}})
    w.close()
    return leaked


def bench_findings(record_tests: list[Any]) -> list[Finding]:
    failed = [t for t in record_tests if t.failed]
    out = []
    for n, victim in enumerate(failed):
        polluter = record_tests[victim.index - 1]
        out.append(Finding(
            victim=victim.nodeid, polluters=[polluter.nodeid], probe="env",
            key=f"BENCH_VAR_{(victim.index - 1) % 97}", before=None, after="value",
            status="verified" if n % 2 == 0 else "suspected",
            repro=f"python -m pytest -p no:randomly '{polluter.nodeid}' '{victim.nodeid}'",
            exc_type="AssertionError", message="assert 'value' is None",
            candidates=[Candidate(polluter.nodeid, polluter.index, "env", "BENCH_VAR", None, "v",
                                  2.0, ["key in failure text"])],
            logs=[f"replays/{n}-pair.log"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--leak-share", type=float, default=0.10)
    parser.add_argument("--repeat", type=int, default=3, help="renders to time (median)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/report"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    record_path = args.out / "bench-record.jsonl"
    report_path = args.out / "pollution.html"
    leaked = write_bench_record(record_path, args.tests, args.leak_share)

    t0 = time.perf_counter()
    record = read_record(record_path)
    read_s = time.perf_counter() - t0
    findings = bench_findings(record.tests)
    render_s = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        write_report(report_path, [record], findings)
        render_s.append(time.perf_counter() - t0)
    size = report_path.stat().st_size
    median = statistics.median(render_s)
    print(f"record: {args.tests:,} tests, {leaked:,} leaking ({leaked / args.tests:.0%}), "
          f"{len(findings)} findings, {record_path.stat().st_size / 1e6:.1f} MB")
    print(f"read record:   {read_s:.2f} s")
    print(f"render report: {median:.2f} s median of {len(render_s)} "
          f"(min {min(render_s):.2f} s; target < {TARGET_SECONDS:.0f} s)")
    print(f"report size:   {size / 1e6:.2f} MB ({size:,} bytes; target < 10 MB)")
    print(f"report:        {report_path}")
    ok = median < TARGET_SECONDS and size < TARGET_BYTES
    print("within targets" if ok else "OUTSIDE TARGETS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
