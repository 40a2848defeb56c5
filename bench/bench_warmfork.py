"""Per-replay cost of a replay of two trivial tests in a project that imports torch: forked
from a warm parent, cold (a fresh interpreter, this checkout), and today (``--against``, the
base checkout's runner, same record, same run).  Then a whole session with 20 victims importing
torch against plain pytest (not yet measured).  Prints medians and ratios; asserts nothing.

    .venv/bin/python bench/bench_warmfork.py --against BASE_CHECKOUT [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

TWO = """import torch

def test_one():
    assert torch.tensor([1]).item() == 1

def test_two():
    assert True
"""

TIMER = r"""
import json, resource, statistics, sys, time
from statesnap.record.reader import read_record
from statesnap.replay.runner import Runner
record = read_record(sys.argv[1])
order = [t.nodeid for t in sorted(record.tests, key=lambda t: t.index)]
mode, repeat = sys.argv[2], int(sys.argv[3])
kw = {} if mode == "today" else {"warm": mode == "warm"}
runner = Runner(record, **kw)
def one():
    # "printed": the reproduction line run exactly as printed (what confirms a finding).
    if mode == "printed":
        return runner.run_printed(runner.repro_command(order), order, label="bench")
    return runner.run(order, label="bench")
t0 = time.perf_counter()
first = one()
start = time.perf_counter() - t0
times, cpus = [], []
def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
for _ in range(repeat):
    t0, c0 = time.perf_counter(), children_cpu()
    res = one()
    times.append(time.perf_counter() - t0)
    # A forked child is the warm parent's: its CPU time comes back with its exit (wait4).
    cpu = getattr(res, "cpu", None)
    cpus.append(cpu if cpu is not None else children_cpu() - c0)
    assert res.returncode == 0, res.log.read_text()
runner.close()
print(json.dumps({"first": start, "median": statistics.median(times),
                  "cpu": statistics.median(cpus),
                  "warm_runs": getattr(runner, "warm_runs", None)}))
"""


def record_project(root: Path, python: str, src: Path, name: str) -> Path:
    """The record of one session of the project, written by the statesnap under ``src``:
    each runner replays a record in its own format (an older reader cannot read a newer
    record)."""
    (root / "test_two.py").write_text(TWO)
    env = dict(os.environ, PYTHONPATH=str(src))
    record = root / f"rec-{name}.jsonl"
    subprocess.run([python, "-m", "pytest", "-p", "statesnap", "-q", "-p", "no:randomly",
                    "-p", "no:cacheprovider", f"--statesnap-record={record}"],
                   cwd=root, env=env, check=True, capture_output=True)
    return record


def time_mode(record: Path, mode: str, src: Path, repeat: int, cwd: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, "-c", TIMER, str(record), mode, str(repeat)],
                         cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def session_suite(root: Path, victims: int) -> None:
    """``victims`` pairs: a polluter setting an env var, a victim asserting it unset; every
    test module imports torch."""
    for i in range(victims):
        (root / f"test_v{i:02d}.py").write_text(
            "import os\nimport torch\n\n"
            f"def test_a_pollutes():\n    os.environ['BENCH_V{i}'] = '1'\n\n"
            f"def test_b_victim():\n    assert 'BENCH_V{i}' not in os.environ\n\n"
            "def test_c_plain():\n    assert torch.tensor([2]).item() == 2\n")


def time_session(root: Path, src: Path | None, extra: list[str]
                 ) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the session and every process it reaped:
    replays, warm parents and their forks), and how many findings were verified."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STATESNAP_")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    for p in root.glob("rec*"):
        subprocess.run(["rm", "-rf", str(p)], check=True)
    t0, c0 = time.perf_counter(), session_cpu()
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                          "-p", "no:cacheprovider", *extra], cwd=root, env=env,
                         capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, session_cpu() - c0
    verified = out.stdout.count("[VERIFIED]")
    return wall, cpu, f"{verified} verified"


def session_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--session", type=int, default=0, metavar="VICTIMS",
                    help="also time a whole session with this many victims")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} "
          f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = {"today": record_project(root, sys.executable, args.against / "src", "today"),
                   "now": record_project(root, sys.executable, SRC, "now")}
        rows = {}
        for mode, src in (("today", args.against / "src"), ("cold", SRC), ("warm", SRC),
                          ("printed", SRC)):
            record = records["today" if mode == "today" else "now"]
            rows[mode] = time_mode(record, mode, src, args.repeat, root)
        print(f"per replay of two trivial tests importing torch (median of {args.repeat}; "
              f"wall, then the replay process's own CPU time; printed: the reproduction line "
              f"run as printed, plain pytest):")
        for mode, row in rows.items():
            print(f"  {mode:5s} {row['median']:.3f} s wall  {row['cpu']:.3f} s CPU"
                  f"   (first replay {row['first']:.3f} s)"
                  f"   {row['median'] / rows['today']['median']:.2f}x today wall"
                  f"   {row['cpu'] / rows['today']['cpu']:.2f}x today CPU")
        print(f"  warm replays forked: {rows['warm']['warm_runs']}")
    if args.session:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            session_suite(root, args.session)
            plain, plain_cpu, _ = time_session(root, None, [])
            print(f"whole session, {args.session} victims importing torch "
                  f"(plain pytest {plain:.1f} s wall, {plain_cpu:.1f} s CPU):")
            ss = ["-p", "statesnap", f"--statesnap-record={root / 'rec.jsonl'}"]
            for label, src, extra in (("today", args.against / "src", ss),
                                      ("cold", SRC, [*ss, "--statesnap-replay-warm=off"]),
                                      ("warm", SRC, ss)):
                wall, cpu, verdicts = time_session(root, src, extra)
                print(f"  {label:5s} {wall:7.1f} s  {wall / plain:5.1f}x plain   "
                      f"{cpu:7.1f} s CPU  {cpu / plain_cpu:5.1f}x plain CPU  ({verdicts})")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
