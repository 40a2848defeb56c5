"""Replays side by side: the 20-victim generated suite's session with 1 replay worker and with
more, in the same invocation.

One pytest session with statesnap per worker count on a fresh copy of the generated suite
(:mod:`gensuite`: 50 tests, 20 victims over 20 kinds of state, one genuine bug) and the default
budget (120 s), interleaved ``rounds`` times: the session's wall time, its children's CPU time
(the replays), the victims proven with the expected key, and the replays run.  ``--load N``
starts N busy loops (one process each) for the whole measurement and stops them after, to
measure at a given load on a small machine; the load average is printed before and after.

    .venv/bin/python bench/bench_sidebyside.py [--workers 1,2] [--rounds 1] [--load 0]
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gensuite import GENUINE, expected_keys, write_suite  # noqa: E402

BUSY = "while True:\n    pass\n"


def session(workers: int, budget: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sidebyside-") as tmp:
        project = write_suite(Path(tmp) / "suite")
        out = Path(tmp) / "summary.json"
        cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-q", "-p", "no:randomly",
               f"--statesnap-json={out}", f"--statesnap-verify-budget={budget}",
               f"--statesnap-replay-workers={workers}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=3600,
                       env={**os.environ, "CI": "true"})
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        findings = json.loads(out.read_text(encoding="utf-8"))["findings"]
    want = expected_keys()
    proven = 0
    for f in findings:
        if f["victim"] == GENUINE:
            proven += f["status"] == "not-order-dependent"
        elif f["status"] == "verified" and any(
                k.startswith(want.get(f["victim"], "?")) for k in f.get("proven_keys") or []):
            proven += 1
    # Each session has a project folder of its own: keys that name it (sys.path) are compared
    # without it.
    verdicts = sorted((f["victim"], f["status"], tuple(f["polluters"]),
                       tuple(k.replace(str(project), "<project>")
                             for k in f.get("proven_keys") or [])) for f in findings)
    return {"workers": workers, "wall": wall, "verdicts": verdicts,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "proven": proven, "victims": len(findings),
            "replays": sum(len(f["replays"]) for f in findings),
            "spent": sum("budget was spent" in (f.get("note") or "") for f in findings)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--budget", type=int, default=120, help="the verify budget (default 120)")
    ap.add_argument("--load", type=int, default=0, help="busy loops to run meanwhile")
    args = ap.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    loops = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.load)]
    try:
        if loops:
            time.sleep(60)  # let the 1-minute load average reach them
        print(f"load average before: {os.getloadavg()}; busy loops: {args.load}", flush=True)
        print("| workers | wall s | replays' CPU s | proven with key | replays | "
              "budget spent |")
        print("| --- | --- | --- | --- | --- | --- |")
        rows = []
        for _ in range(args.rounds):
            for w in counts:
                r = session(w, args.budget)
                rows.append(r)
                print(f"| {w} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['proven']}/{r['victims']} "
                      f"| {r['replays']} | {r['spent']} |", flush=True)
        print(f"load average after: {os.getloadavg()}")
        for i in range(0, len(rows), len(counts)):
            same = all(r["verdicts"] == rows[i]["verdicts"] for r in rows[i:i + len(counts)])
            print(f"round {i // len(counts) + 1}: the same verdicts with every worker count: "
                  f"{'yes' if same else 'NO'}")
            for r in rows[i + 1:i + len(counts)]:
                for a, b in zip(rows[i]["verdicts"], r["verdicts"], strict=True):
                    if a != b:
                        print(f"  {rows[i]['workers']} workers: {a}\n  {r['workers']} workers: {b}")
        base = [r["wall"] for r in rows if r["workers"] == counts[0]]
        for w in counts[1:]:
            mine = [r["wall"] for r in rows if r["workers"] == w]
            print(f"wall ratio {w} workers / {counts[0]}: "
                  f"{sum(mine) / sum(base):.2f}")
    finally:
        for p in loops:
            p.kill()
            p.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
