"""Replays per victim: how many replays the session spends to prove each victim with its key.

On the generated suite (:mod:`gensuite`: 50 tests, 20 victims over 20 kinds of state, one
genuine bug) and on the demo (``tests/demo``): one pytest session with statesnap and a budget
large enough that nothing is cut short, then per victim, from the summary JSON: the verdict,
the replays its verdict took (every replay is stored with the finding), whether the named key
is the expected one (the generated suite) or a proven one (the demo).  Each side runs in the
same invocation: ``--against DIR`` runs the same sessions with ``DIR/src`` first on
``PYTHONPATH`` (a checkout of the code before), for a before/after table.

``--suite corpus`` runs the real-world corpus instead (:mod:`proofs_corpus`: each case's
suite in an order that fails its victim, the case environments already set up by
``bench_real.py`` under ``$STATESNAP_BENCH_CACHE``), ``--case ID`` (repeatable) picks cases.

    .venv/bin/python bench/bench_proofs.py [--against CHECKOUT] [--suite gen,demo]
    .venv/bin/python bench/bench_proofs.py [--against CHECKOUT] --suite corpus [--case ID]

Target (issue 28): the median victim proven, with its key, in at most 3 replays.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from gensuite import GENUINE, expected_keys, write_suite  # noqa: E402


def _session(project: Path, src: Path | None, budget: int) -> tuple[dict[str, Any], float]:
    out = project / "summary.json"
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-q", "-p", "no:randomly",
           f"--statesnap-json={out}", f"--statesnap-verify-budget={budget}"]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    return json.loads(out.read_text(encoding="utf-8")), wall


def _row(f: dict[str, Any], want: str | None) -> dict[str, Any]:
    key = f"{f['probe']}:{f['key']}" if f.get("probe") else None
    proven = f.get("proven_keys") or []
    if want is None:
        right = bool(proven) or f["status"] == "not-order-dependent"
    else:
        right = any(k.startswith(want) for k in proven)
    return {"victim": f["victim"], "status": f["status"], "replays": len(f["replays"]),
            "key": key, "proven": proven, "right": right, "note": f.get("note"),
            "labels": [(r["label"], r["outcome"]) for r in f["replays"]]}


def measure(suite: str, src: Path | None, budget: int) -> tuple[list[dict[str, Any]], float]:
    with tempfile.TemporaryDirectory(prefix=f"proofs-{suite}-") as tmp:
        if suite == "gen":
            project = write_suite(Path(tmp) / "suite")
            wants: dict[str, str | None] = dict(expected_keys())
            wants[GENUINE] = None
        else:
            project = Path(tmp) / "demo"
            shutil.copytree(ROOT / "tests" / "demo", project,
                            ignore=shutil.ignore_patterns("build", ".pytest_cache"))
            wants = {}
        summary, wall = _session(project, src, budget)
    rows = [_row(f, wants.get(f["victim"])) for f in summary["findings"]]
    return rows, wall


def _figures(rows: list[dict[str, Any]]) -> str:
    counts = [r["replays"] for r in rows if r["status"] != "not-order-dependent"]
    ok = sum(1 for r in rows if r["right"] and r["status"] in ("verified", "not-order-dependent"))
    if not counts:
        return f"{ok}/{len(rows)} proven with the right key"
    # The cold run of the printed line before "verified" (label confirm), apart: the
    # baseline of issue 28 ran none.
    less = [r["replays"] - [lb for lb, _ in r["labels"]].count("confirm") for r in rows
            if r["status"] != "not-order-dependent"]
    return (f"{ok}/{len(rows)} proven with the right key; replays per order-dependent victim: "
            f"median {statistics.median(counts):g}, worst {max(counts)}, "
            f"total {sum(r['replays'] for r in rows)}; less confirm: median "
            f"{statistics.median(less):g}, worst {max(less)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a checkout whose src/ is the baseline")
    ap.add_argument("--suite", default="gen,demo", help="gen, demo, corpus, or a comma list "
                    "(default gen,demo)")
    ap.add_argument("--case", action="append", default=[],
                    help="corpus: run only this case id (repeatable)")
    ap.add_argument("--budget", type=int, default=900)
    args = ap.parse_args(argv)
    sides: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against:
        sides.insert(0, (f"baseline {args.against}", args.against / "src"))
    for suite in args.suite.split(","):
        if suite == "corpus":
            from proofs_corpus import run_corpus

            run_corpus(args.case, [(label, src or ROOT / "src") for label, src in sides],
                       args.budget)
            continue
        for label, src in sides:
            rows, wall = measure(suite, src, args.budget)
            print(f"\n## {suite}: {label} (session {wall:.1f} s)\n")
            print("| victim | verdict | replays | labels | key | right key |")
            print("| --- | --- | --- | --- | --- | --- |")
            for r in sorted(rows, key=lambda r: r["victim"]):
                print(f"| {r['victim'].rsplit('::', 1)[-1]} | {r['status']} | {r['replays']} "
                      f"| {' '.join(lb for lb, _ in r['labels'])} "
                      f"| {', '.join(r['proven']) or r['key'] or '-'} "
                      f"| {'yes' if r['right'] else 'NO'} |")
            print(f"\n{_figures(rows)}", flush=True)
            for r in rows:
                if not r["right"]:
                    print(f"- {r['victim']}: {r['note']}; replays {r['labels']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
