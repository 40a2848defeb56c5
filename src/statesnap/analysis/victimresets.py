"""What a failing test sets itself before it uses it: state no earlier test can have broken.

A test that starts with ``reload(config)`` and ``config.REPORTER = MemoryReporter`` sees its
own ``REPORTER``, whatever an earlier test left there; one that calls
``logzero.reset_default_logger()`` (``global _loglevel; _loglevel = DEBUG``) sees its own
``_loglevel``; ``getLogger("x").setLevel(INFO)`` sets that logger's level.  Ranking put such
a change first (the victim's code names it, the failing line too) and spent a replay on an
innocent test's pair.  Read from the test's own statements, in order, each unconditional (the
top level of its body and of its class's set-up), up to the first that reads the name: a
reset inside a branch, or after a read, proves nothing.  Pure; the parsing is
:mod:`statesnap.analysis.victimcode`'s.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

#: ``dotted name -> (module, its parsed source)`` for a project module, else None.
Lookup = Callable[[str], "tuple[str, ast.Module] | None"]

#: Logger methods and attributes that set one recorded part of a logger outright.
_LOGGER_SETS = {"setLevel": "level", "propagate": "propagate", "disabled": "disabled"}


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _logger_name(node: ast.expr, loggers: dict[str, str]) -> str | None:
    """The literal logger name of ``logging.getLogger("x")`` or a local bound to one."""
    if isinstance(node, ast.Name):
        return loggers.get(node.id)
    if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        func = _dotted(node.func)
        if func and func[-1] == "getLogger":
            return node.args[0].value
    return None


def _top_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level to a new object (what ``reload`` makes again).

    Not its imports: ``reload`` binds those to the same objects, as an earlier test may have
    left them (a registry imported from another module and filled in place)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out


def _globals_set(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Module globals a function assigns unconditionally before it reads them."""
    declared = {n for s in ast.walk(func) if isinstance(s, ast.Global) for n in s.names}
    out: set[str] = set()
    seen: set[str] = set()
    for stmt in func.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name) and t.id in declared and t.id not in seen:
                    out.add(t.id)
        # A name read first saw the earlier value: not a reset for what follows.
        seen.update(n.id for n in ast.walk(stmt)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return out


def _called(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)


class _Scan:
    """The resets found so far, in the ``probe:key`` form of the record's changes."""

    def __init__(self, imports: dict[str, str], lookup: Lookup) -> None:
        self.imports = imports
        self.lookup = lookup
        self.out: set[str] = set()
        #: Attribute paths read so far (``REPORTER``, ``config``): later resets of them count
        #: no more.
        self.read: set[str] = set()
        self.loggers: dict[str, str] = {}

    def _module_attr(self, parts: list[str]) -> tuple[str, str, ast.Module | None] | None:
        """``config.REPORTER`` (``config`` imported) as ``("krllint.config", "REPORTER")``."""
        target = self.imports.get(parts[0])
        if target is None:
            return None
        full = ".".join([target, *parts[1:]])
        found = self.lookup(full)
        if found is not None:
            module, tree = found
            rest = full[len(module) + 1:]
            return (module, rest, tree) if rest else None
        # A library module (``import os``): its attribute is the rest of the path.
        return (target, ".".join(parts[1:]), None) if len(parts) > 1 else None

    def _add_attr(self, module: str, attr: str) -> None:
        if attr.split(".", 1)[0] not in self.read:
            self.out.add(f"attributes:{module}:{attr}")

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                self._assigned(t, stmt.value)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self._call(stmt.value)
        for n in ast.walk(stmt):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                self.read.add(n.attr)

    def _assigned(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            name = _logger_name(value, self.loggers)
            if name is not None:
                self.loggers[target.id] = name
            return
        if not isinstance(target, ast.Attribute):
            return
        logger = _logger_name(target.value, self.loggers)
        if logger is not None and target.attr in _LOGGER_SETS:
            self.out.add(f"logging:{logger}:{_LOGGER_SETS[target.attr]}")
            return
        parts = _dotted(target)
        found = self._module_attr(parts) if parts else None
        if found is not None:
            self._add_attr(found[0], found[1])

    def _call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, ast.Attribute):
            logger = _logger_name(func.value, self.loggers)
            if logger is not None and func.attr in _LOGGER_SETS:
                self.out.add(f"logging:{logger}:{_LOGGER_SETS[func.attr]}")
                return
        parts = _dotted(func)
        if not parts:
            return
        if parts[-1] == "reload" and len(call.args) == 1:
            arg = _dotted(call.args[0])
            target = self.imports.get(arg[0]) if arg else None
            found = self.lookup(".".join([target, *arg[1:]])) if arg and target else None
            if found is not None:
                module, tree = found
                for name in _top_names(tree):
                    self._add_attr(module, name)
            return
        # A project function it calls first: the globals it sets outright.
        found_attr = self._module_attr(parts)
        if found_attr is None or found_attr[2] is None or "." in found_attr[1]:
            return
        func_def = _called(found_attr[2], found_attr[1])
        if func_def is not None:
            for name in _globals_set(func_def):
                self._add_attr(found_attr[0], name)


def resets(nodes: Iterable[ast.AST], imports: dict[str, str], lookup: Lookup) -> set[str]:
    """``probe:key`` of the state the test's own statements set before reading it.

    ``nodes``: the test's class set-up and the test function, in the order they run;
    ``imports``: the test module's local names and what they stand for.
    """
    scan = _Scan(imports, lookup)
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for stmt in node.body:
                scan.statement(stmt)
    return scan.out
