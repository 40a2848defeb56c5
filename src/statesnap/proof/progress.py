"""Progress of a verification: one line that updates on a terminal, one line per victim in a log.

A session proving twenty victims runs a hundred replays or more; a line for each (``replaying
A → B``, ``minimising``...) buries the test output in a CI log.  On a terminal the line is
rewritten in place (rich's status line): victims done, replays run, victims queued, the
budget left, and what runs now.  Elsewhere (a CI log, a pipe) one line is printed per victim,
once its verdict is settled.  Replays side by side (:mod:`statesnap.proof.sidebyside`) report
from several threads: the counts are kept under a lock, and each line is printed whole.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.base.progress import Progress
from statesnap.base.text import printable


class LiveLine:
    """A progress callback that rewrites one status line on the terminal (stderr)."""

    live = True

    def __init__(self) -> None:
        self._status: Any = None

    def __call__(self, msg: str) -> None:
        from rich.text import Text

        # Plain text, not rich markup: a node id's ``[/]`` (a parameter "/") would raise,
        # and ``[red]`` would vanish; its control characters escaped, not sent raw.
        text = Text(printable(msg))
        if self._status is None:
            from rich.console import Console

            # The interpreter's own stderr: pytest may capture sys.stderr, and a test may
            # have replaced it.
            console = Console(file=sys.__stderr__ or sys.stderr)
            self._status = console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def session_progress(say: Progress) -> Progress:
    """The session's progress: a live line when stderr is a terminal (and not a CI log),
    else ``say`` (lines)."""
    stream = sys.__stderr__
    if stream is not None and stream.isatty() and not os.environ.get("CI"):
        return LiveLine()
    return say


class ProofProgress:
    """Counts a verification's victims and replays and shows them through ``sink``."""

    def __init__(self, sink: Progress | None, victims: int, budget: float) -> None:
        self.sink = sink
        self.live = bool(getattr(sink, "live", False))
        self.total = victims
        self.done = 0
        self.replays = 0
        self.deadline = time.monotonic() + budget
        #: When each victim in progress began (several at once, side by side).
        self._started: dict[str, float] = {}
        self._lock = threading.RLock()

    def step(self, msg: str) -> None:
        """One replay about to run (the verifier's own line, ``statesnap: replaying ...``)."""
        with self._lock:
            self.replays += 1
            if self.live and self.sink is not None:
                self.sink(self._status(msg.removeprefix("statesnap: ")))

    def _status(self, now: str) -> str:
        left = max(0.0, self.deadline - time.monotonic())
        busy = len(self._started)
        queued = max(0, self.total - self.done - busy)
        doing = (f"{busy} victim(s) in progress · " if busy > 1 else "")
        return (f"statesnap: victims {self.done}/{self.total} · {self.replays} replay(s) run · "
                f"{doing}{queued} victim(s) queued · {left:.0f} s of budget left · {now}")

    def begin(self, finding: Finding) -> None:
        with self._lock:
            self._started[finding.victim] = time.monotonic()

    def settled(self, finding: Finding) -> None:
        """A victim's verdict is settled: one line in a log, the status on a terminal."""
        with self._lock:
            self.done += 1
            started = self._started.pop(finding.victim, time.monotonic())
            if self.sink is None:
                return
            if self.live:
                self.sink(self._status(f"{finding.status}: {finding.victim}"))
                return
            took = time.monotonic() - started
            self.sink(f"statesnap: [{self.done}/{self.total}] {finding.status} "
                      f"{finding.victim} ({len(finding.replays)} replay(s), {took:.1f} s)")

    def dropped(self, finding: Finding) -> None:
        """A victim left unsettled (interrupted): no longer in progress."""
        with self._lock:
            self._started.pop(finding.victim, None)

    def say(self, msg: str) -> None:
        """One line of its own (in a log; on a terminal, the status line shows it)."""
        with self._lock:
            if self.sink is not None:
                self.sink(self._status(msg.removeprefix("statesnap: ")) if self.live else msg)

    def finish(self) -> None:
        stopper = getattr(self.sink, "stop", None)
        if self.live and stopper is not None:
            stopper()
