"""What the CLI suggests for a test id that is not in the record (``close_ids``).

A suggestion sends the user to a test: it must be the one they meant or none at all.
"""

from __future__ import annotations

import pytest

from statesnap.cli.common import close_ids

IDS = [
    "tests/test_zoo.py::test_a_polluter",
    "tests/test_zoo.py::test_b_victim",
    "tests/test_zoo.py::test_c[1]",
    "tests/test_zoo.py::test_d[1]",
    "tests/other/test_q.py::test_b_victim",
    "tests/test_zoo.py::TestK::test_method[1]",
]


@pytest.mark.parametrize(("given", "meant"), [
    # A typo.
    ("tests/test_zoo.py::test_b_victm", ["tests/test_zoo.py::test_b_victim"]),
    # Relative to another folder, or without the parameters.
    ("test_zoo.py::test_a_polluter", ["tests/test_zoo.py::test_a_polluter"]),
    ("tests/test_zoo.py::test_c", ["tests/test_zoo.py::test_c[1]"]),
    # The same test name in another file: both places.
    ("tests/test_x.py::test_b_victim",
     ["tests/test_zoo.py::test_b_victim", "tests/other/test_q.py::test_b_victim"]),
])
def test_the_meant_id_is_suggested(given: str, meant: list[str]) -> None:
    assert close_ids(IDS, given) == meant


@pytest.mark.parametrize("given", [
    "1]",  # part of many ids, meaning none of them
    "x.py::t",
    "tests/test_nothing_like_it.py::test_q",
    "tests/test_zoo.py::test_e[1]",  # a test that does not exist, not one that shares "[1]"
])
def test_nothing_unrelated_is_suggested(given: str) -> None:
    assert close_ids(IDS, given) == []


def test_at_most_three_and_each_once() -> None:
    ids = [f"tests/test_many.py::test_case[{n}]" for n in range(10)] * 2
    assert close_ids(ids, "test_many.py::test_case") == ids[:3]
