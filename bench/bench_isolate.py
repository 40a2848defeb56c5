"""Benchmark containment: the per-test cost of isolation, strict mode and restore mode.

Generates, in a temporary directory, a small project (a few modules with module-level state)
and suites of trivial tests that import it, then times whole pytest runs of each
configuration at two suite sizes.  The per-test cost is the slope between the two sizes,
``(t(big) - t(small)) / (big - small)``, so interpreter start-up and collection fall out;
each configuration is run ``--repeat`` times in interleaved rounds and the fastest run of
each is used (other jobs on the machine only ever add time).

    plain       python -m pytest                                   (the baseline)
    statesnap   python -m pytest -p statesnap
    strict      python -m pytest -p statesnap --statesnap-strict
    restore     python -m pytest -p statesnap --statesnap-restore
    fork        python -m pytest -p statesnap --statesnap-isolate=fork
    forked      python -m pytest --forked                          (pytest-forked)
    spawn       python -m pytest -p statesnap --statesnap-isolate=spawn   (smaller sizes)

Wall time (what a developer waits) and CPU time (user+sys of pytest and every process it
waited for, from ``getrusage(RUSAGE_CHILDREN)``) are both reported, as per-test milliseconds
and as ratios against the plain baseline measured in the same run.  The children run with
bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed), as a developer's machine does.
The table goes to stdout and, with the command that made it, to ``bench/results/isolate.md``.

    .venv/bin/python bench/bench_isolate.py [--small 20] [--big 200] [--spawn-small 4]
                                            [--spawn-big 16] [--repeat 5] [--only NAMES]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "isolate.md"
BASE = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        "-o", "addopts="]
STATESNAP = ["-p", "statesnap", "--statesnap-verify-budget=0"]

#: name -> (extra pytest arguments, uses statesnap, spawn-sized suites)
CONFIGS: dict[str, tuple[list[str], bool, bool]] = {
    "plain": ([], False, False),
    "statesnap": ([], True, False),
    "strict": (["--statesnap-strict"], True, False),
    "restore": (["--statesnap-restore"], True, False),
    "fork": (["--statesnap-isolate=fork"], True, False),
    "forked": (["--forked"], False, False),
    "spawn": (["--statesnap-isolate=spawn"], True, True),
}

#: Why pytest-forked's runs fail here, said once in the results.
FORKED_NOTE = ("pytest-forked 1.7.5 marshals each report's attributes, and pytest 9.2's "
               "reports carry a NodeId object marshal cannot take, so every test is reported "
               "failed; each one still forks, runs and reports, which is the cost measured")

MODULE = '''"""Generated module {n} for the isolation benchmark."""

LIMIT = {n}
SETTINGS = {{"mode": "fast", "level": {n}}}
ITEMS = list(range({n}))


class Config:
    level = {n}
    handlers = ["console"]
'''

TEST = '''
def test_{i}():
    assert proj.mod_{m}.LIMIT == {m}
'''


def make_suite(root: Path, tests: int, modules: int = 8) -> Path:
    """A project package and one test file with ``tests`` trivial tests; the suite's dir."""
    suite = root / f"suite-{tests}"
    pkg = suite / "proj"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "".join(f"from proj import mod_{n}\n" for n in range(modules)), "utf-8")
    for n in range(modules):
        (pkg / f"mod_{n}.py").write_text(MODULE.format(n=n), "utf-8")
    body = "import proj\n" + "".join(TEST.format(i=i, m=i % modules) for i in range(tests))
    (suite / "test_bench.py").write_text(body, "utf-8")
    (suite / "pytest.ini").write_text("[pytest]\n", "utf-8")
    return suite


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    failure: str | None = None


