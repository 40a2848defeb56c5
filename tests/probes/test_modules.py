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
