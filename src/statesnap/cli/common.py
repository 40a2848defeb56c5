"""Shared pieces of the subcommands: finding the record, its lanes, progress, picking a test."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from statesnap.base.progress import Progress
from statesnap.cli import CliError
from statesnap.record.journal import Record, TestEntry
from statesnap.record.lanes import read_lanes
from statesnap.record.paths import find_latest
from statesnap.record.reader import read_record


def add_record_arg(parser: argparse.ArgumentParser, nargs: str = "?") -> None:
    parser.add_argument(
        "record", nargs=nargs, type=Path, metavar="RECORD",
        help="a run record (.jsonl); default: the last run's, from .pytest_cache/statesnap",
    )


def record_path(path: Path | None) -> Path:
    """``path``, or the last run's record when none is given."""
    if path is not None:
        return path
    found = find_latest()
    if found is None:
        raise CliError("no RECORD given and no last run found under .pytest_cache/statesnap "
                       "(run `pytest -p statesnap` first, or pass a record)")
    return found


def load(path: Path | None) -> Record:
    """The record at ``path`` (or the last run's), as one record."""
    return read_record(record_path(path))


def load_lanes(path: Path | None, names: dict[str, str] | None = None) -> list[Record]:
    """One record per process of the run (or the last run): see
    :func:`statesnap.record.lanes.read_lanes` (and its ``names``); each lane has its worker's
    stored verdicts."""
    return read_lanes(record_path(path), names)


def lane_of(lanes: Sequence[Record], nodeid: str) -> tuple[Record, TestEntry]:
    """The lane that ran ``nodeid`` and its entry (the crashed test included)."""
    for lane in lanes:
        test = lane.test_by_id(nodeid)
        if test is not None:
            return lane, test
        if lane.running is not None and lane.running.get("nodeid") == nodeid:
            return lane, TestEntry(index=int(lane.running["index"]), nodeid=nodeid,
                                   outcome="crashed", worker=lane.worker)
    raise _not_in(lanes, nodeid)


def pick_test(record: Record, nodeid: str) -> TestEntry:
    """The entry of ``nodeid`` in ``record``, or a one-line error naming close matches."""
    return lane_of([record], nodeid)[1]


#: An id shorter than this is not looked for inside others: "1]" or "a" is part of
#: almost every id, and suggesting those would send the user to unrelated tests.
_MIN_PART = 6


def close_ids(ids: Sequence[str], nodeid: str, limit: int = 3) -> list[str]:
    """The ids of ``ids`` a mistyped or partial ``nodeid`` most likely meant, best first.

    In turn: ids that contain what was given (a path relative to another folder, a test
    without its parameters); ids of a test of the same name elsewhere (another file or
    class); tests of the same file and class whose name is a few characters' edit away (a
    typo).  None when nothing is close: an
    unrelated suggestion is worse than none.
    """
    unique = list(dict.fromkeys(ids))
    if len(nodeid) >= _MIN_PART:
        inside = [i for i in unique if nodeid in i]
        if inside:
            return inside[:limit]
    prefix, sep, name = nodeid.rpartition("::")
    if len(name) >= _MIN_PART and sep:
        same = [i for i in unique if i.rpartition("::")[2] == name]
        if same:
            return same[:limit]
    # A typo in the test's name, within its file and class: compared on the name alone (the
    # whole ids share their long path, which makes any two tests of a file look alike).
    if not sep:
        return difflib.get_close_matches(nodeid, unique, n=limit, cutoff=0.9)
    siblings = {i.rpartition("::")[2]: i for i in unique if i.rpartition("::")[0] == prefix}
    names = difflib.get_close_matches(name, list(siblings), n=limit, cutoff=0.9)
    return [siblings[n] for n in names]


def _not_in(lanes: Sequence[Record], nodeid: str) -> CliError:
    ids = [t.nodeid for lane in lanes for t in lane.tests]
    close = close_ids(ids, nodeid)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    where = lanes[0].path if len(lanes) == 1 else f"{len(lanes)} lanes of the record"
    return CliError(f"test {nodeid!r} is not in {where}{hint}")


def progress_printer(quiet: bool = False) -> Progress:
    """A progress callback: a rich status line on a terminal, plain lines otherwise.

    Call :func:`stop` when done; on a terminal the status line then disappears.
    """
    if quiet:
        return lambda _msg: None
    if sys.stderr.isatty():
        from statesnap.proof.progress import LiveLine

        line = LiveLine()
        line("statesnap: starting")
        return line
    return lambda msg: print(msg, file=sys.stderr, flush=True)


def stop(progress: Progress) -> None:
    """End a progress display made by :func:`progress_printer`."""
    stopper = getattr(progress, "stop", None)
    if stopper is not None:
        stopper()


class SplitAtDashes(argparse.ArgumentParser):
    """Everything after the first ``--`` is pytest's (``args.pytest_args``), whatever it is.

    Plain argparse would give a word after ``--`` to an optional RECORD, and a REMAINDER
    positional would swallow the subcommand's own options written after RECORD.  Used by
    ``replay`` and ``hunt`` (set as the subparser's class).
    """

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = list(args or [])
        tail: list[str] = []
        if "--" in words:
            at = words.index("--")
            words, tail = words[:at], words[at + 1:]
        ns, extra = super().parse_known_args(words, namespace)
        ns.pytest_args = tail
        return ns, extra
