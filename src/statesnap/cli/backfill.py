"""``statesnap backfill``: issue-ready reproductions from the artifacts a CI run left.

Exit status: 0 when no failure turned out order-dependent or flaky, 1 when some did, 2 when
an artifact could not be used (one line each; the others are still backfilled), a worker
refused replays (its checkout is at another commit), or nothing could run at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import NOT_DETERMINISTIC, VERIFIED
from statesnap.base.argtypes import positive_int, positive_seconds
from statesnap.cli import CliError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "backfill", help="turn a CI run's artifacts into proven, minimal reproductions",
        description="Read statesnap records, pytest logs (-v/-rA, xdist), JUnit XML and "
        "pytest-replay files of a CI run; replay every failing test in its worker's order on "
        "a Dask cluster, classify it, minimise its polluters, prove the state key, and write "
        "one Markdown file per finding, summary.json and pollution.html into OUTDIR. "
        "Resumes from OUTDIR when run again.")
    p.add_argument("artifacts", nargs="+", type=Path, metavar="ARTIFACT",
                   help="records, logs, JUnit XML, .pytest-replay-*.txt, or folders of them")
    p.add_argument("-o", "--outdir", type=Path, default=Path("statesnap-backfill"),
                   metavar="OUTDIR", help="where findings and state go (default: "
                   "statesnap-backfill)")
    p.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                   help="replay each victim's recorded order N times (default 3)")
    p.add_argument("--root", type=Path, default=Path.cwd(), metavar="PATH",
                   help="the project checkout here (default: the current directory)")
    p.add_argument("--scheduler", metavar="tcp://HOST:8786",
                   help="a running Dask scheduler; default: an embedded LocalCluster")
    p.add_argument("--checkout", metavar="PATH",
                   help="where the workers have the project checkout (default: --root)")
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="worker processes of the embedded cluster (default: one per core)")
    p.add_argument("--timeout", type=positive_seconds, default=900.0, metavar="SECONDS",
                   help="limit per replay (default 900)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from statesnap.backfill.engine import EngineError
    from statesnap.backfill.progress import Progress
    from statesnap.backfill.run import Backfill, Options

    root: Path = args.root.resolve()
    if not root.is_dir():
        raise CliError(f"--root {args.root}: no such folder")
    outdir: Path = args.outdir
    if outdir.exists() and not outdir.is_dir():
        raise CliError(f"-o {outdir}: exists and is not a folder")
    opts = Options(artifacts=list(args.artifacts), outdir=outdir.resolve(), root=root,
                   repeat=args.repeat or 1, scheduler=args.scheduler, checkout=args.checkout,
                   workers=args.workers, timeout=args.timeout, quiet=args.quiet)
    progress = Progress(quiet=args.quiet)
    backfill = Backfill(opts, progress)
    try:
        out = backfill.load()
        for line in out.bad:
            print(f"statesnap backfill: {line}", file=sys.stderr)
        if not out.shards:
            raise CliError("no usable artifact: nothing to backfill")
        try:
            out = backfill.run()
        except EngineError as exc:
            raise CliError(str(exc)) from None
    finally:
        progress.stop()
    for line in out.refusals:
        print(f"statesnap backfill: {line}", file=sys.stderr)
    written = _outputs(opts.outdir, out)
    _print(out, written)
    if out.bad or out.refusals:
        return 2
    return 1 if any(r.finding.status in (VERIFIED, NOT_DETERMINISTIC)
                    for r in out.results) else 0


def _outputs(outdir: Path, out: Any) -> list[Path]:
    from statesnap.backfill.markdown import write_findings
    from statesnap.base.atomic import write_atomic
    from statesnap.output.report import write_report
    from statesnap.output.summary import build_summary

    states: dict[int, Any] = {}
    orders: dict[int, Path] = {}
    by_source = {id(s): p for s, p in zip(out.shards, out.order_records, strict=True)}
    state_by_label = {str((r.header.get("backfill_source") or {}).get("path")) + ":" +
                      str((r.header.get("backfill_source") or {}).get("worker")): r
                      for r in out.states}
    for r in out.results:
        if id(r.shard) in by_source:
            orders[id(r.shard)] = by_source[id(r.shard)]
        found = state_by_label.get(f"{r.shard.source}:{r.shard.worker}")
        if found is None and r.shard.record is not None:
            found = next((s for s in out.states if s.path == r.shard.record.path
                          and s.worker == r.shard.worker), None)
        if found is not None:
            states[id(r.shard)] = found
    written = write_findings(outdir, out.results, states, orders, out.commit, out.plugins)
    findings = [r.finding for r in out.results]
    summary = build_summary(out.states, findings)
    summary["backfill"] = {
        "commit": out.commit, "workers": out.workers, "duration": round(out.duration, 3),
        "replays": out.replays, "test_executions": out.executions,
        "replays_from_journal": out.resumed, "bad_artifacts": out.bad,
        "refusals": out.refusals,
        "shards": [{"source": str(s.source), "kind": s.kind, "worker": s.worker,
                    "tests": len(s.order), "order_record": str(p),
                    "plugins": out.plugins[id(s)].to_json() if id(s) in out.plugins else None}
                   for s, p in zip(out.shards, out.order_records, strict=True)],
        "findings_markdown": [str(p) for p in written],
        "victims": [{"victim": r.finding.victim, "status": r.finding.status,
                     "in_order": r.in_order,
                     "repro_seen": r.repro.outcome if r.repro else None,
                     "alone_seen": r.alone.outcome if r.alone else None,
                     "workers": r.workers, "lost_workers": r.lost} for r in out.results],
    }
    write_atomic(outdir / "summary.json",
                 json.dumps(summary, indent=2, ensure_ascii=False, default=repr) + "\n")
    facts = {"backfill": f"{len(out.results)} victim(s), {out.replays} replay(s) on "
                         f"{out.workers} worker(s) in {out.duration:.1f} s"}
    write_report(outdir / "pollution.html", out.states, findings, summary=facts,
                 title="statesnap backfill")
    return written


def _print(out: Any, written: list[Path]) -> None:
    for r, path in zip(out.results, written, strict=True):
        f = r.finding
        line = f"[{f.status}] {f.victim}"
        if f.status == VERIFIED:
            line += f"\n    polluted by: {' + '.join(f.polluters)}"
            if f.probe and f.key:
                line += f"\n    state: {f.probe}:{f.key}"
            line += f"\n    reproduce: {f.repro}"
        elif f.note:
            line += f"\n    note: {f.note}"
        print(f"{line}\n    issue text: {path}")
    for line in plugin_summary(out):
        print(line)
    print(f"{len(out.results)} victim(s), {out.replays} replay(s) ({out.resumed} from the "
          f"journal), {out.executions} test executions, {out.workers} worker(s), "
          f"{out.duration:.1f} s")


def plugin_summary(out: Any) -> list[str]:
    """One line per distinct plugin difference between CI and the replays, and the blocks."""
    lines: dict[str, None] = {}
    for plan in out.plugins.values():
        if plan.blocked:
            lines[f"pytest plugins blocked in the replays (CI did not load them): "
                  f"{', '.join(plan.blocked)}"] = None
        words = plan.difference()
        if words is not None:
            lines[f"pytest plugins: {words}"] = None
    return list(lines)
