"""The ``random`` probe against the real global generators."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.random_ import NUMPY_KEY, PY_KEY, RandomProbe
from statesnap.state.diff import diff_maps


@pytest.fixture
def probe(tmp_path: Path) -> RandomProbe:
    p = RandomProbe()
    ctx = ProbeContext(rootdir=tmp_path)
    p.setup(ctx)
    # On CPython the fast path must be the one in use; a note says when it is not.
    if sys.implementation.name == "cpython":
        assert "random" not in ctx.notes
    return p


@pytest.fixture
def keep_state() -> object:
    state = random.getstate()
    yield state
    random.setstate(state)


def test_drawing_moves_token_and_fingerprint(probe: RandomProbe, keep_state: object) -> None:
    before = probe.read()
    token = probe.token()
    random.random()
    assert probe.token() != token
    changes = diff_maps("random", before, probe.read())
    assert [c.key for c in changes] == [PY_KEY]
    assert probe.severity_of(PY_KEY, None, None) == Severity.LOW
    json.dumps(probe.read())


def test_same_seed_same_fingerprint(probe: RandomProbe, keep_state: object) -> None:
    random.seed(1234)
    seeded = probe.read()[PY_KEY]
    token = probe.token()
    random.random()
    assert probe.read()[PY_KEY] != seeded
    random.seed(1234)
    assert probe.token() == token
    assert probe.read()[PY_KEY] == seeded


def test_the_pending_gauss_value_is_part_of_the_state(
    probe: RandomProbe, keep_state: object
) -> None:
    random.seed(7)
    random.gauss()  # draws a pair, keeps the second for the next call
    token, fingerprint = probe.token(), probe.read()[PY_KEY]
    random.gauss()  # uses the kept value: the generator itself does not move
    assert probe.token() != token
    assert probe.read()[PY_KEY] != fingerprint


def test_the_fingerprint_is_the_same_in_another_process(
    probe: RandomProbe, keep_state: object, pytester: pytest.Pytester
) -> None:
    random.seed(99)
    here = probe.read()[PY_KEY]
    code = (
        "import random; from pathlib import Path; from statesnap.probes.base import "
        "ProbeContext; from statesnap.probes.random_ import RandomProbe; "
        "p = RandomProbe(); p.setup(ProbeContext(rootdir=Path('.'))); random.seed(99); "
        "print(p.read()['random'])"
    )
    result = pytester.run(sys.executable, "-c", code)
    assert result.ret == 0
    assert result.outlines[-1] == here


def test_restore_puts_the_state_back(probe: RandomProbe, keep_state: object) -> None:
    original = probe.read()
    saved = probe.save()
    expected = random.random()
    random.setstate(saved[PY_KEY])  # type: ignore[index]
    random.random()
    random.random()
    assert probe.restore(saved, [PY_KEY]) == [PY_KEY]
    assert probe.read() == original
    assert random.random() == expected


@pytest.mark.needs_numpy
def test_numpy_legacy_generator_once_imported(probe: RandomProbe) -> None:
    np_random = pytest.importorskip("numpy.random")
    state = np_random.get_state()
    try:
        before = probe.read()
        assert NUMPY_KEY in before
        token = probe.token()
        np_random.rand()
        assert probe.token() != token
        assert [c.key for c in diff_maps("random", before, probe.read())] == [NUMPY_KEY]
        saved = probe.save()
        np_random.rand(3)
        assert probe.restore(saved, [NUMPY_KEY]) == [NUMPY_KEY]
        np_random.seed(5)
        seeded = probe.read()[NUMPY_KEY]
        np_random.rand()
        np_random.seed(5)
        assert probe.read()[NUMPY_KEY] == seeded
    finally:
        np_random.set_state(state)


def test_hints_point_at_local_generators(probe: RandomProbe) -> None:
    assert "random.Random(seed)" in (probe.hint(PY_KEY, "changed") or "")
    assert "default_rng" in (probe.hint(NUMPY_KEY, "changed") or "")
