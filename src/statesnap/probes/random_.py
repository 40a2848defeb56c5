"""``random``: the state of the global random generators (``random`` and numpy's legacy one).

Low severity.  The token copies both Mersenne Twisters' state through a ``ctypes`` view, checked
once against the public API; fingerprints are ``state <digest>``, the same in every process.
Why and what it costs: docs/PROBES.md.
"""

from __future__ import annotations

import array
import functools
import hashlib
import operator
import random
import struct
import sys
from collections.abc import Callable, Collection
from typing import Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, ProbeUnavailable, Severity

PY_KEY = "random"
NUMPY_KEY = "numpy.random"
#: 624 state words and an ``int`` position: the bytes both generators' states are made of.
MT_WORDS = 624
STATE_BYTES = MT_WORDS * 4 + 4

RawReader = Callable[[], bytes]


def _digest(data: bytes) -> str:
    return "state " + hashlib.blake2b(data, digest_size=6).hexdigest()


def _python_state_bytes(inst: random.Random) -> bytes:
    """Index then words, as ``_random.Random`` lays them out (``int index; uint32 state[624]``)."""
    _version, internal, _gauss = inst.getstate()
    words = array.array("I", internal[:MT_WORDS]).tobytes()
    return struct.pack("i", internal[MT_WORDS]) + words


def _ctypes_view(address: int, expected: bytes) -> RawReader | None:
    """A reader of ``STATE_BYTES`` at ``address``, if ctypes works and the bytes match."""
    try:
        import ctypes
    except ImportError:  # a build without ctypes: use the public API
        return None
    view = (ctypes.c_char * STATE_BYTES).from_address(address)
    if view.raw != expected:
        return None
    # ``view.raw`` through a partial of its getter: no Python frame on the hot path.
    getter: Any = type(view).raw  # the class attribute is the getset descriptor
    return functools.partial(getter.__get__, view)


def _python_view(inst: random.Random) -> tuple[RawReader, str]:
    # ``id`` is the address only on CPython; the layout check below guards the rest.
    base = next((c for c in type(inst).__mro__ if c.__module__ == "_random"), None)
    header = object.__basicsize__
    if (sys.implementation.name == "cpython" and base is not None
            and base.__basicsize__ >= header + STATE_BYTES):
        reader = _ctypes_view(id(inst) + header, _python_state_bytes(inst))
        if reader is not None:
            return reader, "ctypes"
    return (lambda: _python_state_bytes(inst)), "getstate (slow: ~19 us per token)"


def _numpy_view(rand: Any) -> tuple[RawReader, str]:
    def public() -> bytes:
        state = rand.get_state(legacy=False)["state"]
        return bytes(state["key"].tobytes()) + struct.pack("i", int(state["pos"]))

    try:
        address = int(rand._bit_generator.ctypes.state_address)
        reader = _ctypes_view(address, public())
    except Exception:  # not an MT19937, or no ctypes interface: the public API still works
        reader = None
    if reader is not None:
        return reader, "ctypes"
    return public, "get_state (slow: ~55 us per token)"


#: The second value of the last gauss() pair: a plain attribute of ``random.Random``.
_gauss_next = operator.attrgetter("gauss_next")


class RandomProbe(Probe):
    """Fingerprints of the global ``random`` generator and numpy's legacy global generator."""

    name = "random"
    severity = Severity.LOW
    restorable = True

    def __init__(self) -> None:
        self._inst: random.Random | None = None
        self._py: RawReader | None = None
        # numpy's legacy generator, set up the first time ``numpy.random.mtrand`` is seen.
        self._np_rand: Any = None
        self._np: RawReader | None = None
        self._notes: dict[str, str] = {}

    def setup(self, ctx: ProbeContext) -> None:
        reseeder = ctx.probe_options.get("reseeded_by")
        if reseeder:
            # The plugin reseeds both global generators before every test phase (setup, call,
            # teardown), so each test starts from a state no earlier test can have changed:
            # nothing this probe sees is a channel, and reading it would list every test.
            raise ProbeUnavailable(f"{reseeder} reseeds random and numpy.random before every "
                                   "test: no test can leave them changed for another",
                                   absent=True)
        self._notes = ctx.notes
        self._bind_python()

    def _bind_python(self) -> None:
        # Keeping a reference to the instance keeps the memory the view reads alive.
        inst = getattr(random, "_inst", None)
        if not isinstance(inst, random.Random):
            self._inst, self._py = None, None
            return
        self._inst = inst
        self._py, how = _python_view(inst)
        if how != "ctypes":
            self._notes["random"] = f"random state read with {how}"

    def _numpy_rand(self) -> Any:
        mtrand = sys.modules.get("numpy.random.mtrand")
        rand = getattr(mtrand, "_rand", None) if mtrand is not None else None
        if rand is None:
            return None
        if rand is not self._np_rand:
            self._np_rand = rand
            self._np, how = _numpy_view(rand)
            if how != "ctypes":
                self._notes["random.numpy"] = f"numpy state read with {how}"
        return rand

    def token(self) -> object:
        # The module-level functions are bound methods of the instance found at setup, so
        # that instance is the global generator even if ``random._inst`` is rebound later.
        py = self._py
        py_part = (py(), _gauss_next(self._inst)) if py is not None else None
        if "numpy.random.mtrand" not in sys.modules:
            return py_part
        np_part = self._np() if self._numpy_rand() is not None and self._np else None
        return py_part, np_part

    def read(self) -> ProbeMap:
        out: ProbeMap = {}
        if self._py is not None:
            gauss = _gauss_next(self._inst)
            extra = b"" if gauss is None else struct.pack("d", gauss)
            out[PY_KEY] = _digest(self._py() + extra)
        if self._numpy_rand() is not None and self._np is not None:
            out[NUMPY_KEY] = _digest(self._np())
        return out

    def hint(self, key: str, change: str) -> str | None:
        if key == NUMPY_KEY:
            return ("draw from a local numpy.random.default_rng(seed) instead of the global "
                    "numpy.random functions, or seed them in a fixture")
        return ("draw from a local random.Random(seed) instead of the global random "
                "functions, or seed them in a fixture (pytest-randomly reseeds per test)")

    # -- restoring: through the public setstate APIs --------------------------------------
    def save(self) -> object:
        saved: dict[str, object] = {PY_KEY: random.getstate()}
        rand = self._numpy_rand()
        if rand is not None:
            saved[NUMPY_KEY] = rand.get_state(legacy=False)
        return saved

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, dict)
        done: list[str] = []
        if PY_KEY in keys and PY_KEY in saved:
            random.setstate(saved[PY_KEY])
            done.append(PY_KEY)
        if NUMPY_KEY in keys and NUMPY_KEY in saved:
            rand = self._numpy_rand()
            if rand is not None:
                rand.set_state(saved[NUMPY_KEY])
                done.append(NUMPY_KEY)
        return done
