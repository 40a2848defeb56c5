"""Whether a replay failed because a fixed port it binds was taken: no verdict about the victim.

A test that binds a fixed port fails when another process holds it: a backfill's other task on
the same machine, a session's other replay running beside it.  That failure says nothing about
the order replayed, so whoever runs replays side by side asks here and runs the replay again
(alone, or after a pause); the backfill (:mod:`statesnap.backfill.tasks`) and the session's
side-by-side replays (:mod:`statesnap.proof.sidebyside`) share this one check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from statesnap.replay.result import ReplayResult

#: What a test says when a fixed port it binds is taken (Linux, macOS, Windows).
PORT_TAKEN = re.compile(r"Address already in use|EADDRINUSE|\[Errno (?:98|48)\]|WinError 10048")


def port_taken(failures: Mapping[str, Mapping[str, Any]], outcomes: Mapping[str, str],
               log: str) -> str | None:
    """What says a port was taken in a replay's answer (its failures' texts, else its output
    when some test failed), or None."""
    for nodeid, failure in failures.items():
        text = f"{failure.get('exc_type') or ''}: {failure.get('message') or ''}"
        if PORT_TAKEN.search(text):
            return f"{nodeid}: {text.strip()}"
    if outcomes and any(v in ("failed", "error") for v in outcomes.values()):
        found = PORT_TAKEN.search(log)
        if found is not None:
            return f"the replay's output says {found.group(0)!r}"
    return None


def port_conflict(result: ReplayResult) -> str | None:
    """What says a port was taken in a replay's ``result``, or None: a failed test whose
    failure or log says the address was in use."""
    if not any(result.failed(n) for n in result.outcomes):
        return None
    text = ""
    if result.log is not None:
        try:
            text = result.log.read_text("utf-8", "replace")
        except OSError:
            pass
    return port_taken(result.failures, result.outcomes, text)
