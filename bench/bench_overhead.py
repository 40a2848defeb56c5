"""Benchmark statesnap's overhead: CPU time of a trivial 2,000-test suite with and without it.

Generates, in a temporary directory, a project package of 40 modules (constants, a dict, a
list, a set, a class with attributes, an ``lru_cache`` function: real work for the
``attributes`` probe) and 2,000 trivial tests that import it, then runs

    python -m pytest -q -p no:randomly -p no:cacheprovider            (baseline)
    python -m pytest -q -p no:randomly -p no:cacheprovider -p statesnap ...

in alternating rounds, measuring each child's user+sys CPU time with ``os.wait4``.  Prints the
median ratio against the target (<= 1.10), and the per-probe cost per test from each record's
footer (``costs``), largest first.  The same text goes to ``bench/results/overhead.md``.

Each round also runs statesnap with ``--statesnap-probes=none`` (the plugin alone: its hooks,
the record's lines, its start and end, no probe) and both ways on a second suite with one test
per module, so the overhead splits into a cost per session and a cost per test, the probes'
share apart, all measured in the same run.

    .venv/bin/python bench/bench_overhead.py [--pairs 5] [--tests 2000] [--modules 40]
                                             [--probes LIST] [--keep DIR] [--check]
                                             [--bytecode cached|off] [--out FILE]
                                             [--instructions]

``make bench`` runs it twice: with bytecode caching (the default, a developer's machine) into
``bench/results/overhead.md`` and without (``--bytecode off``, a CI image that sets
``PYTHONDONTWRITEBYTECODE``) into ``bench/results/overhead-nocache.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.record.reader import read_record

TARGET_RATIO = 1.10
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "overhead.md"
BASE_ARGS = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]

MODULE_TEMPLATE = '''"""Generated project module {n} (statesnap overhead benchmark)."""

import functools

NAME = "mod_{n:02d}"
LIMIT = {n}
RATIO = {n}.5
ENABLED = True
SETTINGS = {settings!r}
ITEMS = {items!r}
TAGS = {tags!r}


class Config:
    """A class whose attributes the attributes probe fingerprints."""

    level = {n}
    name = "config-{n}"
    options = {{"retries": 3, "timeout": 1.5, "mode": "fast"}}
    handlers = ["console", "file"]

    def describe(self):
        return f"{{self.name}}@{{self.level}}"


@functools.lru_cache(maxsize=128)
def cached_square(x):
    return x * x


def plain(x):
    return x + {n}
'''


def generate(root: Path, tests: int, modules: int) -> None:
    """Write the project package, the test files and the ini file under ``root``."""
    pkg = root / "benchproj"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Benchmark project."""\n', encoding="utf-8")
    for n in range(modules):
        text = MODULE_TEMPLATE.format(
            n=n,
            settings={f"key_{k}": k * n for k in range(20)},
            items=list(range(n, n + 20)),
            tags=sorted({f"tag{k}" for k in range(5)}),
        )
        (pkg / f"mod_{n:02d}.py").write_text(text, encoding="utf-8")
    test_dir = root / "tests"
    test_dir.mkdir()
    per_module, extra = divmod(tests, modules)
    index = 0
    for n in range(modules):
        count = per_module + (1 if n < extra else 0)
        lines = [f"from benchproj import mod_{n:02d} as m", ""]
        for _ in range(count):
            # Trivial and state-free: reads only, so any cost measured is statesnap's.
            lines += ["", f"def test_{index:05d}():", f"    assert m.plain({index}) == "
                      f"{index + n} and m.LIMIT == {n}", ""]
            index += 1
        (test_dir / f"test_mod_{n:02d}.py").write_text("\n".join(lines), encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\npythonpath = .\n",
                                     encoding="utf-8")


#: The smaller suite of each round: one test per project module, for the cost per session.
SMALL_TESTS_PER_MODULE = 1


