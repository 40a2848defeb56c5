"""The key-level proof's pure parts: the smallest healing set and the key leading it."""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.keyproof import (
    lead_first,
    narrowed_directory,
    narrowest,
    restore_spec,
    smallest_healing_set,
)


def test_a_single_key_that_heals_alone_is_the_answer() -> None:
    tried: list[list[str]] = []

    def heals(keys: Sequence[str]) -> bool:
        tried.append(list(keys))
        return list(keys) == ["b"]

    assert smallest_healing_set(["a", "b", "c"], heals, singles=4) == ["b"]
    assert tried == [["a"], ["b"]]


def test_keys_needed_together_are_shrunk_to_the_smallest_set() -> None:
    def heals(keys: Sequence[str]) -> bool:
        return {"env:A", "attributes:m:CONF"} <= set(keys)

    found = smallest_healing_set(["env:A", "env:B", "attributes:m:CONF", "cwd:cwd"], heals,
                                 singles=4)
    assert sorted(found) == ["attributes:m:CONF", "env:A"]


def test_the_lead_is_the_key_whose_leak_alone_fails_the_victim_as_recorded() -> None:
    # Leaving the config dict leaked (the rest restored) fails as in the proof; leaving a
    # variable leaked fails a later assertion.
    asked: list[list[str]] = []

    def fails_as_recorded(others: Sequence[str]) -> bool | None:
        asked.append(list(others))
        return "attributes:m:CONF" not in others

    keys = ["env:A", "env:B", "attributes:m:CONF"]
    assert lead_first(keys, fails_as_recorded) == ["attributes:m:CONF", "env:A", "env:B"]
    assert asked == [["env:B", "attributes:m:CONF"], ["env:A", "attributes:m:CONF"],
                     ["env:A", "env:B"]]


def test_without_a_known_lead_the_ranked_order_stays() -> None:
    keys = ["env:A", "attributes:m:CONF"]
    assert lead_first(keys, lambda others: None) == keys
    assert lead_first(keys, lambda others: False) == keys
    # One key: nothing to ask.
    assert lead_first(["env:A"], lambda others: 1 / 0 > 0) == ["env:A"]


def test_a_key_that_had_a_value_is_put_back_as_it_first_existed() -> None:
    keys = [("attributes", "m:Class.buf"), ("env", "MODE")]
    spec = restore_spec("t.py::test_v", keys, {("attributes", "m:Class.buf"): "[] len=0",
                                               ("env", "MODE"): None})
    # MODE was absent before the causes: putting it back deletes it, as collection left it.
    assert spec == {"before": "t.py::test_v", "keys": [list(k) for k in keys],
                    "first_seen": [["attributes", "m:Class.buf"]]}
    spec = restore_spec("t.py::test_v", [], {}, imports=["pkg", "pkg.config"])
    assert spec == {"before": "t.py::test_v", "keys": [], "import": ["pkg", "pkg.config"]}


def test_a_healing_directory_is_narrowed_to_the_innermost_key_that_heals() -> None:
    keys = ["work/", "work/inbox/", "work/shelf/", "work/shelf/box/", "work/notes.txt"]
    tried: list[str] = []

    def inside(key: str) -> list[str]:
        return [k for k in keys if k != key and k.startswith(key)]

    def heals(subset: Sequence[str]) -> bool:
        tried.append(subset[0])
        return subset[0] in ("work/", "work/shelf/")

    assert narrowest("work/", inside, heals, limit=8) == "work/shelf/"
    assert tried == ["work/inbox/", "work/shelf/", "work/shelf/box/"]
    tried.clear()
    assert narrowest("work/", inside, heals, limit=1) == "work/"  # out of replays
    assert tried == ["work/inbox/"]


def test_only_a_files_directory_is_narrowed_and_a_stop_keeps_the_last_proven_step() -> None:
    keys = [("files", "work/"), ("files", "work/shelf/"), ("files", "work/shelf/box/"),
            ("env", "work/x"), ("files", "other/shelf/")]
    tried: list[tuple[str, str]] = []

    class OutOfTime(Exception):
        pass

    def heals(subset: Sequence[tuple[str, str]]) -> bool:
        tried.append(subset[0])
        if subset[0] == ("files", "work/shelf/box/"):
            raise OutOfTime
        return subset[0] in (("files", "work/"), ("files", "work/shelf/"))

    # work/shelf/ was proven before time ran out: it is kept, not the wider work/.
    assert narrowed_directory(("files", "work/"), keys, heals, (OutOfTime,)) == (
        "files", "work/shelf/")
    assert tried == [("files", "work/shelf/"), ("files", "work/shelf/box/")]
    tried.clear()
    assert narrowed_directory(("env", "work/"), keys, heals) == ("env", "work/")
    assert narrowed_directory(("files", "work/notes.txt"), keys, heals) == (
        "files", "work/notes.txt")
    assert tried == []
