"""What a hunt ran and found, and the lines that say so on the terminal."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.hunt.runs import LOW_FIRST, ORDER_KINDS, HuntRun


@dataclass
class HuntResult:
    """What a hunt ran and found."""

    tests: int
    leakers: int
    ignored_low: int
    groups: int
    runs: list[HuntRun]
    findings: list[Finding]
    logs_dir: Path
    duration: float
    #: Plans the budget left unrun, in words.
    skipped: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    #: A Ctrl-C stopped the proofs: the findings are what was proven by then.
    interrupted: bool = False

    @property
    def orders(self) -> list[HuntRun]:
        """The exploring runs (the hunt orders), as opposed to the proving ones."""
        return [r for r in self.runs if r.kind in ORDER_KINDS]

    def to_json(self) -> dict[str, Any]:
        return {
            "tests": self.tests,
            "leakers": self.leakers,
            "ignored_low_leaks": self.ignored_low,
            "groups": self.groups,
            "orders": len(self.orders),
            "pytest_runs": len(self.runs),
            "duration": round(self.duration, 3),
            "seeds": self.seeds,
            "interrupted": self.interrupted,
            "skipped": self.skipped,
            "logs_dir": str(self.logs_dir),
            "runs": [r.to_json() for r in self.runs],
        }


def _low_words(ignored: int, orders: list[HuntRun]) -> str:
    """What became of the LOW-severity leaks: not grouped, but hunted in one order if it ran.

    "left out" alone read as if no order tried them, while the low-leakers-first order had
    (cachetools 8.0.2: "113 LOW-severity leak(s) left out", then "61 test(s) with
    LOW-severity leaks first").
    """
    if not ignored:
        return ""
    low = sum(run.kind == LOW_FIRST for run in orders)
    if low:
        where = "one order" if low == 1 else f"{low} orders"
        return (f"; {ignored} LOW-severity leak(s) not grouped: their tests "
                f"ran first in {where} of their own (--all-leaks groups them)")
    return f"; {ignored} LOW-severity leak(s) left out (--all-leaks)"


def describe(result: HuntResult) -> list[str]:
    """What each order found, in words, for the terminal."""
    orders = result.orders
    lines = [f"hunted {result.tests} test(s): {result.leakers} leaking test(s) in "
             f"{result.groups} group(s)" + _low_words(result.ignored_low, orders)]
    lines.append(f"{len(orders)} order(s) ran:")
    for i, run in enumerate(orders, start=1):
        found = (f"{len(run.new_failures)} new failure(s): " + ", ".join(run.new_failures[:5])
                 + (" ..." if len(run.new_failures) > 5 else "")) if run.new_failures \
            else "nothing new"
        extra = f" (error: {run.error})" if run.error else ""
        lines.append(f"  {i}. {run.label}, {run.tests} tests, {run.duration:.1f}s: "
                     f"{found}{extra}")
    proving = len(result.runs) - len(orders)
    lines.append(f"{proving} proving run(s); {len(result.runs)} pytest run(s) in "
                 f"{result.duration:.1f}s; logs: {result.logs_dir}")
    for skipped in _grouped(result.skipped):
        lines.append(f"  not run (budget spent): {skipped}")
    return lines


_NUMBERED = re.compile(r"^(?P<stem>[a-z][a-z-]*)-(?P<n>\d+) \((?P<rest>[^()]*)\)$")

#: Numbered orders of one kind left unrun are listed one by one up to this many.
_LISTED = 3


def _grouped(skipped: list[str]) -> list[str]:
    """``skipped`` with each run of numbered orders of one kind said in one line.

    A suite with thousands of leaking groups (python-dateutil 4.0.0: 2321) has as many
    leakers-first orders and as many backwards: listed one by one, the budget's end printed
    4,600 lines. The summary JSON keeps every entry.
    """
    out: list[str] = []
    run: list[tuple[str, str, str]] = []
    #: Other entries met inside a run (the backwards order, tried between leakers-first
    #: orders): said after it rather than splitting it.
    held: list[str] = []

    def flush() -> None:
        if len(run) > _LISTED:
            stem, first, rest = run[0]
            out.append(f"{len(run)} {stem} orders, {stem}-{first} to -{run[-1][1]} ({rest})")
        else:
            out.extend(f"{stem}-{n} ({rest})" for stem, n, rest in run)
        run.clear()
        out.extend(held)
        held.clear()

    for entry in skipped:
        m = _NUMBERED.match(entry)
        if m is None:
            if run:
                held.append(entry)
            else:
                out.append(entry)
            continue
        key = m["stem"], m["n"], m["rest"]
        if run and (run[0][0], run[0][2]) != (key[0], key[2]):
            flush()
        run.append(key)
    flush()
    return out
