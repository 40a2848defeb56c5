"""The pointer-array signature of watched sequences (``attributes`` probe, lists in place)."""

from __future__ import annotations

import collections
import gc
import weakref
from typing import Any

import pytest

from statesnap.probes import _listwatch as L


class Item:
    """A weak-referenceable item."""


@pytest.fixture(params=["pointers", "id sum"])
def reader_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    # Both paths for real: the fast one (checked on this interpreter) and the portable one.
    if request.param == "pointers":
        assert L.supported()
    else:
        monkeypatch.setattr(L, "supported", lambda: False)
    return str(request.param)


def test_the_layout_check_passes_on_this_interpreter() -> None:
    assert L.supported()


def test_same_length_replacement_sort_and_reverse_change_the_reading(reader_kind: str) -> None:
    items: list[Any] = [Item(), "x", 3, None]
    other: collections.deque[Any] = collections.deque([1, 2])
    tags: set[str] = {"a", "b"}
    read = L.contents_reader([items, other, tags])
    before = read()
    assert read() == before  # nothing moved: the same reading
    items[1] = "y"  # same length, another object
    assert read() != before
    after_swap = read()
    items.reverse()
    if reader_kind == "pointers":
        assert read() != after_swap  # order counts; an id sum cannot see a reordering
    reversed_ = read()
    other[0] = 99
    assert read() != reversed_
    changed = read()
    tags.discard("a")
    tags.add("c")  # same size, other member
    assert read() != changed


def test_the_items_are_not_kept_alive(reader_kind: str) -> None:
    # A test that drops an object from a registry and checks it is collected must still pass.
    registry: list[Any] = [Item(), Item()]
    ref = weakref.ref(registry[0])
    read = L.contents_reader([registry])
    before = read()
    del registry[0]
    registry.append("replacement")  # same length again (not an Item: it could reuse the
    # freed address, which an id sum would not tell from the old one)
    gc.collect()
    assert ref() is None
    assert read() != before


def test_no_sequences_reads_as_a_constant() -> None:
    read = L.contents_reader([])
    assert read() == ()
    unrelated: list[Any] = [1, 2]
    unrelated.append(3)  # nothing watched: nothing to see
    assert read() == ()
