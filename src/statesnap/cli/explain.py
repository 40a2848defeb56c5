"""``statesnap explain``: the findings of a record, verified on demand."""

from __future__ import annotations

import argparse
import json
import sys

from statesnap.argtypes import nonnegative_seconds, positive_int, positive_seconds
from statesnap.attribution import attribute
from statesnap.cli import CliError
from statesnap.cli.common import add_record_arg, lane_of, load_lanes, progress_printer, stop
from statesnap.explain import format_findings, markdown
from statesnap.findings import Finding
from statesnap.record import Record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="name the polluter of each failing test",
                       description="Attribute each failing test of a record to the test that "
                       "last changed the state it relies on; --verify proves it by replay.")
    add_record_arg(p)
    p.add_argument("--test", metavar="ID", help="only this failing test")
    p.add_argument("--verify", action="store_true", help="replay in fresh processes to prove it")
    p.add_argument("--budget", type=nonnegative_seconds, default=300.0, metavar="SECONDS",
                   help="time limit for --verify (default 300)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="time limit of one replay (default 300)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="repeat each replay N times; disagreeing answers mean not deterministic")
    p.add_argument("--find-cleaners", action="store_true",
                   help="with --verify: name tests that undo the leak")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the findings as JSON")
    fmt.add_argument("--markdown", action="store_true",
                     help="print a block ready to paste into an issue tracker")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    lanes = load_lanes(args.record)
    per_lane = [(lane, attribute(lane)) for lane in lanes]
    if args.test:
        lane_of(lanes, args.test)  # one line and exit 2 when the id is not in the record
        per_lane = [(lane, [f for f in found if f.victim == args.test])
                    for lane, found in per_lane]
        if not any(found for _, found in per_lane):
            print(f"{args.test} did not fail in {lanes[0].path}: nothing to explain")
            return 0
    if args.verify:
        _verify(per_lane, args)
    findings: list[Finding] = [f for _, found in per_lane for f in found]
    header = lanes[0].header
    if args.json:
        json.dump([f.to_summary() for f in findings], sys.stdout, indent=2, default=repr,
                  ensure_ascii=False)
        print()
    elif args.markdown:
        sys.stdout.write(markdown(findings, header))
    elif findings:
        print("\n".join(format_findings(findings)))
        for lane in lanes:
            print(f"record: {lane.path}")
    else:
        print(f"no failing tests in {lanes[0].path}")
    for lane in lanes:
        if lane.crashed:
            where = f" while {lane.running['nodeid']} was running" if lane.running else ""
            print(f"note: the recorded run ({lane.worker}) did not finish{where}",
                  file=sys.stderr)
    return 0


def _verify(per_lane: list[tuple[Record, list[Finding]]], args: argparse.Namespace) -> None:
    from statesnap.runner import Runner
    from statesnap.verify import ReplayError, verify_findings

    progress = progress_printer(quiet=args.json)
    try:
        for lane, found in per_lane:
            if not found:
                continue
            try:
                verify_findings(lane, found, budget=args.budget, repeat=args.repeat,
                                find_cleaners=args.find_cleaners, progress=progress,
                                runner=Runner(lane, timeout=args.timeout), raise_errors=True)
            except ReplayError as exc:
                where = f" (log: {exc.log})" if exc.log is not None else ""
                raise CliError(f"a replay could not run: {exc}{where}") from None
    finally:
        stop(progress)
