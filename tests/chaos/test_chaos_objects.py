"""One bad object costs one key, never a probe.

Each case plants objects that raise when read (``__eq__``, ``__hash__``, ``__len__``,
``__iter__``, ``items()``, ``__repr__``, ``__getattr__``, a ``__class__`` property, names that
are no strings) where a probe reads, in a first test; a later polluter→victim pair changes
what that same probe watches.  The probe must go on: the pair is proven by replay on that
probe's key, and what could not be read is that key's ``<unreadable: ...>`` value.  Before,
the first bad object switched the probe off for the rest of the run, and the pair went
unseen.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pair_runs import run_case

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

#: A project module of hostile objects, and the state the planted pair shares.
HOSTILE = """
    class Boom(Exception):
        pass

    class Hostile:
        def __eq__(self, other): raise Boom("eq")
        def __ne__(self, other): raise Boom("ne")
        def __hash__(self): raise Boom("hash")
        def __len__(self): raise Boom("len")
        def __iter__(self): raise Boom("iter")
        def __repr__(self): raise Boom("repr")
        def __str__(self): raise Boom("str")
        def __bool__(self): raise Boom("bool")
        def items(self): raise Boom("items")
        def __getattr__(self, name): raise Boom("getattr " + name)
        @property
        def __class__(self): raise Boom("class")
        @property
        def __dict__(self): raise Boom("dict")

    class HostileDict(dict):
        def items(self): raise Boom("items")
        def values(self): raise Boom("values")
        def __len__(self): raise Boom("len")
        def __iter__(self): raise Boom("iter")
        def __eq__(self, other): raise Boom("eq")
        def __repr__(self): raise Boom("repr")
        __hash__ = None

    class HostileList(list):
        def __len__(self): raise Boom("len")
        def __iter__(self): raise Boom("iter")
        def __eq__(self, other): raise Boom("eq")
        def __repr__(self): raise Boom("repr")

    STATE = {}
"""

CASES = {
    "attributes": ("""
        import chaos_mod

        def test_0_hostile():
            chaos_mod.H = chaos_mod.Hostile()
            chaos_mod.HD = chaos_mod.HostileDict(a=1)
            chaos_mod.HL = chaos_mod.HostileList([1])
            chaos_mod.L = [chaos_mod.Hostile(), chaos_mod.HostileDict(b=2)]
            chaos_mod.Hostile.registry = chaos_mod.HostileDict(c=3)
            vars(chaos_mod)[42] = "a global whose name is no string"

        def test_1_polluter():
            chaos_mod.STATE["k"] = 1

        def test_2_victim():
            assert not chaos_mod.STATE
        """, "chaos_mod:STATE"),
    "modules": ("""
        import sys, types
        import chaos_mod

        def test_0_hostile():
            sys.modules[42] = chaos_mod
            sys.modules["chaos_hostile"] = chaos_mod.Hostile()

        def test_1_polluter():
            sys.modules["chaos_stub"] = types.ModuleType("chaos_stub")

        def test_2_victim():
            assert "chaos_stub" not in sys.modules
        """, "chaos_stub"),
    "syspath": ("""
        import sys
        import chaos_mod

        def test_0_hostile():
            sys.path.insert(0, chaos_mod.Hostile())

        def test_1_polluter():
            sys.path.append("/chaos/nowhere")

        def test_2_victim():
            assert "/chaos/nowhere" not in [p for p in sys.path if type(p) is str]
        """, "sys.path:/chaos/nowhere"),
    "logging": ("""
        import logging
        import chaos_mod

        def test_0_hostile():
            logging.getLogger("chaos.hostile").__dict__["level"] = chaos_mod.Hostile()
            handler = logging.NullHandler()
            handler.level = chaos_mod.Hostile()
            logging.getLogger("chaos.handled").addHandler(handler)

        def test_1_polluter():
            logging.getLogger("chaos.victim").setLevel(logging.ERROR)

        def test_2_victim():
            assert logging.getLogger("chaos.victim").level == logging.NOTSET
        """, "chaos.victim:level"),
    "threads": ("""
        import threading
        import chaos_mod

        STOP = threading.Event()

        def _start(name):
            t = threading.Thread(target=STOP.wait, daemon=True)
            t._name = name
            t.start()

        def test_0_hostile():
            _start(chaos_mod.Hostile())

        def test_1_polluter():
            _start("chaos-worker")

        def test_2_victim():
            names = [t._name for t in threading.enumerate() if type(t._name) is str]
            assert "chaos-worker" not in names
        """, "chaos-worker"),
}


@pytest.mark.parametrize("probe", sorted(CASES))
def test_a_hostile_object_costs_its_key_and_the_probe_goes_on(tmp_path: Path,
                                                              probe: str) -> None:
    source, key = CASES[probe]
    run = run_case(tmp_path, {"chaos_mod.py": HOSTILE, "test_chaos.py": source})
    finding = run.finding("test_2_victim")
    assert finding["status"] == "verified", run.output[-5000:]
    assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == ["test_1_polluter"]
    # Proven on the key of the probe the bad objects were planted in: it was still on.
    assert (finding["probe"], finding["key"]) == (probe, key), run.output[-5000:]


def test_what_cannot_be_read_is_recorded_as_unreadable(tmp_path: Path) -> None:
    source, _ = CASES["attributes"]
    run = run_case(tmp_path, {"chaos_mod.py": HOSTILE, "test_chaos.py": source})
    changes = run.changes("attributes")
    for name in ("H", "HD", "HL"):
        assert changes[f"chaos_mod:{name}"] == "<unreadable: Boom>", changes
    # A readable list holding bad objects, and the class attribute: described or marked,
    # never the probe's end.
    assert "chaos_mod:L" in changes and "chaos_mod:Hostile.registry" in changes, changes
    assert changes["chaos_mod:STATE"].startswith("{'k': 1}"), changes
    modules = run_case(tmp_path / "modules", {"chaos_mod.py": HOSTILE,
                                              "test_chaos.py": CASES["modules"][0]})
    found = modules.changes("modules")
    assert found["<int key 42>"].startswith("module#"), found
    assert found["chaos_hostile"].startswith("chaos_mod.Hostile#"), found
