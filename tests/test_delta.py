"""What changed, in one line (statesnap.output.delta), where a before/after pair is too long
for the line or reads the same once cut: the terminal, the summary JSON's ``delta`` and the
report say it instead of two ends that hide it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from statesnap.output import delta as D
from statesnap.output.delta import delta
from suite_runs import run_suite, write_suite


def test_container_fingerprints_name_what_was_added_removed_changed() -> None:
    before = "{'a': 1, 'b': [1, 2]} #aaaaaa len=2 ~11111111"
    after = "{'a': 2, 'b': [1, 2], 'c': 'x'} #aaaaaa len=3 ~22222222"
    assert delta(before, after) == "+'c': 'x'; ~'a': 1 → 2; len 2 → 3"
    assert delta("[1, 2, 3] #aaaaaa len=3 ~1", "[1, 3] #aaaaaa len=2 ~2") is not None
    assert delta("[1, 2, 3] #aaaaaa len=3 ~11111111",
                 "[1, 2, 3, 4] #aaaaaa len=4 ~21111111") == "+4; len 3 → 4"
    # Items that read the same are counted (structlog's WRITE_LOCKS).
    lock = "<_io.StringIO>: <_thread.lock>"
    assert delta(f"{{{lock}}} #1217c0 len=1 ~6f5974d3",
                 f"{{{lock}, {lock}}} #1217c0 len=2 ~f78e6224") == f"+{lock}; len 1 → 2"


def test_json_values_and_text() -> None:
    assert delta({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == '+"c": 4; ~"b": 2 → 3'
    assert delta({"level": "INFO"}, {"level": "DEBUG"}) == '~"level": "INFO" → "DEBUG"'
    text = delta("x" * 200 + "abc", "x" * 200 + "abd")
    assert text is not None and text.startswith("at character 202:") and "abc" in text
    assert delta(None, "x") is None and delta("x", "x") is None


def test_same_text_says_identity_or_digest() -> None:
    fp = "<Logger {'_core': <loguru._logger.Core>}> #ee7f50 ~f36762f5 eq~24c9ca11"
    assert delta(fp, fp.replace("~f36762f5", "~11111111")) == (
        "contents changed beyond the preview (the same object; its digest moved)")
    assert delta("<x.Y> #aaaaaa", "<x.Y> #bbbbbb") == (
        "only identity changed (another object, equal as far as it is shown)")


FILES = {
    "app.py": """
        TABLE = {f"entry_number_{i}": "v" * 10 for i in range(3)}
        """,
    "test_a.py": """
        import app


        def test_adds():
            app.TABLE["entry_number_9"] = "new"
        """,
}


def _tails() -> list[str]:
    real = ("<_Configuration {'is_configured': False, 'default_processors': [funct…uiltins.dict,"
            " 'cache_logger_on_first_use': False} (511 chars)> #3181d0 ~6e4ec3aa eq~b631f2a1")
    cases = [real, "", "x", " #", " #abcdef", "a #abcdef ~0123abcd",
             "{'a': 1} #abcdef len=1 ~0123abcd eq~0123abcd cache~0123abcd",
             "[1, 2] #abcdef collections.deque len=2 ~0123abcd sampled",
             "{'k': ' #abcdef'} #123456 len=1 ~0123abcd",
             "{'k': ' (3 chars) #abcdef'} (40 chars) #123456 len=1 ~0123abcd",
             "{'k': 1} (x chars) #123456 len=1 ~0123abcd",
             "{'k': 1} ( (12 chars) #123456 ~0123abcd\n",
             "<T {'a': 1}> #123456 ~0123abcd #",
             "<T {'a': 1}> (12 chars) #123456 my.Label ~0123abcd eq~89abcdef"]
    return cases + [real[:n] for n in range(0, len(real), 23)]


def test_the_tail_is_matched_where_it_can_begin() -> None:
    """``_tail_of`` matches the fingerprint's tail from its last `` #`` (or the `` (N chars)``
    before it) only: the same match as a search from the start, on a real fingerprint, cut
    ones, and previews that hold a tag or a length."""
    for text in _tails():
        found, searched = D._tail_of(text), D._tail().search(text)
        assert (found and (found.span(), found.groupdict())) == (
            searched and (searched.span(), searched.groupdict())), text
    assert sum(D._tail().search(t) is not None for t in _tails()) >= 8
    assert any(D._tail().search(t) is None for t in _tails())
    assert any(re.search(r"\(\d+ chars\) #", t) and D._tail_of(t) for t in _tails())


def test_terminal_and_summary_say_what_changed(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    line = next(ln for ln in run.output.splitlines() if "app:TABLE" in ln)
    assert "+'entry_number_9': 'new'; len 3 → 4" in line, line
    assert "→ {" not in line  # not both cut ends
    summary = json.loads(run.json_path.read_text(encoding="utf-8"))
    (leak,) = [x for t in summary["tests"] for x in t["leaks"] if x["key"] == "app:TABLE"]
    assert leak["delta"] == "+'entry_number_9': 'new'; len 3 → 4"
    assert leak["before"] and leak["after"]  # the existing fields are kept


def test_the_common_prefix_by_halving_is_the_one_by_characters() -> None:
    import itertools
    import random

    def naive(b: str, a: str) -> int:
        return next((i for i, (x, y) in enumerate(zip(b, a, strict=False)) if x != y),
                    min(len(b), len(a)))

    rng = random.Random(7)
    texts = ["", "a", "ab", "abc", "abd", "…x", "…y"] + [
        "".join(rng.choice("ab…") for _ in range(rng.randrange(0, 40))) for _ in range(60)]
    for b, a in itertools.product(texts, repeat=2):
        assert D._common_prefix(b, a) == naive(b, a), (b, a)
    assert D._split_items("'a', 'b…") is None and D._split_items("'a', 'b'") == ["'a'", "'b'"]
