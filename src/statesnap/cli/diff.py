"""``statesnap diff A B``: what differs between two runs, so a new failure shows why.

The environment in the headers, then for each test that fails in one run only, how the tests
before it differ.  A measured mtime tick counts only when it changed tenfold.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import PROVEN_STATUSES, Finding
from statesnap.base.text import printable
from statesnap.cli.common import load_lanes
from statesnap.output.explain import resolution_text
from statesnap.record.journal import Record, TestEntry

MAX_LISTED = 10
#: Write ticks measured within this factor of each other are the same filesystem behaviour
#: (the measurement jitters: 6.9 µs in one run, 7.011 µs in the next).
TICK_JITTER = 10.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("diff", help="compare two records: environment and test order",
                       description="Compare two runs: the interpreter, platform, packages, "
                       "plugins, filesystem mtime resolution, and the order of the tests "
                       "that ran before each test that fails in one run and not the other.")
    p.add_argument("record_a", type=Path, metavar="RECORD_A")
    p.add_argument("record_b", type=Path, metavar="RECORD_B")
    p.set_defaults(func=run)


def _flat(header: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """``{key: (shown, compared)}``: ``compared`` leaves out what is measured, not set."""
    out: dict[str, tuple[str, Any]] = {}

    def put(key: str, value: Any) -> None:
        out[key] = (str(value), str(value))

    for section in ("python", "platform"):
        for k, v in (header.get(section) or {}).items():
            put(f"{section}.{k}", v)
    for name, version in (header.get("packages") or {}).items():
        put(f"package {name}", version)
    put("plugins", ", ".join(header.get("plugins") or []))
    for root, res in (header.get("mtime_resolution") or {}).items():
        # Keyed by the root's name: two checkouts in different places still line up.
        out[f"filesystem of {Path(root).name or root}"] = (resolution_text(res), res)
    put("seed", header.get("seed"))
    put("args", " ".join(header.get("args") or []))
    for p in header.get("probes") or []:
        put(f"probe {p.get('name')}", p.get("status"))
    return out


def _tick(info: Mapping[str, Any]) -> float | None:
    tick = info.get("write_tick_ns")
    return float(tick) if isinstance(tick, int | float) and tick > 0 else None


def _same(a: Any, b: Any) -> bool:
    """Equal, a filesystem measurement's write tick compared up to :data:`TICK_JITTER`."""
    if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return bool(a == b)
    fixed = ("resolution_ns", "fs_type", "mount_point", "error")
    if any(a.get(k) != b.get(k) for k in fixed):
        return False
    ta, tb = _tick(a), _tick(b)
    if ta is None or tb is None:
        return ta is tb
    return max(ta, tb) / min(ta, tb) < TICK_JITTER


def environment_diff(a: Record, b: Record) -> list[str]:
    """``  key: value in A → value in B`` for every header field that differs."""
    fa, fb = _flat(a.header), _flat(b.header)
    missing = ("—", None)
    lines = []
    for key in sorted(set(fa) | set(fb)):
        (va, ca), (vb, cb) = fa.get(key, missing), fb.get(key, missing)
        if not _same(ca, cb):
            lines.append(f"  {key}: {va} → {vb}")
    return lines


def _listed(ids: Sequence[str]) -> str:
    more = f" … and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else ""
    return ", ".join(ids[:MAX_LISTED]) + more


def _prefix(tests: Sequence[TestEntry], t: TestEntry) -> list[str]:
    return [x.nodeid for x in sorted(tests, key=lambda x: x.index)
            if x.index < t.index and x.worker == t.worker]


def prefix_diff(before_a: list[str], before_b: list[str]) -> list[str]:
    """How the tests before a victim differ: only in B, only in A, or in another order."""
    lines: list[str] = []
    set_a, set_b = set(before_a), set(before_b)
    new = [n for n in before_b if n not in set_a]
    gone = [n for n in before_a if n not in set_b]
    if new:
        lines.append(f"    ran before it only in B ({len(new)}): {_listed(new)}")
    if gone:
        lines.append(f"    ran before it only in A ({len(gone)}): {_listed(gone)}")
    common_a = [n for n in before_a if n in set_b]
    common_b = [n for n in before_b if n in set_a]
    if common_a != common_b:
        at = next(i for i, (x, y) in enumerate(zip(common_a, common_b, strict=True)) if x != y)
        lines.append(f"    the {len(common_b)} tests both ran before it ran in another order: "
                     f"from position {at + 1}, A ran {common_a[at]}, B ran {common_b[at]}")
    if not lines:
        lines.append("    the same tests ran before it in the same order: look at the "
                     "environment differences")
    return lines


