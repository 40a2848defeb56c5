"""Child side of replays: ``--statesnap-order FILE`` runs exactly those node ids, in order.

Ids that no longer exist are a usage error.  :class:`RestoreBefore` (the hidden
``--statesnap-restore-before FILE``) puts chosen keys back just before one test: the key-level
replay (docs/ARCHITECTURE.md, "The pytest layer").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.internal import note_internal_error
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.replay import orderfile


def read_order(path: Path) -> list[str]:
    try:
        return orderfile.read_order(path)
    except ValueError as exc:
        raise pytest.UsageError(f"--statesnap-order {path}: {exc}") from None


class OrderPlugin(HookPlugin):
    """Reorders and filters the collected items to the given order."""

    def __init__(self, order_file: Path) -> None:
        self.order_file = order_file
        self.order = read_order(order_file)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        by_id: dict[str, pytest.Item] = {}
        for item in items:
            by_id.setdefault(item.nodeid, item)
        missing = [nid for nid in self.order if nid not in by_id]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                              else "")
            raise pytest.UsageError(
                f"--statesnap-order {self.order_file}: {len(missing)} node id(s) no longer "
                f"exist: {shown}"
            )
        wanted = set(self.order)
        deselected = [item for item in items if item.nodeid not in wanted]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = [by_id[nid] for nid in self.order]


class RestoreBefore:
    """Saves restorable probes' state after collection; restores chosen keys before one test."""

    def __init__(self, spec_file: Path, probes: list[Any]) -> None:
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
        self.before: str = spec["before"]
        self.keys: list[tuple[str, str]] = [(p, k) for p, k in spec["keys"]]
        wanted = {p for p, _ in self.keys}
        self.probes = {p.name: p for p in probes if p.name in wanted and p.restorable}
        self.saved: dict[str, object] = {}

    def save(self) -> None:
        for name, probe in self.probes.items():
            try:
                self.saved[name] = probe.save()
            except Exception as exc:  # its keys are not put back: the replay's log says so
                note_internal_error(f"--statesnap-restore-before: save {name}", exc)

    def maybe_restore(self, nodeid: str) -> list[str]:
        if nodeid != self.before:
            return []
        done: list[str] = []
        for name, probe in self.probes.items():
            keys = [k for p, k in self.keys if p == name]
            if name not in self.saved:
                continue
            try:
                done += [f"{name}:{k}" for k in probe.restore(self.saved[name], keys)]
            except Exception as exc:
                note_internal_error(f"--statesnap-restore-before: restore {name}", exc)
        return done
