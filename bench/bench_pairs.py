"""One victim's candidate pairs side by side: sessions with 1 replay worker and with more, in the
same invocation, on suites with few victims whose right polluter is not ranked first.

Suites:

- ``ranked``: generated here, ``--victims N`` (1-3) victims; each one's source names the
  environment variables of ``--decoys`` tests (ranked first) while the variable that fails it
  is read inside the project's package, so its polluter is ranked after the decoys; every test
  takes ``--test-time`` seconds, as real tests do;
- ``demo``: ``tests/demo``.

Per session: wall time, the children's CPU time (user+sys: the replays), the replays the
findings list, the replay logs written (every replay started, the pairs not needed included)
and whether the verdicts (status, polluters, key, reproduction) are those of the first worker
count.  Interleaved ``--rounds`` times; the load average is printed before and after.

    .venv/bin/python bench/bench_pairs.py [--suite ranked,demo] [--workers 1,2] [--rounds 1]
        [--against <export of c1bf386>]

``--against DIR``: the same sessions with ``DIR/src`` first on ``PYTHONPATH`` (the code before:
victims side by side, one victim's pairs one after the other) and the last worker count, in
the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def write_ranked(root: Path, victims: int, decoys: int, test_time: float) -> Path:
    """Per victim ``v``: ``decoys`` tests set ``DECOY_v_i`` (named in the victim's source, so
    ranked first), one sets ``REAL_v`` (read in ``pkg.py``: the polluter)."""
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n", encoding="utf-8")
    (root / "pkg.py").write_text(textwrap.dedent('''
        import os

        def ready(v):
            return f"REAL_{v}" not in os.environ
        '''), encoding="utf-8")
    parts = [f"import os, time\nimport pkg\n\nT = {test_time!r}\n"]
    for v in range(victims):
        for i in range(decoys):
            parts.append(f"\ndef test_{v}_a{i:02d}_decoy():\n    time.sleep(T)\n"
                         f"    os.environ['DECOY_{v}_{i}'] = '1'\n")
        parts.append(f"\ndef test_{v}_b_polluter():\n    time.sleep(T)\n"
                     f"    os.environ['REAL_{v}'] = '1'\n")
    for v in range(victims):
        named = " + ".join(f"os.environ.get('DECOY_{v}_{i}', '')" for i in range(decoys))
        parts.append(f"\ndef test_{v}_z_victim():\n    time.sleep(T)\n"
                     f"    seen = {named}\n"
                     f"    assert len(seen) >= 0 and pkg.ready({v}), 'not ready'\n")
    (root / "test_ranked.py").write_text("".join(parts), encoding="utf-8")
    return root


def session(suite: str, workers: int, args: argparse.Namespace,
            src: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pairs-") as tmp:
        if suite == "ranked":
            project = write_ranked(Path(tmp) / "suite", args.victims, args.decoys,
                                   args.test_time)
        else:
            project = Path(tmp) / "demo"
            shutil.copytree(ROOT / "tests" / "demo", project,
                            ignore=shutil.ignore_patterns("build", ".pytest_cache"))
        out = Path(tmp) / "summary.json"
        record = Path(tmp) / "run.jsonl"
        cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-q", "-p", "no:randomly",
               f"--statesnap-json={out}", f"--statesnap-record={record}",
               f"--statesnap-verify-budget={args.budget}",
               f"--statesnap-replay-workers={workers}"]
        env = {**os.environ, "CI": "true"}
        if src is not None:
            env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=3600,
                       env=env)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        findings = json.loads(out.read_text(encoding="utf-8"))["findings"]
        started = len(list((Path(tmp) / "run.logs").glob("*.log")))
        verdicts = sorted((f["victim"], f["status"], tuple(f["polluters"]), f["probe"],
                           f["key"], f["repro"]) for f in findings)
    return {"workers": workers, "code": "before" if src is not None else "now",
            "wall": wall, "verdicts": verdicts,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "victims": len(findings),
            "verified": sum(f["status"] == "verified" for f in findings),
            "listed": sum(len(f["replays"]) for f in findings), "started": started}


def _ratio(rows: list[dict[str, Any]], base: list[dict[str, Any]], field: str) -> str:
    return f"{sum(r[field] for r in rows) / sum(r[field] for r in base):.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="ranked,demo", help="ranked, demo or both (default)")
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--victims", type=int, default=1, help="victims of the ranked suite")
    ap.add_argument("--decoys", type=int, default=3, help="suspects ranked before the polluter")
    ap.add_argument("--test-time", type=float, default=0.5, help="seconds each test takes")
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--against", type=Path, default=None,
                    help="a checkout whose src/ is the code before: its sessions run with the "
                         "last worker count too, in the same round")
    args = ap.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}", flush=True)
    for suite in args.suite.split(","):
        print(f"\n{suite}" + (f" ({args.victims} victim(s), {args.decoys} decoy(s) ranked "
                              f"first, {args.test_time} s a test)" if suite == "ranked" else ""))
        print("| code | workers | wall s | replays' CPU s | verified | replays listed | "
              "replays started | same verdicts |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        rows: list[dict[str, Any]] = []
        for _ in range(args.rounds):
            first = None
            plan: list[tuple[int, Path | None]] = [(w, None) for w in counts]
            if args.against is not None:
                plan.append((counts[-1], args.against / "src"))
            for w, src in plan:
                r = session(suite, w, args, src)
                first = first or r
                rows.append(r)
                same = "yes" if r["verdicts"] == first["verdicts"] else "NO"
                print(f"| {r['code']} | {w} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                      f"{r['verified']}/{r['victims']} | {r['listed']} | {r['started']} | "
                      f"{same} |", flush=True)
        base = [r for r in rows if r["workers"] == counts[0] and r["code"] == "now"]
        for w in counts[1:]:
            mine = [r for r in rows if r["workers"] == w and r["code"] == "now"]
            print(f"wall ratio {w} workers / {counts[0]}: {_ratio(mine, base, 'wall')}; "
                  f"CPU ratio: {_ratio(mine, base, 'cpu')}")
        if args.against is not None:
            w = counts[-1]
            old = [r for r in rows if r["code"] == "before"]
            mine = [r for r in rows if r["workers"] == w and r["code"] == "now"]
            print(f"{w} workers, now / before (victims side by side only): wall "
                  f"{_ratio(mine, old, 'wall')}; CPU {_ratio(mine, old, 'cpu')}")
    print(f"\nload average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
