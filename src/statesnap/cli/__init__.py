"""The ``statesnap`` command line: ``main(argv) -> int``.

Each subcommand lives in its own module exposing ``add_parser(subparsers)`` and
``run(args) -> int``; :data:`SUBCOMMANDS` lists them.  Expected errors are raised as
:class:`CliError` and become one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from statesnap.base.version import __version__
from statesnap.record.reader import RecordError

#: Subcommand modules under ``statesnap.cli``, in ``--help`` order.
SUBCOMMANDS = ("explain", "replay", "bisect", "diff", "report", "hunt", "backfill")


class CliError(Exception):
    """An expected failure: bad input, missing record.  Printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="statesnap",
        description="Find, prove and reproduce order-dependent pytest failures from a record.",
    )
    parser.add_argument("--version", action="version", version=f"statesnap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"statesnap.cli.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # A byte that was not UTF-8 in what is printed (a file name, in JSON output) is
        # written as its escape rather than failing the command (statesnap.base.text).
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except (CliError, RecordError) as exc:
        print(f"statesnap {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"statesnap {args.command}: interrupted", file=sys.stderr)
        return 130
