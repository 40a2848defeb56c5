"""How a function cache filling and a subclass made in a test are rated, in real pytest runs.

A cache filled on first use is memoisation: a later call would compute the same, so it is
LOW -- unless the test that filled it changed what the function computes from (an environment
variable, a module global), put back or not: then the cache keeps a value of the patched
state, the classic order dependency, and it is MEDIUM.  A subclass defined in a test stays
among its base's ``__subclasses__()`` until a collection: MEDIUM where the project's code asks
classes for their subclasses, LOW where nothing does.  "Leaked" in the summary JSON is above
LOW.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from statesnap.probes.attributes._subclassreaders import names_subclasses

LIB = """
import functools
import os

RATE = 1


@functools.lru_cache(maxsize=None)
def currency():
    return os.environ.get("SHOP_CURRENCY", "USD")


@functools.lru_cache(maxsize=None)
def price(amount):
    return amount * RATE


@functools.lru_cache(maxsize=None)
def square(x):
    return x * x


class Widget:
    pass
"""

#: Where this is in the library, a subclass change anywhere in the project is MEDIUM.
READER = """

class Plugin:
    @classmethod
    def names(cls):
        return sorted(sub.__name__ for sub in cls.__subclasses__())
"""

TESTS = """
import lib


def test_fills_a_cache():
    assert lib.square(3) == 9


def test_fills_a_cache_under_a_patched_variable(monkeypatch):
    monkeypatch.setenv("SHOP_CURRENCY", "EUR")
    assert lib.currency() == "EUR"


def test_fills_a_cache_under_a_patched_global(monkeypatch):
    monkeypatch.setattr(lib, "RATE", 2)
    assert lib.price(3) == 6


def test_defines_a_widget():
    class Gadget(lib.Widget):
        pass
"""

# No automatic collection in the inner run: the subclass made in the test stays until the
# end-of-test snapshot, as it does in a real suite until the next collection.
CONFTEST = """
import gc
gc.disable()
"""


def _run(pytester: pytest.Pytester, lib: str) -> dict[str, dict[str, Any]]:
    pytester.makepyfile(lib=lib, test_shop=TESTS, conftest=CONFTEST)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json",
        "--statesnap-probes=attributes,env")
    result.assert_outcomes(passed=4)
    data = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    return {t["nodeid"].split("::")[1]: t for t in data["tests"]}


def _rated(test: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f"{x['probe']}:{x['key']}", x["severity"]) for x in test["leaks"])


def test_a_cache_filled_alone_is_low_and_filled_under_a_patch_is_medium(
        pytester: pytest.Pytester) -> None:
    tests = _run(pytester, LIB)
    alone = tests["test_fills_a_cache"]
    assert _rated(alone) == [("attributes:lib:square#cache", "low")]
    assert not alone["leaked"]
    # The variable and the global were put back by monkeypatch; the caches keep what was
    # computed from them.
    env = tests["test_fills_a_cache_under_a_patched_variable"]
    assert _rated(env) == [("attributes:lib:currency#cache", "medium")]
    assert env["leaked"]
    glob = tests["test_fills_a_cache_under_a_patched_global"]
    assert _rated(glob) == [("attributes:lib:price#cache", "medium")]
    assert glob["leaked"]


def test_a_subclass_is_low_where_nothing_reads_subclasses(pytester: pytest.Pytester) -> None:
    made = _run(pytester, LIB)["test_defines_a_widget"]
    assert _rated(made) == [("attributes:lib:Widget.__subclasses__", "low")]
    assert not made["leaked"]


def test_a_subclass_is_medium_where_the_project_reads_subclasses(
        pytester: pytest.Pytester) -> None:
    made = _run(pytester, LIB + READER)["test_defines_a_widget"]
    assert _rated(made) == [("attributes:lib:Widget.__subclasses__", "medium")]
    assert made["leaked"]


@pytest.mark.parametrize(("source", "reads"), [
    ("def f(c):\n    return c.__subclasses__()\n", True),
    ("def f(c):\n    return type.__subclasses__(c)\n", True),
    ("def f(c):\n    return getattr(c, '__subclasses__')()\n", True),
    ("def f(c):\n    def inner():\n        return c.__subclasses__()\n    return inner\n", True),
    ("class A:\n    @classmethod\n    def all(cls):\n        return cls.__subclasses__()\n", True),
    ("class A:\n    @property\n    def subs(self):\n        return type(self).__subclasses__()\n",
     True),
    ("import functools\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*a):\n"
     "        return fn(*a)\n    return wrapper\n@deco\ndef f(c):\n"
     "    return c.__subclasses__()\n", True),
    # jinja2's sandbox tests: the name inside a template's text is not code that reads it.
    ("def test_sandbox(env):\n    env.from_string('{{ foo.__class__.__subclasses__() }}')\n",
     False),
    ("class A:\n    pass\ndef f():\n    return 1\n", False),
])
def test_which_code_reads_subclasses(source: str, reads: bool) -> None:
    ns: dict[str, Any] = {"__name__": "scanned"}
    exec(compile(source, "scanned.py", "exec"), ns)
    assert names_subclasses("scanned", ns) is reads
