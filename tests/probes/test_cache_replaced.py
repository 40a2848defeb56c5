"""A cache rebound to a fresh one like it is a reset (LOW), not a leak.

Met in pyparsing's suite: its test classes call ``ParserElement.enable_packrat()`` before
every test, which binds a new ``_FifoCache`` of the same size, and the tests rebind
``recursion_memos`` to a new empty memo.  Rated HIGH, these two keys alone made 1,357 of its
1,916 tests "leak state" (1,559 in all).  A cache rebound with other settings (another
size), a cache rebound to one that already holds entries, and anything not named or typed
as a cache keep their severity.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

GRAMMAR = '''
class FifoCache:
    def __init__(self, size):
        self.size = size
        store = {}
        # Closures per instance, as pyparsing's _FifoCache has.
        self.get = lambda key: store.get(key)
        self.set = store.__setitem__


class UnboundedMemo(dict):
    pass


class Element:
    packrat_cache = FifoCache(128)
    recursion_memos = UnboundedMemo()
    registry = {}

    @staticmethod
    def enable_packrat(size=128):
        Element.packrat_cache = FifoCache(size)

    @staticmethod
    def reset_memos(*seed):
        Element.recursion_memos = UnboundedMemo(seed)
'''

TESTS = '''
import grammar

def test_a_enables_packrat():
    grammar.Element.enable_packrat()

def test_b_enables_packrat_again():
    grammar.Element.enable_packrat()

def test_c_resets_the_memos():
    grammar.Element.reset_memos()

def test_d_resizes_the_cache():
    grammar.Element.enable_packrat(7)

def test_e_seeds_the_memos():
    grammar.Element.reset_memos(("rule", 3))

def test_f_replaces_the_registry():
    grammar.Element.registry = {}
'''


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args],
                          cwd=root, capture_output=True, text=True, timeout=300)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "grammar.py").write_text(GRAMMAR, encoding="utf-8")
    (tmp_path / "test_grammar.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def _tests(root: Path) -> dict[str, Any]:
    data = json.loads((root / "out.json").read_text(encoding="utf-8"))
    return {t["nodeid"].split("::")[1]: t for t in data["tests"]}


def test_a_cache_reset_to_a_fresh_one_like_it_is_low(suite: Path) -> None:
    plain = _run(suite)
    proc = _run(suite, "-p", "statesnap", "--statesnap-json=out.json")
    out = proc.stdout + proc.stderr
    assert proc.returncode == plain.returncode == 0, out
    assert plain.stdout.splitlines()[-1].split(" in ")[0] in out  # the same summary line
    tests = _tests(suite)
    for name in ("test_a_enables_packrat", "test_b_enables_packrat_again",
                 "test_c_resets_the_memos"):
        leaks = {x["key"]: x["severity"] for x in tests[name]["leaks"]}
        assert set(leaks.values()) == {"low"}, (name, leaks)
        assert not tests[name]["leaked"], (name, tests[name])
    # Another size, a memo that starts with an entry, a registry: each stays a leak.
    for name, key in (("test_d_resizes_the_cache", "grammar:Element.packrat_cache"),
                      ("test_e_seeds_the_memos", "grammar:Element.recursion_memos"),
                      ("test_f_replaces_the_registry", "grammar:Element.registry")):
        leaks = {x["key"]: x["severity"] for x in tests[name]["leaks"]}
        assert leaks.get(key) == "high", (name, leaks)
        assert tests[name]["leaked"], (name, tests[name])
    assert "test_a_enables_packrat:" not in out, out  # not listed among the leaks
