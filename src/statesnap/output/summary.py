"""The summary JSON (``--statesnap-json``): a contract other tools read.

Bump :data:`SUMMARY_FORMAT` on every incompatible change.  The fields and their history:
docs/ARCHITECTURE.md ("The summary JSON").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.analysis.leaks import by_users_setup
from statesnap.analysis.own_fixtures import display_fixture
from statesnap.analysis.resets import listed_leaks
from statesnap.base.atomic import write_atomic
from statesnap.base.version import __version__
from statesnap.output.delta import delta
from statesnap.record.journal import Record
from statesnap.state.diff import Change

SUMMARY_FORMAT = 1
#: A leak at this severity or below is listed but not counted as the test having leaked.
LOW = 1
_NAMES = {1: "low", 2: "medium", 3: "high"}


def _severity_name(value: int) -> str:
    return _NAMES.get(value, "high" if value > 3 else "low")


def build_summary(records: Sequence[Record], findings: Iterable[Finding]) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for record in records:
        leaks = listed_leaks(record.tests, record.footer)
        for t in record.tests:
            mine = leaks.get(t.index, [])
            tests.append({
                "nodeid": t.nodeid,
                "worker": t.worker,
                "index": t.index,
                "outcome": t.outcome,
                # A class or module set-up's leak is listed where the record has it (the
                # test it ran for) but is that method's, not the test's.
                "leaked": any(c.severity > LOW and not by_users_setup(c) for c in mine),
                "leaks": [_leak(c) for c in mine],
            })
    return {
        "format": SUMMARY_FORMAT,
        "statesnap_version": __version__,
        "records": [str(r.path) for r in records],
        "tests": tests,
        "findings": [f.to_summary() for f in findings],
        "internal_errors": internal_errors(records),
    }


def _leak(c: Change) -> dict[str, Any]:
    data: dict[str, Any] = {
        "probe": c.probe, "key": c.key, "change": c.change, "before": c.before,
        "after": c.after, "severity": _severity_name(c.severity)}
    if c.aliases:
        data["aliases"] = c.aliases  # the same object under other names, listed once
    said = delta(c.before, c.after)
    if said is not None:
        data["delta"] = said  # what changed, in one line (statesnap.output.delta)
    if c.phase:
        data["phase"] = c.phase
    if c.fixture:
        # The user's method (TestX.setup_class), never the name pytest made up for it.
        data["fixture"], data["scope"] = display_fixture(c.fixture, c.phase), c.scope
        if by_users_setup(c):
            data["by_setup"] = True
    return data


def internal_errors(records: Sequence[Record]) -> list[dict[str, str]]:
    """statesnap's own errors the records kept (each distinct one once, across workers)."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for record in records:
        for entry in record.internal_errors:
            where, error = str(entry.get("where", "")), str(entry.get("error", ""))
            seen.setdefault((where, error), {"where": where, "error": error,
                                             "worker": record.worker})
    return list(seen.values())


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=repr)


#: Where the ``tests`` list sits in the indented text: a top-level key (a deeper one is
#: indented further, and no JSON string holds a newline).
_TESTS_AT = '\n  "tests": []'


def summary_text(summary: dict[str, Any]) -> str:
    """The summary as written: indented, each of its ``tests`` on one line.

    ``json`` writes indented text with its Python encoder, one step per value: structlog's
    1.2 MB summary (825 tests, each listing a long fingerprint) took 186 M instructions
    (~80 ms).  Each test is written by the C encoder instead, on its own line (a line per
    test reads and diffs as well): 85 M.  The value read back is the same.
    """
    tests = summary.get("tests")
    if not isinstance(tests, list) or not tests:
        return _dumps(summary, indent=2)
    text = _dumps({**summary, "tests": []}, indent=2)
    if text.count(_TESTS_AT) != 1:
        return _dumps(summary, indent=2)
    lines = ",\n".join(["    " + _dumps(test) for test in tests])
    return text.replace(_TESTS_AT, '\n  "tests": [\n' + lines + "\n  ]", 1)


def write_summary(path: Path, records: Sequence[Record], findings: Iterable[Finding]) -> None:
    """Write the summary atomically; missing parent directories are created (CI artifact
    folders), as for the report."""
    text = summary_text(build_summary(records, findings))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text + "\n")
