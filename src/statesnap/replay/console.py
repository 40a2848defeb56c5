"""pytest's console lines read back: each test's outcome from ``-v`` lines, its failure from the
``-r`` short summary.  Pure.

A printed reproduction runs without statesnap (no record of its own), so what it did is read
from what pytest printed; the backfill reads CI logs with the same lines
(:mod:`statesnap.backfill.consolelog`).  ANSI colours and CI timestamp prefixes are stripped
first.
"""

from __future__ import annotations

import re
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
TIMESTAMP = re.compile(
    r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?)\s?")
WORDS = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN"
VERBOSE = re.compile(rf"^(?P<id>[^\s\[][^\s]*?::.+?) (?P<outcome>{WORDS})(?:\s+\[\s*\d+%\])?\s*$")
SUMMARY = re.compile(rf"^(?P<outcome>{WORDS}) (?P<id>\S+?::\S.*?)(?: - (?P<msg>.*))?$")
OUTCOMES = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
            "XFAIL": "xfailed", "XPASS": "xpassed"}
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Failed|Interrupt|"
                  r"Warning|Failure|[A-Z]\w*))(?::\s?(?P<msg>.*))?$")

#: What a command's environment adds to ``PYTEST_ADDOPTS`` so that its output can be read:
#: ``-v`` names every test with its outcome, ``-rA`` lists every outcome in the short summary
#: (each failure with its exception) even where the command's own ``-q`` cancels the ``-v``.
READABLE_ADDOPTS = "-v -rA"


def clean_line(line: str) -> str:
    """A log line without colours and without a CI timestamp before it."""
    return TIMESTAMP.sub("", ANSI.sub("", line.rstrip("\r\n")), count=1)


def signature(message: str | None) -> dict[str, str | None]:
    """``{"exc_type", "message"}`` from a short-summary message such as ``KeyError: 'x'``."""
    text = (message or "").strip().split("\n", 1)[0].strip()
    if text == "assert" or text.startswith("assert "):
        # A rewritten assert's message: pytest leaves its ``AssertionError: `` out.
        return {"exc_type": "AssertionError", "message": text}
    found = _EXC.match(text)
    if found is None:
        return {"exc_type": None, "message": text or None}
    return {"exc_type": found.group("type").rsplit(".", 1)[-1],
            "message": (found.group("msg") or "").strip() or None}


def read_console(text: str) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Each test's outcome (its first word: a teardown error after a pass stays ``passed``)
    and each failed or errored test's failure, from the output of one pytest run."""
    outcomes: dict[str, str] = {}
    failures: dict[str, dict[str, Any]] = {}
    for raw in text.splitlines():
        line = clean_line(raw)
        found = VERBOSE.match(line) or SUMMARY.match(line)
        if found is None:
            continue
        word = found.group("outcome")
        outcomes.setdefault(found.group("id"), OUTCOMES.get(word, word.lower()))
        if word in ("FAILED", "ERROR"):
            failures[found.group("id")] = signature(found.groupdict().get("msg"))
    return outcomes, failures