def run_once(suite: Path, args: list[str], record: Path, env: dict[str, str],
             may_fail: bool = False) -> tuple[float, float, str | None]:
    """(wall s, CPU s, failure line or None) of one pytest run; raises if it must pass."""
    cmd = [sys.executable, *BASE, *args]
    if "-p" in args and "statesnap" in args:
        cmd.append(f"--statesnap-record={record}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=suite, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    failure = None
    if done.returncode != 0:
        if not may_fail:
            raise SystemExit(f"benchmark run failed ({done.returncode}): {shlex.join(cmd)}\n"
                             + done.stdout[-3000:])
        failure = (done.stdout.strip().splitlines() or ["?"])[-1]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, failure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--big", type=int, default=200)
    ap.add_argument("--spawn-small", type=int, default=4)
    ap.add_argument("--spawn-big", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", help="comma-separated configurations (plain is always run)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    names = list(CONFIGS)
    if args.only:
        wanted = {"plain", *args.only.split(",")}
        names = [n for n in names if n in wanted]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    with tempfile.TemporaryDirectory(prefix="statesnap-bench-isolate-") as tmp:
        root = Path(tmp)
        sizes = {False: (args.small, args.big), True: (args.spawn_small, args.spawn_big)}
        suites = {n: make_suite(root, n) for pair in sizes.values() for n in pair}
        record = root / "record.jsonl"
        timings: dict[tuple[str, int], Timing] = {}
        # One warm-up run per suite fills the bytecode caches.
        for suite in suites.values():
            run_once(suite, [], record, env)
        notes: list[str] = []
        for round_ in range(args.repeat):
            for name in names:
                extra, uses, spawn_sized = CONFIGS[name]
                for n in sizes[spawn_sized]:
                    cmd = (STATESNAP if uses else []) + extra
                    # pytest-forked may fail every test (it cannot serialise some pytest
                    # versions' reports); its cost is still the cost of its forks.
                    wall, cpu, failure = run_once(suites[n], cmd, record, env,
                                                  may_fail=name == "forked")
                    t = timings.setdefault((name, n), Timing())
                    t.wall.append(wall)
                    t.cpu.append(cpu)
                    t.failure = t.failure or failure
            print(f"round {round_ + 1}/{args.repeat} done", file=sys.stderr)

        def per_test(name: str, kind: str) -> float:
            small, big = sizes[CONFIGS[name][2]]
            # The fastest of the rounds: other jobs on the machine only ever add time.
            a = min(getattr(timings[(name, small)], kind))
            b = min(getattr(timings[(name, big)], kind))
            return (b - a) / (big - small)

        base_wall, base_cpu = per_test("plain", "wall"), per_test("plain", "cpu")
        rows = []
        for (name, _), t in sorted(timings.items()):
            if t.failure and not any(name in note for note in notes):
                notes.append(f"{name}: the runs did not pass (`{t.failure}`); timed as run"
                             + (f" ({FORKED_NOTE})" if name == "forked" else "") + ".")
        for name in names:
            w, c = per_test(name, "wall"), per_test(name, "cpu")
            rows.append((name, w * 1e3, w / base_wall, c * 1e3, c / base_cpu))
    lines = [
        "| configuration | wall ms/test | × plain | CPU ms/test | × plain |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, wms, wr, cms, cr in rows:
        extra = " ".join(CONFIGS[name][0]) or ("-p statesnap" if CONFIGS[name][1] else "")
        label = f"{name} (`{extra}`)" if extra else name
        lines.append(f"| {label} | {wms:.2f} | {wr:.1f} | {cms:.2f} | {cr:.1f} |")
    command = shlex.join([".venv/bin/python",
                          "bench/bench_isolate.py", *(argv if argv is not None else sys.argv[1:])])
    text = "\n".join([
        "# Containment overhead: isolation, strict and restore modes",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs.  Suites of {args.small} and {args.big} trivial tests "
        f"({args.spawn_small} and {args.spawn_big} for spawn); per-test cost is the slope "
        f"between the two sizes, fastest of {args.repeat} interleaved rounds; bytecode "
        "caching on.  Wall times on a shared machine are noisy (other jobs compete for "
        "the CPUs); CPU times are the steadier figure.",
        "",
        *lines,
        "",
        *notes,
        "",
    ])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, "utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
