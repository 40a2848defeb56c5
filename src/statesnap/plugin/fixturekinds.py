"""What the core reads of a fixture definition (whether it is pytest's own, whether it may run
code at its teardown), whether a test's teardown runs code of the user's, and how a wide
fixture's value is handed to the fixtures probe.

Asked at every setup of every fixture (a few per test): the answers are remembered per
definition and per test function (:class:`FixtureKinds`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import pytest

from statesnap.base.internal import note_internal_error

if TYPE_CHECKING:
    from statesnap.plugin.run import TestState
    from statesnap.probes.base import ProbeContext
    from statesnap.probes.fixtures import FixturesProbe

#: A fixture's value while its set-up has not returned (it raised): nothing to watch.
FAILED = object()

#: Fixtures pytest makes for the user's own code: xunit ``setup_*``/``teardown_*`` functions
#: and unittest's ``setUpClass``.  Their functions live in ``_pytest``; they run user code.
_USER_CODE_FIXTURES = ("_xunit_setup_", "_unittest_")


def may_tear_down(fixturedef: Any) -> bool:
    """Whether a fixture may run code at its teardown: pytest finalises a generator
    function's fixture; one that uses the ``request`` it is given may add finalisers;
    anything else a plugin wrapped (coroutines) counts too.  pytest's pseudo-fixture for a
    directly parametrized argument only returns the parameter."""
    func = getattr(fixturedef, "func", None)
    argnames = getattr(fixturedef, "argnames", None)
    if func is None or argnames is None:
        return True
    if is_param_fixture(fixturedef):
        return False
    if "request" in argnames and uses_parameter(func, "request"):
        return True
    return (inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)
            or inspect.iscoroutinefunction(func))


def is_param_fixture(fixturedef: Any) -> bool:
    """pytest's pseudo-fixture for a directly parametrized argument (``@parametrize("x",
    ...)`` on the test): it returns the parameter and has no teardown."""
    func = getattr(fixturedef, "func", None)
    return (getattr(func, "__name__", None) == "get_direct_param_fixture_func"
            and str(getattr(func, "__module__", "")).startswith("_pytest"))


#: Names through which a function can reach its own locals without naming them.
_FRAME_ACCESS = frozenset({"locals", "vars", "eval", "exec", "_getframe", "currentframe",
                           "getframeinfo", "stack"})
_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def uses_parameter(func: Any, name: str) -> bool:
    """Whether ``func``'s code may use its parameter ``name``: True unless ``name`` is a
    parameter of its own code object (a ``*args`` wrapper's is not), not captured by an
    inner function, and no instruction reads or writes it.  A ``locals()`` or frame lookup
    counts as a use.  Asked once per fixture definition."""
    code = getattr(func, "__code__", None)
    if code is None:
        return True
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if name not in params or name in code.co_cellvars:
        return True
    if _FRAME_ACCESS & set(code.co_names):
        return True
    import dis  # only here: once per fixture definition that is given ``request``

    for ins in dis.get_instructions(code):
        if "FAST" in ins.opname:
            value = ins.argval
            if value == name or (isinstance(value, tuple) and name in value):
                return True
    return False


def asks_request(function: Any) -> bool:
    """Whether a test function takes ``request`` itself (then it may add finalisers that
    run at its teardown).  True where that cannot be told: no code object, or a wrapper's
    ``*args``/``**kwargs`` standing in for its parameters."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_flags & _VARIADIC:
        return True
    return "request" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def is_builtin_fixture(fixturedef: Any) -> bool:
    func = getattr(fixturedef, "func", None)
    module = getattr(func, "__module__", "") or ""
    if str(getattr(fixturedef, "argname", "")).startswith(_USER_CODE_FIXTURES):
        return False
    return module.startswith(("_pytest", "pytest", "statesnap"))


def autouse_reach(fixturedef: Any) -> str | None:
    """The node id prefix (pytest's ``baseid``: ``""`` for every test, ``tests`` for a
    conftest's folder, a module's or a class's node id) whose tests all run this fixture
    because it is autouse and function-scoped; None for any other fixture, or where this
    pytest does not say (``FixtureDef._autouse`` is pytest 8.1's and later's)."""
    if getattr(fixturedef, "_autouse", False) is not True:
        return None
    if str(getattr(fixturedef, "scope", "")) != "function":
        return None
    baseid = getattr(fixturedef, "baseid", None)
    return baseid if isinstance(baseid, str) else None


class FixtureKinds:
    """The answers above, remembered for one session: per fixture definition (asked at
    every setup of every fixture) and per test function."""

    def __init__(self, autouse: dict[tuple[str, str], None] | None = None) -> None:
        #: ``fixturedef -> (func, argnames, builtin, may tear down)``: :meth:`of`.
        self._defs: dict[Any, tuple[object, object, bool, bool]] = {}
        #: Function-scoped autouse fixtures seen set up, ``(name, baseid)`` in the order first
        #: seen: the record's footer keeps them (``analysis/resets.py`` reads them).
        self.autouse: dict[tuple[str, str], None] = {} if autouse is None else autouse
        #: Per test function: whether it takes ``request`` itself (:func:`asks_request`).
        self._asks: dict[Any, bool] = {}

    def of(self, fixturedef: Any) -> tuple[bool, bool]:
        """``(is_builtin_fixture, may_tear_down)`` of a fixture definition.

        Asked at every setup of every fixture (a few per test); both read only the
        definition's function, argument names and name, so the answer is kept per definition
        and given again while its function and argument names are the same objects (a plugin
        that wraps a fixture's function, as pytest-asyncio does, gets a fresh answer)."""
        func = getattr(fixturedef, "func", None)
        argnames = getattr(fixturedef, "argnames", None)
        try:
            known = self._defs.get(fixturedef)
        except TypeError:  # an unhashable stand-in for a FixtureDef: asked every time
            return is_builtin_fixture(fixturedef), may_tear_down(fixturedef)
        if known is not None and known[0] is func and known[1] is argnames:
            return known[2], known[3]
        builtin, tears = is_builtin_fixture(fixturedef), may_tear_down(fixturedef)
        self._defs[fixturedef] = (func, argnames, builtin, tears)
        if autouse_reach(fixturedef) is not None:
            self.autouse[(str(fixturedef.argname), str(fixturedef.baseid))] = None
        return builtin, tears

    def quiet_teardown(self, item: pytest.Item, test: TestState) -> bool:
        """Whether the teardown after this call runs no code of the user's.

        So when every fixture the test uses is a function-scoped one of the user's that was
        set up for it and has no teardown (no generator, no use of ``request``, whose
        ``addfinalizer`` runs user code at teardown), or it uses none at all, and the next
        test shares this one's parent (so no module- or class-scoped fixture is torn down).
        A directly parametrized argument's pseudo-fixture runs no code either, and
        ``request`` only gives finalisers to whoever uses it: a fixture that does counts as
        tearing down (``may_tear_down``), a test that takes it keeps the checkpoint.  A
        fixture of pytest's or a plugin's (``tmp_path``, ``monkeypatch``) keeps it too.
        Finalisers a plugin added with ``item.addfinalizer`` would then be counted as the
        call's.
        """
        nextitem = test.nextitem
        if test.wide_fixtures or test.tears_down or nextitem is None:
            return False
        if nextitem.parent is not item.parent:
            return False
        names = getattr(item, "fixturenames", None)
        if not names:
            return True
        rest = set(names).difference(test.function_fixtures, test.quiet_fixtures)
        if not rest:
            return True
        if rest != {"request"}:
            return False
        function = getattr(item, "function", None)
        known = self._asks.get(function)
        if known is None:
            known = self._asks[function] = asks_request(function)
        return not known


def watch_fixture(fixtures: FixturesProbe, ctx: ProbeContext | None, fixturedef: Any,
                  request: pytest.FixtureRequest, value: object) -> None:
    """Hand a wide fixture's value to the fixtures probe, with how to re-create it.

    Re-creating is pytest's own finalisation, ``FixtureDef.finish(request)`` (a public
    method of pytest 8 and 9, with the request the fixture was set up with); where this
    pytest lacks it the value is still watched, and the record says it cannot be
    re-created."""
    finish = getattr(fixturedef, "finish", None)
    recreate = None
    if callable(finish):
        def recreate() -> None:
            finish(request)
    elif ctx is not None:
        ctx.notes["fixtures"] = (
            f"pytest {pytest.__version__}: a fixture has no finish(): wide fixtures are "
            "watched but cannot be re-created before a test (no key-level proof)")
    try:
        fixtures.set_up(str(fixturedef.argname), str(fixturedef.scope), value,
                        recreate, owner=fixturedef)
    except Exception as exc:  # bookkeeping must never change a test's outcome
        note_internal_error("watching a wide fixture", exc)
