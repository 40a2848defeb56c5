"""The ``modules`` probe against real imports, stubs and removals in ``sys.modules``."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity, import_own
from statesnap.probes.modules import ModulesProbe
from statesnap.state.diff import diff_maps


@pytest.fixture
def ctx(tmp_path: Path) -> ProbeContext:
    return ProbeContext(rootdir=tmp_path)


@pytest.fixture
def probe(ctx: ProbeContext) -> Iterator[ModulesProbe]:
    p = ModulesProbe()
    p.setup(ctx)
    yield p
    p.close()


def test_stub_import_and_removal(probe: ModulesProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    token, before = probe.token(), probe.read()
    stub = types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "statesnap_test_stub", stub)
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    import json.tool  # noqa: F401 - a real, plain import
    assert probe.token() != token
    changes = {c.key: c for c in diff_maps("modules", before, probe.read())}
    assert changes["statesnap_test_stub"].change == "added"
    assert changes["statesnap_test_stub"].after.startswith("types.SimpleNamespace#")
    assert probe.severity_of("statesnap_test_stub", None, changes["statesnap_test_stub"].after) \
        is Severity.HIGH
    if "json.tool" in changes:  # not imported before this test
        assert probe.severity_of("json.tool", None, changes["json.tool"].after) is Severity.LOW


def test_statesnaps_own_imports_are_left_out(
        probe: ModulesProbe, ctx: ProbeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    # statesnap imports what it needs when it needs it (its own modules, psutil for process
    # details): none of it may read as the suite's import.
    for name in [n for n in sys.modules
                 if n == "colorsys" or n.startswith("statesnap.replay.repro")]:
        monkeypatch.delitem(sys.modules, name)
    before = probe.read()
    from statesnap.replay import repro  # noqa: F401 - statesnap's own, imported lazily elsewhere

    assert import_own("colorsys", ctx.own_modules) is sys.modules["colorsys"]
    assert "colorsys" in ctx.own_modules
    assert diff_maps("modules", before, probe.read()) == []
    assert not any(k.startswith("statesnap") for k in probe.read())
    # The same module imported by the suite itself would show.
    ctx.own_modules.discard("colorsys")
    assert [c.key for c in diff_maps("modules", before, probe.read())] == ["colorsys"]


def _fresh_read(ctx: ProbeContext) -> dict[str, object]:
    """What a probe that never read before finds (the whole of sys.modules described)."""
    other = ModulesProbe()
    other.setup(ctx)
    return other.read()


def test_imports_since_the_last_read_are_added_to_what_it_found(
        probe: ModulesProbe, ctx: ProbeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    before = probe.read()
    monkeypatch.setitem(sys.modules, "statesnap_test_new", types.ModuleType("x"))
    after = probe.read()
    assert [(c.key, c.change) for c in diff_maps("modules", before, after)] == [
        ("statesnap_test_new", "added")]
    assert after == _fresh_read(ctx)
    assert list(after) == list(_fresh_read(ctx))  # in sys.modules' order
    assert probe.read() == after  # nothing since: the same


@pytest.mark.parametrize("how", ["replaced", "removed", "replaced by its kind"])
def test_an_earlier_entry_changed_in_the_same_interval_as_an_import_is_seen(
        probe: ModulesProbe, ctx: ProbeContext, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    # Entries read before, then changed while a new module is imported: the read must not
    # describe the new entries only.
    monkeypatch.setitem(sys.modules, "statesnap_test_early", types.ModuleType("early"))
    monkeypatch.setitem(sys.modules, "statesnap_test_later", types.ModuleType("later"))
    before = probe.read()
    if how == "removed":
        monkeypatch.delitem(sys.modules, "statesnap_test_early")
    else:
        stub = types.ModuleType("early") if how == "replaced by its kind" else object()
        sys.modules["statesnap_test_early"] = stub  # in place: its position stays
    monkeypatch.setitem(sys.modules, "statesnap_test_new", types.ModuleType("new"))
    after = probe.read()
    changes = {c.key: c.change for c in diff_maps("modules", before, after)}
    assert changes == {"statesnap_test_early": "removed" if how == "removed" else "changed",
                       "statesnap_test_new": "added"}
    assert after == _fresh_read(ctx)
