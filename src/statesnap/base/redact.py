"""Secret redaction: a salted hash stands in for secret-looking values everywhere.

The salt is random per process and never written anywhere, so a record cannot be used to test
guesses of a secret, while two different values still look different within the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

DEFAULT_PATTERNS: tuple[str, ...] = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "SIGNATURE",
    "CERT",
    "DSN",
)

PREFIX = "<redacted:"

#: Shorter values are left alone when scrubbing free text: "1" or "true" would match
#: everywhere and hide nothing worth hiding.
MIN_SCRUB = 6

#: A replay child's redactor writes each secret value it meets to this inherited pipe, so the
#: parent can scrub the child's output before it reaches the log (statesnap.replay.log).
SECRET_FD_ENV = "STATESNAP_SECRET_FD"

#: At most this many names' answers are remembered (then forgotten all at once).
_NAMES_KEPT = 8192


class Redactor:
    """``redactor(name, value)`` returns the value, or a salted digest if the name looks secret."""

    def __init__(self, patterns: Iterable[str] = DEFAULT_PATTERNS, salt: bytes | None = None):
        self._patterns = [p for p in patterns if p]
        #: An ASCII name is tested without the regular expression when every pattern is ASCII:
        #: compiling it costs about 1.8 M instructions, a tenth of a small session's start.
        self._upper = ([p.upper() for p in self._patterns]
                       if all(p.isascii() for p in self._patterns) else None)
        self._compiled: re.Pattern[str] | None = None
        self._salt = salt if salt is not None else os.urandom(16)
        self._cache: dict[str, str] = {}
        #: ``is_secret``'s answers so far, by name.
        self._secret_names: dict[str, bool] = {}
        #: Called once with each value the first time it is digested.
        self.on_new: Callable[[str], None] | None = None

    def is_secret(self, name: str) -> bool:
        """Whether ``name`` contains a pattern, letter case aside (``re.IGNORECASE``)."""
        # Remembered per name: the probes ask about the same environment variables and
        # attribute names at every read.
        known = self._secret_names.get(name)
        if known is None:
            known = self._match(name)
            if len(self._secret_names) >= _NAMES_KEPT:
                self._secret_names.clear()
            self._secret_names[name] = known
        return known

    def _match(self, name: str) -> bool:
        if not self._patterns:
            return False
        if self._upper is not None and name.isascii():
            # ASCII in both: IGNORECASE's case folding is ASCII's (its special folds, such as
            # the long s or the Kelvin sign, need a non-ASCII character in the name).
            upper = name.upper()
            return any(p in upper for p in self._upper)
        return self._regex().search(name) is not None

    def _regex(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile("|".join(re.escape(p) for p in self._patterns),
                                        re.IGNORECASE)
        return self._compiled

    def digest(self, value: str) -> str:
        cached = self._cache.get(value)
        if cached is None:
            h = hashlib.sha256(self._salt + value.encode("utf-8", "surrogateescape")).hexdigest()
            cached = f"{PREFIX}{h[:12]}>"
            self._cache[value] = cached
            if self.on_new is not None:
                self.on_new(value)
        return cached

    def seen(self) -> list[str]:
        """Every value digested so far: the secrets this process knows of."""
        return list(self._cache)

    def secrets_in(self, environ: Mapping[str, str]) -> list[str]:
        """The values of the secret-looking variables of ``environ``."""
        return [v for k, v in environ.items() if v and self.is_secret(k)]

    def scrub(self, text: str, values: Iterable[str]) -> str:
        """``text`` with each of ``values`` (the long enough ones) replaced by its digest."""
        # Longest first: a secret that contains another is replaced whole.
        for value in sorted({v for v in values if len(v) >= MIN_SCRUB}, key=len, reverse=True):
            if value in text:
                text = text.replace(value, self.digest(value))
        return text

    def __call__(self, name: str, value: Any) -> Any:
        if value is None or not self.is_secret(name):
            return value
        return self.digest(value if isinstance(value, str) else repr(value))


def report_secrets_to_parent(redactor: Redactor, environ: MutableMapping[str, str]
                             ) -> int | None:
    """In a replay child started with a secret pipe, send each secret met to the parent.

    Returns the pipe's fd (the caller's own, for the fds probe to ignore), or None.  The
    variable is taken out of ``environ`` and the fd made non-inheritable: a pytest the suite
    itself starts must neither hold the parent's pipe open nor take some fd of its own that
    happens to have the same number for that pipe.  Anything but a pipe is left alone.
    """
    raw = environ.pop(SECRET_FD_ENV, None)
    if not raw or not raw.isdigit():
        return None
    fd = int(raw)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_inheritable(fd, False)
    except OSError:
        return None

    def send(value: str) -> None:
        if redactor.on_new is None:
            return
        try:
            os.write(fd, (json.dumps(value) + "\n").encode("utf-8", "surrogateescape"))
        except OSError:
            redactor.on_new = None  # the parent is gone: its log no longer needs them

    redactor.on_new = send
    for value in redactor.secrets_in(environ):
        redactor.digest(value)
    return fd
