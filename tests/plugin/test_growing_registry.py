"""A long registry that grows at its end shows what the test added, in the terminal line.

A module-level dict of classes filled as tests define them (marshmallow's class registry: 388
of its 1,231 tests add an entry) is longer than any line: its fingerprint once kept only its
first entries, and the terminal showed the same start on both sides with nothing but digests
after it.  Now a long ordered container's preview keeps its last entries too, the stored text
is cut in the middle, and the line is cut around the first difference.
"""

from __future__ import annotations

import pytest

APP = """
registry = {}


def register(cls):
    registry[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


for i in range(12):
    register(type(f"BuiltinSchemaNumber{i}", (), {}))
"""

TESTS = """
import app


def test_defines_a_schema():
    @app.register
    class OrderLineSchema:
        pass

    assert app.registry
"""


def test_the_line_names_the_entry_the_test_added(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(app=APP, test_registry=TESTS)
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    line = next(ln for ln in result.stdout.lines if "app:registry" in ln)
    before, after = line.split("app:registry: ", 1)[1].split(" → ")
    assert "OrderLineSchem" not in before and "OrderLineSchem" in after, line
