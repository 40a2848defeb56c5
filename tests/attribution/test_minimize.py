"""Delta debugging: minimal failing subsets, including two polluters in different halves."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from statesnap.analysis.minimize import ddmin


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


def test_the_subsets_tried_are_ddmin_s_exactly() -> None:
    # Halves, then quarters with their complements, a complement that fails (n goes down by
    # one), finer splits: the whole walk, so an off-by-one in any loop shows.  Chunks met
    # again are answered from the cache, so they are not in the list.
    oracle = Oracle(0, 3, 5)
    assert ddmin(list(range(6)), oracle, known_failing=True) == [0, 3, 5]
    assert oracle.calls == [
        (0, 1, 2), (3, 4, 5),
        (0, 1), (2, 3), (4,), (5,),
        (2, 3, 4, 5), (0, 1, 4, 5), (0, 1, 2, 3, 5),
        (2, 3, 5), (0, 1, 5), (0, 1, 2, 3),
        (0,), (1,), (2,), (3,),
        (1, 2, 3, 5), (0, 2, 3, 5),
        (0, 3, 5),
        (3, 5), (0, 5), (0, 3),
    ]


@pytest.mark.parametrize(("size", "needed", "replays"), [
    (8, (7,), 6),
    (8, (0,), 3),  # the first chunk fails: the other one is never run
    (2, (1,), 2),  # two items still split into two
    (12, (11,), 6),
    (8, (0, 7), 16),
    (9, (2, 8), 15),
    (20, (3, 17), 28),
    (10, (1, 4, 8), 35),
    (16, (5, 9, 13), 40),
    (6, (0, 1, 2, 3, 4, 5), 18),
])
def test_the_number_of_replays_used(size: int, needed: tuple[int, ...], replays: int) -> None:
    # Each replay costs seconds: one more complement per round is the same answer, slower.
    oracle = Oracle(*needed)
    assert ddmin(list(range(size)), oracle, known_failing=True) == list(needed)
    assert len(oracle.calls) == replays
    unknown = Oracle(*needed)
    assert ddmin(list(range(size)), unknown) == list(needed)
    assert len(unknown.calls) == replays + 1  # the whole input, checked first
    assert unknown.calls[0] == tuple(range(size))


def test_a_failing_empty_input_and_a_single_failing_item() -> None:
    assert ddmin([], lambda s: True) == []
    oracle = Oracle(4)
    assert ddmin([4], oracle) == [4]
    assert oracle.calls == [(4,)]



def test_a_large_input_that_needs_every_item_ends() -> None:
    # n grows to the input's length (past CPython's small-int cache): the loop must stop
    # there, comparing values, with every item kept.
    oracle = Oracle(*range(300))
    assert ddmin(list(range(300)), oracle, known_failing=True) == list(range(300))
    assert len(oracle.calls) == 1194
