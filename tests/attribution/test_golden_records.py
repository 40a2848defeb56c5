"""Attribution and the hunt plan on records of real runs, kept under ``snapshots/records/``.

The hand-built records of the other tests say what each rule does; these say that the rules
still hold on what the writer really writes.  ``format1-sample.jsonl`` is a real
``pytest -p statesnap`` run (``tests/report/report_golden.py --record`` re-records it, with
volatile fields scrubbed), and ``format1-sample.findings.json`` the findings that run's
verification proved.  ``format3-sample`` is the same suite (grown by a key changed in two
tests in a row, and bound under a second name) recorded in the current format, where the
second change is written ``chained``, without its before.  A writer change that moves a field
shows here.
"""

from __future__ import annotations

import json
from pathlib import Path

from statesnap.analysis.attribution import attribute, victims
from statesnap.hunt.plan import build_suite, leaker_groups, leakers_first, without_leakers
from statesnap.record.journal import Record
from statesnap.record.reader import read_record

RECORDS = Path(__file__).resolve().parents[2] / "snapshots" / "records"
HOSTILE_1 = "test_config.py::test_hostile_ids[<script>window.__pwned=1</script>]"
HOSTILE_2 = 'test_config.py::test_hostile_ids["><img src=x onerror="window.__pwned=2">]'


def _sample(stem: str = "format1-sample") -> Record:
    return read_record(RECORDS / f"{stem}.jsonl")


def _proved(stem: str = "format1-sample") -> list[dict[str, object]]:
    data: list[dict[str, object]] = json.loads(
        (RECORDS / f"{stem}.findings.json").read_text(encoding="utf-8"))
    return data


def test_the_victims_of_the_real_run() -> None:
    assert [v.nodeid for v in victims(_sample())] == [
        "test_config.py::test_genuinely_broken",
        "test_victims.py::test_default_mode_is_safe",
        "test_victims.py::test_registry_starts_empty",
    ]


def test_attribution_names_what_the_real_run_s_replays_proved() -> None:
    # From the record alone, before any replay: the same victims, the same key, the same
    # ranked candidates as the findings the real run verified.
    found = {f.victim: f for f in attribute(_sample())}
    proved = _proved()
    assert sorted(found) == sorted(str(p["victim"]) for p in proved)
    for p in proved:
        f = found[str(p["victim"])]
        assert f.status == "suspected"
        assert (f.probe, f.key) == (p["probe"], p["key"])
        candidates = p["candidates"]
        assert isinstance(candidates, list)
        assert [(c.nodeid, c.probe, c.key) for c in f.candidates] == [
            (c["nodeid"], c["probe"], c["key"]) for c in candidates]
        if p["status"] == "verified":
            assert f.polluters == p["polluters"]


def test_attribution_of_the_format_3_sample_names_the_polluters_its_replays_proved() -> None:
    # The current format: the record alone, read back whole, suspects each victim the run
    # verified on the key and the polluters its replays proved.
    found = {f.victim: f for f in attribute(_sample("format3-sample"))}
    verified = [p for p in _proved("format3-sample") if p["status"] == "verified"]
    assert len(verified) == 3
    for p in verified:
        f = found[str(p["victim"])]
        assert (f.status, f.probe, f.key, f.polluters) == (
            "suspected", p["probe"], p["key"], p["polluters"]), f
    assert found["test_victims.py::test_settings_have_no_timeout"].key == "sample_app:SETTINGS"


def test_the_polluters_of_the_real_run() -> None:
    found = {f.victim: f.polluters for f in attribute(_sample())}
    assert found["test_victims.py::test_default_mode_is_safe"] == [
        "test_config.py::test_enable_fast_mode"]
    assert found["test_victims.py::test_registry_starts_empty"] == [
        "test_config.py::test_registers_handler"]


def test_the_hunt_plan_of_the_real_run() -> None:
    suite = build_suite([_sample()])
    # test_uses_db's SAMPLE_DB is removed again by a later test: not a leak left behind.
    assert suite.leakers() == [
        "test_config.py::test_enable_fast_mode",
        "test_config.py::test_adds_plugin_dir",
        "test_config.py::test_registers_handler",
        HOSTILE_1,
        HOSTILE_2,
    ]
    # The two hostile ids leave SAMPLE_LABEL with different values: never in one group.
    groups = leaker_groups(suite)
    assert groups == [suite.leakers()[:4], [HOSTILE_2]]
    assert leakers_first(suite, groups[1])[:2] == [HOSTILE_2,
                                                   "test_config.py::test_enable_fast_mode"]
    assert without_leakers(suite) == [
        "test_config.py::test_uses_db", "test_config.py::test_needs_gpu",
        "test_config.py::test_known_bug", "test_config.py::test_genuinely_broken",
        "test_victims.py::test_default_mode_is_safe",
        "test_victims.py::test_registry_starts_empty", "test_victims.py::test_unrelated",
    ]
    assert suite.left_out == [] and suite.ignored_low == 0


def test_the_hunt_plan_of_the_xdist_lanes() -> None:
    lanes = [read_record(RECORDS / f"xdist-gw{i}.jsonl") for i in (0, 1)]
    suite = build_suite(lanes)
    assert {w: len(tests) for w, tests in suite.lanes.items()} == {"gw0": 40, "gw1": 25}
    # The test that was running when gw1's worker died is left out of every order.
    assert suite.left_out == ["tests/test_db.py::test_segfaults_in_c_extension"]
    assert suite.leakers() == ["tests/test_net.py::test_case_7", "tests/test_net.py::test_case_12",
                               "tests/test_net.py::test_case_20"]
    assert len(leaker_groups(suite)) == 1
    one = build_suite(lanes, worker="gw1")
    assert list(one.lanes) == ["gw1"] and len(one.order()) == 25
