"""Fingerprints of ``torch._dynamo.config`` and friends, read only once they are imported.

One key per config module; its fingerprint is the knobs that differ from their defaults, its
token the module's cached ``get_hash()`` plus a dirty-flag counter.  See docs/PROBES.md.
"""

from __future__ import annotations

import sys
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import fingerprint_repr

#: ``(key in the probe's map, module name)``.
CONFIG_MODULES: tuple[tuple[str, str], ...] = (
    ("dynamo.config", "torch._dynamo.config"),
    ("inductor.config", "torch._inductor.config"),
    ("functorch.config", "torch._functorch.config"),
)

_PRIMITIVES = (bool, int, float, str, type(None))


def _value_fingerprint(value: object) -> object:
    return value if isinstance(value, _PRIMITIVES) else fingerprint_repr(value, limit=120)


def _differs(value: object, default: object) -> bool:
    try:
        return bool(value != default)
    except Exception:  # an exotic value whose == raises (a tensor): compare reprs instead
        return fingerprint_repr(value) != fingerprint_repr(default)


def current_values(mod: Any) -> dict[str, Any]:
    """All knobs' current values, without the side effects of ``getattr`` on the module.

    ``ConfigModule.__getattr__`` copies a mutable default into the user override on first
    read, which would make it look changed; ``get_config_copy`` reads the entries directly.
    """
    getter = getattr(mod, "get_config_copy", None)
    if getter is None:
        getter = mod.shallow_copy_dict
    return dict(getter())


class ConfigWatcher:
    """Token and fingerprint of one config module (one instance per module object)."""

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self._bumps = 0
        self._defaults = self._find_defaults(mod)
        self._cheap = callable(getattr(mod, "get_hash", None)) and hasattr(mod, "_hash_dirty_var")

    @staticmethod
    def _find_defaults(mod: Any) -> dict[str, Any]:
        entries = getattr(mod, "_config", None)
        if isinstance(entries, dict) and entries and all(
            hasattr(e, "default") for e in entries.values()
        ):
            return {k: e.default for k, e in entries.items()}
        legacy = getattr(mod, "_default", None)  # torch 2.1-2.4 kept the defaults apart
        if isinstance(legacy, dict):
            return dict(legacy)
        # Last resort: what the knobs were when statesnap first saw the module.
        return current_values(mod)

    def token(self) -> object:
        if not self._cheap:
            return tuple(sorted(self.fingerprint().items(), key=lambda kv: kv[0]))
        mod = self.mod
        if mod._hash_dirty_var.get():
            self._bumps += 1
        return self._bumps, mod.get_hash()

    def fingerprint(self) -> dict[str, Any]:
        """``{knob: value}`` of the knobs that differ from their default."""
        defaults = self._defaults
        out: dict[str, Any] = {}
        for name, value in current_values(self.mod).items():
            if name not in defaults or _differs(value, defaults[name]):
                out[name] = _value_fingerprint(value)
        return out

    def restore(self, saved: dict[str, Any]) -> None:
        """Set back every knob whose value differs from ``saved`` (a :func:`current_values`)."""
        now = current_values(self.mod)
        for name, value in saved.items():
            if name in now and _differs(now[name], value):
                try:
                    setattr(self.mod, name, value)
                except Exception as exc:  # a knob that became read-only or an alias: leave it
                    note_internal_error(f"torch config {self.mod.__name__}: restore {name}",
                                        exc)


def loaded_configs() -> list[tuple[str, Any]]:
    """``(key, module)`` of the config modules already in ``sys.modules``."""
    mods = sys.modules
    out = []
    for key, name in CONFIG_MODULES:
        mod = mods.get(name)
        if mod is not None:
            out.append((key, mod))
    return out


def describe_change(before: object, after: object) -> str | None:
    """``"cache_size_limit: 8 → 64; verbose: default → True"`` from two fingerprints."""
    if not isinstance(before, dict) and not isinstance(after, dict):
        return None
    b = before if isinstance(before, dict) else {}
    a = after if isinstance(after, dict) else {}
    parts = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            parts.append(f"{name}: default → {a[name]!r}")
        elif name not in a:
            parts.append(f"{name}: {b[name]!r} → default")
        elif a[name] != b[name]:
            parts.append(f"{name}: {b[name]!r} → {a[name]!r}")
    return "; ".join(parts) if parts else None
