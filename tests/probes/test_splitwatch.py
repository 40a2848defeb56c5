"""The ``attributes`` probe's watch in two halves (``_splitwatch``): a module whose watched
objects are replaced before every test (a configuration given a fresh processor list by an
autouse fixture) is rebuilt alone, and nothing a later test could see is missed for it.  A list
replaced by an equal copy (structlog's reset) is swapped into the watch instead, with no
rebuild, and described from its last description (``_shallow``)."""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.attributes import _shallow as shallow_module
from statesnap.probes.attributes import _splitwatch as splitwatch_module
from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes._shallow import MAX_SKIP
from statesnap.probes.attributes._splitwatch import MOVES_TO_SPLIT, SplitWatch
from statesnap.probes.attributes._watch import watched_objects
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext
from statesnap.state.diff import diff_maps

_counter = itertools.count()

#: A configuration object whose processor list a reset replaces: by a list with a fresh marker
#: (the watch rebuilt), or by an equal copy (structlog's: swapped in).
CONFIG = """
class Renderer:
    def __init__(self):
        self.colors = True
        self.columns = ["a", "b"]

class Configuration:
    def __init__(self):
        self.is_configured = False
        self.processors = DEFAULT[:]

DEFAULT = [Renderer(), Renderer()]
CONFIG = Configuration()

def reset():
    CONFIG.is_configured = False
    CONFIG.processors = DEFAULT + [object()]

def reset_equal():
    CONFIG.is_configured = False
    CONFIG.processors = DEFAULT[:]

def reset_fresh():
    # loguru's shape: a new object bound on every reset (no memo can serve).
    CONFIG.is_configured = False
    CONFIG.core = Renderer()
"""

OTHER = """
REGISTRY = []
SETTINGS = {"level": 1}
"""


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    name = f"splitproj{next(_counter)}_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / "proj"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "config.py").write_text(textwrap.dedent(CONFIG))
    (root / name / "other.py").write_text(textwrap.dedent(OTHER))
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root, name
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def _setup(pkg: tuple[Path, str]) -> tuple[AttributesProbe, types.ModuleType, types.ModuleType]:
    root, name = pkg
    config = importlib.import_module(f"{name}.config")
    other = importlib.import_module(f"{name}.other")
    probe = AttributesProbe()
    probe.setup(ProbeContext(rootdir=root, redactor=Redactor()))
    probe.token()
    probe.read()
    return probe, config, other


def _reset_and_read(probe: AttributesProbe, config: Any, equal: bool = False
                    ) -> dict[str, Any]:
    """What the autouse fixture does before a test, and the probe's read after it."""
    (config.reset_equal if equal else config.reset)()
    assert probe.light_token() is not None
    return dict(probe.read())


def _count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """A list that gets one item per call of ``module.name`` from now on."""
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _changed(probe: AttributesProbe, before: dict[str, Any]) -> set[str]:
    return {c.key for c in diff_maps("attributes", before, probe.read())}


def test_a_reset_before_every_test_rebuilds_only_the_moving_half(
        pkg: tuple[Path, str]) -> None:
    probe, config, _ = _setup(pkg)
    for _ in range(4):
        _reset_and_read(probe, config)
    watch = probe._watch
    assert isinstance(watch, SplitWatch)
    assert {t.name for t in watch.moving_set} == {f"{pkg[1]}.config"}
    steady = watch.steady
    for _ in range(5):
        _reset_and_read(probe, config)
        # The steady half (every other module's objects) is the very same watch: not laid
        # out again for a list the reset replaced.
        assert isinstance(probe._watch, SplitWatch)
        assert probe._watch.steady is steady
        assert probe._watch.moving is not watch.moving



