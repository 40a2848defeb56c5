"""The layers hold (docs/ARCHITECTURE.md): imports go one way, with no circle anywhere.

``make lint`` runs import-linter on the contracts in pyproject.toml; these tests check that it
passes on the tree and fails on a back-edge written the ways circles used to hide (inside a
function, under ``TYPE_CHECKING``), and, with a graph of every import statement, that no
module of statesnap imports itself back through others.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "statesnap"
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([str(LINT)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(SRC, tmp_path / "src" / "statesnap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


@pytest.mark.parametrize("edge", [
    "def _late():\n    from statesnap.plugin import core  # noqa: F401\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
    "    from statesnap.plugin.core import StatesnapPlugin  # noqa: F401\n",
], ids=["inside-a-function", "under-type-checking"])
def test_a_back_edge_breaks_the_layers(tmp_path: Path, edge: str) -> None:
    root = _copy(tmp_path)
    diff = root / "src" / "statesnap" / "state" / "diff.py"
    diff.write_text(diff.read_text(encoding="utf-8") + "\n\n" + edge, encoding="utf-8")
    result = _lint(root)
    assert result.returncode != 0
    assert "Layers: each imports only the layers below it BROKEN" in result.stdout
    assert "statesnap.state.diff -> statesnap.plugin.core" in result.stdout


def test_pytest_below_the_pytest_layer_breaks_the_contract(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    target = root / "src" / "statesnap" / "analysis" / "leaks.py"
    target.write_text(target.read_text(encoding="utf-8") + "\n\ndef _x():\n    import pytest\n",
                      encoding="utf-8")
    result = _lint(root)
    assert result.returncode != 0
    assert "statesnap.analysis is not allowed to import pytest" in result.stdout


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Every statesnap module to the statesnap modules it imports, wherever the statement
    stands (module level, inside a function, under ``TYPE_CHECKING``)."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_circle_inside_functions() -> None:
    # The check above is only worth something if it sees the kind it forbids.
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    graph = import_graph()
    assert "statesnap.plugin.core" in graph["statesnap"]  # imported inside pytest_configure


def test_no_module_imports_another_ones_private_names() -> None:
    offenders = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("statesnap"):
                private = [a.name for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__")
                           and not (SRC.parent / (node.module or "").replace(".", "/")
                                    / f"{a.name}.py").is_file()]
                if private:
                    offenders.append(f"{name}: from {node.module} import {', '.join(private)}")
    assert offenders == []
