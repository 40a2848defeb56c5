"""One object, one name, in the ``attributes`` probe itself (issue 29 §2): an object bound
under several module names is described and watched under its home only; each other name
reads ``alias of HOME #tag``.  A rebinding of an alias is still a change of that key; when the
home itself is rebound, the next name becomes the home and an in-place change of the object is
still seen; and the map kept step by step is the one a fresh probe reads.  Real modules,
written to a temporary folder and imported.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext

_counter = itertools.count()


class Names:
    """Three modules: ``home`` defines a registry and a project object; ``user_a`` and
    ``test_b`` bind both by ``from home import ...``."""

    def __init__(self, root: Path, prefix: str) -> None:
        self.home = f"{prefix}home"
        self.a = f"{prefix}user_a"
        self.b = f"test_{prefix}b"
        files = {
            self.home: """
                class Settings:
                    def __init__(self):
                        self.debug = False

                REGISTRY = {}
                SETTINGS = Settings()
                """,
            self.a: f"""
                from {self.home} import REGISTRY, SETTINGS
                """,
            self.b: f"""
                from {self.home} import REGISTRY, SETTINGS
                """,
        }
        for name, source in files.items():
            (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        importlib.invalidate_caches()
        # The users first: the home is chosen by what the names are, not by import order.
        self.mods = {name: importlib.import_module(name) for name in (self.b, self.a)}
        self.mods[self.home] = sys.modules[self.home]


@pytest.fixture
def names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Names]:
    monkeypatch.syspath_prepend(str(tmp_path))
    found = Names(tmp_path, f"aliasproj{next(_counter)}_")
    yield found
    for name in (found.home, found.a, found.b):
        sys.modules.pop(name, None)


def _probe(root: Path) -> AttributesProbe:
    p = AttributesProbe()
    p.setup(ProbeContext(rootdir=root, redactor=Redactor()))
    return p


def _read(probe: AttributesProbe) -> dict[str, Any]:
    probe.token()
    return dict(probe.read())


def _fresh(root: Path) -> dict[str, Any]:
    return _read(_probe(root))


def test_an_object_is_described_under_its_home_only(names: Names, tmp_path: Path) -> None:
    m = _fresh(tmp_path)
    home_key = f"{names.home}:REGISTRY"
    assert m[home_key].startswith(("{", "<dict"))
    for user in (names.a, names.b):
        assert m[f"{user}:REGISTRY"].startswith(f"alias of {home_key} #")
        assert m[f"{user}:SETTINGS"].startswith(f"alias of {names.home}:SETTINGS #")
    probe = _probe(tmp_path)
    _read(probe)
    assert probe.aliases(home_key) == sorted([f"{names.a}:REGISTRY", f"{names.b}:REGISTRY"])
    assert probe.aliases(f"{names.a}:REGISTRY") == []


def test_an_in_place_change_moves_the_home_key_alone(names: Names, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    before = _read(probe)
    names.mods[names.home].REGISTRY["x"] = 1
    names.mods[names.home].SETTINGS.debug = True
    after = _read(probe)
    moved = sorted(k for k in after if after[k] != before.get(k))
    assert moved == [f"{names.home}:REGISTRY", f"{names.home}:SETTINGS"]
    assert after == _fresh(tmp_path)


def test_a_rebound_alias_is_still_seen(names: Names, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    before = _read(probe)
    names.mods[names.a].REGISTRY = {"fresh": True}
    after = _read(probe)
    moved = sorted(k for k in after if after[k] != before.get(k))
    assert moved == [f"{names.a}:REGISTRY"]
    assert after[f"{names.a}:REGISTRY"].startswith(("{", "<dict"))
    assert after == _fresh(tmp_path)


def test_a_rebound_home_hands_the_object_to_the_next_name(names: Names, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    start = _read(probe)
    old = names.mods[names.home].REGISTRY
    names.mods[names.home].REGISTRY = {}
    moved = _read(probe)
    # The object lives on under the other names: the first of them (no test module) is its
    # home now, described in full and watched.
    assert moved[f"{names.a}:REGISTRY"].startswith(("{", "<dict"))
    assert moved[f"{names.b}:REGISTRY"].startswith(f"alias of {names.a}:REGISTRY #")
    assert moved == _fresh(tmp_path)
    old["late"] = 1  # in place, through the names left: still seen
    filled = _read(probe)
    assert filled[f"{names.a}:REGISTRY"] != moved[f"{names.a}:REGISTRY"]
    assert filled == _fresh(tmp_path)
    names.mods[names.home].REGISTRY = old  # put back: the first map's home again
    old.pop("late")
    back = _read(probe)
    assert back == start
