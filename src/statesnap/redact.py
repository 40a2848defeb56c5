"""Secret redaction: a salted hash stands in for secret-looking values everywhere.

The salt is random per process and never written anywhere, so a record cannot be used to test
guesses of a secret, while two different values still look different within the run.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
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


class Redactor:
    """``redactor(name, value)`` returns the value, or a salted digest if the name looks secret."""

    def __init__(self, patterns: Iterable[str] = DEFAULT_PATTERNS, salt: bytes | None = None):
        pats = [p for p in patterns if p]
        self._regex = (
            re.compile("|".join(re.escape(p) for p in pats), re.IGNORECASE) if pats else None
        )
        self._salt = salt if salt is not None else os.urandom(16)
        self._cache: dict[str, str] = {}

    def is_secret(self, name: str) -> bool:
        return self._regex is not None and self._regex.search(name) is not None

    def digest(self, value: str) -> str:
        cached = self._cache.get(value)
        if cached is None:
            h = hashlib.sha256(self._salt + value.encode("utf-8", "surrogateescape")).hexdigest()
            cached = f"{PREFIX}{h[:12]}>"
            self._cache[value] = cached
        return cached

    def __call__(self, name: str, value: Any) -> Any:
        if value is None or not self.is_secret(name):
            return value
        return self.digest(value if isinstance(value, str) else repr(value))
