"""``diff_maps`` against a plain reference: every key of both maps compared by value.

The changed keys are found in C (maps of thousands of keys, few changed): these maps are
built the way probes build them (a new map from the last one, unchanged entries the same
objects) and the ways they are not (an equal value as a new object, unhashable values, keys
coming and going, an owner key for the attributes probe), and every diff must be the
reference's.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from statesnap.state.diff import OWNED_KEYS, diff_maps


def _reference(probe: str, before: dict[str, Any], after: dict[str, Any]) -> list[tuple[Any, ...]]:
    sep = OWNED_KEYS.get(probe)
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            if sep is None or key.partition(sep)[0] + sep in after:
                out.append((key, "removed", before[key], None))
        elif key not in before:
            if sep is None or key.partition(sep)[0] + sep in before:
                out.append((key, "added", None, after[key]))
        elif before[key] != after[key]:
            out.append((key, "changed", before[key], after[key]))
    return out


def _value(rng: random.Random) -> Any:
    kind = rng.randrange(4)
    if kind == 0:
        return f"v{rng.randrange(5)}"
    if kind == 1:
        return {"size": rng.randrange(3)}  # unhashable, like the files probe's entries
    if kind == 2:
        return [rng.randrange(3)]
    return rng.randrange(3)


@pytest.mark.parametrize("probe", ["attributes", "env"])
@pytest.mark.parametrize("seed", range(40))
def test_diff_is_the_references(probe: str, seed: int) -> None:
    rng = random.Random(seed)
    owners = ["m1", "m2", "m3"]
    before: dict[str, Any] = {f"{o}:": "module" for o in owners}
    for i in range(rng.randrange(1, 60)):
        before[f"{rng.choice(owners)}:k{i}"] = _value(rng)
    after = dict(before)  # as a probe makes its next map: unchanged entries shared
    for key in list(after):
        roll = rng.random()
        if roll < 0.1:
            del after[key]
        elif roll < 0.2:
            after[key] = _value(rng)
        elif roll < 0.3:
            value = after[key]
            # An equal value as another object: no change.
            after[key] = (f"{value}" if isinstance(value, str) and rng.random() < 0.5
                          else type(value)(value) if isinstance(value, (dict, list)) else value)
    for i in range(rng.randrange(5)):
        after[f"{rng.choice([*owners, 'm9'])}:new{i}"] = _value(rng)
    if rng.random() < 0.3:
        after["m9:"] = "module"
    got = [(c.key, c.change, c.before, c.after) for c in diff_maps(probe, before, after)]
    assert got == _reference(probe, before, after)


def test_an_equal_value_as_a_new_object_is_no_change() -> None:
    before = {"a": "x" * 3, "b": {"size": 1}}
    after = {"a": "".join(["x", "x", "x"]), "b": {"size": 1}}
    assert after["a"] is not before["a"]
    assert diff_maps("env", before, after) == []


def test_keys_removed_while_as_many_are_added() -> None:
    before = {"a": 1, "b": 2, "c": 3}
    after = {"a": 1, "d": 2, "e": 3}
    got = [(c.key, c.change) for c in diff_maps("env", before, after)]
    assert got == [("b", "removed"), ("c", "removed"), ("d", "added"), ("e", "added")]
