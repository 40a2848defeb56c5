"""The secrets replay children report, and the printed lines' logs scrubbed again with them.

A printed line runs without statesnap, so its child reports no secret; when it runs before the
replays of the same tests (the first pair runs as printed, statesnap.proof.verify), what it
printed of a secret a test set is learned only from those replays.  This keeps what the log
pumps learned and rewrites the printed lines' logs whenever more is known.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from statesnap.base.redact import Redactor
from statesnap.base.text import FILE_ERRORS


class PrintedLogs:
    """The printed lines' logs of one runner and the secret values its children reported.

    Thread-safe: replays side by side pump and scrub from several threads."""

    def __init__(self, redactor: Redactor, env: dict[str, str]) -> None:
        self.redactor = redactor
        self.env = env
        self._lock = threading.Lock()
        self._logs: list[Path] = []
        self._scrubbed_with = 0
        #: The latest log pumps' sets of secret values (the children's reports land there),
        #: and what they reported so far.
        self._pumped: list[set[str]] = []
        self._learned: set[str] = set()

    def add(self, log: Path) -> None:
        """A printed line's log, scrubbed again from now on."""
        with self._lock:
            self._logs.append(log)

    def watch(self, values: set[str]) -> None:
        """A log pump's set of reported values, merged at the next :meth:`scrub`."""
        with self._lock:
            self._pumped.append(values)

    def known(self) -> list[str]:
        """Every secret value known now: the redactor's, the environments', the reported."""
        with self._lock:
            learned = list(self._learned)
        return [*self._base(), *learned]

    def _base(self) -> Iterable[str]:
        return (*self.redactor.seen(), *self.redactor.secrets_in(self.env),
                *self.redactor.secrets_in(os.environ))

    def scrub(self) -> None:
        """Scrub the printed lines' logs again with every secret known now."""
        with self._lock:
            for values in self._pumped:  # what the replay children reported
                self._learned.update(values)
            # Merged now; the latest few stay, in case one of them is still pumping.
            self._pumped = self._pumped[-8:]
            if not self._logs:
                return  # no printed line yet: nothing to scrub (most replays of a hunt)
            logs = list(self._logs)
            known = {*self._base(), *self._learned}
            if len(known) == self._scrubbed_with:
                return  # nothing learned since the last scrub
            self._scrubbed_with = len(known)
        for path in logs:
            try:
                text = path.read_text("utf-8", FILE_ERRORS)
                scrubbed = self.redactor.scrub(text, known)
                if scrubbed != text:
                    part = path.with_name(f"{path.name}.part")
                    part.write_text(scrubbed, "utf-8", FILE_ERRORS)
                    os.replace(part, path)
            except OSError:
                continue  # a log set aside or removed meanwhile
