"""``statesnap replay``: run exactly the recorded order in a fresh process."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from statesnap.cli import CliError
from statesnap.cli.common import add_record_arg, load, pick_test


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="run exactly the recorded order again",
                       description="Run the recorded order (of one xdist worker, up to a "
                       "test) in a fresh pytest process; extra pytest args go after --.")
    add_record_arg(p)
    p.add_argument("--worker", metavar="W", help="the order of this xdist worker (gw0, gw1...)")
    p.add_argument("--until", metavar="ID", help="stop after this test (inclusive)")
    p.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST ARGS")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from statesnap.runner import Runner

    record = load(args.record)
    tests = sorted(record.tests, key=lambda t: t.index)
    if args.worker:
        workers = sorted({t.worker for t in tests})
        tests = [t for t in tests if t.worker == args.worker]
        if not tests:
            raise CliError(f"no worker {args.worker!r} in {record.path} "
                           f"(workers: {', '.join(workers)})")
    order = [t.nodeid for t in tests]
    if record.running is not None and (not args.worker or record.worker == args.worker):
        order.append(str(record.running["nodeid"]))  # the crashed test runs last, as it did
    if args.until:
        if args.until not in order:
            pick_test(record, args.until)
        order = order[: order.index(args.until) + 1]
    if not order:
        raise CliError(f"{record.path} holds no tests to replay")
    extra = [a for a in args.pytest_args if a != "--"]
    runner = Runner(record, extra_args=extra)
    runner.logs_dir.mkdir(parents=True, exist_ok=True)
    order_file = runner.logs_dir / "replay.order.json"
    from statesnap.order_plugin import write_order

    write_order(order_file, order)
    record_file = runner.logs_dir / "replay.jsonl"
    cmd = runner.command(order_file, record_file, order)
    print(f"statesnap replay: {len(order)} test(s) in the recorded order", file=sys.stderr)
    print("$ " + shlex.join(cmd), file=sys.stderr)
    if args.dry_run:
        return 0
    try:
        if runner.stage is not None:
            runner.stage.enter()
        return subprocess.call(cmd, cwd=runner.cwd())
    except OSError as exc:
        raise CliError(f"cannot start {cmd[0]}: {exc.strerror}") from None
    finally:
        if runner.stage is not None:
            runner.stage.exit()
