"""What a failing test's code reaches: its own source, the project modules it uses, theirs.

Ranking reads it to weigh what connects a recorded change to the victim (the logger its code
logs to, the module whose cache it reads, the variable the function it calls looks up), so
that an unrelated test's change of another kind does not come first.  Read from the rootdir
the record names; a file that cannot be read or parsed gives nothing (ranking falls back to
the failure's text).  Parsed files are kept for the session: victims share files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from statesnap.analysis import victimfixtures
from statesnap.analysis.victimresets import resets

#: Larger files are not parsed: ranking must stay cheap on generated test modules.
MAX_SOURCE_BYTES = 2_000_000


@dataclass
class VictimCode:
    """The victim's function text, the project modules it uses, and the code it calls."""

    #: The test function's (and its class's set-up's) source.
    code: str = ""
    #: Dotted names of the modules the function uses (``zooapp.cache`` for ``cache.price()``
    #: after ``from zooapp import cache``), libraries' included.
    modules: set[str] = field(default_factory=set)
    #: Per project module the function uses: the source of what it calls there (the
    #: functions and classes it names).
    reached: dict[str, str] = field(default_factory=dict)
    #: Per such module: its own top-level statements other than definitions (its imports and
    #: globals: ``log = logging.getLogger("zooapp")``).
    toplevel: dict[str, str] = field(default_factory=dict)
    #: ``probe:key`` of state the test sets itself before reading it (``reload(config)``,
    #: ``config.X = ...``, a logger's ``setLevel``): :mod:`statesnap.analysis.victimresets`.
    resets: set[str] = field(default_factory=set)
    #: The test function's parameters (fixtures): a bare name in its code that is one of
    #: these is that fixture's value, not a module of the same name.
    params: set[str] = field(default_factory=set)

    @property
    def reached_text(self) -> str:
        """What the victim calls, with the globals of the modules it is in."""
        return "\n".join([*self.reached.values(), *self.toplevel.values()])

    def uses_module(self, name: str) -> bool:
        """Whether the function uses module ``name`` or one inside it."""
        return any(m == name or m.startswith(name + ".") for m in self.modules)

    def shares_package(self, name: str) -> bool:
        """Whether ``name`` and a module the function uses have the same top-level package."""
        top = name.split(".", 1)[0]
        return bool(top) and any(m.split(".", 1)[0] == top for m in self.modules)


