"""The summary JSON's text (statesnap.output.summary.summary_text): indented, one test per line,
and read back as the very value an indented dump gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from statesnap.output.summary import summary_text


def _summary(tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": 1, "statesnap_version": "0.1.0", "records": ["r.jsonl"], "tests": tests,
            # A nested "tests" key, and text that reads like the marker.
            "findings": [{"victim": "t", "tests": [], "note": '\n  "tests": []'}],
            "internal_errors": []}


def _tests() -> list[dict[str, Any]]:
    odd = ['quote " and \\ backslash', "new\nline", "…ellipsis→", '\n  "tests": []', "\x00"]
    return [{"nodeid": f"t.py::test_{i}", "index": i, "outcome": "passed", "leaked": i % 2 == 0,
             "leaks": [{"key": odd[i % len(odd)], "before": None, "after": {"a": [1, 2.5]},
                        "set": Path("p")}]}
            for i in range(12)]


def test_the_text_reads_back_as_an_indented_dump() -> None:
    summary = _summary(_tests())
    text = summary_text(summary)
    indented = json.dumps(summary, indent=2, ensure_ascii=False, default=repr)
    assert json.loads(text) == json.loads(indented)
    assert "…ellipsis→" in text  # not escaped, as before
    # Everything but the tests is laid out as before.
    assert text.startswith(indented[:indented.index('"tests"')])
    assert text.endswith(indented[indented.index('"findings"') - 3:])


def test_each_test_is_one_line() -> None:
    tests = _tests()
    lines = summary_text(_summary(tests)).splitlines()
    assert [json.loads(ln.strip().rstrip(",")) for ln in lines
            if ln.startswith('    {"nodeid"')] == json.loads(json.dumps(tests, default=repr))
    assert lines[lines.index('  "tests": [') + len(tests) + 1] == "  ],"


def test_no_tests_is_the_indented_dump() -> None:
    summary = _summary([])
    assert summary_text(summary) == json.dumps(summary, indent=2, ensure_ascii=False,
                                               default=repr)
