"""A factory singleton with many settings, hunted: hidden by resetting tests, or failing outright.

On the pattern of a serializer's module-level factory (bench/realworld, crom): one test sets an
id style the factory rejects and leaves it; the tests after it in the default order set a valid
style again, so the victim (which only makes an id) passes there and fails only when nothing
resets the style in between.  When the victim already fails in the recorded order, the session
proves it and the hunt, which looks for what that order hid, shows that verdict with its
reproduction rather than "nothing found".  Every printed reproduction runs under plain pytest.
"""

from __future__ import annotations

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from large_object_sources import BAD_STYLE, FACTORY
from repro_check import check_reproductions

pytestmark = pytest.mark.slow


VICTIM = '''
from factorymod import FACTORY

def test_makes_an_id():
    assert FACTORY.make_id().startswith("obj-"), "no id made"
'''


def test_a_setting_left_bad_is_found_past_the_tests_that_set_it_again(suite: Suite) -> None:
    suite.write({
        "factorymod.py": FACTORY,
        "test_a_counter.py": '''
from factorymod import FACTORY

def test_counts():
    FACTORY.id_style = "counter"
    assert FACTORY.make_id()
''',
        "test_b_bad.py": BAD_STYLE,
        "test_c_uuid.py": '''
from factorymod import FACTORY

def test_uuids():
    FACTORY.id_style = "uuid"
    assert FACTORY.make_id()
''',
        "test_d_victim.py": VICTIM,
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_d_victim.py::test_makes_an_id"]
    assert "[LATENT]" in block, block
    assert "polluted by: test_b_bad.py::test_rejects_a_bad_style" in block, block
    assert "state: attributes:factorymod:FACTORY.id_style: 'counter' → 'broken'" in block, block
    assert "(restoring it makes the victim pass)" in block, block
    check_reproductions(block, suite.root, ["test_makes_an_id"],
                        expect="unknown id style 'broken'")


def test_a_victim_failing_in_the_recorded_order_is_shown_with_its_reproduction(
        suite: Suite) -> None:
    suite.write({"factorymod.py": FACTORY, "test_b_bad.py": BAD_STYLE,
                 "test_c_victim.py": VICTIM})
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    # Nothing hidden to find, but the record holds a verified order-dependent test: not a
    # clean bill.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no order-dependent tests hidden by the recorded order found" in proc.stdout
    assert "no order-dependent tests found" not in proc.stdout
    assert "the recorded run's own failures, as its session proved them:" in proc.stdout
    block = finding_blocks(proc.stdout)["test_c_victim.py::test_makes_an_id"]
    assert block.startswith("  [VERIFIED] test_c_victim.py::test_makes_an_id ← "
                            "test_b_bad.py::test_rejects_a_bad_style "
                            "(attributes:factorymod:FACTORY.id_style)"), block
    check_reproductions(block, suite.root, ["test_makes_an_id"],
                        expect="unknown id style 'broken'")
