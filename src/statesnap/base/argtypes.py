"""argparse ``type=`` checks for numbers, shared by the pytest options and the CLI.

Each says what was wrong in one line (argparse prefixes the option's name), so a bad value is
a usage error, never a traceback or a nonsense limit (a negative timeout, zero repeats).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)


def _number(convert: Callable[[str], N], what: str, minimum: N,
            strict: bool) -> Callable[[str], N]:
    def check(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if value < minimum or (strict and value == minimum):
            bound = f"more than {minimum:g}" if strict else f"{minimum:g} or more"
            raise argparse.ArgumentTypeError(f"must be {bound}: {text!r}")
        return value

    return check


#: Seconds of a limit that may be switched off with 0 (a verification budget).
nonnegative_seconds = _number(float, "a number of seconds", 0.0, strict=False)
#: Seconds of a limit that must leave time to do something (a replay's timeout).
positive_seconds = _number(float, "a number of seconds", 0.0, strict=True)
#: A count that may be 0.
count = _number(int, "an integer", 0, strict=False)
#: A count of at least 1.
positive_int = _number(int, "an integer", 1, strict=False)
