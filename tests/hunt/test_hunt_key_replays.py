"""Key-level proofs of keys that did not exist when the replay started.

Each suite is written on the pattern of a real order-dependent test (bench/realworld): the key
the victim relies on comes into being during the polluter (a ``setup_class`` makes it, a
fixture imports the module first, the test body imports a package, a test makes a directory),
so putting it back "as collection left it" would delete it.  The key replay puts it back as it
was when it first existed, and the hunt names it as proven.  Every printed reproduction is run
under plain pytest.
"""

from __future__ import annotations

import json

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions

pytestmark = pytest.mark.slow


def _restore_specs(suite: Suite) -> list[dict[str, object]]:
    """Every key replay's spec the hunt wrote, in order."""
    found = sorted(suite.out.glob("*.logs/hunt-*/*.restore.json"))
    return [json.loads(p.read_text(encoding="utf-8")) for p in found]


def test_a_list_a_setup_class_makes_and_the_polluter_fills(suite: Suite) -> None:
    # setup_class makes the buffer, each test writes into it; the victim expects it empty.
    # In the proof the polluter runs first, so the buffer comes into being in the polluter's
    # setup: its proof must empty it (as setup_class left it), not delete it.
    suite.write({
        "test_signals.py": '''
class Wire:
    def __init__(self, buf):
        self.buf = buf

    def send(self, word):
        self.buf.append(word)


class TestSignals:
    @classmethod
    def setup_class(cls):
        cls.buf = []

    def test_round_trip(self):
        Wire(self.buf).send("ping")
        assert self.buf == ["ping"], "buffer not empty"
        del self.buf[:]

    def test_drop(self):
        Wire(self.buf).send("pong")
        assert self.buf[-1] == "pong"
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_signals.py::TestSignals::test_round_trip"]
    assert "polluted by: test_signals.py::TestSignals::test_drop" in block, block
    assert "state: attributes:test_signals:TestSignals.buf: [] " in block, block
    assert "(restoring it makes the victim pass)" in block, block
    specs = _restore_specs(suite)
    assert any(s.get("first_seen") == [["attributes", "test_signals:TestSignals.buf"]]
               for s in specs), specs
    check_reproductions(block, suite.root, ["test_round_trip"], expect="buffer not empty")


def test_a_class_attribute_of_a_module_a_fixture_imports_first(suite: Suite) -> None:
    # The library is imported by a function fixture (first in the session in the proof); the
    # polluter's body then forces a class attribute, which the victim reads.
    suite.write({
        "kennel.py": '''
class Leash:
    forced = None

    @classmethod
    def length(cls):
        return cls.forced or 2
''',
        "conftest.py": '''
import pytest

@pytest.fixture
def leash():
    from kennel import Leash
    return Leash
''',
        "test_walks.py": '''
def test_short_walk(leash):
    assert leash.length() == 2, "leash forced"

def test_long_walk(leash):
    leash.forced = 9
    assert leash.length() == 9
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_walks.py::test_short_walk"]
    assert "polluted by: test_walks.py::test_long_walk" in block, block
    assert "state: attributes:kennel:Leash.forced: None → 9 (restoring it makes the victim pass)" \
        in block, block
    check_reproductions(block, suite.root, ["test_short_walk"], expect="leash forced")


def test_a_package_setting_proven_with_the_package_imported_first(suite: Suite) -> None:
    # The polluter's body imports the package first and fills a class-level list in place; a
    # reload of the driver module (as the suite does to "revert changes") rebinds a name to
    # the same list.  Only taking the modules out of sys.modules heals it in the proof order,
    # where they did not exist before the polluter; which setting is the leak is proven with
    # the modules imported before the tests, not read from the record.
    suite.write({
        "motors/__init__.py": "from motors.driver import *\n",
        "motors/config.py": '''
class Config:
    pins_in_use = []
''',
        "motors/driver.py": '''
from motors.config import Config

pins_in_use = Config.pins_in_use


class Motor:
    def __init__(self, *pins):
        for pin in pins:
            if pin in pins_in_use:
                raise ValueError(f"pin {pin} in use")
            pins_in_use.append(pin)
        self.pins = pins
''',
        "test_motors.py": '''
import unittest
from importlib import reload


class MotorTestCase(unittest.TestCase):
    def test_free_pins(self):
        import motors
        motors.Motor(29, 7)
        del motors.pins_in_use[:]

    def test_label(self):
        import motors
        motor = motors.Motor(29, 7)
        self.assertEqual(motor.pins, (29, 7))
        reload(motors.driver)
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_motors.py::MotorTestCase::test_free_pins"]
    assert "polluted by: test_motors.py::MotorTestCase::test_label" in block, block
    state = next(line for line in block.splitlines() if "state: " in line)
    assert "pins_in_use" in state and "(restoring it makes the victim pass)" in state, block
    assert "with it imported before the tests, restoring attributes:motors" in block, block
    specs = _restore_specs(suite)
    assert any(s.get("import") and not s["keys"] for s in specs), specs  # the control
    check_reproductions(block, suite.root, ["test_free_pins"], expect="in use")


def test_a_directory_the_polluter_made_and_the_victim_makes_again(suite: Suite) -> None:
    # A function setup makes the work directory; the polluter makes a nested tree in it, the
    # module teardown removes it all.  The victim refuses a directory that is already there.
    suite.write({
        "pkg/__init__.py": "",
        "pkg/tests/__init__.py": "",
        "pkg/tests/test_shelves.py": '''
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "shop")


def setup_function(function):
    os.makedirs(os.path.join(WORK, "inbox"), exist_ok=True)
    open(os.path.join(WORK, "notes.txt"), "w").close()


def teardown_module(module):
    shutil.rmtree(WORK, ignore_errors=True)


def test_make_shelf():
    path = os.path.join(WORK, "shelf")
    if os.path.exists(path):
        raise ValueError(f"{path} already there")
    os.mkdir(path)


def test_make_nested_shelves():
    path = os.path.join(WORK, "shelf", "box", "lid")
    os.makedirs(path)
    assert os.path.isdir(path)
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["pkg/tests/test_shelves.py::test_make_shelf"]
    assert "polluted by: pkg/tests/test_shelves.py::test_make_nested_shelves" in block, block
    assert ("state: files:pkg/tests/shop/shelf/: ∅ → directory (restoring it makes the victim "
            "pass)") in block, block
    check_reproductions(block, suite.root, ["test_make_shelf"], expect="already there")
    assert not (suite.root / "pkg" / "tests" / "shop").exists()  # the replays left nothing


def test_a_dunder_flag_a_base_class_sets_on_itself(suite: Suite) -> None:
    # The base class checks its settings once, then sets ``__initialised__`` on the class it
    # was called on.  Called on the base itself, every later subclass inherits the flag and
    # skips the check: the victim's required-setting error never comes.  Both the flag and
    # the setting the polluter stored on the base are needed to heal it.
    suite.write({
        "gauges.py": '''
class Gauge:
    __initialised__ = False

    def __new__(cls, **kwargs):
        if not cls.__initialised__:
            if "unit" in kwargs:
                cls._unit = kwargs.pop("unit")
            elif not hasattr(cls, "_unit"):
                raise ValueError("_unit is required")
            cls.__initialised__ = True
        return super().__new__(cls)
''',
        "test_gauges.py": '''
import pytest
from gauges import Gauge


def test_unit_is_required():
    class Bare(Gauge):
        pass

    with pytest.raises(ValueError):
        Bare(level=1)


def test_unit_given_to_the_base():
    assert Gauge(unit="bar", level=2) is not None
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_gauges.py::test_unit_is_required"]
    assert "polluted by: test_gauges.py::test_unit_given_to_the_base" in block, block
    assert "state: attributes:gauges:Gauge.__initialised__: False → True" in block, block
    assert "restoring it heals only together with: attributes:gauges:Gauge._unit" in block, block
    check_reproductions(block, suite.root, ["test_unit_is_required"], expect="DID NOT RAISE")
