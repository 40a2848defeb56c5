"""A project module first imported during a test, then changed by it, is recorded as changed.

The net diff of such a test shows the module appearing (``modules``), and the module's own
attributes go with it; what the test changed on it after the import -- a fixture imports the
library, the test body forces a class attribute or fills a module dict -- is diffed from the
module as first seen, so it is a leak of its own, with the phase it happened in.
"""

from __future__ import annotations

import json

import pytest

LIBRARY = """
class Keeper:
    level = 0

SETTINGS = {"mode": "day"}
"""

CONFTEST = """
import pytest

@pytest.fixture
def keeper():
    import zoo_lib  # the first import of the session
    return zoo_lib.Keeper
"""

TESTS = """
def test_forces(keeper):
    import zoo_lib
    keeper.level = 5
    zoo_lib.SETTINGS["mode"] = "night"

def test_only_imports(keeper):
    assert keeper.level == 5

def test_reads():
    import zoo_lib
    assert zoo_lib.Keeper.level == 0, "level forced"
"""


def test_changes_after_the_first_import_are_leaks_with_their_phase(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(zoo_lib=LIBRARY, conftest=CONFTEST, test_zoo=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "attributes,modules")
    result.assert_outcomes(passed=2, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: {x["key"]: x for x in t["leaks"]}
             for t in summary["tests"]}
    forced = leaks["test_forces"]
    assert {"zoo_lib", "zoo_lib:Keeper.level", "zoo_lib:SETTINGS"} <= set(forced), forced
    level = forced["zoo_lib:Keeper.level"]
    assert (level["before"], level["after"], level["phase"]) == ("0", "5", "call"), level
    # A test that imports nothing new and changes nothing leaks nothing.
    assert leaks["test_only_imports"] == {}
    finding = next(f for f in summary["findings"] if f["victim"].endswith("test_reads"))
    assert finding["polluters"] == ["test_zoo.py::test_forces"]
