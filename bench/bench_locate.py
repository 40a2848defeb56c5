"""Benchmark locating a polluter: statesnap's explain-and-verify against detect-test-pollution.

For each size (500, 2,000 and 5,000 tests by default) a suite is generated: files of 50
trivial tests, one polluter at a random place (it sets ``BENCH_MODE`` and never removes it),
a victim at a random later place in another file (it asserts the variable is unset), and
harmless leaks on ~3% of the tests (other environment variables, module-level dict entries,
``sys.path`` entries).  One recorded run (``pytest -p statesnap --statesnap-verify-budget=0``)
makes the victim fail; then, from that same run:

- statesnap: ``statesnap explain RECORD --verify --json``;
- detect-test-pollution 1.2.0: ``detect-test-pollution --failing-test VICTIM --tests PATH``.

For each: wall time, pytest processes and test executions (counted by a conftest hook both
tools load: one line per pytest process, with the number of tests it ran), and whether it
named the right polluter.  The table goes to stdout and, as Markdown with the exact command,
to ``bench/results/locate.md``.

    .venv/bin/python bench/bench_locate.py [--sizes 500,2000,5000] [--seed 3] [--keep DIR]

Target (issue "Name the polluter"): the right polluter every time, and >=10x less wall time
at 2,000 tests, the gap growing with size.  The machine is shared: figures are one run each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TESTS_PER_FILE = 50
HARMLESS_SHARE = 0.03
BIN = Path(sys.executable).parent
RESULTS = Path(__file__).resolve().parent / "results" / "locate.md"

COUNTER_CONFTEST = '''
import os


def pytest_sessionfinish(session):
    # One line per pytest process: how many tests it ran (0 for a --collect-only run).
    path = os.environ.get("BENCH_COUNTER")
    if path:
        ran = 0 if session.config.option.collectonly else len(session.items)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{ran}\\n")
'''

BENCHLIB = '''
"""Module-level state the suite's harmless leaks write to."""
CACHE = {}
'''


@dataclass
class Suite:
    root: Path
    size: int
    polluter: str
    victim: str


@dataclass
class Result:
    tool: str
    size: int
    wall: float
    processes: int
    executions: int
    named: list[str]
    correct: bool
    note: str = ""


def generate(root: Path, size: int, rng: random.Random) -> Suite:
    """Write a suite of ``size`` tests with one polluter, one victim and harmless leaks."""
    files = size // TESTS_PER_FILE
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "conftest.py").write_text(COUNTER_CONFTEST, encoding="utf-8")
    (root / "benchlib.py").write_text(BENCHLIB, encoding="utf-8")
    polluter_at = rng.randrange(0, int(size * 0.8))
    victim_file = rng.randrange(polluter_at // TESTS_PER_FILE + 1, files)
    victim_at = victim_file * TESTS_PER_FILE + rng.randrange(TESTS_PER_FILE)
    harmless = set(rng.sample(range(size), int(size * HARMLESS_SHARE))) - {polluter_at,
                                                                          victim_at}
    polluter = victim = ""
    for f in range(files):
        name = f"test_mod_{f:03d}.py"
        parts = ["import os", "import sys", "", "import benchlib", ""]
        for j in range(TESTS_PER_FILE):
            i = f * TESTS_PER_FILE + j
            test = f"test_case_{i:05d}"
            body = "    assert sum(range(200)) == 19900"
            if i == polluter_at:
                polluter = f"{name}::{test}"
                body += '\n    os.environ["BENCH_MODE"] = "fast"'
            elif i == victim_at:
                victim = f"{name}::{test}"
                body += '\n    assert os.environ.get("BENCH_MODE") is None'
            elif i in harmless:
                kind = rng.choice(("env", "dict", "syspath"))
                if kind == "env":
                    body += f'\n    os.environ["BENCH_NOISE_{i}"] = "{i}"'
                elif kind == "dict":
                    body += f"\n    benchlib.CACHE[{i}] = {i}"
                else:
                    body += f'\n    sys.path.append("/nonexistent/bench-{i}")'
            parts += [f"def {test}():", body, "", ""]
        (root / name).write_text("\n".join(parts), encoding="utf-8")
    assert polluter and victim
    return Suite(root, size, polluter, victim)


def _env(counter: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STATESNAP_"))}
    env["BENCH_COUNTER"] = str(counter)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return env


def _counts(counter: Path) -> tuple[int, int]:
    lines = counter.read_text(encoding="utf-8").split() if counter.exists() else []
    return len(lines), sum(int(n) for n in lines)


def record_run(suite: Suite, record: Path, counter: Path) -> float:
    """The recorded run both tools start from; its wall time (not part of either figure)."""
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly", "-q",
           "--statesnap-verify-budget=0", f"--statesnap-record={record}"]
    proc = subprocess.run(cmd, cwd=suite.root, env=_env(counter), capture_output=True,
                          text=True)
    if proc.returncode != 1 or f"FAILED {suite.victim}" not in proc.stdout:
        raise SystemExit(f"the recorded run did not fail the victim:\n{proc.stdout[-2000:]}")
    counter.unlink()
    return time.perf_counter() - t0


def run_statesnap(suite: Suite, record: Path, counter: Path, timeout: float) -> Result:
    cmd = [str(BIN / "statesnap"), "explain", str(record), "--verify", "--json",
           "--budget", str(timeout)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=suite.root, env=_env(counter), capture_output=True,
                          text=True, timeout=timeout + 60)
    wall = time.perf_counter() - t0
    processes, executions = _counts(counter)
    named: list[str] = []
    note = ""
    try:
        findings = [f for f in json.loads(proc.stdout) if f["victim"] == suite.victim]
        named = list(findings[0]["polluters"]) if findings else []
        note = findings[0]["status"] if findings else "no finding"
    except (json.JSONDecodeError, KeyError, IndexError):
        note = f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    return Result("statesnap", suite.size, wall, processes, executions, named,
                  named == [suite.polluter], note)


def run_dtp(suite: Suite, counter: Path, timeout: float) -> Result:
    cmd = [str(BIN / "detect-test-pollution"), "--failing-test", suite.victim, "--tests", "."]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=suite.root, env=_env(counter), capture_output=True,
                              text=True, timeout=timeout)
        out, note = proc.stdout, f"exit {proc.returncode}"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        note = f"timed out after {timeout:.0f}s"
    wall = time.perf_counter() - t0
    processes, executions = _counts(counter)
    marker = "-> the polluting test is: "
    named = [line.split(marker, 1)[1].strip() for line in out.splitlines() if marker in line]
    return Result("detect-test-pollution", suite.size, wall, processes, executions, named,
                  named == [suite.polluter], note)


def table(results: list[Result]) -> list[str]:
    rows = ["| tests | tool | wall (s) | pytest processes | test executions | right polluter? "
            "| speed-up |", "|---:|---|---:|---:|---:|---|---:|"]
    by_size: dict[int, dict[str, Result]] = {}
    for r in results:
        by_size.setdefault(r.size, {})[r.tool] = r
    for size, tools in sorted(by_size.items()):
        ours, theirs = tools.get("statesnap"), tools.get("detect-test-pollution")
        for row in (ours, theirs):
            if row is None:
                continue
            speed = ""
            if row is ours and theirs is not None and ours.wall > 0:
                speed = f"{theirs.wall / ours.wall:.1f}x"
            right = "yes" if row.correct else f"NO ({', '.join(row.named) or row.note})"
            rows.append(f"| {size:,} | {row.tool} | {row.wall:.1f} | {row.processes} | "
                        f"{row.executions:,} | {right} | {speed} |")
    return rows


def write_markdown(path: Path, rows: list[str], argv: list[str], seed: int,
                   recorded: dict[int, float]) -> None:
    load = os.getloadavg()
    lines = [
        "# Locating a polluter: statesnap vs detect-test-pollution",
        "",
        "Command:",
        "",
        "```sh",
        shlex.join([".venv/bin/python", "bench/bench_locate.py", *argv]),
        "```",
        "",
        f"Seed {seed}.  Suites of {TESTS_PER_FILE} trivial tests per file, one polluter "
        "(sets `BENCH_MODE`) at a random place, the victim at a random later place in "
        f"another file, harmless leaks on {HARMLESS_SHARE:.0%} of the tests (env, module "
        "dict, `sys.path`).  Both tools start from the same recorded run (`pytest -p "
        "statesnap --statesnap-verify-budget=0`); statesnap runs `statesnap explain RECORD "
        "--verify`, detect-test-pollution 1.2.0 runs `--failing-test VICTIM --tests .`.  "
        "Processes and executions are counted by a conftest hook loaded by every pytest "
        "process of either tool.",
        "",
        *rows,
        "",
        "The recorded run itself (pytest with statesnap recording every test, shared by both "
        "tools and counted in neither row): "
        + ", ".join(f"{size:,} tests {secs:.1f} s" for size, secs in sorted(recorded.items()))
        + ".",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average at the end {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (shared and noisy: one run per cell, no repetition).",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,2000,5000",
                        help="comma-separated suite sizes (multiples of 50)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="limit per tool and size, in seconds")
    parser.add_argument("--keep", type=Path, help="generate the suites here and keep them")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the Markdown results file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-locate-"))
    results: list[Result] = []
    recorded: dict[int, float] = {}
    try:
        for size in sizes:
            rng = random.Random(args.seed * 100_003 + size)
            suite = generate(work / f"suite-{size}", size, rng)
            record = work / f"record-{size}.jsonl"
            counter = work / f"counter-{size}.txt"
            print(f"{size} tests: polluter {suite.polluter}, victim {suite.victim}",
                  file=sys.stderr, flush=True)
            recorded[size] = record_run(suite, record, counter)
            ours = run_statesnap(suite, record, counter, args.timeout)
            counter.unlink(missing_ok=True)
            theirs = run_dtp(suite, counter, args.timeout)
            counter.unlink(missing_ok=True)
            for result in (ours, theirs):
                results.append(result)
                print(f"  {result.tool}: {result.wall:.1f}s, {result.processes} processes, "
                      f"{result.executions} executions, right: {result.correct} "
                      f"({result.note})", file=sys.stderr, flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    rows = table(results)
    print("\n".join(rows))
    write_markdown(args.out, rows, list(argv if argv is not None else sys.argv[1:]), args.seed,
                   recorded)
    print(f"\nwritten to {args.out}", file=sys.stderr)
    return 0 if all(r.correct for r in results if r.tool == "statesnap") else 1


if __name__ == "__main__":
    raise SystemExit(main())
