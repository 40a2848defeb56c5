"""A namespace found binding as described is imaged (``_same.NamespaceImage``): the same
pointer array of names and objects answers the next check without a lookup per name.

The image stands only for the description it was checked against: a namespace rebound and
described again, then put back to the imaged bindings, is a change like any other.
"""

from __future__ import annotations

import json

import pytest

from statesnap.probes.attributes._same import NamespaceImage

RUNNER = """
def prompt():
    return "real"

def fake_prompt():
    return "fake"
"""

RUNNER_TESTS = """
import runner

REAL = runner.prompt

def test_0_adds_and_removes():
    runner.extra = 1
    del runner.extra

def test_a_writes_the_same_binding():
    runner.prompt = REAL

def test_b_leaves_the_fake_bound():
    runner.prompt = runner.fake_prompt

def test_c_puts_the_real_one_back():
    runner.prompt = REAL

def test_d_expects_the_real_one():
    assert runner.prompt() == "real"
"""


def test_bindings_put_back_to_an_imaged_state_after_a_rebinding_are_a_change(
        pytester: pytest.Pytester) -> None:
    # test_a's write binds what was described: the namespace is imaged.  test_b rebinds
    # (described again); test_c puts back exactly the imaged bindings, which are no longer
    # what is described: its change must be recorded (an image of an older description
    # would have said "as described", and test_c's change would go unseen).
    pytester.makepyfile(runner=RUNNER, test_runner=RUNNER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "attributes")
    result.assert_outcomes(passed=5)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: [(x["key"], x["after"].split(" #")[0])
                                          for x in t["leaks"]]
             for t in summary["tests"]}
    assert leaks == {
        "test_0_adds_and_removes": [],
        "test_a_writes_the_same_binding": [],
        "test_b_leaves_the_fake_bound": [("runner:prompt", "function runner.fake_prompt")],
        "test_c_puts_the_real_one_back": [("runner:prompt", "function runner.prompt")],
        "test_d_expects_the_real_one": [],
    }


def _helper() -> int:
    return 1


def _other() -> int:
    return 2


def test_an_image_shows_only_the_same_names_in_order_bound_to_the_same_objects() -> None:
    ns: dict[str, object] = {"a": _helper, "b": _other}
    image = NamespaceImage.of(object(), dict(ns))
    assert image is not None and image.shows(ns)
    ns["a"] = _helper  # stored again: the same binding
    assert image.shows(ns)
    ns["a"] = _other
    assert not image.shows(ns)
    ns["a"] = _helper
    # Another name holding the same object at the same place: the names differ.
    del ns["b"]
    ns["c"] = _other
    assert not image.shows(ns)
    del ns["c"]
    assert not image.shows(ns)  # one name fewer
    ns["b"] = _other
    assert image.shows(ns)
