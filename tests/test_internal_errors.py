"""statesnap's own caught errors: kept process-wide, sent to the record's sink once each."""

from __future__ import annotations

from typing import Any

from statesnap.base import internal
from statesnap.base.internal import note_internal_error, noted, set_sink


def _raise(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


class _BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_noted_before_the_sink_reach_it_then_each_error_once() -> None:
    set_sink(None)
    early = _raise(ValueError("first line\nsecond line"))
    note_internal_error("unit: before the sink", early)
    got: list[dict[str, Any]] = []
    set_sink(got.append)
    try:
        assert got[-1]["where"] == "unit: before the sink"
        assert got[-1]["type"] == "internal_error"
        assert got[-1]["error"].startswith("ValueError: first line (test_internal_errors.py:")
        sent = len(got)
        for _ in range(3):
            note_internal_error("unit: repeated", _raise(KeyError("k")))
        assert len(got) == sent + 1  # repeats are counted, not sent again
        counts = {entry["where"]: n for entry, n in noted()}
        assert counts["unit: repeated"] >= 3
        note_internal_error("unit: broken str", _raise(_BrokenStr()))
        assert got[-1]["error"].startswith("_BrokenStr: <message unreadable> (")
    finally:
        set_sink(None)


def test_a_failing_sink_keeps_the_entry_for_the_next_and_noting_never_raises() -> None:
    def closed(entry: dict[str, Any]) -> None:
        raise ValueError("the record is closed")

    set_sink(closed)
    note_internal_error("unit: while closed", _raise(OSError("disk")))  # must not raise
    got: list[dict[str, Any]] = []
    set_sink(got.append)
    try:
        assert [e["where"] for e in got].count("unit: while closed") == 1
    finally:
        set_sink(None)
    assert internal.describe(ValueError("never raised")) == "ValueError: never raised"
