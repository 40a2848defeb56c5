"""The pure planning of a hunt, on records written by hand (RecordWriter)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hunt_helpers import change, entry, write_record

from statesnap.hunt.plan import (
    Observation,
    build_suite,
    candidates,
    leaker_groups,
    leakers_first,
    neighbour_orders,
    new_failures,
    observe,
    random_order,
    suspects,
    without_leakers,
)
from statesnap.record.journal import Record


def _suite_record(tmp_path: Path) -> Record:
    return write_record(tmp_path / "run.jsonl", [
        entry(0, "t.py::victim"),
        entry(1, "t.py::imports", changes=[change("modules", "json", "module#1", severity=1)]),
        entry(2, "t.py::polluter", changes=[change("env", "MODE", "fast")]),
        entry(3, "t.py::plain"),
        entry(4, "t.py::other_writer", changes=[change("env", "MODE", "slow"),
                                                 change("env", "EXTRA", "1")]),
        entry(5, "t.py::same_value", changes=[change("env", "MODE", "fast")]),
        entry(6, "t.py::broken", outcome="failed"),
    ])


def test_low_severity_leaks_are_left_out_unless_asked(tmp_path: Path) -> None:
    record = _suite_record(tmp_path)
    suite = build_suite([record])
    assert suite.leakers() == ["t.py::polluter", "t.py::other_writer", "t.py::same_value"]
    assert suite.ignored_low == 1
    every = build_suite([record], all_leaks=True)
    assert "t.py::imports" in every.leakers()
    assert every.ignored_low == 0


def test_leakers_of_one_key_with_different_values_go_to_different_groups(
        tmp_path: Path) -> None:
    suite = build_suite([_suite_record(tmp_path)])
    groups = leaker_groups(suite)
    # MODE=fast twice is no conflict; MODE=slow would hide MODE=fast.
    assert groups == [["t.py::polluter", "t.py::same_value"], ["t.py::other_writer"]]


def test_leakers_first_reverses_the_group_then_keeps_the_usual_order(tmp_path: Path) -> None:
    suite = build_suite([_suite_record(tmp_path)])
    order = leakers_first(suite, ["t.py::polluter", "t.py::same_value"])
    assert order == ["t.py::same_value", "t.py::polluter", "t.py::victim", "t.py::imports",
                     "t.py::plain", "t.py::other_writer", "t.py::broken"]
    assert sorted(order) == sorted(suite.order())


def test_without_leakers_keeps_low_severity_leakers(tmp_path: Path) -> None:
    suite = build_suite([_suite_record(tmp_path)])
    assert without_leakers(suite) == ["t.py::victim", "t.py::imports", "t.py::plain",
                                      "t.py::broken"]


def test_random_orders_are_reproducible_from_their_seed(tmp_path: Path) -> None:
    suite = build_suite([_suite_record(tmp_path)])
    assert random_order(suite, 7) == random_order(suite, 7)
    assert sorted(random_order(suite, 7)) == sorted(suite.order())
    assert len({tuple(random_order(suite, s)) for s in range(10)}) > 1


def test_new_failures_are_tests_that_passed_in_the_record(tmp_path: Path) -> None:
    suite = build_suite([_suite_record(tmp_path)])
    outcomes = {"t.py::victim": "failed", "t.py::broken": "failed", "t.py::plain": "passed",
                "t.py::polluter": "crashed"}
    assert new_failures(suite, suite.order(), outcomes) == ["t.py::victim", "t.py::polluter"]


def test_a_key_dirty_with_the_same_value_in_a_passing_run_is_set_aside(tmp_path: Path) -> None:
    # The hunt's run: both leakers ran before the victim, which failed.
    hunt_run = write_record(tmp_path / "hunt.jsonl", [
        entry(0, "t.py::harmless", changes=[change("env", "SEEN", "1")]),
        entry(1, "t.py::polluter", changes=[change("env", "MODE", "fast")]),
        entry(2, "t.py::victim", outcome="failed",
              failure={"exc_type": "AssertionError", "message": "assert 2 == 1"}),
    ])
    # The recorded run: the harmless leaker ran before the victim too, and it passed.
    recorded = write_record(tmp_path / "rec.jsonl", [
        entry(0, "t.py::harmless", changes=[change("env", "SEEN", "1")]),
        entry(1, "t.py::victim"),
        entry(2, "t.py::polluter", changes=[change("env", "MODE", "fast")]),
    ])
    failing = observe(hunt_run, "t.py::victim")
    passing = observe(recorded, "t.py::victim")
    assert failing is not None and passing is not None
    ranked, aside = candidates(failing, None)
    assert {c.nodeid for c in ranked} == {"t.py::harmless", "t.py::polluter"}
    kept, aside = candidates(failing, None, [passing])
    assert suspects(kept) == ["t.py::polluter"]
    assert aside == 1


def test_the_exception_type_points_at_the_probe_when_no_key_is_quoted(tmp_path: Path) -> None:
    run = write_record(tmp_path / "hunt.jsonl", [
        entry(0, "t.py::chdir", changes=[change("cwd", "cwd", "/srv/sub", before="/srv")]),
        entry(1, "t.py::env_later", changes=[change("env", "SEEN", "1")]),
        entry(2, "t.py::victim", outcome="failed",
              failure={"exc_type": "FileNotFoundError",
                       "message": "[Errno 2] No such file or directory: 'data/x.txt'"}),
    ])
    obs = observe(run, "t.py::victim")
    assert obs is not None
    ranked, _ = candidates(obs, None)
    # Recency alone would pick env_later; the FileNotFoundError points at the cwd.
    assert suspects(ranked) == ["t.py::chdir", "t.py::env_later"]
    assert any("points at cwd" in r for r in ranked[0].reasons)


def test_a_failure_text_can_rank_a_recorded_observation(tmp_path: Path) -> None:
    recorded = write_record(tmp_path / "rec.jsonl", [
        entry(0, "t.py::setter", changes=[change("env", "APP_HOME", "/srv")]),
        entry(1, "t.py::other", changes=[change("env", "OTHER", "1")]),
        entry(2, "t.py::brittle"),
    ])
    lane = sorted(recorded.tests, key=lambda t: t.index)
    obs = Observation(lane, lane[2])
    ranked, _ = candidates(obs, {"exc_type": "KeyError", "message": "'APP_HOME'"})
    assert suspects(ranked)[0] == "t.py::setter"
    assert "key named in the failure" in ranked[0].reasons


def test_lanes_of_xdist_workers_are_kept_apart_and_filtered(tmp_path: Path) -> None:
    gw0 = write_record(tmp_path / "run.gw0.jsonl", [
        entry(0, "a.py::victim", worker="gw0"),
        entry(1, "a.py::setter", worker="gw0", changes=[change("env", "MODE", "x")]),
    ], worker="gw0")
    gw1 = write_record(tmp_path / "run.gw1.jsonl", [
        entry(0, "b.py::polluter", worker="gw1", changes=[change("env", "MODE", "y")]),
        entry(1, "b.py::plain", worker="gw1"),
    ], worker="gw1")
    both = build_suite([gw0, gw1])
    assert list(both.lanes) == ["gw0", "gw1"]
    assert both.order() == ["a.py::victim", "a.py::setter", "b.py::polluter", "b.py::plain"]
    # Two lanes leave MODE differently: two groups, so neither hides the other.
    assert leaker_groups(both) == [["a.py::setter"], ["b.py::polluter"]]
    assert [t.nodeid for t in both.lane_of("b.py::plain")] == ["b.py::polluter", "b.py::plain"]
    one = build_suite([gw0, gw1], worker="gw1")
    assert one.order() == ["b.py::polluter", "b.py::plain"]
    assert one.leakers() == ["b.py::polluter"]


def test_a_merged_record_with_overlapping_indexes_splits_by_worker(tmp_path: Path) -> None:
    merged = write_record(tmp_path / "merged.jsonl", [
        entry(0, "a.py::one", worker="gw0"),
        entry(0, "b.py::one", worker="gw1", changes=[change("env", "K", "v")]),
        entry(1, "a.py::two", worker="gw0"),
        entry(1, "b.py::two", worker="gw1"),
    ])
    suite = build_suite([merged])
    assert [t.nodeid for t in suite.lanes["gw0"]] == ["a.py::one", "a.py::two"]
    assert [t.nodeid for t in suite.lanes["gw1"]] == ["b.py::one", "b.py::two"]
    assert suite.leakers() == ["b.py::one"]


def test_the_test_that_was_running_at_a_crash_is_left_out(tmp_path: Path) -> None:
    record = write_record(tmp_path / "crash.jsonl", [entry(0, "t.py::ok")],
                          running="t.py::segfaults")
    suite = build_suite([record])
    assert suite.order() == ["t.py::ok"]
    assert suite.left_out == ["t.py::segfaults"]


@pytest.mark.parametrize("n", range(2, 14))
def test_neighbour_orders_put_each_test_right_before_each_other_one(n: int) -> None:
    tests = [f"t{i}" for i in range(n)]
    orders = neighbour_orders(tests)
    # n orders at the least (n * (n - 1) pairs, n - 1 per order); one more for an odd n.
    assert len(orders) == n + n % 2
    assert all(sorted(o) == sorted(tests) for o in orders)
    adjacent = {pair for o in orders for pair in itertools.pairwise(o)}
    assert adjacent == {(a, b) for a in tests for b in tests if a != b}


def test_neighbour_orders_of_fewer_than_two_tests_are_none() -> None:
    assert neighbour_orders([]) == [] and neighbour_orders(["t"]) == []
