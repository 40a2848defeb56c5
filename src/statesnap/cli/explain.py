"""``statesnap explain``: the findings of a record as the session proved them; replayed on
demand (``--verify``), and before writing Markdown where nothing was replayed yet."""

from __future__ import annotations

import argparse
import json
import sys

from statesnap.analysis.findings import Finding
from statesnap.analysis.verdicts import findings_of, needs_replay
from statesnap.base.argtypes import nonnegative_seconds, positive_int, positive_seconds
from statesnap.cli import CliError
from statesnap.cli.common import (
    add_record_arg,
    lane_of,
    load_lanes,
    progress_printer,
    record_path,
    stop,
)
from statesnap.output.explain import format_findings, markdown, race_lines
from statesnap.record.journal import Record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="name the polluter of each failing test",
                       description="Attribute each failing test of a record to the test that "
                       "last changed the state it relies on; --verify proves it by replay.")
    add_record_arg(p)
    p.add_argument("--test", metavar="ID", help="only this failing test")
    p.add_argument("--verify", action="store_true",
                   help="replay in fresh processes to prove it again (without it, the "
                   "verdicts the session stored in the record are shown)")
    p.add_argument("--no-verify", action="store_true",
                   help="with --markdown: do not replay the findings nothing replayed yet")
    p.add_argument("--budget", type=nonnegative_seconds, default=300.0, metavar="SECONDS",
                   help="time limit for --verify (default 300)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="time limit of one replay (default 300)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="repeat each replay N times; disagreeing answers mean not deterministic")
    p.add_argument("--find-cleaners", action="store_true",
                   help="with --verify: name tests that undo the leak")
    p.add_argument("--replay-workers", type=positive_int, metavar="N",
                   help="with --verify: run up to N replays side by side (default: the cores "
                   "this process may use; 1: one at a time)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the findings as JSON")
    fmt.add_argument("--markdown", action="store_true",
                     help="print a block ready to paste into an issue tracker")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    lanes = load_lanes(args.record)
    # Each victim's verdict as the session stored it; only victims without one are
    # attributed from the record (suspected, not replayed).
    if args.verify:  # proven again from scratch, whatever the session stored
        from statesnap.analysis.attribution import attribute

        per_lane = [(lane, attribute(lane)) for lane in lanes]
    else:
        per_lane = [(lane, findings_of(lane)) for lane in lanes]
    header = lanes[0].header
    if args.test:
        lane_of(lanes, args.test)  # one line and exit 2 when the id is not in the record
        per_lane = [(lane, [f for f in found if f.victim == args.test])
                    for lane, found in per_lane]
        if not any(found for _, found in per_lane):
            return _nothing(args, f"{args.test} did not fail in {lanes[0].path}: "
                            "nothing to explain", lanes)
    if args.verify:
        _verify(per_lane, args)
        _store(args, [f for _, found in per_lane for f in found])
    elif args.markdown and not args.no_verify:
        # Markdown goes into an issue: a verdict nobody replayed is replayed first.
        todo = [(lane, [f for f in found if needs_replay(f)]) for lane, found in per_lane]
        if any(found for _, found in todo):
            _verify(todo, args)
            _store(args, [f for _, found in todo for f in found])
    findings: list[Finding] = [f for _, found in per_lane for f in found]
    if not findings:
        return _nothing(args, f"no failing tests in {lanes[0].path}", lanes)
    if args.json:
        json.dump([f.to_summary() for f in findings], sys.stdout, indent=2, default=repr,
                  ensure_ascii=False)
        print()
    elif args.markdown:
        tests = [t for lane in lanes for t in lane.tests]
        sys.stdout.write(markdown(findings, header, tests))
    else:
        print("\n".join(format_findings(findings, header)))
        for line in race_lines([t for lane in lanes for t in lane.tests], header):
            print(line)
        for lane in lanes:
            print(f"record: {lane.path}")
    _crash_notes(lanes)
    return 0


def _store(args: argparse.Namespace, findings: list[Finding]) -> None:
    """Keep what this command proved in the record, as the session keeps its verdicts: every
    later ``report``, ``explain`` and ``--markdown`` shows it (the last verdict stored for a
    victim is the one read back).  A finding the budget left unproven is not stored: it would
    hide an earlier proven one, and it proves nothing."""
    from statesnap.analysis.findings import SUSPECTED
    from statesnap.analysis.verdicts import store

    settled = [f for f in findings if f.status != SUSPECTED and f.replays]
    if not settled:
        return
    path = record_path(args.record)
    try:
        store(path, settled)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        print(f"statesnap: cannot store the verdicts in {path}: {why}; later readers will "
              "show the session's", file=sys.stderr)


def _nothing(args: argparse.Namespace, text: str, lanes: list[Record]) -> int:
    """Nothing to explain: said in the asked format (``--json`` prints an empty list)."""
    if args.json:
        print("[]")
        print(text, file=sys.stderr)
    elif args.markdown:
        print(f"_{text}_")
    else:
        print(text)
    _crash_notes(lanes)
    return 0


def _crash_notes(lanes: list[Record]) -> None:
    for lane in lanes:
        if lane.cut is not None:
            print(f"note: the record ({lane.worker}) was cut short mid-run "
                  f"({lane.cut.get('error')}): the tests after its last one ran but are not "
                  "in it", file=sys.stderr)
        elif lane.crashed:
            where = f" while {lane.running['nodeid']} was running" if lane.running else ""
            print(f"note: the recorded run ({lane.worker}) did not finish{where}",
                  file=sys.stderr)


def _verify(per_lane: list[tuple[Record, list[Finding]]], args: argparse.Namespace) -> None:
    from statesnap.proof.session_end import Replays, prove
    from statesnap.proof.verify import ReplayError

    progress = progress_printer(quiet=args.json)
    from statesnap.base.cores import available_cores

    replays = Replays(budget=args.budget, repeat=args.repeat, find_cleaners=args.find_cleaners,
                      timeout=args.timeout, raise_errors=True,
                      workers=args.replay_workers or available_cores())
    try:
        for lane, found in per_lane:
            if not found:
                continue
            try:
                prove(lane, found, replays, progress)
                for f in found:
                    f.source = None  # proven by this command, not read from the record
            except ReplayError as exc:
                where = f" (log: {exc.log})" if exc.log is not None else ""
                raise CliError(f"a replay could not run: {exc}{where}") from None
    finally:
        stop(progress)
