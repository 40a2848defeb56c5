"""Benchmark ``statesnap backfill`` on a generated suite: 1 worker against 2, and against
detect-test-pollution run victim by victim.

The suite: ``--tests`` trivial tests (default 2,000) in files of 100, and ``--victims``
order-dependent victims (default 5), each after its polluter in the default order, so the
"CI run" (``pytest -v``, one process) fails them: three polluters set an environment variable
their victim expects absent, two append to a module-level list their victim expects empty.

From that run's console log only (no statesnap record: the backfill records state in its
first replay), in the same session:

- ``statesnap backfill LOG --workers 1`` and ``--workers 2`` (embedded LocalCluster, fresh
  OUTDIR each, ``--repeat 1``): wall time, replays, test executions;
- detect-test-pollution 1.2.0 ``--failing-test VICTIM --testids-file IDS`` for each victim in
  turn (it bisects the tests before the victim to its polluter).

Test executions and pytest sessions are counted by the suite itself (a conftest appends one
line per test call and per session to a file), so both tools are counted the same way.

    .venv/bin/python bench/bench_backfill.py [--tests 2000] [--victims 5] [--out DIR]

Prints a table and writes ``bench/results/backfill.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "backfill.md"
PER_FILE = 100

CONFTEST = """
import os


def _count(kind):
    path = os.environ.get("BENCH_COUNT")
    if path:
        with open(path, "a") as f:
            f.write(kind + "\\n")


def pytest_sessionstart(session):
    _count("session")


def pytest_runtest_call(item):
    _count("test")
