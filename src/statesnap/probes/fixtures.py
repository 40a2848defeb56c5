"""The cached values of session-, package-, module- and class-scoped fixtures.

A wide fixture's object is shared by every test that asks for it until its scope ends; a test
that changes it in place (inserts into a shared container, edits a shared record) changes it
for every later test.  No other probe reaches it: it lives in pytest's fixture cache, not in a
module.  The pytest layer hands each wide fixture's value over as it is set up
(:meth:`FixturesProbe.set_up`) and says when it is torn down; this probe digests those values
with the ``attributes`` probe's deep digest (``attributes.describe.describe``).

Keys are ``NAME`` (``NAME@BASEID`` when two live fixtures share a name).  A key exists only
while its value differs from what the fixture returned: setting a fixture up and tearing it
down is pytest's lifecycle, not a change, and a key that appears is a change in place.
Restoring a key *re-creates* the fixture: pytest's own finalisation of it, so the next test
that asks for it builds it fresh (and the fixtures that depend on it, finalised with it).
Only run where asked (replays, ``--statesnap-watch-fixtures``): its read digests every live
wide fixture after each test.  See docs/PROBES.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection
from typing import Any

from statesnap.probes.attributes.describe import describe
from statesnap.probes.attributes.kinds import SCALARS
from statesnap.probes.attributes.scan import is_project_file, module_namespace
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity

#: Scopes whose fixtures outlive a test (pytest's names).
WIDE_SCOPES = frozenset({"class", "module", "package", "session"})


class LiveFixture:
    """One wide fixture while its value is cached (a plain slotted class: no dataclass
    machinery to import in every replay)."""

    __slots__ = ("as_set_up", "finish", "name", "owner", "scope", "value")

    def __init__(self, name: str, scope: str, value: object,
                 finish: Callable[[], None] | None, owner: object = None) -> None:
        self.name = name
        self.scope = scope
        self.value = value
        #: pytest's finalisation of this fixture (its teardown; the next request re-creates
        #: it).
        self.finish = finish
        #: The pytest object this entry stands for, compared by identity only.
        self.owner = owner
        #: The value's description as its fixture returned it.
        self.as_set_up = ""


class _Project(frozenset[str]):
    """The module names whose class instances are digested through their namespace: the
    fixture value's own module, the watched packages, and modules whose file lies under the
    rootdir (decided once per name)."""

    def __new__(cls, base: Collection[str], roots: tuple[str, ...],
                packages: tuple[str, ...]) -> _Project:
        made = super().__new__(cls, base)
        made._roots = roots
        made._packages = packages
        made._decided = {}
        made._venvs = {}
        return made

    _roots: tuple[str, ...]
    _packages: tuple[str, ...]
    _decided: dict[str, bool]
    _venvs: dict[str, bool]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if frozenset.__contains__(self, name):
            return True
        known = self._decided.get(name)
        if known is None:
            known = self._decided[name] = self._decide(name)
        return known

    def _decide(self, name: str) -> bool:
        if any(name == p or name.startswith(p + ".") for p in self._packages):
            return True
        module = sys.modules.get(name)
        if module is None:
            return False
        try:
            file = module_namespace(module).get("__file__")
        except Exception:  # an object planted in sys.modules
            return False
        return isinstance(file, str) and bool(file) and is_project_file(
            file, self._roots, self._venvs)


class FixturesProbe(Probe):
    """Wide fixtures' cached values, digested deeply; restored by re-creating them."""

    name = "fixtures"
    severity = Severity.HIGH
    restorable = True

    def __init__(self) -> None:
        self._live: dict[str, LiveFixture] = {}
        #: Bumped on every set-up and tear-down: the light token.
        self._moves = 0
        self._redactor: Any = None
        self._project = _Project((), (), ())

    def setup(self, ctx: ProbeContext) -> None:
        root = os.path.abspath(str(ctx.rootdir))
        self._project = _Project((), tuple(dict.fromkeys((root, os.path.realpath(root)))),
                                 tuple(p for p in ctx.packages if p))
        self._redactor = ctx.redactor

    # -- fed by the pytest layer -----------------------------------------------------------
    def set_up(self, name: str, scope: str, value: object,
               finish: Callable[[], None] | None, owner: object = None) -> None:
        """A wide fixture was set up with ``value``.  Kept even when its value is None or a
        scalar (an xunit ``setup_class``, a path): it cannot change in place, but what the
        fixture made (a directory, a repository) may, and re-creating it is a proof."""
        if scope not in WIDE_SCOPES:
            return
        self.torn_down(owner)  # re-created (a new parameter): watched from its new value
        key = display_name(name)
        other = self._live.get(key)
        if other is not None and other.owner is not owner:
            key = f"{key}@{getattr(owner, 'baseid', '') or '.'}"
        live = LiveFixture(name, scope, value, finish, owner)
        if type(value) not in SCALARS:
            live.as_set_up = self._describe(live)
        self._live[key] = live
        self._moves += 1

    def torn_down(self, owner: object) -> None:
        """The fixture ``owner`` stands for was finalised: its value is no longer shared."""
        for key, live in list(self._live.items()):
            if live.owner is owner:
                del self._live[key]
                self._moves += 1

    # -- the probe contract ----------------------------------------------------------------
    def light_token(self) -> object:
        # Checkpoints inside a test only name the phase: set-ups and tear-downs show here,
        # an in-place change at the test's end (the full token is a read).
        return self._moves

    def _describe(self, live: LiveFixture) -> str:
        project = _Project((type(live.value).__module__,), self._project._roots,
                           self._project._packages)
        project._decided = self._project._decided
        text, data = describe(live.value, project)
        if data and self._redactor is not None:
            text = self._redactor(live.name, text)
        return str(text)

    def read(self) -> ProbeMap:
        out: ProbeMap = {}
        for key, live in self._live.items():
            if type(live.value) in SCALARS:
                continue
            now = self._describe(live)
            if now != live.as_set_up:
                out[key] = f"{live.scope} fixture changed in place since its set-up: {now}"
        return out

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if after is None:
            return Severity.LOW  # torn down, re-created, or changed back
        return self.severity  # the shared value differs from what its fixture returned

    def hint(self, key: str, change: str) -> str | None:
        name = key.partition("@")[0]
        return (f"a test changes the shared value of the wide-scoped fixture {name!r} in "
                f"place: narrow its scope (function), or hand each test a copy "
                f"(a function-scoped fixture returning copy.deepcopy({name}))")

    def save(self) -> object:
        return None  # restoring re-creates: nothing to keep

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        """Re-create the fixtures ``keys`` name (:data:`EVERY`: every live one, the latest
        set up first); the keys re-created."""
        wanted = list(reversed(self._live)) if EVERY in keys else list(keys)
        done: list[str] = []
        for key in wanted:
            live = self._live.get(key)
            if live is None or live.finish is None:
                continue  # not cached now: the next request builds it fresh anyway
            live.finish()
            self.torn_down(live.owner)
            done.append(key)
        return done


#: The restore key that re-creates every live wide fixture (a proof's first try where no
#: recorded change heals the victim: the state may lie in what a fixture made).
EVERY = "*"

#: pytest's names for the fixtures it makes of xunit and unittest class/module set-ups.
_MADE_BY_PYTEST = (
    ("_xunit_setup_class_fixture_", "{}.setup_class"),
    ("_xunit_setup_module_fixture_", "{}.setup_module"),
    ("_unittest_setUpClass_fixture_", "{}.setUpClass"),
)


def display_name(argname: str) -> str:
    """The key of a fixture: its name, or for the fixtures pytest makes of an xunit or
    unittest set-up, the user's method (``TestX.setup_class``), never pytest's name."""
    for prefix, shown in _MADE_BY_PYTEST:
        if argname.startswith(prefix):
            return shown.format(argname[len(prefix):])
    return argname


def scope_of(fingerprint: object) -> str | None:
    """The scope a fingerprint names (its first word), for the proof's sentence."""
    if not isinstance(fingerprint, str):
        return None
    first = fingerprint.partition(" ")[0]
    return first if first in WIDE_SCOPES else None

