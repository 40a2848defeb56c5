"""The ``attributes`` probe rates a change from its two texts; the commonest LOW case first.

An autouse fixture that puts equal contents back in new containers (structlog's reset of
``_CONFIG`` before every test) makes one such change per test, rated LOW by its unchanged
``eq~`` digest.  That test is one regex; the others before it parsed the whole preview
(``ast.literal_eval``) on every test.  The order of the tests never changes a rating: they
are pure and any of them makes it LOW.
"""

from __future__ import annotations

import re
import types
from typing import Any

import pytest

from statesnap.probes.attributes import _fingerprints as F
from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import Severity


class Renderer:
    def __init__(self) -> None:
        self.colors = {"info": "green", "error": "red"}
        self.pad = 30


def _config_texts() -> tuple[str, str]:
    """A settings object's fingerprint before and after a reset to equal contents (a new
    processor list holding the same processors), as the probe describes it."""
    mod = types.ModuleType("cfgmod")
    mod.Renderer = Renderer  # type: ignore[attr-defined]
    Renderer.__module__ = "cfgmod"
    try:
        proc = Renderer()

        def add_level(event: dict[str, Any]) -> dict[str, Any]:
            return event

        cfg = types.SimpleNamespace(is_configured=False, processors=[add_level, proc],
                                    cache_on_first_use=False)
        project = frozenset({"cfgmod"})
        before = D.describe(cfg, project, name="_CONFIG")[0]
        cfg.processors = cfg.processors[:]  # the reset: an equal new list
        after = D.describe(cfg, project, name="_CONFIG")[0]
    finally:
        Renderer.__module__ = __name__
    return before, after


def test_a_reset_to_equal_contents_is_rated_without_parsing_the_preview(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before, after = _config_texts()
    assert before != after and before.split()[-1] == after.split()[-1]  # same eq~, new ~
    parsed: list[str] = []
    real = F.ast.literal_eval

    def literal_eval(text: str) -> Any:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(F.ast, "literal_eval", literal_eval)
    probe = AttributesProbe()
    assert probe.severity_of("cfgmod:_CONFIG", before, after) == Severity.LOW
    assert parsed == []


#: ``(key, before, after)``: each LOW test's case, and changes none of them makes LOW.
_CASES = [
    # a cache filled (same object, named a cache)
    ("m:_cache", "{} #0a0b0c len=0 ~00000001", "{'a': 1} #0a0b0c len=1 ~00000002"),
    # a cache rebound to a fresh empty one
    ("m:_cache", "{'a': 1} #0a0b0c len=1 ~00000002", "{} #0d0e0f len=0 ~00000001"),
    # a memo making a lock per key
    ("m:LOCKS", "{'a': <_thread.lock>} #0a0b0c len=1 ~00000001",
     "{'a': <_thread.lock>, 'b': <_thread.lock>} #0a0b0c len=2 ~00000002"),
    # a lazy initialisation left empty
    ("m:_local", "<_local {}> #0a0b0c ~00000001", "<_local {'stack': []}> #0a0b0c ~00000002"),
    # equal contents in new containers
    ("m:CONFIG", "<Cfg {'a': [1]}> #0a0b0c ~00000001 eq~0000aaaa",
     "<Cfg {'a': [1]}> #0a0b0c ~00000002 eq~0000aaaa"),
    # real changes: other contents, another object, a plain value
    ("m:CONFIG", "<Cfg {'a': [1]}> #0a0b0c ~00000001 eq~0000aaaa",
     "<Cfg {'a': [2]}> #0a0b0c ~00000003 eq~0000bbbb"),
    ("m:CONFIG", "<Cfg {'a': [1]}> #0a0b0c ~00000001 eq~0000aaaa",
     "<Cfg {'a': [1]}> #0d0e0f ~00000002 eq~0000aaaa"),
    ("m:RATE", "1", "2"),
    ("m:_local", "<_local {'x': 1}> #0a0b0c ~00000001",
     "<_local {'x': 2, 'stack': []}> #0a0b0c ~00000002"),
]


@pytest.mark.parametrize(("key", "before", "after"), _CASES)
def test_the_order_of_the_tests_changes_no_rating(key: str, before: str, after: str) -> None:
    any_low = any([F.cache_filled(key, before, after), F.cache_replaced(key, before, after),
                   F.memo_filled(before, after), F.lazily_initialised(before, after),
                   F.same_content(before, after)])
    probe = AttributesProbe()
    expected = Severity.LOW if any_low else probe.severity
    assert probe.severity_of(key, before, after) == expected


def test_the_cases_cover_each_low_test() -> None:
    # Each LOW test holds for one case at least, and some cases are no LOW at all: the
    # parametrised test above compares both kinds.
    tests = [lambda k, b, a: F.cache_filled(k, b, a), F.cache_replaced,
             lambda k, b, a: F.memo_filled(b, a), lambda k, b, a: F.lazily_initialised(b, a),
             lambda k, b, a: F.same_content(b, a)]
    for test in tests:
        assert any(test(*case) for case in _CASES), test
    assert not all(any(test(*case) for test in tests) for case in _CASES)


def _tail_cases() -> list[str]:
    before, after = _config_texts()
    base = [before, after, "", "x", " #", " #abcdef", "a #abcdef ~0123abcd eq~0123abcd"]
    # A preview holding what looks like a tag, a label, a length, cache parts, a newline.
    more = ["{'k': 'v #abcdef ~0123abcd eq~0123abcd'} #123456 ~0123abcd eq~89abcdef",
            "[1, 2] #123456 Deque len=2 ~0123abcd eq~89abcdef cache~00000000",
            "[1, 2] #123456 len=2 ~0123abcd eq~89abcdef\n",
            "[' #abcdef ~0123abcd eq~0123abcd'] #12345 ~0123abcd eq~89abcdef",
            "<T {'a': 1}> #123456 ~0123abcd eq~89abcdef #",
            "<T {'a': 1}> #123456 my.Label ~0123abcd eq~89abcdef",
            "<T {'a': 1}> #123456 ~0123abcd",
            # What looks like digests inside the preview, and a cache part.
            "{'k': ' ~0123abcd cache~01234567'} #123456 len=1 ~0123abcd eq~89abcdef",
            "<T {'a': ' ~0123abcd'}> #123456 ~0123abcd eq~89abcdef cache~00000000",
            "<T {'a': 1}> #123456 ~0123abcd cache~00000000\n",
            "<T {'a': 1}> #123456 ~0123abcd ~"]
    return base + more + [t[:n] for t in (before, after) for n in range(0, len(t), 37)]


@pytest.mark.parametrize(("pattern", "lead"), [(F._SAME_END, " #"), (F._SIGS, " ~")])
def test_the_tail_match_finds_what_a_search_finds(pattern: str, lead: str) -> None:
    """``same_content`` and ``cache_filled`` match their patterns from the last `` #`` or
    `` ~`` only: the same match as a search from the start, on real fingerprints, cut ones,
    and previews that hold a tag or a digest."""
    for text in _tail_cases():
        found, searched = F._tail_match(pattern, text, lead), re.search(pattern, text)
        assert (found and found.groups()) == (searched and searched.groups()), text
    assert any(re.search(pattern, t) for t in _tail_cases())
    assert any(re.search(pattern, t) is None for t in _tail_cases())