"""


@dataclass
class Figures:
    tool: str
    seconds: float
    sessions: int
    executions: int
    found: int
    right: int
    note: str = ""


def generate(root: Path, tests: int, victims: int) -> tuple[list[str], dict[str, str]]:
    """Write the suite; return its ids in order and ``{victim: polluter}``."""
    files = max(2 * victims, (tests + PER_FILE - 1) // PER_FILE)
    per_file = (tests + files - 1) // files
    early, late = per_file * 3 // 10, per_file * 7 // 10
    (root / "tests").mkdir(parents=True)
    (root / "benchpkg").mkdir()
    (root / "benchpkg" / "__init__.py").write_text(
        "".join(f"REGISTRY_{k} = []\n" for k in range(victims)))
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    planted: dict[tuple[int, int], str] = {}
    wanted: dict[str, str] = {}
    step = files // victims
    for k in range(victims):
        pf, vf = k * step, k * step + step - 1 if step > 1 else k * step
        env = k % 5 < 3
        planted[(pf, early)] = (f"    os.environ['BENCH_FLAG_{k}'] = '1'\n" if env else
                             f"    benchpkg.REGISTRY_{k}.append('x')\n")
        planted[(vf, late)] = (f"    assert 'BENCH_FLAG_{k}' not in os.environ\n" if env else
                             f"    assert benchpkg.REGISTRY_{k} == []\n")
        wanted[f"tests/test_f{vf:03d}.py::test_{vf:03d}_{late}"] = \
            f"tests/test_f{pf:03d}.py::test_{pf:03d}_{early}"
    ids: list[str] = []
    n = 0
    for f in range(files):
        lines = ["import os\nimport benchpkg\n"]
        for i in range(per_file):
            if n >= tests:
                break
            body = planted.get((f, i), f"    assert {i} + 1 == {i + 1}\n")
            lines.append(f"\ndef test_{f:03d}_{i}():\n{body}")
            ids.append(f"tests/test_f{f:03d}.py::test_{f:03d}_{i}")
            n += 1
        (root / "tests" / f"test_f{f:03d}.py").write_text("".join(lines))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit",
                    "-qm", "suite"], cwd=root, check=True)
    return ids, wanted


def _env(counter: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["BENCH_COUNT"] = str(counter)
    return env


def counted(counter: Path) -> tuple[int, int]:
    lines = counter.read_text().splitlines() if counter.exists() else []
    return lines.count("session"), lines.count("test")


def run_backfill(root: Path, log: Path, out: Path, workers: int,
                 wanted: dict[str, str]) -> Figures:
    counter = out.with_suffix(".count")
    cmd = [sys.executable, "-m", "statesnap", "backfill", str(log), "-o", str(out),
           "--workers", str(workers), "--repeat", "1", "-q"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, env=_env(counter), capture_output=True, text=True,
                          check=False)
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"backfill failed ({proc.returncode}): {proc.stderr[-2000:]}")
    data = json.loads((out / "summary.json").read_text())
    found = {f["victim"]: f for f in data["findings"] if f["status"] == "verified"}
    right = sum(1 for v, p in wanted.items() if found.get(v, {}).get("polluters") == [p])
    sessions, tests = counted(counter)
    return Figures(f"statesnap backfill --workers {workers}", seconds, sessions, tests,
                   len(found), right, note=f"{data['backfill']['replays']} replays")


def run_dtp(root: Path, ids: list[str], wanted: dict[str, str], out: Path,
            cap: float) -> Figures:
    counter = out / "dtp.count"
    script = Path(sys.executable).with_name("detect-test-pollution")
    ids_file = out / "dtp-ids.txt"
    ids_file.write_text("".join(f"{i}\n" for i in ids))
    found = right = 0
    note = ""
    t0 = time.monotonic()
    for done, (victim, polluter) in enumerate(wanted.items()):
        if time.monotonic() - t0 > cap:
            note = f"stopped at the {cap:.0f} s cap after {done} of {len(wanted)} victims"
            break
        proc = subprocess.run([str(script), "--failing-test", victim, "--testids-file",
                               str(ids_file)], cwd=root, env=_env(counter),
                              capture_output=True, text=True, check=False)
        if "the polluting test is:" in proc.stdout:
            found += 1
            right += f"the polluting test is: {polluter}" in proc.stdout
    sessions, tests = counted(counter)
    return Figures("detect-test-pollution --failing-test, victim by victim",
                   time.monotonic() - t0, sessions, tests, found, right, note)


def model(measured_per_victim: float) -> list[str]:
    """The PyTorch-sized case on paper: 10,000 tests per shard, 50 victims, 100 workers."""
    shard, victims, workers, repeat = 10_000, 50, 100, 3
    t, c, overhead = 0.3, 60.0, 1.10  # s per test, s per pytest start, recording cost
    prefix = shard // 2
    state = c + overhead * shard * t
    in_order = repeat * (c + prefix * t)
    small = 14 * (c + 2 * t)  # alone, ≤5 pairs, ≤6 key replays, 2 confirmations
    ddmin_runs = 2 * 13  # ≈ 2·log2(5,000) replays of a halving prefix
    ddmin = ddmin_runs * c + 2 * prefix * t
    a, b = state + in_order + small, state + in_order + small + ddmin
    execs_a = shard + repeat * prefix + 30
    execs_b = execs_a + 2 * prefix

    def h(seconds: float) -> str:
        return f"{seconds / 3600:.1f} h"

    return [
        "## A PyTorch-sized backfill, on paper", "",
        f"Assumptions: {shard:,} tests per shard at {t} s each on average ({h(shard * t)} per "
        f"shard run); {c:.0f} s per pytest start (import torch, collect the shard); "
        f"{victims} victims, one per shard, each halfway through its shard ({prefix:,} tests "
        f"before it); {workers} workers; `--repeat {repeat}`; statesnap's recording adds "
        f"{overhead - 1:.0%} to the state replay (heavy tests: the per-test cost is ~140 µs). "
        "Each victim's replays run one after another on its own worker (they decide each other "
        f"and are compared on one machine); the bench above measured "
        f"{measured_per_victim:.1f} replays per victim (its shard's one state replay spread "
        "over the shard's victims).", "",
        "| step (per victim, on its worker) | replays | time |",
        "| --- | --- | --- |",
        f"| state replay of the shard (statesnap recording) | 1 | {h(state)} |",
        f"| the recorded order up to the victim, ×{repeat} | {repeat} | {h(in_order)} |",
        f"| alone, suspects' pairs, key-level proof, 2 confirmations | ≤14 | {h(small)} |",
        f"| only when no suspect does it: ddmin over the whole prefix | ≈{ddmin_runs} | "
        f"{h(ddmin)} |", "",
        f"- wall time with {workers} workers: every victim has a worker of its own, so the "
        f"backfill takes as long as one victim: **{h(a)}** when a state-based suspect is the "
        f"polluter (the usual case: the hunt and locate benchmarks name it from state), "
        f"**{h(b)}** when delta debugging must search the whole prefix; {workers - victims} "
        "workers stay idle after the state replays.",
        f"- one machine, victim by victim (detect-test-pollution's way): "
        f"{h(victims * a)} to {h(victims * b)}.",
        f"- test executions: {execs_a:,} to {execs_b:,} per victim, "
        f"{victims * execs_a / 1e6:.2f} to {victims * execs_b / 1e6:.2f} million in all.",
        "- what would cut it further (not done): count the state replay as the first of the "
        "in-order runs (−1 prefix run per victim); victims of one shard already share their "
        "state replay; idle workers could test ddmin's chunks in parallel.", ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", type=int, default=2000)
    p.add_argument("--victims", type=int, default=5)
    p.add_argument("--out", type=Path, help="keep the suite and outputs here")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--dtp-cap", type=float, default=3600.0,
                   help="start no detect-test-pollution bisection after this many seconds")
    args = p.parse_args(argv)
    base = args.out or Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    if base.exists() and args.out:
        shutil.rmtree(base)
    root = base / "suite"
    ids, wanted = generate(root, args.tests, args.victims)
    log = base / "ci.log"
    ci = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:randomly", "-p",
                         "no:cacheprovider"], cwd=root, env=_env(base / "ci.count"),
                        capture_output=True, text=True, check=False)
    log.write_text(ci.stdout)
    failed = [line for line in ci.stdout.splitlines() if " FAILED" in line]
    assert len(failed) == len(wanted), ci.stdout[-2000:]
    figures = [run_backfill(root, log, base / "out-1", 1, wanted),
               run_backfill(root, log, base / "out-2", 2, wanted),
               run_dtp(root, ids, wanted, base, args.dtp_cap)]
    head = ("tool", "wall s", "pytest sessions", "test executions", "victims proven",
            "polluters right", "")
    rows = [head, tuple("---" for _ in head)]
    for f in figures:
        rows.append((f.tool, f"{f.seconds:.1f}", str(f.sessions), str(f.executions),
                     f"{f.found}/{len(wanted)}", f"{f.right}/{len(wanted)}", f.note))
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    one, two, dtp = figures
    ratios = [f"2 workers / 1 worker wall time: {two.seconds / one.seconds:.2f}",
              f"test executions, backfill (1 worker) / detect-test-pollution: "
              f"{one.executions / max(1, dtp.executions):.2f}"]
    text = "\n".join([
        "# statesnap backfill: 1 worker against 2, and against detect-test-pollution", "",
        f"Suite: {args.tests} trivial tests in {len({i.split('::')[0] for i in ids})} files, "
        f"{len(wanted)} order-dependent victims (polluters: env variables, then "
        "module-level lists), from the console log of one `pytest -v` run (no statesnap "
        "record). Same session, same machine "
        f"({platform.machine()}, {os.cpu_count()} cores visible, Python "
        f"{platform.python_version()}; load average "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end).", "",
        "Command: `" + shlex.join(["make", "bench-backfill"]) + "` (`.venv/bin/python "
        f"bench/bench_backfill.py --tests {args.tests} --victims {args.victims}`)", "",
        *lines, "", *[f"- {r}" for r in ratios], "",
        "Replays run one pytest process each, in a scratch copy of the suite per worker; "
        "`--repeat 1` here, as detect-test-pollution runs the order once.  Sessions include "
        "the backfill's one collection of the checkout.", "",
        *model(sum(int(f.note.split()[0]) for f in (one,)) / len(wanted))])
    print(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
