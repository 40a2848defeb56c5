"""statesnap.probes.entrypoints finds what importlib.metadata.entry_points finds, and in order.

Real distributions in real folders on ``sys.path``: one shadowed by an earlier one of the same
name that has no probes, two in one folder, a zip on ``sys.path`` (importlib.metadata's own
search), and the installed environment as it is.
"""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from pathlib import Path

import pytest

from statesnap.probes.entrypoints import entry_points

GROUP = "statesnap.probes"


def _dist(site: Path, folder: str, text: str | None) -> None:
    info = site / folder
    info.mkdir(parents=True)
    name = folder.partition("-")[0]
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                                   encoding="utf-8")
    if text is not None:
        (info / "entry_points.txt").write_text(text, encoding="utf-8")


def _seen(eps: object) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, ep.group) for ep in eps]  # type: ignore[attr-defined]


def _same_as_importlib(group: str = GROUP) -> list[tuple[str, str, str]]:
    ours = _seen(entry_points(group))
    assert ours == _seen(importlib.metadata.entry_points(group=group))
    return ours


def test_the_installed_environment(listings: str) -> None:
    assert ("builtin", "statesnap.probes.builtin:builtin_probes", GROUP) in _same_as_importlib()
    _same_as_importlib("console_scripts")


@pytest.fixture(params=["cached listings", "own listings"])
def listings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways to list a folder: importlib.metadata's cached lookups, and the module's own
    (where that private cache is not as expected)."""
    import statesnap.probes.entrypoints as module

    if request.param == "own listings":
        monkeypatch.setattr(module, "_cached_lookup", lambda entry: None)
    return str(request.param)


def test_the_cached_listing_is_importlib_metadatas() -> None:
    # The fast path is taken where it can be (this Python's importlib.metadata).
    from statesnap.probes.entrypoints import _cached_lookup

    site = next(p for p in sys.path if p.endswith("site-packages"))
    found = _cached_lookup(site)
    assert found is not None
    assert any(name == "statesnap" for name, _ in found)


def test_shadowed_and_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   listings: str) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    # The first on the path wins, even with no probes: its later namesake is not installed.
    _dist(first, "Shadow_Pkg-2.0.dist-info", "[console_scripts]\nshadow = shadow:main\n")
    _dist(second, "shadow.pkg-1.0.dist-info", f"[{GROUP}]\nshadowed = shadow:probes\n")
    _dist(second, "zeta-1.0.dist-info", f"[{GROUP}]\nzeta = zeta:probes\n")
    _dist(second, "alpha-1.0.egg-info", f"[{GROUP}]\nalpha = alpha:probes\n[other]\nx = y\n")
    # A group header with spaces is another group to importlib.metadata.
    _dist(second, "spaced-1.0.dist-info", f"[ {GROUP} ]\nspaced = spaced:probes\n")
    _dist(second, "bare-1.0.dist-info", None)
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    found = _same_as_importlib()
    names = [n for n, _, _ in found]
    assert "shadowed" not in names and "spaced" not in names
    assert {"zeta", "alpha"} <= set(names)


def test_a_zip_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "probes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\n")
        z.writestr("zipped-1.0.dist-info/entry_points.txt", f"[{GROUP}]\nz = zipped:probes\n")
    monkeypatch.syspath_prepend(str(archive))
    assert str(archive) in sys.path
    assert "z" in [n for n, _, _ in _same_as_importlib()]


def test_the_names_fast_path_normalises_as_the_regular_expression_does() -> None:
    """Every name of up to five characters from letters of both cases, digits and the three
    separators, normalised with and without the fast path (no separator run to collapse)."""
    import itertools
    import re

    from statesnap.probes.entrypoints import _normalise

    def by_regex(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")

    for size in range(1, 6):
        for letters in itertools.product("aB-_.1", repeat=size):
            name = "".join(letters)
            assert _normalise(name) == by_regex(name), name
    assert _normalise("Typing_Extensions") == "typing_extensions"
    assert _normalise("zope.interface") == "zope_interface"
