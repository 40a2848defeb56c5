"""``statesnap diff A B``: what differs between two runs, so a new failure shows why."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from statesnap.cli.common import load
from statesnap.record import Record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("diff", help="compare two records: environment and test order",
                       description="Compare two runs: the interpreter, platform, packages, "
                       "plugins, filesystem mtime resolution, and the order of the tests "
                       "that ran before each test that fails in one run and not the other.")
    p.add_argument("record_a", type=Path, metavar="RECORD_A")
    p.add_argument("record_b", type=Path, metavar="RECORD_B")
    p.set_defaults(func=run)


def _flat(header: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for section in ("python", "platform"):
        for k, v in (header.get(section) or {}).items():
            out[f"{section}.{k}"] = str(v)
    for name, version in (header.get("packages") or {}).items():
        out[f"package {name}"] = str(version)
    out["plugins"] = ", ".join(header.get("plugins") or [])
    for root, res in (header.get("mtime_resolution") or {}).items():
        out[f"mtime resolution {Path(root).name or root}"] = str(res)
    out["seed"] = str(header.get("seed"))
    out["args"] = " ".join(header.get("args") or [])
    for p in header.get("probes") or []:
        out[f"probe {p.get('name')}"] = str(p.get("status"))
    return out


def environment_diff(a: Record, b: Record) -> list[str]:
    fa, fb = _flat(a.header), _flat(b.header)
    lines = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, "—"), fb.get(key, "—")
        if va != vb:
            lines.append(f"  {key}: {va} → {vb}")
    return lines


def order_diff(a: Record, b: Record) -> list[str]:
    lines: list[str] = []
    failed_a = {t.nodeid for t in a.tests if t.failed}
    for t in b.tests:
        if not t.failed or t.nodeid in failed_a:
            continue
        in_a = a.test_by_id(t.nodeid)
        before_b = [x.nodeid for x in b.tests if x.index < t.index and x.worker == t.worker]
        if in_a is None:
            lines.append(f"  {t.nodeid}: fails in B, did not run in A")
            continue
        before_a = {x.nodeid for x in a.tests if x.index < in_a.index and x.worker == in_a.worker}
        new = [n for n in before_b if n not in before_a]
        gone = sorted(before_a - set(before_b))
        lines.append(f"  {t.nodeid}: passed in A, fails in B")
        if new:
            lines.append(f"    ran before it only in B ({len(new)}): {', '.join(new[:10])}"
                         + (" …" if len(new) > 10 else ""))
        if gone:
            lines.append(f"    ran before it only in A ({len(gone)}): {', '.join(gone[:10])}"
                         + (" …" if len(gone) > 10 else ""))
        if not new and not gone:
            lines.append("    same tests ran before it: look at the environment differences")
    return lines


def run(args: argparse.Namespace) -> int:
    a, b = load(args.record_a), load(args.record_b)
    print(f"A: {a.path} ({len(a.tests)} tests)")
    print(f"B: {b.path} ({len(b.tests)} tests)")
    env = environment_diff(a, b)
    print("environment:" if env else "environment: the same")
    for line in env:
        print(line)
    order = order_diff(a, b)
    print("tests that fail only in B:" if order else "no test fails in B that passed in A")
    for line in order:
        print(line)
    return 0
