"""``statesnap explain``: the findings of a record, verified on demand."""

from __future__ import annotations

import argparse
import json
import sys

from statesnap.attribution import attribute
from statesnap.cli.common import add_record_arg, load, pick_test, progress_printer, stop
from statesnap.explain import format_findings, markdown


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="name the polluter of each failing test",
                       description="Attribute each failing test of a record to the test that "
                       "last changed the state it relies on; --verify proves it by replay.")
    add_record_arg(p)
    p.add_argument("--test", metavar="ID", help="only this failing test")
    p.add_argument("--verify", action="store_true", help="replay in fresh processes to prove it")
    p.add_argument("--budget", type=float, default=300.0, metavar="SECONDS",
                   help="time limit for --verify (default 300)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="repeat each replay N times (default 1)")
    p.add_argument("--find-cleaners", action="store_true",
                   help="with --verify: name tests that undo the leak")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the findings as JSON")
    fmt.add_argument("--markdown", action="store_true",
                     help="print a block ready to paste into an issue tracker")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record = load(args.record)
    findings = attribute(record)
    if args.test:
        pick_test(record, args.test)
        findings = [f for f in findings if f.victim == args.test]
        if not findings:
            print(f"{args.test} did not fail in {record.path}: nothing to explain")
            return 0
    if args.verify and findings:
        from statesnap.runner import Runner
        from statesnap.verify import verify_findings

        progress = progress_printer(quiet=args.json)
        try:
            verify_findings(record, findings, budget=args.budget, repeat=args.repeat,
                            find_cleaners=args.find_cleaners, progress=progress,
                            runner=Runner(record))
        finally:
            stop(progress)
    if args.json:
        json.dump([f.to_summary() for f in findings], sys.stdout, indent=2, default=repr)
        print()
    elif args.markdown:
        sys.stdout.write(markdown(findings, record.header))
    elif findings:
        print("\n".join(format_findings(findings)))
    else:
        print(f"no failing tests in {record.path}")
    if record.crashed:
        where = f" while {record.running['nodeid']} was running" if record.running else ""
        print(f"note: the recorded run did not finish{where}", file=sys.stderr)
    return 0
