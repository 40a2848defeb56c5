"""Orders put off behind the proofs: exploring stops paying once its orders repeat themselves.

Five leaking tests each leave one variable with a value of their own (five groups).  The first
group's order exposes one victim; the next three leakers-first orders expose nothing new, so
the fifth is put off until that victim is proven, and then runs with the budget left: the
second victim, which only the fifth leaker fails, is still found and proven.  Every printed
reproduction runs under plain pytest.
"""

from __future__ import annotations

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions
from statesnap.analysis.findings import LATENT
from statesnap.hunt.explore import STALE_ORDERS
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.hunt.runs import ORDER_KINDS
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow


def _leaker(i: int) -> str:
    return f'''
import os

def test_sets_gate_{i}():
    os.environ["ZOO_GATE"] = "v{i}"
'''


def test_orders_that_expose_nothing_new_wait_behind_the_proofs(suite: Suite) -> None:
    suite.write({
        "test_a_first.py": '''
import os

def test_gate_not_v1():
    assert os.environ.get("ZOO_GATE") != "v1", "gate left at v1"
''',
        "test_a_second.py": '''
import os

def test_gate_not_v5():
    assert os.environ.get("ZOO_GATE") != "v5", "gate left at v5"
''',
        **{f"test_b_{i}.py": _leaker(i) for i in range(1, 6)},
    })
    record = suite.record()
    result = Hunter([read_record(record)], HuntOptions(budget=600),
                    logs_dir=suite.out / "hunt-logs").hunt()
    labels = [r.label for r in result.runs]
    first_proof = next(i for i, r in enumerate(result.runs) if r.kind not in ORDER_KINDS)
    # leakers-first-1 exposed the first victim, -2 to -4 nothing new: -5 waited.
    assert labels[:STALE_ORDERS + 1] == [f"leakers-first-{i}" for i in range(1, 5)], labels
    assert labels.index("leakers-first-5") > first_proof, labels
    assert not result.skipped, result.skipped
    found = {f.victim: f for f in result.findings}
    first = found["test_a_first.py::test_gate_not_v1"]
    second = found["test_a_second.py::test_gate_not_v5"]
    assert (first.status, first.polluters) == (LATENT, ["test_b_1.py::test_sets_gate_1"])
    assert (second.status, second.polluters) == (LATENT, ["test_b_5.py::test_sets_gate_5"])
    assert (second.probe, second.key) == ("env", "ZOO_GATE")
    check_reproductions(f"reproduce: {second.repro}", suite.root, [second.victim],
                        expect="gate left at v5")
