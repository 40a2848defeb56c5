"""pytest console logs: each worker's order from ``-v`` lines, outcomes and messages from ``-rA``.

ANSI colours and CI timestamp prefixes are stripped first (the line grammar:
:mod:`statesnap.replay.console`).  A log whose order cannot be
recovered exactly is refused with one line.  The lines recognised, and why, are in
docs/ARCHITECTURE.md ("Backfill").
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from statesnap.backfill.plugins import parse_plugins_line
from statesnap.backfill.shard import BadArtifact, Shard
from statesnap.replay.console import (
    OUTCOMES,
    SUMMARY,
    VERBOSE,
    WORDS,
    clean_line,
    signature,
)

XDIST = re.compile(
    rf"^\[(?P<worker>gw\d+)\](?: \[\s*\d+%\])? (?P<outcome>{WORDS}) (?P<id>\S.*?::.+?)\s*$")
PROGRESS = re.compile(r"^(?P<file>\S+\.py) (?P<chars>[.FEsxXR]+)(?:\s+\[\s*\d+%\])?\s*$")
_CHAR = {".": "passed", "F": "failed", "E": "error", "s": "skipped", "x": "xfailed",
         "X": "xpassed"}
INVOCATION = re.compile(r"^(?:\$|\+|>)\s+(?:\S*python\S*\s+-m\s+)?pytest(?:\s+(?P<args>.*))?$")


def parse_log(path: Path, text: str) -> list[Shard]:
    """One :class:`Shard` per worker the log shows (``main`` without xdist)."""
    orders: dict[str, list[str]] = {}
    outcomes: dict[str, str] = {}
    failures: dict[str, dict[str, str | None]] = {}
    summary_only: dict[str, str] = {}
    progress: list[tuple[str, str]] = []
    args: list[str] | None = None
    plugins: dict[str, str] | None = None
    for raw in text.splitlines():
        line = clean_line(raw)
        if plugins is None and line.startswith("plugins: "):
            plugins = parse_plugins_line(line)
            continue
        found = XDIST.match(line)
        worker = "main"
        if found is None:
            found = VERBOSE.match(line)
        else:
            worker = found.group("worker")
        if found is not None:
            _add(orders.setdefault(worker, []), outcomes, found.group("id"),
                 found.group("outcome"))
            continue
        found = SUMMARY.match(line)
        if found is not None:
            nodeid, word = found.group("id"), found.group("outcome")
            summary_only.setdefault(nodeid, OUTCOMES.get(word, word.lower()))
            if word in ("FAILED", "ERROR"):
                failures[nodeid] = signature(found.group("msg"))
            continue
        found = PROGRESS.match(line)
        if found is not None:
            progress.append((found.group("file"), found.group("chars")))
            continue
        found = INVOCATION.match(line.strip())
        if found is not None and args is None:
            try:
                args = shlex.split(found.group("args") or "")
            except ValueError:
                args = None
    if not orders and summary_only and progress:
        orders["main"] = _interleave(path, progress, summary_only)
    if not orders:
        if summary_only:
            raise BadArtifact(f"{path}: a -rA summary but no -v lines: the order the tests "
                              "ran in is not in this log (run pytest with -v)")
        raise BadArtifact(f"{path}: not a pytest log with -v or -rA lines (no test outcome "
                          "found)")
    for nodeid, outcome in summary_only.items():
        outcomes.setdefault(nodeid, outcome)
    shards: list[Shard] = []
    for worker in sorted(orders, key=_worker_key):
        order = orders[worker]
        shards.append(Shard(
            source=path, kind="log", worker=worker, order=order,
            outcomes={n: outcomes[n] for n in order if n in outcomes},
            failures={n: dict(failures[n]) for n in order if n in failures},
            args=_worker_args(args), plugins=_header_plugins(plugins, text)))
    return shards


def _interleave(path: Path, progress: list[tuple[str, str]],
                summary: dict[str, str]) -> list[str]:
    """The order of a non-verbose ``-rA`` run: each file's progress characters pick the next
    test of that outcome from the summary, which lists each outcome's tests in finishing
    order."""
    queues: dict[tuple[str, str], list[str]] = {}
    for nodeid, outcome in summary.items():
        queues.setdefault((nodeid.split("::", 1)[0], outcome), []).append(nodeid)
    order: list[str] = []
    for file, chars in progress:
        for char in chars:
            if char == "R":
                continue
            queue = queues.get((file, _CHAR.get(char, "?")))
            if not queue:
                raise BadArtifact(f"{path}: the progress of {file} does not match the -rA "
                                  "summary: the order cannot be recovered (run pytest with -v)")
            nodeid = queue.pop(0)
            if nodeid not in order:
                order.append(nodeid)
    return order


def _add(order: list[str], outcomes: dict[str, str], nodeid: str, word: str) -> None:
    if word == "RERUN":
        return  # pytest-rerunfailures: the test ran again right away; its last word counts
    if nodeid not in order:
        order.append(nodeid)
    outcome = OUTCOMES.get(word, word.lower())
    # A test that failed in call and errored in teardown shows two lines: the failure counts.
    if outcomes.get(nodeid) not in ("failed", "error"):
        outcomes[nodeid] = outcome


def _header_plugins(plugins: dict[str, str] | None, text: str) -> dict[str, str] | None:
    """CI's plugins: the header's list; a log with pytest's header and no such line loaded
    none; a log without the header (not -v, cut) does not say."""
    if plugins is not None:
        return dict(plugins)
    if re.search(r"^(?:.*\s)?platform \S+ -- Python \S+, pytest-", text, re.MULTILINE):
        return {}
    return None


def _worker_key(worker: str) -> tuple[int, str]:
    digits = worker[2:]
    return (int(digits) if worker.startswith("gw") and digits.isdigit() else -1, worker)


def _worker_args(args: list[str] | None) -> list[str] | None:
    return None if args is None else list(args)
