"""A value rebuilt with equal contents in new builtin objects is no HIGH leak.

sqlparse 0.5.3's tests customise its lexer and reset it with ``default_initialization()``,
which makes its ``_SQL_REGEX`` and ``_keywords`` lists again: equal contents (the same compiled
patterns' ``match`` methods, the same keyword dicts), new lists of new tuples.  The
fingerprint's digest takes those by identity, and each reset read as a HIGH leak of the test
that made it.  Its ``eq~`` digest (probes/attributes/_content.py) takes them by content: the same
object holding what it held is a LOW change (recorded, never "leaked").

What must stay HIGH, each with its victim verified: a customisation left in place, a reset
that rebuilt other contents, a module attribute rebound to an equal list that another module
still holds (the equal new list is not the one it appends to), and an in-place change three
levels down under a list replaced by an equal copy.  Real pytest runs; the
printed reproductions are run under plain pytest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from suite_runs import run_shell, run_suite, write_suite

SUITE = {
    "lexer.py": r'''
        import re

        SQL_REGEX = [(r"\s+", "ws"), (r"[a-z]+", "name"), (r"\d+", "number")]
        KEYWORDS = {"SELECT": "kw", "FROM": "kw"}
        HANDLERS = []


        class Lexer:
            _default_instance = None

            @classmethod
            def get_default_instance(cls):
                if cls._default_instance is None:
                    cls._default_instance = cls()
                    cls._default_instance.default_initialization()
                return cls._default_instance

            def default_initialization(self):
                # sqlparse's reset: new lists, new tuples, the same patterns and dicts.
                self._SQL_REGEX = [(re.compile(rx).match, tt) for rx, tt in SQL_REGEX]
                self._keywords = [KEYWORDS]
                self._options = [{"case": ["upper"]}]

            def add_keywords(self, keywords):
                self._keywords.append(keywords)

            def is_keyword(self, word):
                return any(word.upper() in kw for kw in self._keywords)


        Lexer.get_default_instance()


        def handlers():
            return HANDLERS
        ''',
    "plugins.py": '''
        from lexer import HANDLERS

        def register(handler):
            HANDLERS.append(handler)
        ''',
    "test_lexer.py": '''
        import lexer
        import plugins
        from lexer import Lexer

        def test_a_custom_keyword_then_reset():
            lex = Lexer.get_default_instance()
            lex.add_keywords({"BACON": "kw"})
            assert lex.is_keyword("bacon")
            lex.default_initialization()

        def test_b_bacon_is_not_a_keyword():
            assert not Lexer.get_default_instance().is_keyword("bacon")

        def test_c_reset_from_a_changed_table():
            lexer.SQL_REGEX.append((r"#.*", "comment"))
            try:
                Lexer.get_default_instance().default_initialization()
            finally:
                lexer.SQL_REGEX.pop()

        def test_d_three_rules():
            assert len(Lexer.get_default_instance()._SQL_REGEX) == 3

        def test_e_custom_keyword_left():
            Lexer.get_default_instance().add_keywords({"SPAM": "kw"})

        def test_f_spam_is_not_a_keyword():
            assert not Lexer.get_default_instance().is_keyword("spam")

        def test_g_handlers_cleared():
            lexer.HANDLERS = []

        def test_h_registered_handler_is_listed():
            plugins.register(print)
            assert print in lexer.handlers()

        def test_i_copied_then_changed_deep_inside():
            lex = Lexer.get_default_instance()
            lex._options = list(lex._options)  # a new, equal list...
            lex._options[0]["case"].append("lower")  # ...and a change three levels down

        def test_j_upper_case_only():
            assert Lexer.get_default_instance()._options[0]["case"] == ["upper"]
        ''',
}

RESET = "test_a_custom_keyword_then_reset"
VICTIMS = {
    "test_d_three_rules": ("test_c_reset_from_a_changed_table", "lexer:Lexer._default_instance"),
    "test_f_spam_is_not_a_keyword": ("test_e_custom_keyword_left",
                                     "lexer:Lexer._default_instance"),
    "test_h_registered_handler_is_listed": ("test_g_handlers_cleared", "lexer:HANDLERS"),
    "test_j_upper_case_only": ("test_i_copied_then_changed_deep_inside",
                               "lexer:Lexer._default_instance"),
}


def test_a_reset_to_equal_contents_is_low_real_changes_stay_high_and_proven(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    assert "4 failed, 6 passed" in run.proc.stdout, run.output[-3000:]
    leaks = run.leak_severities()
    assert leaks == {
        RESET: [("lexer:Lexer._default_instance", "low")],
        **{polluter: [(key, "high")] for polluter, key in VICTIMS.values()},
        # The victim fills the list plugins still holds: its own leak.
        "test_h_registered_handler_is_listed": [("plugins:HANDLERS", "high")],
    }, leaks
    data = json.loads(run.json_path.read_text(encoding="utf-8"))
    [reset] = next(t["leaks"] for t in data["tests"] if t["nodeid"].endswith(RESET))
    assert reset["before"].split()[-2:] != reset["after"].split()[-2:], reset  # other lists
    out = run.proc.stdout
    # The reset is recorded but is no leak: not among the tests that leaked.
    assert f"test_lexer.py::{RESET}:" not in out, out[-4000:]
    assert "test_b_bacon_is_not_a_keyword" not in out, out[-4000:]
    for victim, (polluter, key) in VICTIMS.items():
        assert f"test_lexer.py::{polluter}: {key}:" in out, out[-4000:]
        finding = run.finding(victim)
        assert finding["status"] == "verified", finding
        assert finding["polluters"] == [f"test_lexer.py::{polluter}"], finding
        assert finding["proven_keys"] == [f"attributes:{key}"], finding
        repro = run_shell(finding["repro"], cwd=root)
        assert "1 failed, 1 passed" in repro.stdout, repro.stdout[-2000:]


def test_the_scalar_shortcut_gives_the_signatures_item_by_item() -> None:
    """The digests take a container of scalars only as its own items (C passes): the same
    signatures as one per item, where all are scalars and where some are not (an object by
    identity, an equal int elsewhere by value, a tuple in the ``eq~`` items)."""
    from statesnap.probes.attributes import describe as D
    from statesnap.probes.attributes import kinds as K
    from statesnap.probes.attributes._content import _Items

    marker = object()
    cases: list[Any] = [
        {"a": 1, "b": "x", "c": None, "d": 2.5, "e": b"y", "f": True},
        {"a": marker, "b": 1, "c": [1]},
        {1: "one", (1, 2): marker, "k": ("t", 3)},
        [1, 2, "x"], [marker, 1, None], {1, "a", 2.0}, {1, marker}, [],
    ]
    for value in cases:
        keys = list(value)
        vals = list(value.values()) if isinstance(value, dict) else keys
        by_item: object
        if isinstance(value, dict):
            by_item = (tuple(map(D._item_sig, keys)), tuple(map(D._item_sig, vals)))
        elif isinstance(value, set):
            by_item = frozenset(map(D._item_sig, keys))
        else:
            by_item = tuple(map(D._item_sig, keys))
        assert D.digest(value, nested=False) == f"{hash(by_item) & 0xFFFFFFFF:08x}", value
        items = _Items([], K.SCALARS)
        for part in (keys, vals):
            assert items._all(part) == tuple(map(_Items([], K.SCALARS).sig, part)), part
