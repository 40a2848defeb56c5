"""The project fixtures a failing test requests: part of the code it runs.

``def test_x(propagation_logger, handler)`` gets its logger from a ``conftest.py`` fixture that
imports ``PropagationLogger`` inside its body; the test's own lines never name the class whose
attribute an earlier test changed, so ranking saw nothing connecting the two and put an
unrelated logger's change first.  Found by name, as pytest finds them: in the test's class, its
module, then the ``conftest.py`` files from its folder up to the rootdir; the fixtures those
request too (a few levels).  Pure AST functions; the reading is
:mod:`statesnap.analysis.victimcode`'s.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

#: How deep fixtures requesting fixtures are followed, and how many are read per test.
MAX_DEPTH = 3
MAX_FIXTURES = 12

Func = ast.FunctionDef | ast.AsyncFunctionDef


def is_fixture(node: ast.AST) -> bool:
    """Whether ``node`` is a function decorated ``@pytest.fixture`` (with or without
    arguments, or imported as ``fixture``)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else (
            target.id if isinstance(target, ast.Name) else "")
        if name in ("fixture", "yield_fixture"):
            return True
    return False


def requested(func: Func) -> list[str]:
    """The fixture names a test or fixture function requests (its parameters)."""
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    return [a.arg for a in args if a.arg not in ("self", "cls", "request")]


def fixtures_in(body: Iterable[ast.stmt]) -> dict[str, Func]:
    """The fixtures defined directly in ``body`` (a module's or a class's), by name."""
    return {n.name: n for n in body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_fixture(n)}


def local_imports(func: ast.AST, package: str) -> dict[str, str]:
    """Imports inside a function's body (``from pysllo.loggers import PropagationLogger`` in
    a fixture): local name -> the dotted module or module attribute.  ``package``: the
    package a relative import starts from."""
    out: dict[str, str] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".", 1)[0]] = (
                    a.name if a.asname else a.name.split(".", 1)[0])
        elif isinstance(n, ast.ImportFrom):
            base = absolute(n.module, n.level, package)
            if base:
                for a in n.names:
                    out[a.asname or a.name] = f"{base}.{a.name}"
    return out


def absolute(module: str | None, level: int, package: str) -> str:
    """The module ``from {'.' * level}{module} import ...`` names, seen from ``package``;
    empty where it climbs out of it."""
    if not level:
        return module or ""
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or not parts:
        return ""
    base = parts[:len(parts) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def reexports(tree: ast.Module, package: str, names: Iterable[str]) -> dict[str, str]:
    """Which of ``names`` a module only imports from another (``from .propagation_logger
    import PropagationLogger`` in a package's ``__init__``): name -> that module."""
    wanted = set(names)
    out: dict[str, str] = {}
    for n in tree.body:
        if isinstance(n, ast.ImportFrom):
            base = absolute(n.module, n.level, package)
            for a in n.names:
                if base and (a.asname or a.name) in wanted:
                    out[a.asname or a.name] = base
    return out
