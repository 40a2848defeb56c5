"""In-place mutation below the top level of a module attribute, seen in a real pytest run.

Library code (installed outside the project) mutates a module-level dict of lists of dicts
three levels down; a module-level ``MutableMapping`` keeps its entries in an attribute and
fills up; a registry list lives inside a module-level object.  Each must be recorded as the
polluter's leak under the attribute's key, and proven against its victim.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

LIBRARY = """
def grant(table, role):
    for user in table["users"]:
        user["roles"].append(role)
"""

STATE = """
from collections.abc import MutableMapping

TABLE = {"users": [{"name": "ann", "roles": []}]}


class Store(MutableMapping):
    def __init__(self):
        self._entries = {}

    def __getitem__(self, key):
        return self._entries[key]

    def __setitem__(self, key, value):
        self._entries[key] = value

    def __delitem__(self, key):
        del self._entries[key]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)


STORE = Store()


class Hub:
    def __init__(self):
        self.handlers = []


HUB = Hub()
"""

TESTS = """
import grants
import state


def test_grants_admin():
    grants.grant(state.TABLE, "admin")


def test_users_have_no_roles():
    assert state.TABLE["users"][0]["roles"] == []


def test_stores_an_entry():
    state.STORE["k"] = 1


def test_store_starts_empty():
    assert len(state.STORE) == 0


def test_registers_a_handler():
    state.HUB.handlers.append(print)


def test_no_handlers():
    assert not state.HUB.handlers
"""

# The library lives in a directory named like an installed one: not the project's code.
CONFTEST = """
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib", "site-packages"))
"""

CASES = {
    "test_users_have_no_roles": ("test_grants_admin", "state:TABLE"),
    "test_store_starts_empty": ("test_stores_an_entry", "state:STORE"),
    "test_no_handlers": ("test_registers_a_handler", "state:HUB"),
}


def _write(root: Path) -> None:
    lib = root / "lib" / "site-packages"
    lib.mkdir(parents=True)
    (lib / "grants.py").write_text(textwrap.dedent(LIBRARY))
    (root / "state.py").write_text(textwrap.dedent(STATE))
    (root / "test_deep.py").write_text(textwrap.dedent(TESTS))
    (root / "conftest.py").write_text(textwrap.dedent(CONFTEST))


def test_deep_in_place_mutations_are_leaks_with_the_attribute_key(
    pytester: pytest.Pytester,
) -> None:
    _write(pytester.path)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=attributes",
    )
    result.assert_outcomes(passed=3, failed=3)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: [(x["key"], x["severity"]) for x in t["leaks"]]
             for t in summary["tests"]}
    findings = {f["victim"].split("::")[1]: f for f in summary["findings"]}
    for victim, (polluter, key) in CASES.items():
        assert leaks[polluter] == [(key, "high")], leaks
        assert leaks[victim] == []
        f = findings[victim]
        assert f["status"] == "verified", f
        assert f["polluters"] == [f"test_deep.py::{polluter}"] and f["key"] == key
    assert findings["test_store_starts_empty"]["hint"].startswith("change state.STORE only")


def test_the_reproduction_fails_under_plain_pytest(pytester: pytest.Pytester) -> None:
    # The pairs the findings print reproduce without statesnap (the victims pass alone).
    _write(pytester.path)
    for victim, (polluter, _) in CASES.items():
        alone = pytester.runpytest_subprocess("-p", "no:statesnap", f"test_deep.py::{victim}")
        alone.assert_outcomes(passed=1)
        pair = pytester.runpytest_subprocess(
            "-p", "no:statesnap", f"test_deep.py::{polluter}", f"test_deep.py::{victim}")
        pair.assert_outcomes(passed=1, failed=1)


CACHES = """
class LRUCache:
    def __init__(self):
        self._mapping = {}


class Environment:
    def __init__(self):
        self.cache = LRUCache()
        self.filters = {"upper": str.upper}


_lexer_cache = LRUCache()
ENV = Environment()
"""

CACHE_TESTS = """
import caches


def test_compiles_a_template():
    caches._lexer_cache._mapping["tpl"] = object()
    caches.ENV.cache._mapping["tpl"] = object()


def test_adds_a_filter():
    caches.ENV.filters["lower"] = str.lower
"""


def test_a_cache_filling_is_low_and_a_real_change_beside_it_is_not(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(caches=CACHES, test_caches=CACHE_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=attributes")
    result.assert_outcomes(passed=2)
    tests = {t["nodeid"].split("::")[1]: t
             for t in json.loads((pytester.path / "out.json").read_text())["tests"]}
    filled = tests["test_compiles_a_template"]
    # The module-level cache is listed at low severity; the environment's cache inside is not
    # walked into, so the environment did not change.
    assert [(x["key"], x["severity"]) for x in filled["leaks"]] == [
        ("caches:_lexer_cache", "low")]
    assert not filled["leaked"]
    added = tests["test_adds_a_filter"]
    assert [(x["key"], x["severity"]) for x in added["leaks"]] == [("caches:ENV", "high")]
    assert added["leaked"]
