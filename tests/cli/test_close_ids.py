"""What the CLI suggests for a test id that is not in the record (``close_ids``).

A suggestion sends the user to a test: it must be the one they meant or none at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statesnap.cli.common import close_ids
from suite_runs import statesnap_cli

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


@pytest.mark.parametrize(("ids", "given", "meant"), [
    # Six characters are enough to look for a part of an id; five are not.
    (["tests/test_abcdef.py::test_x"], "abcdef", ["tests/test_abcdef.py::test_x"]),
    (["tests/test_abcdef.py::test_x"], "bcdef", []),
    # A test name of six characters is looked for in other files; a shorter one is not.
    (["tests/a.py::test_q"], "x.py::test_q", ["tests/a.py::test_q"]),
    (["tests/a.py::test"], "x.py::test", []),
    # A typo is looked for among the tests of the same file only, not of files sorting after.
    (["tests/test_b.py::test_lights_of"], "tests/test_a.py::test_lights_off", []),
    (["tests/test_a.py::test_lights_of"], "tests/test_a.py::test_lights_off",
     ["tests/test_a.py::test_lights_of"]),
])
def test_how_close_an_id_must_be_to_be_suggested(ids: list[str], given: str,
                                                  meant: list[str]) -> None:
    assert close_ids(ids, given) == meant


def _record(path: Path, lanes: list[str]) -> Path:
    """A finished run of ``t.py::test_ok_<worker>`` per lane (one lane: a plain record)."""
    def line(**obj: object) -> str:
        return json.dumps(obj)

    def test(worker: str) -> str:
        return line(type="test", index=0, nodeid=f"t.py::test_ok_{worker}", worker=worker,
                    outcome="passed", phases={"call": "passed"}, duration=0.0, changes=[])

    if len(lanes) == 1:
        lines = [line(type="header", format=2, worker=lanes[0]), test(lanes[0])]
    else:
        lines = [line(type="header", format=2, worker="main",
                      lanes=[{"worker": w} for w in lanes])]
        for w in lanes:
            lines += [line(type="lane", worker=w,
                           header={"type": "header", "format": 2, "worker": w}), test(w)]
    path.write_text("\n".join([*lines, line(type="footer")]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("lanes", [["main"], ["gw0", "gw1"]])
def test_the_error_for_an_id_not_in_the_record_says_where_it_looked(
        tmp_path: Path, lanes: list[str]) -> None:
    record = _record(tmp_path / "run.jsonl", lanes)
    cli = statesnap_cli("explain", str(record), "--test", "t.py::test_ok_", cwd=tmp_path)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    (line,) = [ln for ln in cli.stderr.splitlines() if ln.strip()]
    where = str(record) if len(lanes) == 1 else "2 lanes of the record"
    close = ", ".join(f"t.py::test_ok_{w}" for w in lanes)
    assert line == (f"statesnap explain: error: test 't.py::test_ok_' is not in {where} "
                    f"(did you mean {close}?)"), line
