"""A forked replay's cost, this checkout against another, in the same run (issue 28 §2).

The replay of two trivial tests in a project that imports torch, forked from a warm parent,
timed with each checkout's own statesnap (its own record, runner and warm parent), the two
checkouts taking turns (``--rounds``) so that a change in the machine's load falls on both.
Prints the median wall time and the median CPU time of the forked child (its user + system
time, from the warm parent's ``wait4``) per checkout, and their ratios; asserts nothing.

    .venv/bin/python bench/bench_warmchild.py --against BASE_CHECKOUT [--repeat 7] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_warmfork import SRC, record_project, time_mode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} "
          f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})")
    sides = {"base": args.against / "src", "this": SRC}
    walls: dict[str, list[float]] = {k: [] for k in sides}
    cpus: dict[str, list[float]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = {k: record_project(root, sys.executable, src, k) for k, src in sides.items()}
        for _ in range(args.rounds):
            for side, src in sides.items():
                row = time_mode(records[side], "warm", src, args.repeat, root)
                assert row["warm_runs"] == args.repeat, row  # every timed replay was forked
                walls[side].append(row["median"])
                cpus[side].append(row["cpu"])
    print(f"forked replay of two trivial tests importing torch ({args.rounds} rounds of "
          f"{args.repeat}, each round's median; the median of the rounds):")
    base_wall, base_cpu = statistics.median(walls["base"]), statistics.median(cpus["base"])
    for side in sides:
        wall, cpu = statistics.median(walls[side]), statistics.median(cpus[side])
        print(f"  {side:4s} {wall:.3f} s wall  {cpu:.3f} s CPU   {wall / base_wall:.2f}x base wall"
              f"   {cpu / base_cpu:.2f}x base CPU   rounds CPU "
              + " ".join(f"{c:.3f}" for c in cpus[side]))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
