"""The table of the chaos cases in ``bench/results/faults.md``: each case run plain, with
statesnap from an earlier checkout (``--against``) and with statesnap from this one.

Usage: ``.venv/bin/python tests/chaos/chaos_table.py --against <an earlier checkout>`` (as root:
the cases need mount and pid namespaces).  Prints one Markdown row per case and run: exit
status, pytest's summary line, and what statesnap said or failed to do.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import mountns  # noqa: E402
from chaos_runs import PYTEST, TRACEBACKS, env, outcomes, summary_line  # noqa: E402
from test_chaos_disk import FILLS_THE_DISK, VICTIM  # noqa: E402
from test_chaos_signals import DRIVER, SUITE, TIMER_SUITE  # noqa: E402

import pidns  # noqa: E402


def _row(case: str, who: str, rc: int, output: str) -> str:
    said = [line for line in output.splitlines() if line.startswith(("statesnap: ", "ERROR:"))]
    trace = next((t for t in (*TRACEBACKS, "KeyboardInterrupt") if t in output), "")
    words = "; ".join(said)[:220]
    extra = f" **{trace}**" if trace else ""
    return (f"| {case} | {who} | {rc} | {summary_line(output) or '(none)'} "
            f"| {len(outcomes(output))} | {words}{extra} |")


def _runs(src: dict[str, str | None], work: Path) -> list[str]:
    rows = []
    for who, path in src.items():
        extra = {} if path is None else {"PYTHONPATH": path}
        snap = [] if who == "plain" else ["-p", "statesnap"]
        # 1. a disk that fills mid-session, record and outputs on it
        d = work / f"disk-{who}"
        (d / "project").mkdir(parents=True)
        (d / "project" / "test_fills.py").write_text(FILLS_THE_DISK)
        (d / "small").mkdir()
        small = d / "small"
        outs = [] if not snap else ["--statesnap-record", str(small / "run.jsonl"),
                                    "--statesnap-json", str(small / "s.json"),
                                    "--report", str(small / "r.html")]
        p = mountns.run([mountns.tmpfs(small, "1m")], [*PYTEST, "-v", *snap, *outs],
                        cwd=d / "project", env=env(d / "tmp", SMALL=str(small), CHAOS_FAIL="1",
                                                   **extra))
        rows.append(_row("full disk mid-session", who, p.returncode, p.stdout + p.stderr))
        # 2. a read-only .pytest_cache, record at its default place
        d = work / f"ro-{who}"
        (d / "project" / ".pytest_cache").mkdir(parents=True)
        (d / "project" / "test_victim.py").write_text(VICTIM)
        p = mountns.run([mountns.read_only(d / "project" / ".pytest_cache")],
                        [*PYTEST, "-v", *snap], cwd=d / "project", env=env(d / "tmp", **extra))
        rows.append(_row("read-only .pytest_cache", who, p.returncode, p.stdout + p.stderr))
        # 3. Ctrl-C 0.7 s into the first replay
        d = work / f"int-{who}"
        (d / "project").mkdir(parents=True)
        (d / "project" / "test_slow_victim.py").write_text(SUITE)
        log = d / "out.txt"
        if snap:
            p = subprocess.run(pidns.wrap([sys.executable, "-c", DRIVER, json.dumps(
                [[*PYTEST, "-v", *snap, "--statesnap-json", str(d / "s.json")], str(log),
                 None])]), cwd=d / "project", env=env(d / "tmp", CHAOS_SLEEP="6", **extra),
                capture_output=True, text=True, timeout=300)
            rc, text = json.loads(p.stdout.strip().splitlines()[-1])["rc"], log.read_text()
        else:
            p = subprocess.run([*PYTEST, "-v"], cwd=d / "project", env=env(d / "tmp"),
                               capture_output=True, text=True, timeout=300)
            rc, text = p.returncode, p.stdout + p.stderr
        rows.append(_row("Ctrl-C in the first replay", who, rc, text))
        # 4. a 2 ms ITIMER_REAL left running with a SIGALRM handler
        d = work / f"timer-{who}"
        (d / "project").mkdir(parents=True)
        (d / "project" / "test_timer.py").write_text(TIMER_SUITE)
        p = subprocess.run(pidns.wrap([*PYTEST, "-v", *snap]), cwd=d / "project",
                           env=env(d / "tmp", CHAOS_TIMER="itimer", **extra),
                           capture_output=True, text=True, timeout=300)
        rows.append(_row("2 ms timer left running", who, p.returncode, p.stdout))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", type=Path, required=True, help="an earlier checkout")
    args = parser.parse_args()
    for need in (mountns.unavailable(), pidns.unavailable()):
        if need is not None:
            sys.exit(f"chaos_table: {need}")
    print("| case | run | exit | summary line | tests | what statesnap said |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        rows = _runs({"plain": None, "before": str(args.against / "src"),
                      "after": str(HERE.parent.parent / "src")}, Path(tmp))
    order = sorted(rows, key=lambda r: r.split(" | ")[0])
    print("\n".join(order))


if __name__ == "__main__":
    main()