@dataclass
class Run:
    """One measured pytest child."""

    statesnap: bool
    cpu: float
    wall: float
    returncode: int
    record: Path | None = None
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)
    probes: list[dict[str, Any]] = field(default_factory=list)


def child_env(bytecode: str) -> dict[str, str]:
    """The children's environment; ``bytecode`` is ``cached`` or ``off`` (``--bytecode``)."""
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_CURRENT_TEST",
                 "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    if bytecode == "off":
        # As in many CI images: every run compiles (and assertion-rewrites) the test modules
        # again, which makes each plain test several times dearer.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def command(statesnap: bool, record: Path | None, probes: str | None) -> list[str]:
    """The child's command line; ``probes`` is a ``--statesnap-probes`` value (None: all)."""
    argv = [sys.executable, *BASE_ARGS]
    if statesnap:
        # Option values joined with "=": pytest picks its rootdir before it knows statesnap's
        # options, and would take a separate, existing PATH for a test path.
        argv += ["-p", "statesnap", "--statesnap-verify-budget=0"]
        if record is not None:
            argv.append(f"--statesnap-record={record}")
        if probes:
            argv.append(f"--statesnap-probes={probes}")
    return argv


def measure(root: Path, statesnap: bool, record: Path | None, probes: str | None,
            log: Path, env: dict[str, str]) -> Run:
    """Run one child and return its own CPU time (user + sys, from ``os.wait4``)."""
    argv = command(statesnap, record, probes)
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
    run = Run(statesnap, usage.ru_utime + usage.ru_stime, wall, proc.returncode, record)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise SystemExit(f"benchmark run failed ({proc.returncode}): {shlex.join(argv)}\n{tail}")
    if record is not None:
        rec = read_record(record)
        run.costs = dict((rec.footer or {}).get("costs") or {})
        run.probes = list(rec.header.get("probes") or [])
    return run


