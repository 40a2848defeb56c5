"""``statesnap replay``: run exactly the recorded order in a fresh process.

The child's output goes to the terminal as it comes; its standard error is also read back, so
a replay that pytest refuses (a node id that no longer exists, a test file gone) ends with one
line and exit code 2 instead of pytest's usage error.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from statesnap.base import spawned
from statesnap.base.text import FILE_ERRORS
from statesnap.cli import CliError
from statesnap.cli.common import (
    SplitAtDashes,
    add_record_arg,
    lane_of,
    load_lanes,
    pick_test,
    record_path,
)
from statesnap.record.journal import Record
from statesnap.record.reader import RecordError, read_record
from statesnap.replay.log import SecretPipe
from statesnap.replay.repro import shell_join

if TYPE_CHECKING:
    from statesnap.replay.runner import Runner



def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="run exactly the recorded order again",
                       description="Run the recorded order (of one xdist worker, up to a "
                       "test) in a fresh pytest process; extra pytest args go after --.")
    add_record_arg(p)
    p.add_argument("--worker", metavar="W", help="the order of this xdist worker (gw0, gw1...)")
    p.add_argument("--until", metavar="ID", help="stop after this test (inclusive)")
    p.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    p.set_defaults(func=run, pytest_args=[])
    p.__class__ = SplitAtDashes
    p.usage = "statesnap replay [RECORD] [--worker W] [--until ID] [--dry-run] [-- PYTEST ARGS]"


def pick_lane(lanes: list[Record], worker: str | None, until: str | None) -> Record:
    """The one process's record to replay: ``--worker``'s, or the one that ran ``--until``."""
    if len(lanes) == 1:
        return lanes[0]
    names = ", ".join(lane.worker for lane in lanes)
    if worker:
        for lane in lanes:
            if lane.worker == worker:
                return lane
        raise CliError(f"no worker {worker!r} in the record (workers: {names})")
    if until:
        return lane_of(lanes, until)[0]
    raise CliError(f"the record holds {len(lanes)} xdist workers' orders ({names}): "
                   "pick one with --worker, or name a test with --until")


def recorded_order(record: Record, worker: str | None, until: str | None) -> list[str]:
    """The node ids to replay: one worker's (or the record's) order, up to ``until``."""
    tests = sorted(record.tests, key=lambda t: t.index)
    if worker:
        workers = sorted({t.worker for t in tests} | {record.worker})
        tests = [t for t in tests if t.worker == worker]
        if not tests and not (record.running is not None and record.worker == worker):
            raise CliError(f"no worker {worker!r} in {record.path} "
                           f"(workers: {', '.join(workers)})")
    order = [t.nodeid for t in tests]
    if record.running is not None and (not worker or record.worker == worker):
        order.append(str(record.running["nodeid"]))  # the crashed test runs last, as it did
    if until:
        if until not in order:
            test = pick_test(record, until)  # not in the record at all: says so
            raise CliError(f"test {until!r} ran on worker {test.worker}, not {worker}")
        order = order[: order.index(until) + 1]
    if not order:
        raise CliError(f"{record.path} holds no tests to replay")
    return order


def run(args: argparse.Namespace) -> int:
    from statesnap.replay.orderfile import write_order
    from statesnap.replay.result import error_line
    from statesnap.replay.runner import Runner

    record = pick_lane(load_lanes(args.record), args.worker, args.until)
    order = recorded_order(record, args.worker, args.until)
    extra = list(args.pytest_args)
    runner = Runner(record, extra_args=extra)
    stem, log = runner.claim("replay")
    order_file = runner.logs_dir / f"{stem}.order.json"
    record_file = runner.logs_dir / f"{stem}.jsonl"
    write_order(order_file, order)
    cmd = runner.command(order_file, record_file, order, own_cache=not args.dry_run)
    # The child's terminal section shows the verdicts the recorded run stored, not ones
    # re-ranked from the replay's own record.
    cmd.insert(cmd.index(f"--statesnap-record={record_file}") + 1,
               f"--statesnap-verdicts-from={record_path(args.record).resolve()}")
    print(f"statesnap replay: {len(order)} test(s) in the recorded order", file=sys.stderr)
    print("$ " + shell_join(cmd), file=sys.stderr)
    if args.dry_run:
        log.unlink()  # nothing ran; the order file stays so the command above can be run
        runner.close()
        return 0
    try:
        rc = _run_teed(runner, cmd, log)
    finally:
        runner.close()
    if rc in (3, 4) and _ran_nothing(record_file):
        # pytest refused to start the replay: its own error line, once, and exit code 2.
        for path in (order_file, record_file):
            path.unlink(missing_ok=True)
        raise CliError(f"the replay could not start: {error_line(log)} (log: {log})")
    print(f"statesnap replay: exit code {rc}; output kept in {log}", file=sys.stderr)
    return rc


def _run_teed(runner: Runner, cmd: list[str], log: Path) -> int:
    """Run ``cmd`` with its output on the terminal and in ``log``; the exit code."""
    if runner.stage is not None:
        runner.stage.enter()
    try:
        with open(log, "w", encoding="utf-8", errors=FILE_ERRORS) as out:
            out.write("$ " + shell_join(cmd) + f"\n# cwd: {runner.cwd()}\n\n")
            out.flush()
            secrets = SecretPipe()
            try:
                proc = runner.popen(cmd, subprocess.PIPE, interactive=True, secrets=secrets)
            except OSError as exc:
                secrets.close()
                raise CliError(f"cannot start {cmd[0]}: {exc.strerror}") from None
            assert proc.stdout is not None
            # The terminal gets the child's output as it is; the log, scrubbed of secrets.
            pump = runner.pump(proc.stdout.fileno(), out, secrets, tee=sys.stdout.buffer)
            try:
                pump.run(proc)
                return spawned.wait(proc)
            except BaseException:
                # Only the child started above (in the terminal's group: Ctrl-C reached it).
                spawned.signal_process(proc.pid, signal.SIGKILL)
                spawned.wait(proc)
                raise
            finally:
                pump.close()
                proc.stdout.close()
    finally:
        if runner.stage is not None:
            runner.stage.exit()


def _ran_nothing(record_file: Path) -> bool:
    try:
        child = read_record(record_file)
    except RecordError:
        return True
    return not child.tests and child.running is None