def test_a_moving_half_rebuild_reads_the_steady_half_once(
        pkg: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    probe, config, other = _setup(pkg)
    for _ in range(4):
        _reset_and_read(probe, config)
    watch = probe._watch
    assert isinstance(watch, SplitWatch)
    steady = watch.steady
    calls: list[int] = []
    real = steady.readings

    def counted() -> tuple[Any, ...]:
        calls.append(1)
        return real()

    monkeypatch.setattr(steady, "readings", counted)
    for n in range(3):
        calls.clear()
        before = _reset_and_read(probe, config)
        # Once, to find what moved: the moving half rebuilt alone keeps the steady half's
        # readings (describing only reads), rather than reading its tags again.
        assert len(calls) == 1
        assert probe._watch.steady is steady
        # And those readings are the right ones: a change in a steady module afterwards is
        # still seen, and only it.
        other.SETTINGS["level"] = n + 2
        assert _changed(probe, before) == {f"{pkg[1]}.other:SETTINGS"}
        other.SETTINGS["level"] = 1
        probe.read()


def test_nothing_is_missed_in_either_half_after_the_split(pkg: tuple[Path, str]) -> None:
    probe, config, other = _setup(pkg)
    name = pkg[1]
    for _ in range(4):
        before = _reset_and_read(probe, config)
    assert isinstance(probe._watch, SplitWatch)
    # In the moving half: the fresh list filled in place, a processor's attribute set.
    config.CONFIG.processors.append(config.Renderer())
    assert _changed(probe, before) == {f"{name}.config:CONFIG"}
    before = _reset_and_read(probe, config)
    config.DEFAULT[0].colors = False
    assert f"{name}.config:CONFIG" in _changed(probe, before)
    # In the steady half: a registry filled, a settings dict changed, a name bound anew.
    before = _reset_and_read(probe, config)
    other.REGISTRY.append("x")
    other.SETTINGS["level"] = 2
    other.NEW = 1
    assert _changed(probe, before) == {f"{name}.other:REGISTRY", f"{name}.other:SETTINGS",
                                       f"{name}.other:NEW"}
    # And after an import (the watch built whole again from the split one's readings).
    before = _reset_and_read(probe, config)
    other.REGISTRY.append("y")
    config.CONFIG.is_configured = True
    (pkg[0] / name / "late.py").write_text("Z = 1\n")
    importlib.invalidate_caches()
    importlib.import_module(f"{name}.late")
    probe.token()
    assert {f"{name}.other:REGISTRY", f"{name}.config:CONFIG",
            f"{name}:late"} <= _changed(probe, before)


def test_the_fingerprints_are_those_of_the_whole_watch(pkg: tuple[Path, str]) -> None:
    """The split changes what is laid out again, never what is described: a probe whose
    module list changed (every module watched whole) reads the same map."""
    probe, config, other = _setup(pkg)
    for _ in range(4):
        _reset_and_read(probe, config)
    config.CONFIG.processors.append(config.Renderer())
    other.REGISTRY.append("z")
    got = probe.read()
    fresh = AttributesProbe()
    fresh.setup(ProbeContext(rootdir=pkg[0], redactor=Redactor()))
    fresh.token()
    want = fresh.read()
    name = pkg[1]
    assert {k: v for k, v in got.items() if k.startswith(name)} == {
        k: v for k, v in want.items() if k.startswith(name)}


def test_a_rebuild_after_describing_carries_nothing_over_and_misses_nothing(
        pkg: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """read() reads a watch it rebuilt at once and remembers those readings: carrying the
    last ones over (``Watch._carry``, a dict per segment) was work never looked at.  Without
    it, what changes right after such a read is still found, in either half, both before the
    split (the whole watch rebuilt) and after it (the moving half alone)."""
    from statesnap.probes.attributes._watch import Watch

    probe, config, other = _setup(pkg)
    name = pkg[1]
    carried: list[int] = []
    real = Watch._carry

    def counted(self: Watch, previous: Any) -> None:
        carried.append(1)
        real(self, previous)

    monkeypatch.setattr(Watch, "_carry", counted)
    for n in range(6):
        before = _reset_and_read(probe, config)
        assert carried == [], f"reset {n}: readings carried over to a watch read at once"
        # The moving module: a processor's attribute set, the fresh list filled in place.
        config.DEFAULT[1].colors = f"set {n}"
        assert _changed(probe, before) == {f"{name}.config:CONFIG", f"{name}.config:DEFAULT"}
        before = _reset_and_read(probe, config)
        config.CONFIG.processors.append(config.Renderer())
        assert _changed(probe, before) == {f"{name}.config:CONFIG"}
        # A steady module.
        before = _reset_and_read(probe, config)
        other.SETTINGS["level"] = n + 2
        assert _changed(probe, before) == {f"{name}.other:SETTINGS"}
    assert isinstance(probe._watch, SplitWatch)


def test_a_moving_half_over_the_same_dicts_keeps_its_tag_reader_and_misses_nothing(
        pkg: tuple[Path, str]) -> None:
    """A reset that replaces only a list (the dicts below it the same objects) lays out the
    moving half's reader of version tags once: the new half reads with the old one's.  A dict
    below bound anew is read by a new reader, and what changes in it afterwards is found."""
    probe, config, _ = _setup(pkg)
    name = pkg[1]
    for _ in range(4):
        _reset_and_read(probe, config)
    watch = probe._watch
    assert isinstance(watch, SplitWatch)
    both = {f"{name}.config:CONFIG", f"{name}.config:DEFAULT"}  # each holds the processors
    for n in range(3):
        before = _reset_and_read(probe, config)
        now = probe._watch
        assert isinstance(now, SplitWatch) and now.moving is not watch.moving
        assert now.moving._versions is watch.moving._versions
        # Still read right: a processor's attribute set after the reset is found.
        config.DEFAULT[1].colors = n
        assert _changed(probe, before) == both
        watch = now
    # A processor's namespace bound anew: other dicts, another reader, and a change in the
    # new namespace afterwards is found.
    config.DEFAULT[0].__dict__ = {"colors": True, "columns": ["a"]}
    before = _reset_and_read(probe, config)
    now = probe._watch
    assert isinstance(now, SplitWatch)
    assert now.moving._versions is not watch.moving._versions
    config.DEFAULT[0].colors = False
    # (Under CONFIG, described again after the reset; DEFAULT's part still watches the
    # namespace it was described with: binding ``__dict__`` stores into no watched dict.)
    assert _changed(probe, before) == {f"{name}.config:CONFIG"}


def test_a_reset_is_described_from_the_last_description_without_a_walk(
        pkg: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The reset binds an equal copy of the processor list: ``CONFIG`` is described from its
    last description's memo (``_shallow``), nothing below it walked, and its fingerprint is
    the one a probe that never saw it before gives."""
    probe, config, _ = _setup(pkg)
    for _ in range(3):
        _reset_and_read(probe, config, equal=True)
    key = f"{pkg[1]}.config:CONFIG"
    walks = _count_calls(monkeypatch, D, "walk")
    for n in range(3):
        before = _reset_and_read(probe, config, equal=True)
        assert not walks
        fresh = AttributesProbe()
        fresh.setup(ProbeContext(rootdir=pkg[0], redactor=Redactor()))
        fresh.token()
        assert fresh.read()[key] == before[key]
        # A processor's attribute set after the reset is still found; described in full
        # (more than the namespace moved), and the next reset walks once to remember.
        config.DEFAULT[1].colors = n
        assert key in _changed(probe, before)
        _reset_and_read(probe, config, equal=True)
        walks.clear()


def test_an_equal_copy_is_swapped_into_the_watch_not_rebuilt(
        pkg: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """structlog's reset binds an equal copy of the processor list before every test: the
    watch keeps its layout with the new list swapped in (no rebuild), and what is
    done to the new list or its processors afterwards is found.  A module that keeps
    swapping is watched apart once (one rebuild), and its swaps leave the steady half as it
    was."""
    probe, config, _ = _setup(pkg)
    for _ in range(MOVES_TO_SPLIT):
        _reset_and_read(probe, config, equal=True)
    watch = probe._watch
    assert isinstance(watch, SplitWatch)
    assert {t.name for t in watch.moving_set} == {f"{pkg[1]}.config"}
    rebuilds = _count_calls(monkeypatch, splitwatch_module, "rebuilt")
    key = f"{pkg[1]}.config:CONFIG"
    for n in range(6):
        _reset_and_read(probe, config, equal=True)  # after the last round's change
        rebuilds.clear()
        steady = probe._watch.steady if isinstance(probe._watch, SplitWatch) else None
        before = _reset_and_read(probe, config, equal=True)
        assert not rebuilds
        assert steady is None or probe._watch.steady is steady  # type: ignore[union-attr]
        assert any(s is config.CONFIG.processors for s in probe._watch.segments[2])  # small
        # What the watch keeps for the module is what gathering it again gives.
        tracked = probe._by_name[f"{pkg[1]}.config"]
        kept = tracked.watched
        assert kept is not None and kept[0] is tracked.parts
        tracked.watched = None
        again = watched_objects(tracked)
        # Objects by identity, their owners ((module, part) pairs) by value.
        assert [list(map(id, x)) for x in kept[1][::2]] == [list(map(id, x)) for x in again[::2]]
        assert kept[1][1::2] == again[1::2]
        token = probe.token()
        if n % 3 == 0:
            config.DEFAULT[0].colors = n  # inside a processor
        elif n % 3 == 1:
            config.CONFIG.processors.append(config.Renderer())  # into the new list
        else:
            config.CONFIG.processors[1] = config.Renderer()  # the same length
        assert probe.token() != token  # the snapshotter's cue to read
        assert key in _changed(probe, before)


def test_a_memo_that_never_serves_is_tried_ever_more_rarely(
        pkg: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset that binds a new object every time (loguru's fresh core): each memo fails, and
    the next is made only after a wait that doubles (up to MAX_SKIP descriptions in full);
    one that serves again (structlog's reset after a test that configured) starts over."""
    probe, config, _ = _setup(pkg)
    tried = _count_calls(monkeypatch, shallow_module, "again")
    for _ in range(100):
        config.reset_fresh()
        probe.read()
    assert 3 <= len(tried) <= 8  # at 1, 2, 4, 8, 16, 32, 64 descriptions apart
    # A memo that serves: the equal reset is described from it again and again.
    for _ in range(MAX_SKIP + 2):
        _reset_and_read(probe, config, equal=True)
    tried.clear()
    for _ in range(5):
        _reset_and_read(probe, config, equal=True)
    assert len(tried) == 5


SHARED = """
class Configuration:
    def __init__(self):
        self.processors = DEFAULT

DEFAULT = [object(), object()]
CONFIG = Configuration()

def reset():
    CONFIG.processors = DEFAULT[:]
"""


def test_a_swap_leaves_another_part_watching_the_old_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The list a reset replaced by an equal copy is still a module global of its own
    (``CONFIG.processors = DEFAULT`` at import): swapping the copy in for ``CONFIG`` must leave
    ``DEFAULT``'s own watch on the old list, so that a test appending to it is still seen."""
    name = f"sharedproj{next(_counter)}"
    root = tmp_path / "proj"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "config.py").write_text(textwrap.dedent(SHARED))
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    try:
        config = importlib.import_module(f"{name}.config")
        probe = AttributesProbe()
        probe.setup(ProbeContext(rootdir=root, redactor=Redactor()))
        probe.token()
        probe.read()
        for n in range(MOVES_TO_SPLIT + 2):
            config.reset()
            before = dict(probe.read())
            token = probe.token()
            config.DEFAULT.append(n)
            assert probe.token() != token
            assert f"{name}.config:DEFAULT" in _changed(probe, before)
            config.DEFAULT.pop()
            probe.read()
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
