"""docs/ARCHITECTURE.md's module list matches the tree; no file of the repository points outside
it (a design document elsewhere, this machine's folders)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _module_map() -> ModuleType:
    spec = importlib.util.spec_from_file_location("module_map", REPO / "scripts" / "module_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_list_is_the_one_generated_from_the_tree() -> None:
    mm = _module_map()
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert mm.replaced(doc, mm.module_map()) == doc, (
        "docs/ARCHITECTURE.md's module list is out of date: "
        "run python scripts/module_map.py --write")


def test_the_module_list_names_every_module_once() -> None:
    listed = re.findall(r"^- `([\w/]+\.py)`:", _module_map().module_map(), re.M)
    package = REPO / "src" / "statesnap"
    on_disk = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert sorted(listed) == on_disk
    assert "probes/base.py" in listed and "cli/__init__.py" in listed


def test_module_map_write_puts_the_list_between_the_markers(tmp_path: Path) -> None:
    mm = _module_map()
    pkg = tmp_path / "statesnap"
    (pkg / "base").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The root.\n\nMore."""\n')
    (pkg / "base" / "__init__.py").write_text('"""Bottom\nlayer."""\n')
    (pkg / "base" / "x.py").write_text("X = 1\n")
    text = f"intro\n{mm.START}\nstale\n{mm.END}\nafter\n"
    out = mm.replaced(text, mm.module_map(pkg))
    assert out == (f"intro\n{mm.START}\n**package root**\n\n- `__init__.py`: The root.\n\n"
                   "**base/**\n\n- `base/__init__.py`: Bottom layer.\n- `base/x.py`: \n"
                   f"{mm.END}\nafter\n")


def test_module_map_without_markers_is_one_line_and_exit_2(tmp_path: Path) -> None:
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text("no markers\n")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "module_map.py"), "--write",
                        f"--doc={doc}"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "markers are missing" in r.stderr
    assert doc.read_text() == "no markers\n"


def test_module_map_writes_markdown_for_rest_markup() -> None:
    mm = _module_map()
    text = "A :class:`~statesnap.replay.runner.Runner` for ``x``, see :mod:`statesnap.hunt`."
    assert mm.markdown(text) == "A `Runner` for `x`, see `statesnap.hunt`."
#: What the repository's text may not name: a design document that is not in the repository,
#: or folders of the machine it was written on.
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared|shared/seeds|/work/")


def test_nothing_in_the_repository_points_outside_it() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    assert "docs/ARCHITECTURE.md" in tracked and "src/statesnap/__init__.py" in tracked
    hits = []
    for name in tracked:
        path = REPO / name
        if not name or path == Path(__file__).resolve() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images, compiled files
        hits += [f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
                 if OUTSIDE.search(line)]
    assert hits == []
