"""``statesnap hunt``: find the order-dependent tests that the recorded order hid.

Exit status: 0 when the hunt found nothing, 1 when it found latent, brittle or otherwise
order-dependent tests or the recorded run holds a failure its session verified as
order-dependent (the hunt looks for what the recorded order hid, not for that one again, and
shows it with its reproduction), 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import VERIFIED, Finding
from statesnap.base.argtypes import count, positive_int, positive_seconds
from statesnap.base.text import printable
from statesnap.cli import CliError
from statesnap.cli.common import (
    SplitAtDashes,
    add_record_arg,
    load_lanes,
    progress_printer,
    record_path,
    stop,
)
from statesnap.record.journal import Record
from statesnap.record.reader import read_record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hunt", help="find latent order-dependent tests before they flake",
        description="Run the few orders the record's leaks point at (the leaking tests "
        "first; every other test without them; optionally seeded random orders) in fresh "
        "pytest processes, and prove each test that fails there: a latent victim with its "
        "polluter, or a brittle test with the test that sets its state up. Extra pytest "
        "arguments go after --.")
    add_record_arg(p)
    _add_options(p)
    p.set_defaults(func=run, pytest_args=[])
    p.__class__ = SplitAtDashes
    p.usage = ("statesnap hunt [RECORD] [--budget SECONDS] [--random N] [--seed S] "
               "[--worker W] [--all-leaks] [--replay-workers N] [--json [PATH]] "
               "[--report PATH] [-q] "
               "[-- PYTEST ARGS]")



def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="time limit for the whole hunt (default 300)")
    p.add_argument("--random", type=count, default=0, metavar="N", dest="random_orders",
                   help="also run N seeded random orders (default 0)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed of the first random order (the next ones count up); alone, "
                   "it runs that one random order again")
    p.add_argument("--worker", metavar="W",
                   help="hunt in the tests of this xdist worker only (gw0, gw1...)")
    p.add_argument("--all-leaks", action="store_true",
                   help="count LOW-severity leaks too (plain imports, the random state)")
    p.add_argument("--json", nargs="?", const="-", metavar="PATH", dest="json_path",
                   help="write the summary JSON (findings and the hunt's runs) to PATH, or "
                   "to stdout without PATH; put RECORD before it")
    p.add_argument("--report", type=Path, metavar="PATH",
                   help="write the HTML report with the hunt's findings to PATH")
    p.add_argument("--replay-workers", type=positive_int, metavar="N",
                   help="prove up to N suspects side by side (default: the cores this "
                   "process may use; 1: one at a time); the orders run one at a time")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")


def _refuse_overwriting_a_record(path: Path) -> None:
    # `statesnap hunt --json run.jsonl` would take the record for the output path.
    if not path.is_file():
        return
    try:
        read_record(path)
    except Exception:
        return
    raise CliError(f"--json {path}: that is a statesnap record, not overwriting it "
                   "(put RECORD before --json, or give another path)")


def run(args: argparse.Namespace) -> int:
    from statesnap.hunt.hunt import Hunter
    from statesnap.hunt.options import HuntError, HuntOptions, default_logs_dir
    from statesnap.hunt.result import describe
    from statesnap.output.explain import format_findings

    pytest_args = list(args.pytest_args)
    json_path = None if args.json_path in (None, "-") else Path(args.json_path)
    if json_path is not None:
        _refuse_overwriting_a_record(json_path)
    path = record_path(args.record)
    lanes = load_lanes(path)
    # A lane with no finished test (a worker that died at once) has nothing to hunt in.
    lanes = [lane for lane in lanes if lane.tests] or lanes
    workers = sorted({t.worker for lane in lanes for t in lane.tests})
    if args.worker and args.worker not in workers:
        raise CliError(f"no worker {args.worker!r} in {path} "
                       f"(workers: {', '.join(workers)})")
    random_orders = args.random_orders or (1 if args.seed is not None else 0)
    from statesnap.base.cores import available_cores

    options = HuntOptions(budget=args.budget, random_orders=random_orders,
                          seed=args.seed, worker=args.worker, all_leaks=args.all_leaks,
                          extra_args=pytest_args,
                          replay_workers=args.replay_workers or available_cores())
    to_stdout = args.json_path == "-"
    progress = progress_printer(quiet=args.quiet or to_stdout)
    try:
        hunter = Hunter(lanes, options, progress, logs_dir=default_logs_dir(path))
        result = hunter.hunt()
    except HuntError as exc:
        raise CliError(str(exc)) from None
    finally:
        stop(progress)
    records = [lane for lane in lanes if not args.worker
               or any(t.worker == args.worker for t in lane.tests)]
    summary = _summary(records, result.findings, result.to_json())
    recorded = _recorded_verdicts(records)
    summary["recorded_findings"] = [f.to_summary() for f in recorded]
    if to_stdout:
        json.dump(summary, sys.stdout, indent=2, ensure_ascii=False, default=repr)
        print()
    else:
        out = sys.stdout
        print("\n".join(map(printable, describe(result))), file=out)
        lines = format_findings(result.findings, lanes[0].header)
        nothing = ("no order-dependent tests hidden by the recorded order found" if recorded
                   else "no order-dependent tests found")
        print("\n".join(lines) if lines else nothing, file=out)
        if recorded:
            print("the recorded run's own failures, as its session proved them:", file=out)
            print("\n".join(map(printable, _recorded_lines(recorded))), file=out)
    if json_path is not None:
        _write_json(json_path, summary)
    if args.report is not None:
        _write_report(args.report, records, result.findings, result)
    if result.interrupted:
        print("statesnap hunt: interrupted (Ctrl-C): the findings above are what was proven "
              "by then", file=sys.stderr)
        return 130
    return 1 if result.findings or any(f.status == VERIFIED for f in recorded) else 0


def _recorded_lines(recorded: list[Finding]) -> list[str]:
    """One line per recorded verdict; a verified one with the reproduction its session ran
    (plain pytest, failing the victim): the hunt does not hunt it again, nor hide it."""
    from statesnap.cli.diff import verdict_line

    lines: list[str] = []
    for f in recorded:
        lines.append(verdict_line(f))
        if f.status == VERIFIED and f.repro:
            lines.append(f"      reproduce: {f.repro}")
    return lines


def _recorded_verdicts(records: list[Record]) -> list[Finding]:
    """The failures of the recorded run with the verdicts its session stored (the hunt
    looks for the victims it hid; these it already had)."""
    from statesnap.analysis.verdicts import findings_of

    return [f for record in records for f in findings_of(record)]


def _summary(records: list[Record], findings: list[Finding],
             hunt: dict[str, Any]) -> dict[str, Any]:
    from statesnap.output.summary import build_summary

    data = build_summary(records, findings)
    data["hunt"] = hunt
    return data


def _write_json(path: Path, summary: dict[str, Any]) -> None:
    from statesnap.base.atomic import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(summary, indent=2, ensure_ascii=False, default=repr)
                     + "\n")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    print(f"summary: {path}", file=sys.stderr)


def _write_report(path: Path, records: list[Record], findings: list[Finding],
                  result: Any) -> None:
    from statesnap.output.report import write_report

    facts = {"hunt": f"{len(result.orders)} order(s), {len(result.runs)} pytest run(s) in "
                     f"{result.duration:.1f} s", "hunt logs": str(result.logs_dir)}
    try:
        write_report(path, records, findings, summary=facts)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    print(f"report: {path}", file=sys.stderr)
