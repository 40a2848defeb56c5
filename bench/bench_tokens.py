"""Per-probe token cost, this checkout against an earlier one, robust to a busy machine.

``bench_overhead.py`` times whole pytest sessions, which a loaded machine makes noisy.  This
one times only what every test pays for in each probe, ``token()``, on the same generated
project (``bench_overhead.generate``): each checkout runs in its own child, imports the
project, sets every probe up and calls ``token()`` in batches; the figure kept is the fastest
batch (noise only ever adds time), and children of both checkouts alternate.

Usage: ``python bench/bench_tokens.py --against CHECKOUT [--rounds 5] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import importlib, json, sys, time
from pathlib import Path
suite = Path(sys.argv[1])
calls, batches = int(sys.argv[2]), int(sys.argv[3])
sys.path[:0] = [str(suite), str(suite / "tests")]
for f in sorted((suite / "benchproj").glob("mod_*.py")):
    importlib.import_module("benchproj." + f.stem)
for f in sorted((suite / "tests").glob("test_*.py")):
    importlib.import_module(f.stem)
from statesnap.probes import ProbeContext, discover
ctx = ProbeContext(rootdir=suite)
out = {}
for probe in discover():
    try:
        probe.setup(ctx)
        probe.read()
    except Exception:  # unavailable here (nvml without a GPU): not part of the comparison
        continue
    best = None
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            probe.token()
        ns = (time.perf_counter_ns() - t0) / calls
        best = ns if best is None else min(best, ns)
    out[probe.name] = best
print(json.dumps(out))
"""


def run_child(src: Path, suite: Path, calls: int, batches: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(suite), str(calls), str(batches)],
                          env=env, capture_output=True, text=True, check=True, cwd=suite)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True,
                        help="an earlier checkout (git worktree add DIR COMMIT)")
    parser.add_argument("--rounds", type=int, default=5, help="children per checkout")
    parser.add_argument("--calls", type=int, default=200, help="token() calls per batch")
    parser.add_argument("--batches", type=int, default=20, help="batches per child")
    parser.add_argument("--modules", type=int, default=40, help="project modules")
    parser.add_argument("--out", type=Path, help="markdown output file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from bench_overhead import generate  # the same project as the overhead benchmark

    invocation = shlex.join(["python", "bench/bench_tokens.py",
                             *(sys.argv[1:] if argv is None else argv)])
    sides = {"this": ROOT / "src", "against": args.against.resolve() / "src"}
    best: dict[str, dict[str, float]] = {"this": {}, "against": {}}
    with tempfile.TemporaryDirectory(prefix="statesnap-tokens-") as tmp:
        suite = Path(tmp) / "suite"
        generate(suite, args.modules * 50, args.modules)
        for i in range(args.rounds):
            for side in (("this", "against") if i % 2 == 0 else ("against", "this")):
                got = run_child(sides[side], suite, args.calls, args.batches)
                for name, ns in got.items():
                    best[side][name] = min(ns, best[side].get(name, ns))
            print(f"round {i + 1}/{args.rounds}", file=sys.stderr)
    names = sorted(set(best["this"]) | set(best["against"]),
                   key=lambda n: -best["this"].get(n, 0.0))
    lines = [
        "# Per-probe token cost against an earlier checkout",
        "",
        f"Command: `{invocation}`",
        "",
        f"Fastest batch of {args.calls} `token()` calls per probe over {args.rounds} children "
        f"per checkout × {args.batches} batches, on the overhead benchmark's project "
        f"({args.modules} modules, {args.modules * 50} test modules' worth of tests imported), "
        "children of both checkouts alternating.",
        "",
        "| probe | this (µs per call) | against (µs per call) | ratio |",
        "|---|---:|---:|---:|",
    ]
    total = {"this": 0.0, "against": 0.0}
    for name in names:
        a, b = best["this"].get(name), best["against"].get(name)
        total["this"] += a or 0.0
        total["against"] += b or 0.0
        ratio = f"{a / b:.2f}" if a and b else "-"
        lines.append(f"| {name} | {(a or 0) / 1000:.1f} | {(b or 0) / 1000:.1f} | {ratio} |")
    lines.append(f"| **all** | **{total['this'] / 1000:.1f}** | **{total['against'] / 1000:.1f}**"
                 f" | **{total['this'] / total['against']:.2f}** |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
