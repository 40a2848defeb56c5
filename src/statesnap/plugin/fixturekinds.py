"""What the core reads of a fixture definition: whether it is pytest's own, whether it may run
code at its teardown, and how a wide fixture's value is handed to the fixtures probe.

Asked at every setup of every fixture (a few per test): plain functions the core imports by
name, so its hook pays no extra call layer.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import pytest

from statesnap.base.internal import note_internal_error

if TYPE_CHECKING:
    from statesnap.probes.base import ProbeContext
    from statesnap.probes.fixtures import FixturesProbe

#: A fixture's value while its set-up has not returned (it raised): nothing to watch.
FAILED = object()

#: Fixtures pytest makes for the user's own code: xunit ``setup_*``/``teardown_*`` functions
#: and unittest's ``setUpClass``.  Their functions live in ``_pytest``; they run user code.
_USER_CODE_FIXTURES = ("_xunit_setup_", "_unittest_")


def may_tear_down(fixturedef: Any) -> bool:
    """Whether a fixture may run code at its teardown: pytest finalises a generator
    function's fixture; one given ``request`` may add finalisers; anything else a plugin
    wrapped (coroutines) counts too."""
    func = getattr(fixturedef, "func", None)
    argnames = getattr(fixturedef, "argnames", None)
    if func is None or argnames is None or "request" in argnames:
        return True
    return (inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)
            or inspect.iscoroutinefunction(func))


def is_builtin_fixture(fixturedef: Any) -> bool:
    func = getattr(fixturedef, "func", None)
    module = getattr(func, "__module__", "") or ""
    if str(getattr(fixturedef, "argname", "")).startswith(_USER_CODE_FIXTURES):
        return False
    return module.startswith(("_pytest", "pytest", "statesnap"))


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