class _Parsed:
    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.tree = tree
        #: Local name -> the dotted module (or module attribute) it stands for.
        self.imports: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name.split(".", 1)[0]] = (
                        a.name if a.asname else a.name.split(".", 1)[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.imports[a.asname or a.name] = f"{node.module}.{a.name}"


class SourceReader:
    """Reads victims' code under one rootdir, each file parsed once."""

    def __init__(self, rootdir: Path | str | None) -> None:
        self.root = Path(rootdir) if rootdir else None
        self._files: dict[Path, _Parsed | None] = {}

    def _parse(self, path: Path) -> _Parsed | None:
        if path not in self._files:
            parsed = None
            try:
                if path.is_file() and path.stat().st_size <= MAX_SOURCE_BYTES:
                    text = path.read_text(encoding="utf-8", errors="replace")
                    parsed = _Parsed(text, ast.parse(text))
            except (OSError, SyntaxError, ValueError, RecursionError):
                parsed = None
            self._files[path] = parsed
        return self._files[path]

    def _module_file(self, dotted: str) -> tuple[str, Path] | None:
        """The module (or the module an attribute is of) and its file under the rootdir."""
        if self.root is None:
            return None
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            rel = Path(*parts[:n])
            for base in (self.root, self.root / "src"):
                for cand in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
                    if cand.is_file():
                        return ".".join(parts[:n]), cand
        return None

    def methods(self, module: str, cls: str) -> dict[str, str]:
        """The source of each function class ``cls`` of project module ``module`` defines
        (none where either is not under the rootdir)."""
        found = self._module_file(module)
        mod = self._parse(found[1]) if found is not None and found[0] == module else None
        if mod is None:
            return {}
        node = next((n for n in mod.tree.body
                     if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if node is None:
            return {}
        return {n.name: ast.get_source_segment(mod.text, n) or "" for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def _lookup(self, dotted: str) -> tuple[str, ast.Module] | None:
        """The project module ``dotted`` is (or is in), parsed."""
        found = self._module_file(dotted)
        parsed = self._parse(found[1]) if found is not None else None
        return (found[0], parsed.tree) if found is not None and parsed is not None else None

    def _fixtures(self, rel: str, parsed: _Parsed, names: list[str],
                  test: ast.AST) -> list[tuple[_Parsed, ast.AST, str]]:
        """The project fixtures ``test`` requests, and theirs: ``(file, function, package)``,
        found where pytest finds them (its class, its module, then the conftests up to the
        rootdir, nearest first)."""
        assert self.root is not None
        scopes: list[tuple[_Parsed, dict[str, victimfixtures.Func], str]] = []
        here = Path(rel).parent
        package = ".".join(here.parts)
        if len(names) > 1:
            scope: list[ast.stmt] = list(parsed.tree.body)
            for name in names[:-1]:  # the test's classes, innermost last
                cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == name),
                           None)
                if cls is None:
                    break
                scopes.insert(0, (parsed, victimfixtures.fixtures_in(cls.body), package))
                scope = list(cls.body)
        scopes.append((parsed, victimfixtures.fixtures_in(parsed.tree.body), package))
        for folder in [here, *here.parents]:
            conftest = self._parse(self.root / folder / "conftest.py")
            if conftest is not None:
                scopes.append((conftest, victimfixtures.fixtures_in(conftest.tree.body),
                               ".".join(folder.parts)))
        out: list[tuple[_Parsed, ast.AST, str]] = []
        seen: set[str] = set()
        wanted = victimfixtures.requested(test) if isinstance(
            test, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        for _ in range(victimfixtures.MAX_DEPTH):
            more: list[str] = []
            for name in wanted:
                if name in seen or len(out) >= victimfixtures.MAX_FIXTURES:
                    continue
                seen.add(name)
                found = next(((f, defs[name], pkg) for f, defs, pkg in scopes if name in defs),
                             None)
                if found is not None:
                    out.append(found)
                    more += victimfixtures.requested(found[1])
            wanted = more
        return out

    def _follow(self, name: str, path: Path, mod: _Parsed, wanted: set[str],
                modules: set[str], reached: dict[str, str], toplevel: dict[str, str]) -> None:
        """What the test reaches in module ``name``; a name the module only imports from
        another project module (a package's ``__init__``) is followed there, once."""
        defs, top = _parts(mod, wanted)
        reached[name] = "\n".join(filter(None, (reached.get(name), defs)))
        toplevel[name] = top
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for attr, source in victimfixtures.reexports(mod.tree, package, wanted).items():
            found = self._module_file(f"{source}.{attr}")
            other = self._parse(found[1]) if found is not None else None
            if found is None or other is None or found[0] == name:
                continue
            modules.add(found[0])
            defs, top = _parts(other, {attr})
            reached[found[0]] = "\n".join(filter(None, (reached.get(found[0]), defs)))
            toplevel[found[0]] = top

    def of(self, nodeid: str) -> VictimCode:
        """The code of the test ``nodeid`` (``path::[Class::]name[params]``), with the
        project fixtures it requests."""
        if self.root is None or "::" not in nodeid:
            return VictimCode()
        rel, _, rest = nodeid.partition("::")
        parsed = self._parse(self.root / rel)
        if parsed is None:
            return VictimCode()
        names = [n.split("[", 1)[0] for n in rest.split("::")]
        nodes = _find(parsed.tree, names)
        if not nodes:
            return VictimCode()
        # Each source with the imports its names resolve by: the test's (its module's), then
        # each fixture's (its file's and its body's: a fixture often imports what it builds).
        # Not the test body's own imports: ``import pkg as d`` there made every attribute of
        # ``pkg`` "used" (l293d: an innocent test's rebinding of ``pkg.pins_in_use`` outranked
        # the class attribute the failure was about).
        sources = [(parsed, nodes, parsed.imports)]
        for file, func, pkg in self._fixtures(rel, parsed, names, nodes[-1]):
            sources.append((file, [func], {**file.imports,
                                           **victimfixtures.local_imports(func, pkg)}))
        code = "\n".join(ast.get_source_segment(file.text, n) or ""
                         for file, found, _ in sources for n in found)
        modules: set[str] = set()
        reached: dict[str, str] = {}
        toplevel: dict[str, str] = {}
        for _, found, imports in sources:
            used: dict[str, set[str]] = {}  # local name -> attributes read off it
            for node in found:
                for n in ast.walk(node):
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                        used.setdefault(n.value.id, set()).add(n.attr)
                    elif isinstance(n, ast.Name):
                        used.setdefault(n.id, set())
            for local in sorted(used):
                target = imports.get(local)
                if target is None:
                    continue
                where = self._module_file(target)
                if where is None:
                    modules.add(target)  # a library's: still a name ranking can match
                    continue
                name, path = where
                modules.add(name)
                mod = self._parse(path)
                if mod is None:
                    continue
                # ``from M import f``: f is what it calls; ``import M`` / ``from P import M``:
                # the attributes it reads off M.
                wanted = used[local] if name == target else {target[len(name) + 1:].split(".")[0]}
                self._follow(name, path, mod, wanted, modules, reached, toplevel)
        return VictimCode(code=code, modules=modules, reached=reached, toplevel=toplevel,
                          resets=resets(nodes, parsed.imports, self._lookup),
                          params=set(victimfixtures.requested(nodes[-1])) if isinstance(
                              nodes[-1], (ast.FunctionDef, ast.AsyncFunctionDef)) else set())


def _find(tree: ast.Module, names: list[str]) -> list[ast.AST]:
    """The function ``names[-1]`` inside classes ``names[:-1]``, with the classes' set-ups."""
    scope: list[ast.stmt] = list(tree.body)
    out: list[ast.AST] = []
    for i, name in enumerate(names):
        last = i == len(names) - 1
        node = next((n for n in scope if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name), None)
        if node is None:
            return []
        if last:
            out.append(node)
            return out
        if not isinstance(node, ast.ClassDef):
            return []
        out.extend(n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name in ("setup_method", "setUp", "setup_class", "setUpClass"))
        scope = list(node.body)
    return out


def _parts(mod: _Parsed, wanted: set[str]) -> tuple[str, str]:
    """The definitions of module ``mod`` named in ``wanted``, and its top-level statements
    other than definitions."""
    defs: list[str] = []
    top: list[str] = []
    for node in mod.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in wanted:
                defs.append(ast.get_source_segment(mod.text, node) or "")
        else:
            top.append(ast.get_source_segment(mod.text, node) or "")
    return "\n".join(defs), "\n".join(top)