def instructions(root: Path, statesnap: bool, record: Path | None, probes: str | None,
                 log: Path, env: dict[str, str]) -> int:
    """User-space instructions of one child under callgrind: the same on every run, where the
    CPU time of this shared machine drifts by tens of percent between runs."""
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            *command(statesnap, record, probes)]
    with open(log, "wb") as out:
        proc = subprocess.run(argv, cwd=root, stdout=out, stderr=subprocess.PIPE,
                              env=env, check=False)
    err = proc.stderr.decode("utf-8", "replace")
    found = [ln for ln in err.splitlines() if "Collected :" in ln]
    if proc.returncode != 0 or not found:
        raise SystemExit(f"callgrind run failed ({proc.returncode}): {shlex.join(argv)}\n"
                         f"{err[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].strip())


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


@dataclass
class Round:
    """One round: the suite without statesnap, with it, with it and no probe, and the small
    suite both ways."""

    plain: Run
    snap: Run
    bare: Run
    small_plain: Run
    small_snap: Run
    #: With ``--against``: statesnap from another source tree (an earlier commit).
    against: Run | None = None


def decomposition(rounds: list[Round], tests: int, small_tests: int) -> dict[str, float]:
    """Medians of the overhead's parts, in seconds: ``total``, ``bare`` (no probe),
    ``session`` (once per run) and ``per_test``, from the two suite sizes (a straight line
    through them)."""
    total = statistics.median(r.snap.cpu - r.plain.cpu for r in rounds)
    bare = statistics.median(r.bare.cpu - r.plain.cpu for r in rounds)
    small = statistics.median(r.small_snap.cpu - r.small_plain.cpu for r in rounds)
    per_test = (total - small) / (tests - small_tests)
    return {"total": total, "bare": bare, "session": small - per_test * small_tests,
            "per_test": per_test}


def report(args: argparse.Namespace, rounds: list[Round], load: tuple[float, float],
           invocation: str, counted: tuple[int, int] | None = None) -> str:
    """The results as markdown (printed as is, and written to ``--out``)."""
    pairs = [(r.plain, r.snap) for r in rounds]
    ratios = [s.cpu / p.cpu for p, s in pairs]
    ratio = statistics.median(ratios)
    base = statistics.median(p.cpu for p, _ in pairs)
    snap = statistics.median(s.cpu for _, s in pairs)
    over_us = (snap - base) / args.tests * 1e6
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    lines = [
        f"# statesnap overhead benchmark (bytecode {args.bytecode}"
        + (", against an earlier checkout)" if args.against is not None else ")"),
        "",
        f"Command: `{invocation}`",
        "",
        f"Suite: {args.tests} trivial tests over {args.modules} project modules; each run is "
        f"`python {' '.join(BASE_ARGS)}` with and without `-p statesnap` "
        f"(probes: {args.probes or 'default'}), in {len(pairs)} alternating rounds, CPU time "
        "= user + sys of the child (`os.wait4`).  Bytecode: "
        + ("cached (`PYTHONDONTWRITEBYTECODE` unset, as on a developer's machine; the test "
           "modules' rewritten bytecode is reused)." if args.bytecode == "cached" else
           "off (`PYTHONDONTWRITEBYTECODE=1`, as in many CI images: pytest compiles and "
           "rewrites the test modules on every run)."),
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {load[0]:.2f} before, {load[1]:.2f} after "
        "(the machine is shared: expect noise).",
        "",
        f"**Median ratio: {ratio:.3f}** (target <= {TARGET_RATIO:.2f}: {verdict} the target).",
        "",
        f"Median CPU: {fmt_ms(base)} without, {fmt_ms(snap)} with statesnap: "
        f"{over_us:,.0f} µs of overhead per test on {base / args.tests * 1e6:,.0f} µs per "
        "plain test.",
        "",
        *decomposition_lines(rounds, args),
        "",
        *against_lines(rounds, args),
        "| round | without (CPU) | with (CPU) | ratio | with, no probe (CPU) | wall without "
        "| wall with |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i, (rd, r) in enumerate(zip(rounds, ratios, strict=True), start=1):
        lines.append(f"| {i} | {fmt_ms(rd.plain.cpu)} | {fmt_ms(rd.snap.cpu)} | {r:.3f} | "
                     f"{fmt_ms(rd.bare.cpu)} | {rd.plain.wall:.2f} s | {rd.snap.wall:.2f} s |")
    if counted is not None:
        plain_ir, snap_ir = counted
        lines += [
            "",
            f"Instructions (one run each under `valgrind --tool=callgrind`, user space only, "
            f"deterministic): {plain_ir:,} without, {snap_ir:,} with statesnap: **ratio "
            f"{snap_ir / plain_ir:.3f}**, {(snap_ir - plain_ir) / args.tests:,.0f} "
            "instructions of overhead per test (one-time costs included).",
        ]
    lines += ["", *probe_table([s for _, s in pairs], over_us, args.tests)]
    return "\n".join(lines) + "\n"


def against_lines(rounds: list[Round], args: argparse.Namespace) -> list[str]:
    """With ``--against``: the other checkout's ratio in the same rounds."""
    runs = [(r.plain, r.against) for r in rounds if r.against is not None]
    if not runs:
        return []
    ratio = statistics.median(a.cpu / p.cpu for p, a in runs)
    over = statistics.median(a.cpu - p.cpu for p, a in runs) / args.tests * 1e6
    found = subprocess.run(["git", "-C", str(args.against), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=False)
    commit = f" (commit {found.stdout.strip()})" if found.returncode == 0 else ""
    return [f"The same rounds with statesnap from `{args.against}`{commit} (`--against`, a "
            "checkout made with `git worktree add DIR COMMIT`): median ratio "
            f"**{ratio:.3f}**, {over:,.0f} µs of overhead per test.", ""]


def decomposition_lines(rounds: list[Round], args: argparse.Namespace) -> list[str]:
    """Where the overhead goes: per session and per test, probes apart (same run)."""
    small_tests = args.modules * SMALL_TESTS_PER_MODULE
    d = decomposition(rounds, args.tests, small_tests)
    base = statistics.median(r.plain.cpu for r in rounds)
    bare_ratio = statistics.median(r.bare.cpu / r.plain.cpu for r in rounds)
    probes = d["total"] - d["bare"]
    return [
        "Where it goes (medians of the same rounds; the cost per session and per test from "
        f"this suite and one of {small_tests} tests, one per module, both ways):",
        "",
        "| part | CPU | share of the plain run |",
        "|---|---:|---:|",
        f"| once per session (start, header, reading the record back) | "
        f"{d['session'] * 1e3:,.0f} ms | {d['session'] / base:.1%} |",
        f"| per test, all of it | {d['per_test'] * 1e6:,.0f} µs | "
        f"{d['per_test'] * args.tests / base:.1%} |",
        f"| the plugin with no probe (`--statesnap-probes=none`), in all | "
        f"{d['bare'] * 1e3:,.0f} ms (ratio {bare_ratio:.3f}) | {d['bare'] / base:.1%} |",
        f"| the probes, in all | {probes * 1e3:,.0f} ms ({probes / args.tests * 1e6:,.0f} µs "
        f"per test) | {probes / base:.1%} |",
    ]


def probe_table(runs: list[Run], over_us: float, tests_per_run: int) -> list[str]:
    """Per-probe cost per test (median over the statesnap runs), largest first."""
    names = sorted({n for r in runs for n in r.costs})
    rows = []
    for name in names:
        per_test = statistics.median(float(r.costs[name]["per_test_us"])
                                     for r in runs if name in r.costs)
        reads = statistics.median(int(r.costs[name]["reads"]) for r in runs if name in r.costs)
        tokens = statistics.median(int(r.costs[name]["tokens"]) for r in runs if name in r.costs)
        rows.append((per_test, name, tokens, reads))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    out = [
        "Per-probe cost per test (from the records' footers, median over the runs):",
        "",
        "| probe | µs per test | share | token calls | full reads | µs per call |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for per_test, name, tokens, reads in rows:
        share = per_test / total if total else 0.0
        # Every call is a token read, and some are followed by a full read.
        per_call = per_test * tests_per_run / tokens if tokens else 0.0
        out.append(f"| {name} | {per_test:,.1f} | {share:.0%} | {tokens:,.0f} | {reads:,.0f} "
                   f"| {per_call:,.1f} |")
    out.append(f"| **all probes** | **{total:,.1f}** | | | | |")
    statuses = runs[0].probes if runs else []
    off = [f"{p['name']} ({p['status']})" for p in statuses if p.get("status") != "ok"]
    top = [r[1] for r in rows[:3]]
    out += [
        "",
        f"Dominant probes: {', '.join(top) if top else 'none'}"
        + (f" ({sum(r[0] for r in rows[:3]) / total:.0%} of the probe time)." if total else "."),
        f"Probe time is {total:,.0f} µs per test against {over_us:,.0f} µs of measured CPU "
        "overhead per test.  The footer's costs are wall-clock time inside the probe calls "
        "(`perf_counter_ns`), so on a loaded machine they include time the process spent "
        "waiting for a CPU and can exceed the CPU overhead; on a quiet one the difference is "
        "the plugin itself (hooks, diffs, writing the record) and its one-time costs (imports, "
        "the header, reading the record back at the end).",
    ]
    if off:
        out.append(f"Not running: {', '.join(off)}.")
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=5,
                        help="alternating rounds, each with every configuration (default 5)")
    parser.add_argument("--tests", type=int, default=2000, help="tests in the suite")
    parser.add_argument("--modules", type=int, default=40, help="project modules")
    parser.add_argument("--probes", default=None,
                        help="--statesnap-probes value for the statesnap runs (default: all)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="generate and keep the suite, records and logs in this directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown output file")
    parser.add_argument("--bytecode", choices=("cached", "off"), default="cached",
                        help="let the children cache bytecode (default) or not "
                             "(PYTHONDONTWRITEBYTECODE=1, as in many CI images)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions of one run each way under callgrind "
                             "(needs valgrind; deterministic, unlike CPU time)")
    parser.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                        help="also run statesnap from this checkout's src/ (an earlier commit, "
                             "e.g. from `git worktree add`) in every round, for a before/after "
                             "ratio measured on the same machine at the same time")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the median ratio misses the target")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.tests < 1 or args.modules < 1:
        parser.error("--pairs, --tests and --modules must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    invocation = shlex.join([os.path.relpath(sys.executable), "bench/bench_overhead.py",
                             *(sys.argv[1:] if argv is None else argv)])
    with tempfile.TemporaryDirectory(prefix="statesnap-bench-") as tmp:
        work = args.keep if args.keep is not None else Path(tmp)
        root = work / "suite"
        outputs = work / "outputs"
        if root.exists():
            raise SystemExit(f"{root} exists: give --keep an empty directory")
        outputs.mkdir(parents=True, exist_ok=True)
        generate(root, args.tests, args.modules)
        small = work / "small"
        generate(small, args.modules * SMALL_TESTS_PER_MODULE, args.modules)
        load_before = os.getloadavg()[0]
        # Warm-up: bytecode caches written, imports warm, both ways.
        env = child_env(args.bytecode)
        measure(root, False, None, None, outputs / "warmup-plain.log", env)
        measure(root, True, outputs / "warmup.jsonl", args.probes, outputs / "warmup-snap.log",
                env)
        measure(small, True, outputs / "warmup-small.jsonl", args.probes,
                outputs / "warmup-small.log", env)
        rounds: list[Round] = []
        against_env = (None if args.against is None
                       else dict(env, PYTHONPATH=str(args.against.resolve() / "src")))
        for i in range(args.pairs):
            jobs = {
                "plain": lambda i=i: measure(root, False, None, None,
                                             outputs / f"plain-{i}.log", env),
                "snap": lambda i=i: measure(root, True, outputs / f"record-{i}.jsonl",
                                            args.probes, outputs / f"snap-{i}.log", env),
                "bare": lambda i=i: measure(root, True, outputs / f"bare-{i}.jsonl", "none",
                                            outputs / f"bare-{i}.log", env),
                "small_plain": lambda i=i: measure(small, False, None, None,
                                                   outputs / f"small-plain-{i}.log", env),
                "small_snap": lambda i=i: measure(small, True, outputs / f"small-{i}.jsonl",
                                                  args.probes, outputs / f"small-snap-{i}.log",
                                                  env),
            }
            if against_env is not None:
                jobs["against"] = lambda i=i: measure(
                    root, True, outputs / f"against-{i}.jsonl", args.probes,
                    outputs / f"against-{i}.log", against_env)
            # A different order each round, so that drift in the machine's speed hits all.
            names = list(jobs)
            shift = i % len(names)
            done = {name: jobs[name]() for name in names[shift:] + names[:shift]}
            r = Round(**done)
            rounds.append(r)
            print(f"round {i + 1}/{args.pairs}: {r.plain.cpu:.2f} s without, {r.snap.cpu:.2f} s "
                  f"with ({r.snap.cpu / r.plain.cpu:.3f}), {r.bare.cpu:.2f} s with no probe",
                  file=sys.stderr)
        counted = None
        if args.instructions:
            print("counting instructions under callgrind (a minute or more per run)",
                  file=sys.stderr)
            counted = (instructions(root, False, None, None, outputs / "callgrind-plain.log",
                                    env),
                       instructions(root, True, outputs / "callgrind.jsonl", args.probes,
                                    outputs / "callgrind-snap.log", env))
        text = report(args, rounds, (load_before, os.getloadavg()[0]), invocation, counted)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    ratio = statistics.median(r.snap.cpu / r.plain.cpu for r in rounds)
    return 1 if args.check and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
