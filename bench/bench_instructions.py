"""Instructions per test and per session, this checkout against an earlier one (callgrind).

CPU time on a shared machine drifts by tens of percent between runs; instruction counts under
``valgrind --tool=callgrind`` are the same on every run.  Two sizes of the overhead
benchmark's suite (``bench_overhead.generate``) run plain, with statesnap from this checkout
and with statesnap from ``--against``; the difference between the sizes, over the number of
tests between them, is the cost per test, and what is left at the small size the cost per
session.  One run of each (they do not vary), so it takes minutes, not seconds.

Usage: ``python bench/bench_instructions.py --against CHECKOUT [--small 40] [--large 240]``.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # bench_overhead: the same suite, command and counting


def count(suite: Path, src: Path | None, record: Path, log: Path) -> int:
    """User-space instructions of one pytest run under callgrind (statesnap from ``src``)."""
    from bench_overhead import child_env, command, instructions

    env = child_env("cached")
    # One hash seed for every run: with a random one, set and dict orders (and so the counts)
    # differ from run to run by a few percent.
    env["PYTHONHASHSEED"] = "0"
    if src is not None:
        env["PYTHONPATH"] = str(src)
    # A run outside callgrind first writes the bytecode caches, as on a developer's machine.
    subprocess.run(command(src is not None, record, None), cwd=suite, env=env,
                   capture_output=True, check=False)
    return instructions(suite, src is not None, record, None, log, env)


def describe(checkout: Path) -> str:
    """``PATH (commit abc1234, plus uncommitted changes)`` for the table's caption."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--", "src"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{checkout} (commit {head or '?'}{', plus uncommitted changes' if dirty else ''})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True,
                        help="an earlier checkout (git worktree add DIR COMMIT)")
    parser.add_argument("--this", type=Path, default=ROOT,
                        help="the checkout measured (default: this one)")
    parser.add_argument("--small", type=int, default=40, help="tests in the small suite")
    parser.add_argument("--large", type=int, default=240, help="tests in the large suite")
    parser.add_argument("--modules", type=int, default=40, help="project modules")
    parser.add_argument("--out", type=Path, help="markdown output file")
    args = parser.parse_args(argv)
    from bench_overhead import generate  # the same project as the overhead benchmark

    invocation = shlex.join(["python", "bench/bench_instructions.py",
                             *(sys.argv[1:] if argv is None else argv)])
    sides: dict[str, Path | None] = {"plain": None, "this": args.this.resolve() / "src",
                                     "against": args.against.resolve() / "src"}
    got: dict[tuple[str, int], int] = {}
    with tempfile.TemporaryDirectory(prefix="statesnap-instr-") as tmp:
        work = Path(tmp)
        for size in (args.small, args.large):
            suite = work / f"suite{size}"
            generate(suite, size, args.modules)
            for side, src in sides.items():
                got[side, size] = count(suite, src, work / f"{side}{size}.jsonl",
                                        work / f"{side}{size}.log")
                print(f"{side} {size} tests: {got[side, size]:,} instructions", file=sys.stderr)
    span = args.large - args.small

    def per_test(side: str) -> float:
        return (got[side, args.large] - got[side, args.small]) / span

    def session(side: str) -> float:
        return got[side, args.small] - per_test(side) * args.small

    lines = [
        "# Instructions per test and per session, against an earlier checkout",
        "",
        f"Command: `{invocation}`",
        "",
        f"One run each under `valgrind --tool=callgrind` (user space, deterministic) of the "
        f"overhead benchmark's suite at {args.small} and {args.large} tests "
        f"({args.modules} project modules): per test = the difference over the "
        f"{span} tests between; per session = the rest.  This: {describe(args.this)}; "
        f"against: {describe(args.against)}.",
        "",
        "| run | per test | per session | overhead per test | overhead per session |",
        "|---|---:|---:|---:|---:|",
    ]
    for side in sides:
        over_t = per_test(side) - per_test("plain")
        over_s = session(side) - session("plain")
        lines.append(f"| {side} | {per_test(side):,.0f} | {session(side):,.0f} | "
                     f"{over_t:,.0f} | {over_s:,.0f} |")
    ratio_t = (per_test("this") - per_test("plain")) / (per_test("against") - per_test("plain"))
    ratio_s = (session("this") - session("plain")) / (session("against") - session("plain"))
    lines += ["", f"Overhead this / against: **{ratio_t:.3f} per test**, "
              f"**{ratio_s:.3f} per session**."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
