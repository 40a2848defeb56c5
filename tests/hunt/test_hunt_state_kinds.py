"""Kinds of state met in real suites, each hunted from a recorded run and proven by key.

Each suite is written on the pattern of a real order-dependent test (bench/realworld): the
victim runs first in the default order, so the recorded run passes and only the hunt's
orders expose it.  Every printed reproduction is run under plain pytest.
"""

from __future__ import annotations

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions

pytestmark = pytest.mark.slow


def test_subclasses_left_alive_on_a_base_class_that_aggregates_them(suite: Suite) -> None:
    # A base class that collects the names its subclasses declare; a test defines a subclass
    # in its body, which stays among the base's __subclasses__() until a collection.
    suite.write({
        "shapes.py": '''
class Shape:
    """Every kind of shape is a subclass; the base lists them all."""
    kinds = ()

    @classmethod
    def all_kinds(cls):
        found = list(cls.kinds)
        for sub in cls.__subclasses__():
            found += sub.all_kinds()
        return found

    def __init__(self):
        self.sides = 0
''',
        "test_a_catalogue.py": '''
import shapes

def test_catalogue_starts_empty():
    assert shapes.Shape.all_kinds() == [], "unexpected kinds"
''',
        "test_b_kinds.py": '''
import shapes

def test_area():
    assert shapes.Shape().sides == 0

def test_declares_a_kind():
    class Hexagon(shapes.Shape):
        kinds = ("hexagon",)
    Hexagon.example = Hexagon()   # a cycle: alive until the next collection
    assert "hexagon" in shapes.Shape.all_kinds()
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_catalogue.py::test_catalogue_starts_empty"]
    assert "polluted by: test_b_kinds.py::test_declares_a_kind" in block, block
    assert "state: attributes:shapes:Shape.__subclasses__:" in block, block
    assert "(restoring it makes the victim pass)" in block, block
    check_reproductions(block, suite.root, ["test_catalogue_starts_empty"],
                        expect="unexpected kinds")
