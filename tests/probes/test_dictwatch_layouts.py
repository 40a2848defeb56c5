"""Readers of version tags (``_dictwatch.words_at``) that reuse a layout built for the same
addresses: each still reads its own objects, in its own order, and keeps them alive."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from statesnap.probes import _dictwatch as W


class Namespace(dict[str, Any]):
    """A weak-referenceable dict."""


def _places(dicts: list[dict[str, Any]]) -> list[tuple[Any, int]]:
    return [(d, W.VERSION_OFFSET) for d in dicts]


def test_the_same_addresses_reuse_one_compiled_layout() -> None:
    assert W.probe_support()
    dicts = [{"k": i} for i in range(50)]
    first = W.words_at(_places(dicts))
    second = W.words_at(_places(dicts))
    # Two readers, one compiled format: the rebuild does not compile it again.
    assert first.read is not second.read
    assert first.read.func.__self__ is second.read.func.__self__  # type: ignore[attr-defined]
    assert first.read() == second.read()


def test_a_reused_layout_maps_readings_in_each_callers_order() -> None:
    dicts = [{"k": i} for i in range(20)]
    forward = W.words_at(_places(dicts))
    backward = W.words_at(_places(dicts[::-1]))
    twice = W.words_at(_places(dicts + dicts[:1]))
    before = [forward.per_item(forward.read()), backward.per_item(backward.read()),
              twice.per_item(twice.read())]
    dicts[0]["moved"] = 1
    after = [forward.per_item(forward.read()), backward.per_item(backward.read()),
             twice.per_item(twice.read())]
    moved = [[i for i, (a, b) in enumerate(zip(x, y, strict=True)) if a != b]
             for x, y in zip(before, after, strict=True)]
    assert moved == [[0], [19], [0, 20]]


def test_a_reader_keeps_its_own_objects_alive_when_addresses_are_reused() -> None:
    old = [Namespace(k=i) for i in range(10)]
    old_reader = W.words_at(_places(list(old)))
    refs = [weakref.ref(d) for d in old]
    del old
    gc.collect()
    assert all(r() is not None for r in refs)  # held by the reader
    del old_reader
    gc.collect()
    assert all(r() is None for r in refs)
    new = [Namespace(k=i) for i in range(10)]
    reader = W.words_at(_places(new))
    tags = reader.per_item(reader.read())
    assert list(tags) == [W.version_tag(d) for d in new]
    new[3]["x"] = 1
    assert [i for i, (a, b) in enumerate(zip(tags, reader.per_item(reader.read()),
                                             strict=True)) if a != b] == [3]
