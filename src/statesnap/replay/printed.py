"""A printed reproduction run exactly as printed: ``bash -c LINE``, in a fresh process.

What confirms a verified finding (:mod:`statesnap.proof.confirm`) and what the backfill runs to
check a CI log's reproduction (:mod:`statesnap.backfill.tasks`): the line the user will paste,
not a statesnap replay.  The command starts as a user's shell would start it: ``python`` is the
recorded environment's (its bin folder first on ``PATH``, as in an activated virtualenv), and
the only thing added is how pytest reports (``-v -rA`` in ``PYTEST_ADDOPTS``), so that each
test's outcome and failure can be read back from its output (:mod:`statesnap.replay.console`).
:meth:`statesnap.replay.runner.Runner.run_printed` starts it with statesnap's own captured
functions, in a process group of its own that a timeout or Ctrl-C kills.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from statesnap.replay.console import READABLE_ADDOPTS, read_console
from statesnap.replay.result import ReplayResult

#: pytest's own exit codes go up to this (usage error 4, no tests 5); anything else (a
#: negative code, or ``sh``'s 128+N) is an interpreter that died.
MAX_PYTEST_EXIT = 5

#: The shells a printed line is run with, the first one there: bash, as a user's terminal
#: has it (a node id that prints escaped is written in ANSI-C quotes, ``$'...'``, which bash,
#: zsh and ksh read and dash does not: statesnap.replay.repro), else ``/bin/sh``.
SHELLS = ("/bin/bash", "/usr/bin/bash", "/bin/sh")


def printed_argv(command: str) -> list[str]:
    shell = next((s for s in SHELLS if os.path.exists(s)), SHELLS[-1])
    return [shell, "-c", command]


def printed_env(env: Mapping[str, str], python: str, cache_dir: Path | None = None
                ) -> dict[str, str]:
    """``env`` as a user's shell has it for the printed line: ``python`` first on ``PATH``;
    pytest told to name each test's outcome, on a terminal wide enough for each failure's
    message; its cache in ``cache_dir`` when given (the user's ``lastfailed`` is not
    rewritten by a confirmation)."""
    out = dict(env)
    folder = Path(python).parent
    if python and folder.is_dir():
        out["PATH"] = f"{folder}{os.pathsep}{out.get('PATH', '')}"
    extra = READABLE_ADDOPTS
    if cache_dir is not None:
        extra += f" -o {shlex.quote(f'cache_dir={cache_dir}')}"
    out["PYTEST_ADDOPTS"] = f"{out.get('PYTEST_ADDOPTS', '')} {extra}".strip()
    # A wide terminal: pytest cuts a short-summary line to the terminal's width and drops
    # the failure's message (its exception type) when a long node id leaves no room.  Not
    # wider: ``-v`` pads every test's line to the width (a long order's log).
    out["COLUMNS"] = "1024"
    return out


def read_printed(result: ReplayResult) -> None:
    """Fill in ``result``'s outcomes and failures from its log (the command's output)."""
    if result.log is None:
        return
    try:
        text = result.log.read_text("utf-8", "replace")
    except OSError:
        return
    # The log's heading (``$ command``, ``# ...`` lines) names no outcome.
    outcomes, failures = read_console(text)
    # The log is decoded with replacement characters: a node id with bytes that are not UTF-8
    # (a folder so named) reads back as the order's id decoded the same way.
    named = {_as_logged(n): n for n in result.order}
    result.outcomes.update({named.get(n, n): o for n, o in outcomes.items()})
    result.failures.update({named.get(n, n): f for n, f in failures.items()})
    code = result.returncode
    if result.timed_out or code is None or 0 <= code <= MAX_PYTEST_EXIT:
        return
    # The interpreter died (a signal, or ``sh`` saying so as 128+N): the test it was running
    # is the first of the order with no outcome that ``-v`` had announced.
    for nodeid in result.order:
        if nodeid not in result.outcomes:
            if _as_logged(nodeid) in text:
                result.outcomes[nodeid] = "crashed"
            return


def _as_logged(nodeid: str) -> str:
    """``nodeid`` as a log shows it: its bytes decoded as UTF-8, with replacements."""
    try:
        raw = nodeid.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte
        raw = nodeid.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")
