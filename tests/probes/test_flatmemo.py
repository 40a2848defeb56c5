"""Describing a value again reuses the digests of the dicts below it that did not move.

A settings object reset before every test with a new list of the same processors (structlog's
``_CONFIG``) is described again each time; the processors' namespaces below it are the same
dicts with the same version tags, and their flat digests are taken from the last time
(:mod:`statesnap.probes.attributes._flatmemo`).  What must still be seen: every change of
those dicts (a value replaced, a key removed and put back, a dict emptied and refilled, a
namespace bound anew, an object's class changed, a value turned into a tuple or a list),
each giving exactly the fingerprint a description from scratch gives.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from statesnap.probes._dictwatch import probe_support
from statesnap.probes.attributes import _flatmemo
from statesnap.probes.attributes import describe as D

pytestmark = pytest.mark.skipif(not probe_support(), reason="no version tags here")

PROJECT = frozenset({__name__})


class Column:
    def __init__(self, key: str) -> None:
        self.key = key
        self.formatter = Formatter()


class Formatter:
    def __init__(self) -> None:
        self.style = "bold"

    def render(self) -> str:
        return self.style


class Other:
    pass


class Renderer:
    def __init__(self) -> None:
        self.columns = [Column("a"), Column("b")]
        self.styles = {"info": "green", "error": "red"}
        self.repr = Formatter().render
        self.pad = 30


def _fresh(value: object) -> str:
    """The fingerprint with nothing remembered."""
    _flatmemo.FLAT.clear()
    _flatmemo.CONTENT.clear()
    return D.describe(value, PROJECT, name="_CONFIG")[0]


def _config() -> types.SimpleNamespace:
    renderer = Renderer()
    return types.SimpleNamespace(configured=False, processors=[len, renderer], cache=False,
                                 renderer=renderer)


def _mutations(cfg: types.SimpleNamespace) -> Iterator[tuple[str, Callable[[], None]]]:
    r = cfg.renderer
    col = r.columns[0]

    def replace_value() -> None:
        col.key = "z"

    def remove_and_put_back() -> None:
        del r.styles["info"]
        r.styles["info"] = "green"

    def empty_and_refill() -> None:
        saved = dict(r.styles)
        r.styles.clear()
        r.styles.update(saved)

    def namespace_bound_anew() -> None:
        col.formatter.__dict__ = {"style": "dim"}

    def namespace_bound_anew_equal() -> None:
        col.formatter.__dict__ = dict(col.formatter.__dict__)

    def class_changed() -> None:
        col.formatter.__class__ = Other

    def value_made_a_tuple() -> None:
        col.key = ("z", 1)

    def value_made_a_list() -> None:
        col.key = [r.styles]

    def reset() -> None:
        cfg.processors = cfg.processors[:]

    for f in (reset, replace_value, reset, remove_and_put_back, empty_and_refill, reset,
              namespace_bound_anew, reset, namespace_bound_anew_equal, class_changed, reset,
              value_made_a_tuple, reset, value_made_a_list, reset):
        yield f.__name__, f


#: Changes of what the dicts below hold (the others put equal items back, or change what no
#: digest takes: a class, by the object's identity).
MOVES = {"replace_value", "remove_and_put_back", "namespace_bound_anew", "value_made_a_tuple",
         "value_made_a_list"}


def test_every_change_below_gives_the_fingerprint_of_a_description_from_scratch() -> None:
    cfg = _config()
    last = D.describe(cfg, PROJECT, name="_CONFIG")[0]
    assert last == _fresh(cfg)
    for name, change in _mutations(cfg):
        D.describe(cfg, PROJECT, name="_CONFIG")  # remembered as it was
        change()
        now = D.describe(cfg, PROJECT, name="_CONFIG")[0]
        assert now == _fresh(cfg), name
        if name in MOVES:
            assert now.split(" ~")[1] != last.split(" ~")[1], name  # the ~ digest moved
        last = now


def test_a_reset_signs_only_the_new_list_and_the_namespace_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _config()
    D.describe(cfg, PROJECT, name="_CONFIG")
    cfg.processors = cfg.processors[:]
    signed: list[Any] = []
    real = D.digest

    def digest(value: Any, *args: Any, **kwargs: Any) -> str:
        signed.append(value)
        return real(value, *args, **kwargs)

    monkeypatch.setattr(D, "digest", digest)
    D.describe(cfg, PROJECT, name="_CONFIG")
    below = D.reachable(vars(cfg), PROJECT)
    dicts = [b for b in below if type(b) is dict]
    assert dicts and not any(s is d for s in signed for d in dicts), signed
    assert any(s is cfg.processors for s in signed)


def test_the_memo_keys_on_the_dicts_own_version_tag() -> None:
    from statesnap.probes._dictwatch import version_tag

    memo = _flatmemo.Memo()
    d: dict[str, Any] = {"a": 1}
    for step in range(3):
        tag, known = memo.get(d)
        assert tag == version_tag(d) and known is None
        assert tag is not None
        memo.keep(d, tag, step)
        assert memo.get(d) == (tag, step)
        d[f"k{step}"] = step  # a store: the tag moves, the result is no longer given
