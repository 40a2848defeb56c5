"""``env``: the contents of ``os.environ``, and whether ``os.environ`` itself was replaced."""

from __future__ import annotations

import os
from typing import Any

from statesnap.probes.base import (
    Probe,
    ProbeContext,
    ProbeMap,
    Severity,
    fingerprint_repr,
    unreadable,
)

#: The pseudo-key that reports a replaced ``os.environ`` object.
IDENTITY_KEY = "<os.environ object>"
#: pytest rewrites this one in every phase of every test; it is never a leak.
IGNORED = frozenset({"PYTEST_CURRENT_TEST"})
_CURRENT_RAW = b"PYTEST_CURRENT_TEST" if os.name != "nt" else "PYTEST_CURRENT_TEST"


#: A variable as last read: its raw value object, its name and the value the map shows.
_Entry = tuple[Any, str, Any]


class EnvProbe(Probe):
    name = "env"
    severity = Severity.HIGH
    restorable = True

    def __init__(self) -> None:
        #: Where pytest's own variable was in ``os.environ`` at the last token (or -1).
        self._current_at = -1
        #: Each variable of the last read by its raw key (``os.environ._data``), and the
        #: decoders its entries were made with.
        self._entries: dict[Any, _Entry] = {}
        self._decoders: tuple[object, object] | None = None

    def setup(self, ctx: ProbeContext) -> None:
        self._redactor = ctx.redactor
        self._environ_id = id(os.environ)

    def token(self) -> object:
        env = os.environ
        data = getattr(env, "_data", None)
        if not isinstance(data, dict):
            return None
        # The raw keys and values themselves, in order, without pytest's own per-phase
        # variable: two C-level copies, compared item by item with an identity shortcut (a
        # hash of the items made a tuple per variable, ~2x the cost).  Holding the objects
        # keeps their addresses from being reused while the token is kept.
        keys = list(data)
        values = list(data.values())
        if len(values) != len(keys):
            return object()  # another thread changed it between the two copies: read
        at = self._current_at
        if not (0 <= at < len(keys) and keys[at] == _CURRENT_RAW):
            # pytest adds it back at the end in each test: looked for where it was last time.
            try:
                at = keys.index(_CURRENT_RAW) if _CURRENT_RAW in data else -1
            except ValueError:  # removed by another thread meanwhile
                at = -1
            self._current_at = at
        if at >= 0:
            del keys[at], values[at]
        return id(env), keys, values

    def light_token(self) -> object:
        # Inside a test only additions and removals are looked for (a length); a value
        # changed in place is still found by the full token after teardown.
        data = getattr(os.environ, "_data", None)
        if not isinstance(data, dict):
            return None
        return id(os.environ), len(data) - (_CURRENT_RAW in data)

    def read(self) -> ProbeMap:
        env = os.environ
        data = getattr(env, "_data", None)
        decodekey = getattr(env, "decodekey", None)
        decodevalue = getattr(env, "decodevalue", None)
        if isinstance(data, dict) and callable(decodekey) and callable(decodevalue):
            out = self._read_raw(data, decodekey, decodevalue)
        else:
            out = {}
            redact = self._redactor
            for name, value in list(env.items()):
                if name not in IGNORED:
                    out[name] = redact(name, value) if redact is not None else value
        if id(env) != self._environ_id:
            out[IDENTITY_KEY] = f"replaced by {type(env).__module__}.{type(env).__qualname__}"
        return out

    def _read_raw(self, data: dict[Any, Any], decodekey: Any, decodevalue: Any) -> ProbeMap:
        """The map from ``os.environ``'s raw dict, decoded directly (its own ``items()``
        encodes each key again to look its value up).

        A read follows a token that moved, most often for one variable of ~90: a variable
        whose raw value is the very object of the last read (held in :attr:`_entries`, so
        its address is not reused) gets its entry again, without two decoder calls and the
        redactor's (~2 K instructions a variable; 265 K a read on click's suite before).
        The redactor's answer for a name and value never changes within a run.
        """
        if self._decoders is None or self._decoders[0] is not decodekey \
                or self._decoders[1] is not decodevalue:
            self._entries = {}
            self._decoders = (decodekey, decodevalue)
        known = self._entries
        entries: dict[Any, _Entry] = {}
        out: ProbeMap = {}
        redact = self._redactor
        for raw, raw_value in list(data.items()):
            entry = known.get(raw)
            if entry is None or entry[0] is not raw_value:
                try:
                    name, value = decodekey(raw), decodevalue(raw_value)
                except Exception as exc:  # a raw entry that is no bytes (os.environ._data
                    # written to directly): that variable alone is odd
                    name, value = f"<raw {fingerprint_repr(raw, 60)}>", unreadable(exc)
                entry = (raw_value, name, redact(name, value) if redact is not None else value)
            entries[raw] = entry
            if entry[1] not in IGNORED:
                out[entry[1]] = entry[2]
        self._entries = entries  # the current variables only: no growth over a run
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
