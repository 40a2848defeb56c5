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
from statesnap.analysis.findings import LATENT
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.hunt.runs import ORDER_KINDS
from statesnap.record.reader import read_record
from tally_suite import TALLY

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
    # Whether plain pytest fails it depends on when the collector runs (with bytecode written
    # it usually does not): the finding says so, names what the cycle keeps alive, and its
    # fix breaks the cycle; the reproduction runs with the collector off.
    assert "depends on garbage-collection timing" in block, block
    assert "test_declares_a_kind.<locals>.Hexagon alive" in block, block
    assert "break the reference cycle that keeps Hexagon alive" in block, block
    # Run as printed where Python writes bytecode (as on a user's machine) and where not.
    for bytecode in ("", "1"):
        check_reproductions(block, suite.root, ["test_catalogue_starts_empty"],
                            env={"PYTHONDONTWRITEBYTECODE": bytecode},
                            expect="unexpected kinds")


def test_a_rule_instance_in_a_module_registry_that_every_test_works_through(
        suite: Suite) -> None:
    # Every test lints through the one rule instance held in the module-level RULES registry,
    # so every test leaves it changed, each differently; the rule forgets its depth only when
    # the source name changes.  The victim shares its source name with the polluter, and
    # fails only right after it: in every order that puts the polluter first, another test
    # (which resets the rule) stands in between.
    suite.write({
        "linter.py": '''
class DepthRule:
    def __init__(self):
        self.source = None
        self.depth = 0

    def feed(self, source, line):
        if source != self.source:
            self.source, self.depth = source, 0
        if line.startswith("IF"):
            self.depth += 1
        elif line.startswith("ENDIF"):
            self.depth -= 1
        return self.depth

RULES = {"code": [DepthRule()], "comment": []}

def lint(source, lines):
    return [rule.feed(source, line) for rule in RULES["code"] for line in lines]
''',
        "test_a_plain.py": '''
from linter import lint

def test_a_first():
    assert lint("first", ["x = 1"]) == [0]

def test_check():
    assert lint("check", ["x = 1"]) == [0], "depth carried over"
''',
        "test_b_other.py": '''
from linter import lint

def test_other():
    assert lint("other", ["IF a", "ENDIF"]) == [1, 0]
''',
        "test_c_open.py": '''
from linter import lint

def test_check():
    assert lint("check", ["IF a"]) == [1]
''',
        "test_d_more.py": '''
from linter import lint

def test_more():
    assert lint("more", ["y = 2"]) == [0]
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "neighbours-" in proc.stdout, proc.stdout
    block = finding_blocks(proc.stdout)["test_a_plain.py::test_check"]
    assert "polluted by: test_c_open.py::test_check" in block, block
    assert "state: attributes:linter:RULES:" in block, block
    assert "(restoring it makes the victim pass)" in block, block
    check_reproductions(block, suite.root, ["test_a_plain.py::test_check"],
                        expect="depth carried over")


def test_a_nested_config_dict_filled_from_variables_the_polluter_left_set(
        suite: Suite) -> None:
    # The polluter sets variables and loads them into the library's nested config dict; the
    # victim first reads the dict (the failure seen), then loads a file whose empty values
    # fall back to the environment.  Restoring the dict alone or the variables alone does not
    # heal it; the set does, and the dict is the key the failure is about, though the
    # variables' names are what the failure text quotes.
    suite.write(TALLY)
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_config.py::test_read"]
    assert "polluted by: test_b_deploy.py::test_deploy" in block, block
    assert "state: attributes:tally.config:_config:" in block, block
    assert "(restoring it makes the victim pass)" not in block, block
    together = next(line for line in block.splitlines() if "only together with" in line)
    assert "env:tally_store" in together and "env:tally_folder" in together, block
    assert "leaving any one of them out, it fails" in block, block
    check_reproductions(block, suite.root, ["test_a_config.py::test_read"],
                        expect="loaded before")


def test_once_an_order_exposed_a_victim_half_the_budget_is_left_for_proving(
        suite: Suite) -> None:
    # Two groups of leakers (one variable left with two values); the first group's order
    # exposes the victim.  With half the budget taken already (the hunt's clock set back, as
    # on a slow machine), the second group's order is put off: the victim is proven first,
    # and the order runs after the proof, with the budget left.
    suite.write({
        "test_a_victim.py": '''
import os

def test_gate_closed():
    assert os.environ.get("ZOO_GATE", "closed") == "closed", "gate left open"
''',
        "test_b_open.py": '''
import os

def test_opens_gate():
    os.environ["ZOO_GATE"] = "open"
''',
        "test_c_ajar.py": '''
import os

def test_leaves_gate_ajar():
    os.environ["ZOO_GATE"] = "ajar"
''',
    })
    record = suite.record()
    hunter = Hunter([read_record(record)], HuntOptions(budget=600),
                    logs_dir=suite.out / "hunt-logs")
    hunter.replays.started -= 0.5 * 600 + 1
    result = hunter.hunt()
    labels = [r.label for r in result.runs]
    assert labels[:2] == ["leakers-first-1", "without-leakers"], labels
    first_proof = next(i for i, r in enumerate(result.runs) if r.kind not in ORDER_KINDS)
    assert labels.index("leakers-first-2") > first_proof, labels
    assert not result.skipped, result.skipped
    (f,) = result.findings
    assert (f.victim, f.status) == ("test_a_victim.py::test_gate_closed", LATENT)
    assert f.probe == "env" and f.key == "ZOO_GATE"
    check_reproductions(f"reproduce: {f.repro}", suite.root, [f.victim],
                        expect="gate left open")


def test_settings_of_a_package_module_the_polluter_imported_first_are_the_key(
        suite: Suite) -> None:
    # In the proof the polluter imports the package and its settings module first: only
    # taking both out of sys.modules heals the victim (``from zoo import settings`` finds
    # either one's old copy).  The recorded run, where the victim had imported them, saw
    # the polluter change the setting: that is named.
    suite.write({
        "zoo/__init__.py": "",
        "zoo/settings.py": "LEVEL = 1\n",
        "test_a_victim.py": '''
def test_reads_level():
    from zoo import settings
    assert settings.LEVEL == 1, "level raised"
''',
        "test_b_polluter.py": '''
def test_raises_level():
    from zoo import settings
    settings.LEVEL = 5
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_victim.py::test_reads_level"]
    assert "polluted by: test_b_polluter.py::test_raises_level" in block, block
    assert "state: attributes:zoo.settings:LEVEL: 1 → 5" in block, block
    assert "with 1 other module(s) it imported out of sys.modules" in block, block
    check_reproductions(block, suite.root, ["test_reads_level"], expect="level raised")


def test_a_session_fixture_object_changed_in_place_is_reached_backwards(
        suite: Suite) -> None:
    # The shared state is a session fixture's own object: the recording run does not watch
    # fixtures, so the record shows no leak at all; the recorded order backwards still runs
    # the polluter first, and the hunt's replays (which do watch them) name the fixture.
    suite.write({
        "conftest.py": '''
import pytest

@pytest.fixture(scope="session")
def roster():
    return {"lion": 2}
''',
        "test_a_roster.py": '''
def test_counts_lions(roster):
    assert roster == {"lion": 2}, "roster changed"
''',
        "test_b_roster.py": '''
def test_adds_a_tiger(roster):
    roster["tiger"] = 1
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "reversed" in proc.stdout, proc.stdout
    block = finding_blocks(proc.stdout)["test_a_roster.py::test_counts_lions"]
    assert "polluted by: test_b_roster.py::test_adds_a_tiger" in block, block
    assert "state: fixtures:roster: ∅ → session fixture changed in place" in block, block
    assert "(re-creating it before the victim makes it pass)" in block, block
    check_reproductions(block, suite.root, ["test_counts_lions"], expect="roster changed")
