"""pytest's and unittest's own fixtures, named the way the user wrote the code behind them.

Internal fixture names (``_unittest_setUpClass_fixture_TestX``) become the user's method
(``setUpClass``), what pytest's ``tmp_path`` family does is nobody's leak, and a class set-up
that sets its own class's attributes is rated low.  Pure functions.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from statesnap.base.plain import Frozen
from statesnap.probes.base import Severity
from statesnap.state.diff import Change

#: Built-in fixtures whose first setup changes process state for pytest itself.
PYTEST_OWN_SETUP = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
#: The label of what pytest's own setup of a package (importing its ``__init__.py``) changed:
#: ``sys.path[0]`` under the ``prepend`` import mode (``plugin/packagesetup.py``).
PACKAGE_SETUP = "pytest's import of a package's __init__.py"

_INTERNAL = (
    r"^_(?P<kind>unittest_setUpClass|unittest_setup_method|xunit_setup_module"
    r"|xunit_setup_function|xunit_setup_class|xunit_setup_method)_fixture_(?P<owner>.+)$")


@functools.cache
def _internal() -> re.Pattern[str]:
    # Compiled on first use: every session imports this module (the core plugin), few name
    # a fixture, and compiling costs about as much as the rest of the module (issue 13).
    return re.compile(_INTERNAL)


#: kind -> (the user's method, where to undo it)
_METHODS = {
    "unittest_setUpClass": ("setUpClass", "tearDownClass (or addClassCleanup)"),
    "unittest_setup_method": ("setUp", "tearDown (or addCleanup)"),
    "xunit_setup_module": ("setup_module", "teardown_module"),
    "xunit_setup_function": ("setup_function", "teardown_function"),
    "xunit_setup_class": ("setup_class", "teardown_class"),
    "xunit_setup_method": ("setup_method", "teardown_method"),
}
#: The set-ups that run once for a class, with that class as ``cls``.
_CLASS_SETUPS = frozenset({"unittest_setUpClass", "xunit_setup_class"})
#: The probe whose keys name class attributes (``module:Class.attr``).
_ATTRIBUTES = "attributes"

#: kind -> the user's method that runs in the fixture's teardown
_TEARDOWNS = {
    "unittest_setUpClass": "tearDownClass",
    "unittest_setup_method": "tearDown",
    "xunit_setup_module": "teardown_module",
    "xunit_setup_function": "teardown_function",
    "xunit_setup_class": "teardown_class",
    "xunit_setup_method": "teardown_method",
}


class FixtureWords(Frozen):
    """How to name a fixture to the user, and where they undo what it did.

    A plain slotted class (statesnap.base.plain): this module is imported at every session
    start, and a NamedTuple or a data class costs a code generation and exec at import."""

    _fields = ("name", "undo", "internal")
    __slots__ = _fields

    def __init__(self, name: str, undo: str, internal: bool) -> None:
        #: ``TestX.setUpClass`` or the fixture's own name.
        self.name: Final = name
        #: ``tearDownClass (or addClassCleanup)``, or ``after its yield`` for a plain fixture.
        self.undo: Final = undo
        #: Whether the name is one pytest made up for the user's method.
        self.internal: Final = internal


def fixture_words(fixture: str, phase: str | None = None) -> FixtureWords:
    """The user's words for ``fixture`` (pytest's internal names mapped to their methods).

    In the ``teardown`` phase the fixture pytest made of an xunit or unittest set-up runs the
    user's tear-down method (``TestX.teardown_class``): a change made there is its doing.
    """
    m = _internal().match(fixture)
    if m is None:
        return FixtureWords(fixture, "after its yield (or in a finaliser)", False)
    method, undo = _METHODS[m["kind"]]
    if phase == "teardown":
        down = _TEARDOWNS[m["kind"]]
        return FixtureWords(f"{m['owner']}.{down}", f"in {down} itself",
                            True)
    return FixtureWords(f"{m['owner']}.{method}", f"in {undo}", True)


def display_fixture(fixture: str, phase: str | None = None) -> str:
    """The fixture as shown in the terminal, the report and the summary JSON."""
    return fixture_words(fixture, phase).name


def is_users_setup(fixture: str | None) -> bool:
    """Whether ``fixture`` is one pytest made of the user's xunit or unittest set-up method
    (``setup_class``, ``setUpClass``, ``setup_module``): its changes are that method's (or its
    tear-down's), not those of the test it happened to run for."""
    # The prefix first: most fixtures are the user's own, and the pattern is compiled on
    # first use only (see _internal).
    return (fixture or "").startswith(("_xunit_", "_unittest_")) and (
        _internal().match(fixture or "") is not None)


def is_pytest_own(fixture: str | None) -> bool:
    """Whether a change labelled with ``fixture`` was made by pytest's own code."""
    return fixture in PYTEST_OWN_SETUP or fixture == PACKAGE_SETUP


def lower_own_class_setup(changes: list[Change], cls: object) -> None:
    """Rate LOW what the class set-up of the test's class ``cls`` (``setUpClass``,
    ``setup_class``, or a class-scoped fixture setting ``request.cls.x``) did to that class's
    own attributes, when nothing changed them after it.

    ``cls.conn = ...`` in a class set-up is how unittest and xunit classes share a value among
    their tests: it reaches only code that names the class (its tests and subclasses), and
    the next run of the set-up sets it again.  Still recorded (a hunt reaches low leaks), no
    longer listed as a set-up's leak nor errored by strict mode.  What the class's tests do to
    the attribute afterwards (``Change.then``), what the set-up does to any other object,
    and what its tear-down does, keep their severity.
    """
    if not changes or not isinstance(cls, type):
        return  # most tests: nothing changed, or a test function outside a class
    qualname = cls.__qualname__
    prefix = f"{cls.__module__}:{qualname}."
    for ch in changes:
        if (ch.probe != _ATTRIBUTES or ch.phase != "setup" or ch.then is not None
                or not ch.key.startswith(prefix) or ch.severity <= Severity.LOW):
            continue
        if not ch.key[len(prefix):].isidentifier():
            continue  # a deeper key (``Class.attr#cache``, a nested class's attribute)
        m = _internal().match(ch.fixture or "")
        if m is not None and m["kind"] in _CLASS_SETUPS and m["owner"] == qualname:
            ch.severity = int(Severity.LOW)
        elif m is None and ch.scope == "class" and ch.fixture and " or " not in ch.fixture:
            # A class-scoped fixture of the user's doing ``request.cls.x = ...``: the same
            # sharing as ``setup_class``, set again for each class it runs for.
            ch.severity = int(Severity.LOW)
