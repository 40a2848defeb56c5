"""``cwd``: the process's current working directory."""

from __future__ import annotations

import os
from collections.abc import Collection

from statesnap.probes.base import Probe, ProbeMap, Severity

KEY = "cwd"


def _getcwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # the directory was deleted under us: that is a finding too
        return "<deleted directory>"


class CwdProbe(Probe):
    name = "cwd"
    severity = Severity.HIGH
    restorable = True

    def token(self) -> object:
        return _getcwd()

    def read(self) -> ProbeMap:
        return {KEY: _getcwd()}

    def feeds_memos(self, key: str) -> bool:
        # A cached function resolving a relative path keeps what it found.
        return True

    def hint(self, key: str, change: str) -> str | None:
        return "change directory with monkeypatch.chdir(...) so the old one is put back"

    def save(self) -> object:
        return _getcwd()

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        if KEY in keys and isinstance(saved, str) and os.path.isdir(saved):
            os.chdir(saved)
            return [KEY]
        return []
