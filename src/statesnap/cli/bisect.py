"""``statesnap bisect``: the minimal set of earlier tests that makes a test fail."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from statesnap.cli import CliError
from statesnap.cli.common import add_record_arg, load, pick_test, progress_printer, stop
from statesnap.minimize import ddmin
from statesnap.repro import repro_command


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bisect", help="find the minimal set of earlier tests that breaks one",
                       description="Delta-debug the tests that ran before TEST in its process "
                       "down to a minimal set that still makes it fail.")
    add_record_arg(p)
    p.add_argument("--test", required=True, metavar="ID", help="the failing test")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="limit per replay (default 300)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from statesnap.runner import Runner

    record = load(args.record)
    victim = pick_test(record, args.test)
    prefix = [t.nodeid for t in sorted(record.tests, key=lambda t: t.index)
              if t.index < victim.index and t.worker == victim.worker]
    runner = Runner(record, timeout=args.timeout)
    progress = progress_printer()

    def fails(subset: Sequence[str]) -> bool:
        progress(f"statesnap: replaying {len(subset)} earlier test(s) + {victim.nodeid}")
        result = runner.run([*subset, victim.nodeid], label="bisect")
        if result.error is not None and not result.outcomes:
            raise CliError(f"replay could not run: {result.error} (log: {result.log})")
        return result.failed(victim.nodeid) or result.outcomes.get(victim.nodeid) == "crashed"

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
    finally:
        stop(progress)
    print(f"{victim.nodeid} fails after {len(minimal)} test(s) "
          f"({runner.processes} replays, logs in {runner.logs_dir}):")
    for nodeid in minimal:
        print(f"  {nodeid}")
    print(f"reproduce: {repro_command(record.header, [*minimal, victim.nodeid])}")
    return 0
