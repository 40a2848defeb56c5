"""Child side of replays: ``--statesnap-order FILE`` runs exactly those node ids, in order.

Ids that no longer exist are a usage error.  :class:`RestoreBefore` (the hidden
``--statesnap-restore-before FILE``) puts chosen keys back just before one test, each as it was
when it first existed: the key-level replay (docs/ARCHITECTURE.md, "The pytest layer").
"""

from __future__ import annotations

import gc
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.internal import note_internal_error
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.replay import orderfile
from statesnap.state.snapshot import Snapshot


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


class RestoreBefore(HookPlugin):
    """The key-level replay's child side: saves the chosen keys' state, puts it back before
    one test.

    A key is put back as it was when it first existed: the restorable probes' state is saved
    after collection, and a key listed in ``first_seen`` that did not exist then is saved again
    at the end of the first test setup after which it exists (a class attribute that a
    ``setup_class`` makes, a module a fixture imports first), never later, so the value put
    back is the one the setup left, before any test body changed it.  Keys not listed there
    are put back as collection left them (absent: deleted).  ``import`` names modules to
    import before that first save, so that their state as imported is what is put back.
    Registered as a plugin of its own: a run without a key-level replay pays nothing.
    """

    def __init__(self, spec_file: Path, probes: list[Any],
                 latest: Callable[[], Snapshot | None]) -> None:
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
        self.before: str = spec["before"]
        self.keys: list[tuple[str, str]] = [(p, k) for p, k in spec["keys"]]
        self.first_seen = {(p, k) for p, k in spec.get("first_seen") or ()} & set(self.keys)
        self.imports: list[str] = [str(m) for m in spec.get("import") or ()]
        #: The collector: ``off`` for the whole run, ``collect`` (off, and one collection
        #: just before ``before``) -- statesnap.replay.gcmode.
        self.gc_mode = spec.get("gc")
        wanted = {p for p, _ in self.keys}
        self.probes = {p.name: p for p in probes
                       if p.name in wanted and (p.restorable or p.replay_restorable)}
        self._latest = latest
        #: Each probe's state after collection.
        self.saved: dict[str, object] = {}
        #: A ``first_seen`` key's probe state, saved at the end of the setup it first existed
        #: after.
        self.later: dict[tuple[str, str], object] = {}
        #: ``first_seen`` keys that have not existed at any save yet.
        self.pending: set[tuple[str, str]] = set()
        self._started = False

    def prepare(self) -> None:
        """Import the modules asked for (before the run's baseline is taken); the collector
        off where asked."""
        if self.gc_mode in ("off", "collect"):
            gc.disable()
        for name in self.imports:
            try:
                importlib.import_module(name)
            except Exception as exc:  # not put back as imported: the replay's log says so
                note_internal_error(f"--statesnap-restore-before: import {name}", exc)

    def save(self) -> None:
        """After collection: every wanted probe's state."""
        for name, probe in self.probes.items():
            try:
                self.saved[name] = probe.save()
            except Exception as exc:  # its keys are not put back: the replay's log says so
                note_internal_error(f"--statesnap-restore-before: save {name}", exc)
        snap = self._latest()
        self.pending = {ref for ref in self.first_seen if ref[0] in self.saved
                        and snap is not None and ref[1] not in snap.get(ref[0])}

    def _save_existing(self) -> None:
        """Save the probes of the pending keys that exist now (after some test's setup)."""
        snap = self._latest()
        if snap is None or not self.pending:
            return
        found = [ref for ref in self.pending if ref[1] in snap.get(ref[0])]
        for name in {p for p, _ in found}:
            try:
                state = self.probes[name].save()
            except Exception as exc:
                note_internal_error(f"--statesnap-restore-before: save {name}", exc)
                continue
            for ref in found:
                if ref[0] == name:
                    self.later[ref] = state
                    self.pending.discard(ref)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        # The setup's checkpoint is taken by now (at its report); the victim's own setup
        # comes after the restore and counts for nothing.
        if self.pending and not self._started:
            self._save_existing()

    def maybe_restore(self, nodeid: str) -> list[str]:
        if nodeid != self.before:
            return []
        self._started = True
        if self.gc_mode == "collect":
            gc.collect()
        done: list[str] = []
        for name, probe in self.probes.items():
            if name not in self.saved:
                continue
            # Keys grouped by the save they are put back from (by identity of the state).
            groups: dict[int, tuple[object, list[str]]] = {}
            for p, k in self.keys:
                if p == name:
                    state = self.later.get((p, k), self.saved[name])
                    groups.setdefault(id(state), (state, []))[1].append(k)
            for state, keys in groups.values():
                try:
                    done += [f"{name}:{k}" for k in probe.restore(state, keys)]
                except Exception as exc:
                    note_internal_error(f"--statesnap-restore-before: restore {name}", exc)
        return done
