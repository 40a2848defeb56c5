"""Names of a module rebound and put back: only the rebound names are described again.

A test that monkeypatches a module function (click's suite patches ``isatty`` in dozens of
tests) moves the namespace between the call and the teardown.  The probe then re-describes
the rebound names alone instead of walking the namespace; these tests pin that the map it
keeps is, after each step, the one a fresh probe reads by a whole walk, including the cases
that must fall back to the walk (a dunder left out for what it bound, a class rebound, a name
added).  Real modules, written to a temporary package and imported.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from module_sources import imported_module
from statesnap.base.redact import Redactor
from statesnap.probes.attributes import _refresh
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext

SOURCE = """
LIMIT = 10
NAMES = ["a"]

def helper():
    return 1

def isatty(stream):
    return False

def __hook__():
    return None

class Settings:
    def __init__(self):
        for i in range(40):
            setattr(self, f"opt{i}", i)

SETTINGS = Settings()

class Widget:
    count = 0
"""

_counter = itertools.count()


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    yield from imported_module(tmp_path, monkeypatch, f"reboundproj{next(_counter)}_", SOURCE)


def _probe(root: Path) -> AttributesProbe:
    p = AttributesProbe()
    p.setup(ProbeContext(rootdir=root, redactor=Redactor()))
    p.token()
    p.read()
    return p


def _read(probe: AttributesProbe) -> dict[str, Any]:
    probe.token()
    return dict(probe.read())


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names described one by one (attribute parts) since the fixture was set up."""
    names: list[str] = []
    real = _refresh._describe_attribute

    def counting(t: Any, name: str, *args: Any) -> Any:
        names.append(name)
        return real(t, name, *args)

    monkeypatch.setattr(_refresh, "_describe_attribute", counting)
    return names


Step = Callable[[types.ModuleType], None]

STEPS: list[tuple[str, Step]] = [
    ("a function patched", lambda m: setattr(m, "isatty", lambda s: True)),
    ("put back", lambda m: setattr(m, "isatty", m.__dict__["_saved"])),
    ("a scalar rebound", lambda m: setattr(m, "LIMIT", 11)),
    ("a list rebound to a dict", lambda m: setattr(m, "NAMES", {"b": 1})),
    ("an instance with a large namespace rebound", lambda m: setattr(m, "SETTINGS",
                                                                     m.Settings())),
    ("a value put where a function was", lambda m: setattr(m, "helper", 5)),
    # Left out while callable (a special-method-like dunder), watched once it binds a value.
    ("a dunder left out for what it bound, bound to a value", lambda m: setattr(
        m, "__hook__", 7)),
    ("a class rebound", lambda m: setattr(m, "Widget", type("Widget", (), {"count": 3}))),
    ("a name added", lambda m: setattr(m, "EXTRA", [1])),
]


def test_each_step_reads_as_a_fresh_probe_reads(mod: types.ModuleType,
                                                tmp_path: Path) -> None:
    mod.__dict__["_saved"] = mod.isatty
    probe = _probe(tmp_path)
    for what, step in STEPS:
        step(mod)
        assert _read(probe) == _read(_probe(tmp_path)), what


def test_a_rebound_function_is_described_alone(mod: types.ModuleType, tmp_path: Path,
                                               described: list[str]) -> None:
    probe = _probe(tmp_path)
    original = mod.isatty
    before = _read(probe)
    described.clear()
    mod.isatty = lambda s: True
    patched = _read(probe)
    mod.isatty = original
    assert _read(probe) == before
    assert described == ["isatty", "isatty"]  # not the module's other names
    changed = {k for k in patched if patched[k] != before.get(k)}
    assert changed == {f"{mod.__name__}:isatty"}


def test_a_dunder_left_out_for_what_it_bound_is_watched_once_it_binds_a_value(
        mod: types.ModuleType, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    before = _read(probe)
    assert f"{mod.__name__}:__hook__" not in before
    mod.__hook__ = 7  # was a function (left out), now a value (watched)
    assert _read(probe)[f"{mod.__name__}:__hook__"] == "7"
