"""The attributes probe's choice of the project's modules: the quick first scan decides as the
full tests do, for every kind of entry ``sys.modules`` can hold."""

from __future__ import annotations

import itertools
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from statesnap.probes import ProbeContext
from statesnap.probes.attributes import _projectmods
from statesnap.probes.attributes._projectmods import _ABNORMAL_LAST, ProjectModules, outside_in
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.attributes.scan import is_normal_path

PARTS = ["a", "", ".", "..", "...", ".a", "a.", "proj", "projx"]


def test_a_folder_answers_for_every_file_in_it() -> None:
    """``outside_in(folder)`` with a good last part is exactly the per-file test, over every
    path of up to three parts drawn from odd ones (empty, dots, a root's name and a longer
    one), with roots given as the probe gives them."""
    roots = [("/proj/",), ("/proj/", "/a/projx/"), ("/",)]
    checked = 0
    for n in range(1, 4):
        for parts in itertools.product(PARTS, repeat=n):
            for lead in ("/", "//", ""):
                file = lead + "/".join(parts)
                folder, _, last = file.rpartition("/")
                if not folder:
                    continue  # decided by is_project itself
                for prefixes in roots:
                    quick = outside_in(folder, prefixes) and last not in _ABNORMAL_LAST
                    full = is_normal_path(file) and not file.startswith(prefixes)
                    assert quick == full, (file, prefixes)
                    checked += 1
    assert checked > 2000


class _Text(str):
    """A file name of a str subclass: never taken by the inline test."""


def _module(name: str, file: object = None, has_file: bool = True) -> types.ModuleType:
    m = types.ModuleType(name)
    if has_file:
        m.__file__ = file  # type: ignore[assignment]
    return m


def _entries(root: Path) -> list[tuple[Any, Any]]:
    venv = root / ".venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    r = str(root)
    files: list[object] = [
        f"{r}/pkg/mod.py", f"{r}/mod.py", f"{r}/.venv/lib/site-packages/x.py",
        f"{r}/site-packages/y.py", f"{r}x/mod.py", f"{r}/../{root.name}/pkg/m.py",
        f"{r}//pkg/m.py", f"{r}/pkg/./m.py", f"{r}/pkg/", r, "/usr/lib/python3/os.py",
        "/usr/lib//python3/os.py", "/usr/lib/python3/.", "/usr/lib/python3/..", "/x.py", "/",
        "", "rel/mod.py", "mod.py", _Text(f"{r}/pkg/sub.py"), _Text("/usr/lib/os.py"), 42, None,
    ]
    out: list[tuple[Any, Any]] = [(f"m{i}", _module(f"m{i}", f)) for i, f in enumerate(files)]
    out += [("nofile", _module("nofile", has_file=False)),
            ("statesnap", _module("statesnap", f"{r}/statesnap/__init__.py")),
            ("statesnap.x", _module("statesnap.x", f"{r}/statesnap/x.py")),
            ("statesnapx", _module("statesnapx", f"{r}/statesnapx.py")),
            ("pkgx", _module("pkgx", "/usr/lib/pkgx/__init__.py")),
            ("pkgx.sub", _module("pkgx.sub", "/usr/lib/pkgx/sub.py")),
            ("planted", object()), (42, _module("int-named", f"{r}/int.py"))]
    taken = {n for n, _ in out}
    return out + [(n, m) for n, m in sys.modules.items() if n not in taken]


def _rescanned(probe: AttributesProbe, items: list[tuple[Any, Any]]) -> list[str]:
    """The modules the probe tracks after a rescan of ``items`` as ``sys.modules`` (bound
    for the rescan only: nothing is imported meanwhile)."""
    saved = sys.modules
    sys.modules = dict(items)
    try:
        probe._rescan()
    finally:
        sys.modules = saved
    return [t.name for t in probe._mods]


@pytest.mark.parametrize("packages", [(), ("pkgx",), ("statesnap",)])
def test_the_scan_decides_each_entry_as_is_project_does(tmp_path: Path,
                                                        packages: tuple[str, ...]) -> None:
    root = tmp_path / "proj"
    items = _entries(root)
    roots = (str(root), os.path.realpath(root))

    def expected(name: Any, module: Any) -> bool:
        reference = ProjectModules()
        reference.setup(roots, packages)
        try:
            return reference.is_project(name, module)
        except Exception:
            return False

    want = [(n, m) for n, m in items if expected(n, m)]
    scan = ProjectModules()
    scan.setup(roots, packages)
    assert scan.first_scan(items) == want
    assert any(n == "m0" for n, _ in want)  # the cases include project modules

    # The probe: its first scan, then rescans that find most modules decided.
    probe = AttributesProbe()
    probe.setup(ProbeContext(rootdir=root, packages=packages))
    assert _rescanned(probe, items) == [n for n, _ in want]
    assert _rescanned(probe, items) == [n for n, _ in want]  # all decided: from the memo
    # A module imported again (a fresh object under the same name) is decided again.
    items = [(n, _module("m0", "/usr/lib/m0.py")) if n == "m0" else (n, m) for n, m in items]
    assert _rescanned(probe, items) == [n for n, m in items if expected(n, m)]
    assert "m0" not in _rescanned(probe, items)
    # New modules, one of them the project's, between known ones: sys.modules' order.
    items = [*items[:3], ("new.lib", _module("new.lib", "/usr/lib/new.py")),
             ("new.proj", _module("new.proj", f"{root}/new/proj.py")), *items[3:],
             ("late.proj", _module("late.proj", f"{root}/late.py"))]
    names = [n for n, m in items if expected(n, m)]
    assert names[:2] == ["m1", "new.proj"] and names[-1] == "late.proj"
    assert _rescanned(probe, items) == names


def test_a_folder_is_tested_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first scan's cost: 50 modules of one folder outside the roots take one path test,
    not one each."""
    calls: list[str] = []

    def counted(file: str) -> bool:
        calls.append(file)
        return is_normal_path(file)

    monkeypatch.setattr(_projectmods, "is_normal_path", counted)
    items = [(f"lib{i}", _module(f"lib{i}", f"/usr/lib/python3/lib{i}.py")) for i in range(50)]
    scan = ProjectModules()
    scan.setup((str(tmp_path),), ())
    assert scan.first_scan(items) == []
    assert len(calls) == 1, len(calls)