def _newly_failing(x: Sequence[Record], y: Sequence[Record]
                   ) -> list[tuple[TestEntry, TestEntry | None]]:
    """Tests that fail in run ``x`` and passed (or did not run) in run ``y``."""
    tests_y = [t for lane in y for t in lane.tests]
    failed_y = {t.nodeid for t in tests_y if t.failed}
    by_id_y = {t.nodeid: t for t in tests_y}
    out: list[tuple[TestEntry, TestEntry | None]] = []
    for lane in x:
        for t in sorted(lane.tests, key=lambda t: t.index):
            if t.failed and t.nodeid not in failed_y:
                out.append((t, by_id_y.get(t.nodeid)))
    return out


def order_diff(a: Sequence[Record], b: Sequence[Record], only_in: str = "B") -> list[str]:
    """For each test that fails only in run ``only_in`` (``A`` or ``B``): how the tests that
    ran before it in its process differ between A and B."""
    tests_a = [t for lane in a for t in lane.tests]
    tests_b = [t for lane in b for t in lane.tests]
    fails, other = ("B", "A") if only_in == "B" else ("A", "B")
    lines: list[str] = []
    for t, there in _newly_failing(*((b, a) if only_in == "B" else (a, b))):
        if there is None:
            lines.append(f"  {t.nodeid}: fails in {fails}, did not run in {other}")
            continue
        in_a, in_b = (there, t) if only_in == "B" else (t, there)
        worker = f" (worker {in_a.worker} → {in_b.worker})" if in_a.worker != in_b.worker else ""
        lines.append(f"  {t.nodeid}: passed in {other}, fails in {fails}{worker}")
        lines += prefix_diff(_prefix(tests_a, in_a), _prefix(tests_b, in_b))
    return lines


def run(args: argparse.Namespace) -> int:
    # One string per node id the two records share: two records of a suite of 267,000
    # tests each would otherwise hold each id twice (issue 27).
    names: dict[str, str] = {}
    a, b = load_lanes(args.record_a, names), load_lanes(args.record_b, names)
    del names
    print(f"A: {args.record_a} ({sum(len(r.tests) for r in a)} tests)")
    print(f"B: {args.record_b} ({sum(len(r.tests) for r in b)} tests)")
    env = environment_diff(a[0], b[0])
    print("environment:" if env else "environment: the same")
    # Keys, values and node ids come from the tested process (statesnap.base.text).
    for line in env:
        print(printable(line))
    for side, other in (("B", "A"), ("A", "B")):
        order = order_diff(a, b, only_in=side)
        print(f"tests that fail only in {side}:" if order
              else f"no test fails in {side} that passed in {other}")
        for line in order:
            print(printable(line))
    for line in verdict_lines(a, b):
        print(printable(line))
    return 0


def verdict_line(f: Finding) -> str:
    """``[VERIFIED] victim ← polluter (env:KEY)``: one finding as its run left it."""
    from statesnap.output.explain import status_label

    who = ""
    if f.polluters:
        arrow = "←" if f.status in PROVEN_STATUSES else "← top suspect"
        who = f" {arrow} {' + '.join(f.polluters)}"
    key = f" ({f.probe}:{f.key})" if f.probe and f.key and f.polluters else ""
    return f"  [{status_label(f)}] {f.victim}{who}{key}"


def verdict_lines(a: Sequence[Record], b: Sequence[Record]) -> list[str]:
    """The verdicts of the failures that differ, as each run's session stored them (a
    failure with none is shown as suspected, not replayed)."""
    from statesnap.analysis.verdicts import findings_of

    failed_a = {t.nodeid for lane in a for t in lane.tests if t.failed}
    failed_b = {t.nodeid for lane in b for t in lane.tests if t.failed}
    lines: list[str] = []
    for name, lanes, other in (("A", a, failed_b), ("B", b, failed_a)):
        found = [f for lane in lanes for f in findings_of(lane) if f.victim not in other]
        if found:
            lines.append(f"verdicts stored for the failures only in {name}:")
            lines += [verdict_line(f) for f in found]
    return lines
