"""``diff_maps`` against a plain reference: every key of both maps compared by value.

The changed keys are found in C (maps of thousands of keys, few changed): these maps are
built the way probes build them (a new map from the last one, unchanged entries the same
objects) and the ways they are not (an equal value as a new object, unhashable values, keys
coming and going, an owner key for the attributes probe), and every diff must be the
reference's.
"""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

from statesnap.base.deltamap import DeltaMap
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


# -- maps of one lineage (base.deltamap): only the keys either side changed are compared ----

def _derive_randomly(rng: random.Random, start: DeltaMap, steps: int) -> list[DeltaMap]:
    maps = [start]
    for _ in range(steps):
        last = maps[-1]
        removed = [k for k in last if not k.endswith(":") and rng.random() < 0.05]
        updated: dict[str, Any] = {}
        for key in list(last):
            if rng.random() < 0.05:
                updated[key] = _value(rng)  # often an equal value as another object
            elif rng.random() < 0.05:
                updated[key] = last[key]  # set to the very same object: no change
        for _ in range(rng.randrange(3)):
            updated[f"m{rng.randrange(4)}:n{rng.randrange(100)}"] = _value(rng)
        maps.append(last.derive(removed, updated))
    return maps


@pytest.mark.parametrize("seed", range(30))
def test_a_lineages_diffs_are_the_references(seed: int) -> None:
    rng = random.Random(seed)
    root = {f"m{o}:": "module" for o in range(3)}
    for i in range(80):
        root[f"m{rng.randrange(3)}:k{i}"] = _value(rng)
    maps = _derive_randomly(rng, DeltaMap.start(root), 12)
    for _ in range(40):
        before, after = rng.choice(maps), rng.choice(maps)
        got = [(c.key, c.change, c.before, c.after)
               for c in diff_maps("attributes", before, after)]
        assert got == _reference("attributes", before, after)


def test_only_the_keys_that_moved_are_touched() -> None:
    root = DeltaMap.start({"m:": "module", "m:a": "1", "m:b": "2"})
    same = root["m:a"]
    child = root.derive(["m:gone"], {"m:a": same, "m:b": "3", "m:c": "4"})
    assert child.touched == {"m:b", "m:c"}
    assert child.root == root.root and dict(root) == {"m:": "module", "m:a": "1", "m:b": "2"}


def test_maps_of_two_lineages_or_another_process_compare_every_key() -> None:
    a = DeltaMap.start({"k": "1", "j": "1"})
    b = DeltaMap.start({"k": "2", "j": "1"})  # another lineage: its touched set is empty
    assert [c.key for c in diff_maps("env", a, b)] == ["k"]
    # A pickled map (a forked worker's) is a plain dict: a root number from another process
    # could equal one of this process's.
    copy = pickle.loads(pickle.dumps(b.derive([], {"j": "2"})))
    assert type(copy) is dict
    assert [c.key for c in diff_maps("env", a, copy)] == ["j", "k"]
