"""``statesnap bisect``: the minimal set of earlier tests that makes a test fail.

Delta debugging (not plain halving) over the tests that ran before TEST in its process, so a
failure that needs two polluters together keeps both.  Every replay's log stays beside the
record.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from statesnap.analysis.minimize import ddmin
from statesnap.base.argtypes import positive_seconds
from statesnap.cli import CliError
from statesnap.cli.common import add_record_arg, lane_of, load_lanes, progress_printer, stop
from statesnap.replay.repro import repro_command


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bisect", help="find the minimal set of earlier tests that breaks one",
                       description="Delta-debug the tests that ran before TEST in its process "
                       "down to a minimal set that still makes it fail.")
    add_record_arg(p)
    p.add_argument("--test", required=True, metavar="ID", help="the failing test")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="limit per replay (default 300)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from statesnap.replay.runner import Runner

    lanes = load_lanes(args.record)
    record, victim = lane_of(lanes, args.test)
    prefix = [t.nodeid for t in sorted(record.tests, key=lambda t: t.index)
              if t.index < victim.index and t.worker == victim.worker]
    runner = Runner(record, timeout=args.timeout)
    progress = progress_printer()

    def fails(subset: Sequence[str]) -> bool:
        progress(f"statesnap: replaying {len(subset)} earlier test(s) + {victim.nodeid}")
        result = runner.run([*subset, victim.nodeid], label="bisect")
        if result.error is not None and not result.outcomes:
            raise CliError(f"a replay could not run: {result.error} (log: {result.log})")
        if result.timed_out:
            raise CliError(f"a replay of {len(subset) + 1} test(s) timed out after "
                           f"{result.timeout:.0f}s and was killed (log: {result.log})")
        return result.failed(victim.nodeid)

    try:
        if fails([]):
            print(f"{victim.nodeid} fails alone: it is not order-dependent")
            print(f"reproduce: {repro_command(record.header, [victim.nodeid])}")
            return 1
        if not prefix or not fails(prefix):
            print(f"{victim.nodeid} passed after the recorded {len(prefix)} earlier test(s): "
                  "the failure does not reproduce from the order alone")
            return 1
        minimal = ddmin(prefix, fails, known_failing=True)
        line = repro_command(record.header, [*minimal, victim.nodeid])
        # The line printed is run exactly as printed (plain pytest, a fresh process): only
        # one that failed the victim is printed as its reproduction.
        progress(f"statesnap: running the printed reproduction of {victim.nodeid}")
        printed = runner.run_printed(line, [*minimal, victim.nodeid])
    finally:
        stop(progress)
        runner.close()
    print(f"{victim.nodeid} fails after {len(minimal)} test(s) "
          f"({runner.processes} replays, {runner.executions} test executions; logs in "
          f"{runner.logs_dir}):")
    for nodeid in minimal:
        print(f"  {nodeid}")
    if printed.failed(victim.nodeid):
        print(f"reproduce: {line}")
        return 0
    print(f"not proven: this line, run exactly as printed, did not fail {victim.nodeid} "
          f"(log: {printed.log}):\n  {line}")
    return 1
