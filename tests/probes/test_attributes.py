"""The ``attributes`` probe against real modules written to a temporary project and imported."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.attributes._refresh import refresh
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.attributes.scan import Tracked, module_namespace
from statesnap.probes.base import ProbeContext, Severity
from statesnap.state.diff import Change, diff_maps

_counter = itertools.count()

MODULE = """
import functools, types
from unittest import mock

REGISTRY = []
CONFIG = {"mode": "fast", "plugins": ["a"]}
SEEN = set()
LIMIT = 10
API_TOKEN = "hunter2-secret"
settings = types.SimpleNamespace(debug=False)
# A mock claims to be what it mocks (its __class__ is dict): described by its real type.
FAKE_DICT = mock.MagicMock(spec=dict)

def helper():
    return 1

@functools.lru_cache(maxsize=None)
def lookup(x):
    return x * 2

class Base:
    inherited = "base"

class Widget(Base):
    count = 0
    items = []

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def square(x):
        return x * x
"""


class Project:
    """A package written under ``root`` and imported for real."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name

    def write(self, module: str, source: str) -> None:
        path = self.root / self.name / f"{module}.py"
        path.write_text(textwrap.dedent(source))

    def load(self, module: str) -> types.ModuleType:
        importlib.invalidate_caches()
        return importlib.import_module(f"{self.name}.{module}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    # A fresh package name per test: nothing cached from an earlier test can answer for it.
    name = f"snapproj{next(_counter)}_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / "proj"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    p = Project(root, name)
    p.write("mod", MODULE)
    yield p
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def _probe(root: Path, **kw: Any) -> AttributesProbe:
    probe = AttributesProbe()
    probe.setup(ProbeContext(rootdir=root, redactor=Redactor(), **kw))
    return probe


def _changes(probe: AttributesProbe, before: dict[str, Any]) -> dict[str, Change]:
    return {c.key: c for c in diff_maps("attributes", before, probe.read())}


def _mine(probe: AttributesProbe, prefix: str) -> dict[str, Any]:
    return {k: v for k, v in probe.read().items() if k.startswith(prefix)}


def test_keys_cover_module_class_and_cache_attributes(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    m = f"{project.name}.mod"
    got = _mine(probe, m + ":")
    for name in ("REGISTRY", "CONFIG", "SEEN", "LIMIT", "settings", "helper", "lookup",
                 "Widget", "Widget.count", "Widget.items", "Widget.square"):
        assert f"{m}:{name}" in got, name
    assert got[f"{m}:LIMIT"] == "10"
    assert got[f"{m}:FAKE_DICT"].startswith("<unittest.mock.MagicMock> #")
    assert not mod.FAKE_DICT.mock_calls  # never called, iterated or measured
    assert got[f"{m}:lookup#cache"].startswith("currsize=0")
    assert got[f"{m}:Widget.square#cache"].startswith("currsize=0")
    # Dunders, inherited attributes and class machinery are not state of this module.
    # Dunders are left out; a class's live subclasses are the one dunder-named key.
    assert not [k for k in got if "__" in k.split(":", 1)[1]
                and not k.endswith(".__subclasses__")]
    assert got[f"{m}:Base.__subclasses__"].startswith(f"[{m}.Widget #")
    assert f"{m}:Widget.inherited" not in got
    assert f"{m}:Base.inherited" in got
    assert mod.Widget.inherited == "base"
    # The package binds its submodule: an ordinary module attribute.
    assert probe.read()[f"{project.name}:mod"].startswith("module ")


def test_secret_looking_names_are_redacted_but_changes_show(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    key = f"{project.name}.mod:API_TOKEN"
    before = probe.read()
    assert "hunter2" not in json.dumps(before)
    assert before[key].startswith("<redacted:")
    mod.API_TOKEN = "another-secret"
    after = probe.read()
    assert after[key] != before[key] and "another" not in json.dumps(after)


def test_unchanged_state_keeps_the_token_and_the_map(project: Project) -> None:
    project.load("mod")
    probe = _probe(project.root)
    probe.read()
    token, light, first = probe.token(), probe.light_token(), probe.read()
    assert probe.token() == token
    assert probe.light_token() == light
    assert probe.read() is first  # nothing moved: the same map, skipped by identity in diffs


@pytest.mark.parametrize(
    ("what", "mutate", "key", "light_sees_it"),
    [
        ("list append", lambda m: m.REGISTRY.append("x"), "REGISTRY", True),
        ("list item replaced", lambda m: m.CONFIG["plugins"].__setitem__(0, "b"), "CONFIG",
         False),
        ("dict value, same length", lambda m: m.CONFIG.__setitem__("mode", "slow"), "CONFIG",
         True),
        ("nested list append", lambda m: m.CONFIG["plugins"].append("z"), "CONFIG", True),
        ("set add", lambda m: m.SEEN.add(3), "SEEN", True),
        ("namespace attribute", lambda m: setattr(m.settings, "debug", True), "settings", True),
        ("rebinding", lambda m: setattr(m, "helper", lambda: 2), "helper", True),
        ("class attribute", lambda m: setattr(m.Widget, "count", 5), "Widget.count", True),
        ("class-level list", lambda m: m.Widget.items.append(1), "Widget.items", True),
        ("cache fill", lambda m: m.lookup(21), "lookup#cache", True),
        ("method cache fill", lambda m: m.Widget.square(3), "Widget.square#cache", True),
    ],
)
def test_each_kind_of_change_moves_the_token_and_shows(
    project: Project, what: str, mutate: Callable[[Any], None], key: str, light_sees_it: bool
) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    before = probe.read()
    token, light = probe.token(), probe.light_token()
    mutate(mod)
    assert probe.token() != token, what
    # The light token (checkpoints) sees rebinding, dict changes and length changes; a
    # same-length list change waits for the full token.
    assert (probe.light_token() != light) is light_sees_it, what
    changes = _changes(probe, before)
    full_key = f"{project.name}.mod:{key}"
    assert list(changes) == [full_key], what
    assert changes[full_key].change == "changed"


def test_in_place_change_keeps_the_identity_tag_rebinding_changes_it(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    key = f"{project.name}.mod:REGISTRY"
    first = probe.read()[key]
    mod.REGISTRY.append(1)
    appended = probe.read()[key]
    mod.REGISTRY = [1]  # an equal list, but code holding the old one no longer sees it
    rebound = probe.read()[key]

    def tag(text: str) -> str:
        return next(part for part in text.split() if part.startswith("#"))

    assert tag(first) == tag(appended) != tag(rebound)
    assert "len=0" in first and "len=1" in appended and "len=1" in rebound
    assert appended != rebound


def test_added_and_removed_attributes(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    before = probe.read()
    mod.LAZY_CLIENT = object()
    del mod.LIMIT
    changes = _changes(probe, before)
    m = f"{project.name}.mod"
    assert changes[f"{m}:LAZY_CLIENT"].change == "added"
    assert changes[f"{m}:LIMIT"].change == "removed"


def test_new_modules_are_picked_up_when_sys_modules_grows(project: Project) -> None:
    project.load("mod")
    probe = _probe(project.root)
    before = probe.read()
    project.write("late", "STATE = []\n")
    late = project.load("late")
    changes = _changes(probe, before)
    # The new module's own attributes are not "added" one by one (the modules probe says it
    # was imported); binding the submodule on the package is a plain import: low severity.
    assert set(changes) == {f"{project.name}:late"}
    bound = changes[f"{project.name}:late"]
    assert probe.severity_of(bound.key, bound.before, bound.after) == Severity.LOW
    # But from now on it is watched: a change to it is one.
    imported = probe.read()
    late.STATE.append(1)
    changes = _changes(probe, imported)
    assert changes[f"{project.name}.late:STATE"].change == "changed"
    # And an attribute added to a module that has none of its own yet is a change too.
    project.write("empty", "")
    empty = project.load("empty")
    loaded = probe.read()
    empty.FLAG = True
    assert _changes(probe, loaded)[f"{project.name}.empty:FLAG"].change == "added"


def test_huge_containers_are_sampled(project: Project) -> None:
    project.write("big", "BIG = list(range(100000))\n")
    mod = project.load("big")
    probe = _probe(project.root)
    key = f"{project.name}.big:BIG"
    before = probe.read()[key]
    assert "sampled" in before and "len=100000" in before
    token = probe.token()
    mod.BIG.append(-1)
    assert probe.token() != token
    assert "len=100001" in probe.read()[key]


def test_which_modules_count_as_the_project(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.load("mod")
    # A virtual environment inside the project: found by its pyvenv.cfg.
    venv = project.root / ".venv"
    site = venv / "lib" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    vname = f"{project.name}_vendored"
    (site / f"{vname}.py").write_text("X = []\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    oname = f"{project.name}_outside"
    (elsewhere / f"{oname}.py").write_text("Y = []\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(elsewhere))
    importlib.invalidate_caches()
    importlib.import_module(vname)
    importlib.import_module(oname)
    try:
        keys = set(_probe(project.root).read())
        assert f"{project.name}.mod:REGISTRY" in keys
        assert not any(k.startswith((vname, oname)) for k in keys)
        assert not any(k.startswith("statesnap") for k in keys)
        # Named packages count wherever they live, submodules included, and are never
        # imported by the probe.
        named = _probe(project.root, packages=(oname, "json", "statesnap_never_imported"))
        keys = set(named.read())
        assert f"{oname}:Y" in keys
        assert any(k.startswith("json.decoder:") for k in keys)
        assert "statesnap_never_imported" not in sys.modules
    finally:
        sys.modules.pop(vname, None)
        sys.modules.pop(oname, None)


def test_a_lazy_module_is_not_loaded_by_reading_it(project: Project) -> None:
    project.write("lazy", "LOADED = True\n")
    name = f"{project.name}.lazy"
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    lazy_type = type(module)  # type(), unlike any attribute access, does not load it
    assert lazy_type is not types.ModuleType
    probe = _probe(project.root)
    probe.read()
    probe.token()
    assert type(module) is lazy_type  # loading would have turned it into a plain module
    assert module.LOADED is True  # (and now it loads)
    assert type(module) is types.ModuleType


def test_restore_puts_back_rebinding_contents_and_clears_caches(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    original = probe.read()
    saved = probe.save()
    registry, config, seen, plugins = mod.REGISTRY, mod.CONFIG, mod.SEEN, mod.CONFIG["plugins"]
    helper, items = mod.helper, mod.Widget.items

    mod.REGISTRY.append("x")
    mod.CONFIG["mode"] = "slow"
    mod.CONFIG["plugins"].append("b")
    mod.SEEN.add(1)
    mod.helper = lambda: 2
    mod.Widget.count = 9
    mod.Widget.items.append("y")
    mod.settings.debug = True
    mod.NEW_GLOBAL = 1
    mod.lookup(2)
    mod.Widget.square(4)
    changed = [c.key for c in diff_maps("attributes", original, probe.read())]
    assert {k.split(":", 1)[1] for k in changed} == {
        "REGISTRY", "CONFIG", "SEEN", "helper", "Widget.count", "Widget.items", "settings",
        "NEW_GLOBAL", "lookup#cache", "Widget.square#cache"}

    done = probe.restore(saved, changed)
    assert sorted(done) == sorted(changed)
    assert diff_maps("attributes", original, probe.read()) == []
    # In place: code that holds the containers sees the old contents again.
    assert mod.REGISTRY is registry and registry == []
    assert mod.CONFIG is config and config == {"mode": "fast", "plugins": ["a"]}
    assert config["plugins"] is plugins and seen == set() and items == []
    assert mod.helper is helper and mod.Widget.count == 0 and not mod.settings.debug
    assert not hasattr(mod, "NEW_GLOBAL")
    assert mod.lookup.cache_info().currsize == 0


def test_hints_name_the_right_fix(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    probe.read()
    m = f"{project.name}.mod"
    assert "cache_clear()" in (probe.hint(f"{m}:lookup#cache", "changed") or "")
    assert "copy the module-level list/dict" in (probe.hint(f"{m}:REGISTRY", "changed") or "")
    hint = probe.hint(f"{m}:helper", "changed") or ""
    assert f"monkeypatch.setattr({m}, 'helper'" in hint
    assert f"monkeypatch.setattr({m}.Widget, 'count'" in (
        probe.hint(f"{m}:Widget.count", "changed") or "")
    assert "raising=False" in (probe.hint(f"{m}:NEW", "added") or "")
    assert mod.LIMIT == 10


def test_severities(project: Project) -> None:
    project.load("mod")
    probe = _probe(project.root)
    m = f"{project.name}.mod"
    assert probe.severity_of(f"{m}:helper", "a", "b") == Severity.HIGH
    # A cache filling on its own: LOW (the tracker raises it where the test changed state
    # the function may compute from: tests/probes/test_memo_and_subclass_severity.py).
    assert probe.severity_of(f"{m}:lookup#cache", "currsize=0", "currsize=1") == Severity.LOW
    assert probe.is_memo(f"{m}:lookup#cache") and not probe.is_memo(f"{m}:helper")


SUITE_HELPER = """
SHARED = []
"""

SUITE_TESTS = """
import helper

def test_a_registers():
    helper.SHARED.append("from a")

def test_b_expects_empty():
    assert helper.SHARED == []
"""


def test_plugin_names_the_test_that_mutated_a_module_list(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(helper=SUITE_HELPER, test_shared=SUITE_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "attributes",
    )
    result.assert_outcomes(passed=1, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: [x["key"] for x in t["leaks"]] for t in summary["tests"]}
    assert leaks["test_a_registers"] == ["helper:SHARED"]
    assert leaks["test_b_expects_empty"] == []
    # pytest's assertion rewriting names never show up as state.
    assert not any("@py" in key for keys in leaks.values() for key in keys)
    finding = next(f for f in summary["findings"] if f["victim"].endswith("test_b_expects_empty"))
    assert finding["probe"] == "attributes" and finding["key"] == "helper:SHARED"
    assert finding["polluters"] == ["test_shared.py::test_a_registers"]


def test_a_bare_probe_still_hints_by_the_live_value(project: Project) -> None:
    # Session-end code asks hint() of a fresh instance that never read anything.
    project.load("mod")
    bare = AttributesProbe()
    m = f"{project.name}.mod"
    assert "copy the module-level list/dict" in (bare.hint(f"{m}:CONFIG", "changed") or "")
    assert "copy the module-level" in (bare.hint(f"{m}:Widget.items", "changed") or "")
    assert "monkeypatch.setattr" in (bare.hint(f"{m}:helper", "changed") or "")
    assert "cache_clear" in (bare.hint(f"{m}:lookup#cache", "changed") or "")


def test_a_change_is_not_lost_when_an_import_rebuilds_the_watch(project: Project) -> None:
    mod = project.load("mod")
    probe = _probe(project.root)
    before = probe.read()
    mod.REGISTRY.append("x")  # an in-place change...
    mod.Widget.count = 3
    project.write("other", "Z = 1\n")
    project.load("other")  # ...then an import: the token rescans sys.modules first
    probe.token()
    changes = _changes(probe, before)
    m = f"{project.name}.mod"
    assert {f"{m}:REGISTRY", f"{m}:Widget.count", f"{project.name}:other"} <= set(changes)
    # The new module's own attributes came with it: not changes of their own.
    assert f"{project.name}.other:Z" not in changes


MANY_CLASSES = """
import functools

SETTINGS = {"level": 1}

class Alpha:
    registry = []
    options = {"x": {"deep": []}}

class Beta:
    count = 0

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def square(x):
        return x * x

class Gamma:
    seen = set()
"""


def _described(project: Project, source: str) -> tuple[Any, Tracked, frozenset[str]]:
    project.write("many", source)
    mod = project.load("many")
    tracked = Tracked(f"{project.name}.many", mod, module_namespace(mod))
    names = frozenset({tracked.name})
    refresh(tracked, names, None, {})
    return mod, tracked, names


def _whole(tracked: Tracked, names: frozenset[str]) -> dict[str, str]:
    """The fingerprints of the module described whole, from scratch."""
    fresh = Tracked(tracked.name, tracked.module, tracked.ns)
    refresh(fresh, names, None, {})
    return fresh.fps


def test_a_change_in_one_class_redescribes_that_class_only(project: Project) -> None:
    mod, tracked, names = _described(project, MANY_CLASSES)
    m = tracked.name
    parts = dict(tracked.parts)
    assert {"SETTINGS", "Alpha", "Alpha.", "Beta", "Beta.", "Gamma", "Gamma."} <= set(parts)
    fps = dict(tracked.fps)

    # As unittest's class teardown does: an attribute set on one class.
    mod.Beta.count = 1
    assert refresh(tracked, names, None, {}, only={"Beta."})
    assert tracked.parts["Beta."] is not parts["Beta."]
    for kept in set(parts) - {"Beta."}:
        assert tracked.parts[kept] is parts[kept], kept
    assert {k for k in fps if fps[k] != tracked.fps.get(k)} == {f"{m}:Beta.count"}
    assert tracked.fps == _whole(tracked, names)


def test_a_part_redescribed_alone_is_read_from_what_its_name_binds_now(
        project: Project) -> None:
    # Asked for one part only (its class dict or container moved), but the name was bound
    # anew meanwhile: the namespace is walked, nothing is described from the old object.
    mod, tracked, names = _described(project, MANY_CLASSES)
    m = tracked.name
    mod.Beta.count = 1
    mod.Beta = type("Beta", (), {"__module__": m, "other": 2})
    mod.SETTINGS = {"level": 3}
    assert refresh(tracked, names, None, {}, only={"Beta.", "SETTINGS"})
    assert f"{m}:Beta.other" in tracked.fps and f"{m}:Beta.count" not in tracked.fps
    assert tracked.fps == _whole(tracked, names)


def test_names_rebound_added_or_deleted_are_redescribed_alone(project: Project) -> None:
    mod, tracked, names = _described(project, MANY_CLASSES)
    m = tracked.name
    parts = dict(tracked.parts)
    original = mod.SETTINGS
    # As click's test runner does: a module attribute swapped for the test, then put back.
    mod.SETTINGS = {"level": 2}
    assert refresh(tracked, names, None, {}, only={""})
    assert tracked.fps[f"{m}:SETTINGS"] != parts["SETTINGS"].fps[f"{m}:SETTINGS"]
    assert [k for k in parts if tracked.parts[k] is not parts[k]] == ["SETTINGS"]
    mod.SETTINGS = original
    assert refresh(tracked, names, None, {}, only={""})
    assert tracked.fps == _whole(tracked, names)
    # Added and deleted names, and a class rebound to another class.
    mod.NEW = [1]
    del mod.Gamma
    mod.Alpha = type("Alpha", (), {"__module__": m, "fresh": 1})
    assert refresh(tracked, names, None, {}, only={""})
    assert f"{m}:NEW" in tracked.fps
    assert not [k for k in tracked.fps if k.startswith(f"{m}:Gamma")]
    assert f"{m}:Alpha.fresh" in tracked.fps and f"{m}:Alpha.registry" not in tracked.fps
    assert tracked.fps == _whole(tracked, names)
    assert tracked.parts["Beta."] is parts["Beta."]


@pytest.mark.parametrize(("change", "key"), [
    (lambda mod: mod.Alpha.registry.append(1), "Alpha.registry"),
    (lambda mod: mod.Alpha.options["x"]["deep"].append(1), "Alpha.options"),
    (lambda mod: mod.Gamma.seen.add("a"), "Gamma.seen"),
    (lambda mod: mod.Beta.square(3), "Beta.square#cache"),
    (lambda mod: mod.SETTINGS.update(level=2), "SETTINGS"),
    (lambda mod: setattr(mod, "Gamma", type("Gamma", (), {"__module__": mod.__name__})),
     "Gamma"),
])
def test_in_place_changes_in_any_part_are_seen_after_another_part_moved(
        project: Project, change: Callable[[Any], object], key: str) -> None:
    project.write("many", MANY_CLASSES)
    mod = project.load("many")
    probe = _probe(project.root)
    m = f"{project.name}.many"
    before = probe.read()
    mod.Beta.count = 1  # one class re-described alone first
    after_first = probe.read()
    assert {c.key for c in diff_maps("attributes", before, after_first)} == {
        f"{m}:Beta.count"}
    change(mod)
    got = _changes(probe, after_first)
    assert f"{m}:{key}" in got, sorted(got)


def test_restoring_after_a_partial_redescription_puts_every_part_back(
        project: Project) -> None:
    project.write("many", MANY_CLASSES)
    mod = project.load("many")
    probe = _probe(project.root)
    m = f"{project.name}.many"
    saved = probe.save()
    before = probe.read()
    mod.Beta.count = 5
    probe.read()  # Beta alone re-described
    mod.Alpha.registry.append("x")
    mod.Alpha.options["x"]["deep"].append("y")
    changed = [c.key for c in diff_maps("attributes", before, probe.read())]
    assert set(changed) == {f"{m}:Beta.count", f"{m}:Alpha.registry", f"{m}:Alpha.options"}
    assert sorted(probe.restore(saved, changed)) == sorted(changed)
    assert mod.Beta.count == 0
    assert mod.Alpha.registry == []
    assert mod.Alpha.options == {"x": {"deep": []}}
    assert not diff_maps("attributes", before, probe.read())
