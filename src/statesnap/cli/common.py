"""Shared pieces of the subcommands: finding the record, progress, picking a test."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from statesnap.cli import CliError
from statesnap.record import Record, TestEntry, read_record
from statesnap.recordpath import find_latest


def add_record_arg(parser: argparse.ArgumentParser, nargs: str = "?") -> None:
    parser.add_argument(
        "record", nargs=nargs, type=Path, metavar="RECORD",
        help="a run record (.jsonl); default: the last run's, from .pytest_cache/statesnap",
    )


def load(path: Path | None) -> Record:
    if path is None:
        path = find_latest()
        if path is None:
            raise CliError("no RECORD given and no last run found under .pytest_cache/statesnap "
                           "(run `pytest -p statesnap` first, or pass a record)")
    return read_record(path)


def pick_test(record: Record, nodeid: str) -> TestEntry:
    test = record.test_by_id(nodeid)
    if test is None:
        close = [t.nodeid for t in record.tests if nodeid in t.nodeid][:3]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise CliError(f"test {nodeid!r} is not in {record.path}{hint}")
    return test


def progress_printer(quiet: bool = False) -> Callable[[str], None]:
    """A progress callback: a rich status line on a terminal, plain lines otherwise."""
    if quiet:
        return lambda _msg: None
    if sys.stderr.isatty():
        from rich.console import Console

        console = Console(stderr=True)
        status = console.status("statesnap: starting")
        status.start()

        def update(msg: str) -> None:
            status.update(msg.removeprefix("statesnap: "))

        update.stop = status.stop  # type: ignore[attr-defined]
        return update
    return lambda msg: print(msg, file=sys.stderr, flush=True)


def stop(progress: Callable[[str], None]) -> None:
    stopper = getattr(progress, "stop", None)
    if stopper is not None:
        stopper()
