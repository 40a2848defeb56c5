"""The module under test of the large-object cases (tests/probes, tests/hunt): a module-level
project object with more attributes than the attributes probe reads as one namespace."""

FACTORY = """
class Factory:
    def __init__(self):
        for i in range(40):
            setattr(self, f"option_{i:02d}", i)
        self.id_style = "counter"
        self.serial = 0

    def make_id(self):
        if self.id_style not in ("counter", "uuid"):
            raise ValueError(f"unknown id style {self.id_style!r}")
        self.serial += 1
        return f"obj-{self.serial}"


FACTORY = Factory()
"""

#: A test that leaves the factory an id style it rejects (the polluter).
BAD_STYLE = """
from factorymod import FACTORY


def test_rejects_a_bad_style():
    FACTORY.id_style = "broken"
    try:
        FACTORY.make_id()
    except ValueError:
        pass
    else:
        raise AssertionError("a bad id style was accepted")
"""
