"""``env``: the contents of ``os.environ``, and whether ``os.environ`` itself was replaced."""

from __future__ import annotations

import os
from typing import Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity

#: The pseudo-key that reports a replaced ``os.environ`` object.
IDENTITY_KEY = "<os.environ object>"
#: pytest rewrites this one in every phase of every test; it is never a leak.
IGNORED = frozenset({"PYTEST_CURRENT_TEST"})
_CURRENT_RAW = b"PYTEST_CURRENT_TEST" if os.name != "nt" else "PYTEST_CURRENT_TEST"


class EnvProbe(Probe):
    name = "env"
    severity = Severity.HIGH
    restorable = True

    def setup(self, ctx: ProbeContext) -> None:
        self._redactor = ctx.redactor
        self._environ_id = id(os.environ)

    def token(self) -> object:
        env = os.environ
        data = getattr(env, "_data", None)
        if not isinstance(data, dict):
            return None
        # Hashing the items is a few microseconds for a typical environment and catches a
        # value changed in place, which a length check would miss.
        # A C-level copy without pytest's own per-phase variable, hashed in C as well (a
        # generator over the items costs a Python step per variable).
        kept = dict(data)
        kept.pop(_CURRENT_RAW, None)
        return id(env), hash(tuple(kept.items()))

    def light_token(self) -> object:
        # Inside a test only additions and removals are looked for (a length); a value
        # changed in place is still found by the full token after teardown.
        data = getattr(os.environ, "_data", None)
        if not isinstance(data, dict):
            return None
        return id(os.environ), len(data) - (_CURRENT_RAW in data)

    def read(self) -> ProbeMap:
        env = os.environ
        out: ProbeMap = {}
        redact = self._redactor
        for name, value in env.items():
            if name in IGNORED:
                continue
            out[name] = redact(name, value) if redact is not None else value
        if id(env) != self._environ_id:
            out[IDENTITY_KEY] = f"replaced by {type(env).__module__}.{type(env).__qualname__}"
        return out

    def feeds_memos(self, key: str) -> bool:
        # A cached function reading an environment variable keeps what it read.
        return True

    def hint(self, key: str, change: str) -> str | None:
        if key == IDENTITY_KEY:
            return "do not rebind os.environ; use monkeypatch.setenv/delenv, which put it back"
        if change == "added":
            return (f"set {key} with monkeypatch.setenv({key!r}, ...) so it is removed after "
                    "the test")
        if change == "removed":
            return (f"delete {key} with monkeypatch.delenv({key!r}) so it comes back after "
                    "the test")
        return (f"change {key} with monkeypatch.setenv({key!r}, ...) so it is put back after "
                "the test")

    def save(self) -> object:
        return dict(os.environ)

    def restore(self, saved: object, keys: Any) -> list[str]:
        assert isinstance(saved, dict)
        done = []
        for key in keys:
            if key == IDENTITY_KEY:
                continue
            if key in saved:
                os.environ[key] = saved[key]
            else:
                os.environ.pop(key, None)
            done.append(key)
        return done
