"""Delta debugging: minimal failing subsets, including two polluters in different halves."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from statesnap.minimize import ddmin


class Oracle:
    """Fails when every item of ``needed`` is in the subset; counts distinct calls."""

    def __init__(self, *needed: int) -> None:
        self.needed = set(needed)
        self.calls: list[tuple[int, ...]] = []

    def __call__(self, subset: Sequence[int]) -> bool:
        self.calls.append(tuple(subset))
        return self.needed <= set(subset)


def test_one_polluter_among_many() -> None:
    oracle = Oracle(613)
    assert ddmin(list(range(1000)), oracle, known_failing=True) == [613]
    assert len(oracle.calls) <= 2 * 10 + 2  # about two replays per halving


def test_two_polluters_in_different_halves_are_both_kept() -> None:
    oracle = Oracle(3, 17)
    assert ddmin(list(range(20)), oracle, known_failing=True) == [3, 17]


def test_three_polluters_and_order_is_kept() -> None:
    items = [f"t{i}" for i in range(30)]
    needed = {"t2", "t11", "t29"}
    assert ddmin(items, lambda s: needed <= set(s), known_failing=True) == ["t2", "t11", "t29"]


def test_no_subset_is_replayed_twice() -> None:
    oracle = Oracle(5, 9, 13)
    ddmin(list(range(16)), oracle, known_failing=True)
    assert len(oracle.calls) == len(set(oracle.calls))


def test_duplicate_items_are_told_apart() -> None:
    items = ["same", "x", "same", "y"]
    seen: list[list[str]] = []

    def fails(subset: Sequence[str]) -> bool:
        seen.append(list(subset))
        return list(subset).count("same") == 2

    assert ddmin(items, fails, known_failing=True) == ["same", "same"]


def test_a_passing_input_is_refused() -> None:
    with pytest.raises(ValueError, match="failing input"):
        ddmin([1, 2, 3], lambda s: False)


def test_a_single_item_is_returned_as_is() -> None:
    assert ddmin(["only"], lambda s: True) == ["only"]
