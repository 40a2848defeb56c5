"""Progress of a backfill: victims done, replays done and queued, ETA.

A rich progress bar on a terminal; elsewhere (CI logs) one plain line per finished victim.
Counters are updated from the victims' threads.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


class Progress:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.victims = 0
        self.done_victims = 0
        self.replays_done = 0
        self.replays_journal = 0
        self.queued = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        if not quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("victims"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.description}"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=False)
            self._bar.start()
            self._task = self._bar.add_task("", total=None)

    def line(self, text: str) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(text)
            else:
                print(text, file=sys.stderr, flush=True)

    def set_victims(self, n: int) -> None:
        self.victims = n
        if self._bar is not None:
            self._bar.update(self._task, total=n)

    def replay(self, delta: int, fresh: bool) -> None:
        with self._lock:
            if not fresh:
                self.replays_journal += 1
            elif delta > 0:
                self.queued += delta
            else:
                self.queued += delta
                self.replays_done += 1
        self._refresh()

    def victim_done(self, text: str) -> None:
        with self._lock:
            self.done_victims += 1
        self.line(f"[{self.done_victims}/{self.victims}] {text} ({self.status()})")
        self._refresh()

    def eta(self) -> float | None:
        if not self.done_victims or self.done_victims >= self.victims:
            return None
        per = (time.monotonic() - self.started) / self.done_victims
        return per * (self.victims - self.done_victims)

    def status(self) -> str:
        eta = self.eta()
        words = f"replays: {self.replays_done} done, {self.queued} queued"
        if self.replays_journal:
            words += f", {self.replays_journal} from the journal"
        return words + (f", ETA {eta:.0f}s" if eta is not None else "")

    def _refresh(self) -> None:
        if self._bar is not None:
            words = f"replays: {self.replays_done} done, {self.queued} queued"
            if self.replays_journal:
                words += f", {self.replays_journal} resumed"
            self._bar.update(self._task, completed=self.done_victims, description=words)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
