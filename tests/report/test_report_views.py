"""View models built from real records (RecordWriter → read_record) and findings."""

from __future__ import annotations

from pathlib import Path

from report_records import RecordFactory, entry, env_added, header, polluted_tests

from statesnap.analysis.findings import Candidate, Finding
from statesnap.output.report.lanes import build_lanes, lane_labels, timeline
from statesnap.output.report.logs import LOG_LIMIT, LogBudget, embed_log
from statesnap.output.report.plots import plots
from statesnap.output.report.render import render
from statesnap.output.report.views import build_view


def _finding(**kw: object) -> Finding:
    data: dict[str, object] = {
        "victim": "tests/test_b.py::test_reads_mode",
        "polluters": ["tests/test_a.py::test_sets_mode"],
        "probe": "env", "key": "ZOO_MODE", "status": "verified", "before": None,
        "after": "fast",
    }
    data.update(kw)
    return Finding(**data)  # type: ignore[arg-type]


def test_lanes_are_labelled_by_worker(make_record: RecordFactory) -> None:
    a = make_record([entry(0, "t.py::a", worker="gw0")], name="a.jsonl", head=header("gw0"))
    b = make_record([entry(0, "t.py::b", worker="gw1")], name="b.jsonl", head=header("gw1"))
    assert lane_labels([a, b]) == ["gw0", "gw1"]


def test_shards_with_the_same_worker_id_are_labelled_by_file_name(
        make_record: RecordFactory, tmp_path: Path) -> None:
    a = make_record([entry(0, "t.py::a")], name="shard-1.jsonl")
    b = make_record([entry(0, "t.py::b")], name="shard-2.jsonl")
    assert lane_labels([a, b]) == ["shard-1.jsonl", "shard-2.jsonl"]
    (tmp_path / "other").mkdir()
    c = make_record([entry(0, "t.py::c")], name="other/shard-1.jsonl")
    assert lane_labels([a, b, c]) == ["shard-1.jsonl #1", "shard-2.jsonl", "shard-1.jsonl #3"]


def test_timeline_merges_runs_of_one_outcome_and_marks_failures_and_leaks(
        make_record: RecordFactory) -> None:
    tests = [entry(i, f"t.py::test_{i}") for i in range(1000)]
    tests[500] = entry(500, "t.py::test_500", "failed")
    tests[700] = entry(700, "t.py::test_700", changes=[env_added("X", "1")])
    record = make_record(tests)
    tl = timeline(build_lanes([record]))
    lane = tl.lanes[0]
    assert [(r.x, r.count, r.kind) for r in lane.segments] == [
        (0, 500, "passed"), (500, 1, "failed"), (501, 499, "passed")]
    (marker,) = lane.markers
    assert marker.kind == "failed" and marker.x == 500
    assert marker.width >= 1  # one test among a thousand stays visible
    (leak,) = lane.leak_marks
    assert leak.x == 700
    assert tl.leaked == 1
    assert dict(tl.outcomes) == {"passed": 999, "failed": 1}


def test_the_test_running_at_a_crash_ends_its_lane(make_record: RecordFactory) -> None:
    record = make_record([entry(0, "t.py::a")], footer=False, running="t.py::segfaults")
    lanes = build_lanes([record])
    assert [e.outcome for e in lanes[0].entries] == ["passed", "crashed"]
    view = build_view([record], [])
    assert view.timeline.lanes[0].running == "t.py::segfaults"
    assert ("crashed runs", "1", "bad") in view.stats
    assert view.data["details"]["0.1"] == {"crashed": True}


def test_page_data_carries_every_test_and_details_only_where_needed(
        make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    view = build_view([record], [])
    rows = view.data["tests"]
    assert [r[2] for r in rows] == [t.nodeid for t in record.tests]
    assert rows[0][5] == 1  # one leak
    assert set(view.data["details"]) == {"0.0", "0.2"}  # the leak and the failure
    change = view.data["details"]["0.0"]["changes"][0]
    assert change["probe"] == "env" and change["leak"] is True
    assert change["before"] == {"text": "", "absent": True}
    assert change["after"] == {"text": "fast"}
    assert view.data["details"]["0.2"]["failure"]["exc_type"] == "AssertionError"


def test_a_scoped_fixture_change_undone_at_scope_end_shows_as_undone(
        make_record: RecordFactory) -> None:
    held = {"probe": "env", "key": "DB", "change": "added", "before": None, "after": "x",
            "phase": "setup", "fixture": "db", "scope": "module"}
    undone = {"probe": "env", "key": "DB", "change": "removed", "before": "x", "after": None,
              "phase": "teardown", "fixture": "db", "scope": "module"}
    record = make_record([entry(0, "t.py::a", changes=[held]),
                          entry(1, "t.py::b", changes=[undone])])
    view = build_view([record], [])
    assert view.leak_rows_total == 0
    first = view.data["details"]["0.0"]["changes"][0]
    assert first["leak"] is False
    assert first["where"] == "setup, fixture db (module)"


def test_nested_changes_carry_a_structural_diff(make_record: RecordFactory) -> None:
    ch = {"probe": "logging", "key": "logger:app", "change": "changed",
          "before": {"level": "INFO", "handlers": []},
          "after": {"level": "DEBUG", "handlers": ["FileHandler(/tmp/x)"]}, "phase": "call"}
    view = build_view([make_record([entry(0, "t.py::a", changes=[ch])])], [])
    diff = view.data["details"]["0.0"]["changes"][0]["diff"]
    assert ["~", "['level']", "INFO → DEBUG"] in diff
    assert ["+", "['handlers'][0]", "FileHandler(/tmp/x)"] in diff


def test_leak_table_and_probe_summary(make_record: RecordFactory) -> None:
    tests = [entry(i, f"t.py::test_{i}", changes=[env_added("MODE", str(i))]) for i in range(3)]
    tests.append(entry(3, "t.py::test_3", changes=[
        {"probe": "syspath", "key": "sys.path", "change": "changed", "before": ["/a"],
         "after": ["/a", "/b"], "phase": "call"}]))
    view = build_view([make_record(tests)], [])
    summary = {p.probe: p for p in view.leak_probes}
    assert summary["env"].tests == 3 and summary["env"].keys == 1
    assert summary["env"].top_keys == [("MODE", 3)]
    assert summary["syspath"].tests == 1
    assert [(r.change.probe, r.order) for r in view.leak_rows] == [
        ("env", 0), ("env", 1), ("env", 2), ("syspath", 3)]
    assert view.leak_rows[0].test.key == "0.0"


def test_an_unreplayed_finding_links_tests_and_claims_no_reproduction(
        make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record(polluted_tests())
    finding = _finding(status="suspected", logs=["record.logs/pair.log", "javascript:alert(1)"],
                       candidates=[Candidate("tests/test_a.py::test_sets_mode", 0, "env",
                                             "ZOO_MODE", None, "fast", 3.0, ["key in text"])])
    finding.repro = "python -m pytest tests/test_a.py::test_sets_mode tests/x.py::test_reads"
    view = build_view([record], [finding], report_dir=tmp_path / "artifacts")
    (f,) = view.findings
    assert f.victim.key == "0.2"
    assert [p.key for p in f.polluters] == ["0.0"]
    assert f.ref == "env:ZOO_MODE"
    assert f.before is not None and f.before.absent
    assert f.after is not None and f.after.text == "fast"
    # Not proven: no command is offered as a reproduction.  Something ran (it has logs).
    assert (f.repro, f.repro_proven) == ("", False)
    assert (f.status_label, f.source) == ("suspected", "replayed")
    finding.logs = []
    (bare,) = build_view([record], [finding]).findings
    assert (bare.status_label, bare.source, bare.repro) == (
        "suspected, not replayed", "not replayed", "")
    assert f.candidates[0].test.key == "0.0" and f.candidates[0].reasons == ["key in text"]
    # Logs that are not there say so instead of linking to nothing.
    assert [log.text for log in f.logs] == [None, None]
    assert all("not found beside the record" in (log.missing or "") for log in f.logs)


def test_replay_logs_are_embedded_escaped_and_cut_with_a_marker(
        make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record(polluted_tests())
    logs = record.path.parent / "record.logs"
    logs.mkdir()
    (logs / "001-pair.log").write_text("$ python -m pytest\n</pre><script>alert(1)</script>\n"
                                       "E   AssertionError\n", encoding="utf-8")
    (logs / "002-ddmin.log").write_text("HEAD\n" + "x" * (3 * LOG_LIMIT) + "\nTAIL: 1 failed\n",
                                        encoding="utf-8")
    finding = _finding(status="verified", logs=["record.logs/001-pair.log",
                                                "record.logs/002-ddmin.log"])
    finding.repro = "python -m pytest a b"
    view = build_view([record], [finding])
    small, big = view.findings[0].logs
    assert small.text is not None and "<script>alert(1)</script>" in small.text
    assert not small.truncated
    assert big.truncated and big.text is not None and len(big.text) <= LOG_LIMIT + 200
    assert big.text.startswith("HEAD") and big.text.endswith("TAIL: 1 failed\n")
    assert "characters of this log left out" in big.text
    html = render(view)
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    # A page's logs together stay bounded: past the budget a log is named, not embedded.
    budget = LogBudget(total=10)
    first = embed_log("record.logs/001-pair.log", record.path.parent, budget)
    later = embed_log("record.logs/001-pair.log", record.path.parent, budget)
    assert first.text is not None and later.text is None
    assert "size limit" in (later.missing or "")


def test_findings_are_ordered_verified_first_and_unknown_statuses_survive(
        make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    findings = [_finding(status="not-order-dependent"), _finding(status="from-the-future"),
                _finding(status="verified")]
    view = build_view([record], findings)
    assert [f.status for f in view.findings] == [
        "verified", "not-order-dependent", "from-the-future"]
    assert view.findings[2].status_class == "other"
    assert ("other findings", "1", "status-other") in view.stats


def test_secret_env_values_are_redacted_in_header_changes_and_findings(
        make_record: RecordFactory) -> None:
    secret = "s3cr3t-value-1234"
    head = header(env={"AWS_SECRET_ACCESS_KEY": secret, "HOME": "/root"},
                  replay={"env": {"API_TOKEN": secret}})
    record = make_record([entry(0, "t.py::a", changes=[env_added("API_TOKEN", secret)]),
                          entry(1, "t.py::b", "failed")], head=head)
    finding = _finding(victim="t.py::b", polluters=["t.py::a"], key="API_TOKEN", after=secret)
    view = build_view([record], [finding])
    from statesnap.output.report.render import render

    html = render(view)
    assert secret not in html
    assert "<redacted:" in html or "\\u003credacted:" in html


def test_run_info_says_shared_values_once_and_differences_per_run(
        make_record: RecordFactory) -> None:
    a = make_record([entry(0, "t.py::a", worker="gw0")], name="a.jsonl",
                    head=header("gw0", packages={"pytest": "8.3.3", "numpy": "1.26"}))
    b = make_record([entry(0, "t.py::b", worker="gw1")], name="b.jsonl",
                    head=header("gw1", packages={"pytest": "8.3.3", "numpy": "2.0"},
                                probes=[{"name": "env", "status": "ok", "detail": None},
                                        {"name": "syspath", "status": "unavailable",
                                         "detail": "no sys"}]))
    run = build_view([a, b], []).run
    rows = {r.name: r for r in run.rows}
    assert rows["Python"].same and rows["Python"].text == "CPython 3.11.9"
    assert not rows["Worker"].same
    assert [(v.label, v.text) for v in rows["Worker"].values] == [("gw0", "gw0"), ("gw1", "gw1")]
    packages = {r.name: r for r in run.packages}
    assert packages["pytest"].same and not packages["numpy"].same
    probes = {p.name: p for p in run.probes}
    assert probes["env"].status == "ok"
    assert probes["syspath"].status == "mixed"
    assert "gw1: unavailable (no sys)" in probes["syspath"].details
    # Costs add up over both runs: 2 x 3.0 ms over 2 tests.
    assert probes["env"].per_test_us == 3000.0
    assert probes["env"].share == 1.0


def test_probe_errors_name_the_test_they_happened_at(make_record: RecordFactory) -> None:
    record = make_record([entry(0, "t.py::a"), entry(1, "t.py::b")],
                         errors=[{"probe": "fds", "where": "read", "index": 1,
                                  "error": "OSError: gone"}])
    (err,) = build_view([record], []).run.errors
    assert (err.probe, err.where, err.test, err.error) == ("fds", "read", "t.py::b",
                                                           "OSError: gone")


def test_gauge_plots_show_steps_and_mark_the_test_that_made_the_largest(
        make_record: RecordFactory) -> None:
    tests = [entry(i, f"t.py::test_{i}", gauges={"fds": 10 + (5 if i >= 40 else 0),
                                                 "gpu_mem": 2 << 20})
             for i in range(100)]
    record = make_record(tests)
    views = {p.name: p for p in plots(build_lanes([record]))}
    assert set(views) == {"fds", "gpu_mem"}
    fds = views["fds"]
    assert fds.title == "Open file descriptors"
    (mark,) = fds.marks
    assert mark.key == "0.40"
    assert "t.py::test_40" in mark.title and "10 → 15" in mark.title
    # A flat line needs only its ends, plus the step: far fewer points than tests.
    assert len(fds.series[0].points.split()) <= 6
    # A flat line: the range is widened by a tenth.
    assert views["gpu_mem"].y_ticks[0][1] == "2.2 MiB"
    assert views["gpu_mem"].marks == []


def test_no_plots_without_gauges(make_record: RecordFactory) -> None:
    assert plots(build_lanes([make_record([entry(0, "t.py::a")])])) == []


def test_mtime_resolution_reads_as_a_sentence(make_record: RecordFactory) -> None:
    head = header(mtime_resolution={
        "/src/app": {"root": "/src/app", "resolution_ns": 1, "write_tick_ns": 4_000_000,
                     "fs_type": "ext4", "mount_point": "/"},
        "/mnt/fat": {"root": "/mnt/fat", "resolution_ns": 2_000_000_000,
                     "write_tick_ns": None, "fs_type": "vfat", "mount_point": "/mnt"},
    })
    run = build_view([make_record([entry(0, "t.py::a")], head=head)], []).run
    row = next(r for r in run.rows if r.name == "mtime resolution")
    assert row.text.splitlines() == [
        "/mnt/fat — vfat at /mnt: mtime to 2 s",
        "/src/app — ext4 at /: mtime to 1 ns, writes tick every 4 ms",
    ]


def test_only_the_first_page_of_leaks_is_markup_the_rest_is_data(
        make_record: RecordFactory) -> None:
    from statesnap.output.report.views import LEAK_PAGE

    tests = [entry(i, f"t.py::test_{i}", changes=[env_added(f"V{i:04d}", "x")])
             for i in range(LEAK_PAGE + 30)]
    view = build_view([make_record(tests)], [])
    assert len(view.leak_rows) == LEAK_PAGE
    assert view.leak_rows_total == view.leak_rows_kept == LEAK_PAGE + 30
    leaks = view.data["leaks"]
    assert len(leaks) == LEAK_PAGE + 30
    assert leaks[0] == ["env", "V0000", "added", {"text": "", "absent": True}, {"text": "x"},
                        3, "call", "0.0", "t.py::test_0", "", 0]
    assert view.data["leak_page"] == LEAK_PAGE


def test_gauge_units_come_from_their_names() -> None:
    from statesnap.output.report.plots import describe, format_value

    assert describe("threads") == ("Live threads", "")
    assert describe("torch.cuda:0_allocated_mib") == (
        "GPU memory: torch.cuda:0 allocated", "MiB")
    assert format_value(1536.0, "MiB") == "1.5 GiB"
    assert format_value(512.0, "bytes") == "512 B"
    assert describe("queue_depth") == ("queue_depth", "")


def test_summary_facts_are_shown_and_nested_values_left_out(make_record: RecordFactory) -> None:
    view = build_view([make_record([entry(0, "t.py::a")])], [],
                      summary={"verification": "3 replays in 12.1 s", "replays": 3,
                               "tests": [{"nested": True}]})
    assert view.facts == [("verification", "3 replays in 12.1 s"), ("replays", "3")]


def test_leak_summary_counts_sorts_and_keeps_the_five_most_leaked_keys(
        make_record: RecordFactory) -> None:
    long_key = "L" * 81
    tests = [entry(0, "t.py::a", changes=[env_added(k, "x") for k in
                                          ("A", "B", "C", "D", "E", long_key)]),
             entry(1, "t.py::b", changes=[env_added(k, "y") for k in ("A", "B", "C", "D")]),
             entry(2, "t.py::c", changes=[
                 {"probe": "cwd", "key": "cwd", "change": "changed", "before": "/a",
                  "after": "/b", "phase": "call", "severity": 3}]),
             entry(3, "t.py::d", changes=[
                 {"probe": "attributes", "key": "m:x", "change": "changed", "before": 1,
                  "after": 2, "phase": "call", "severity": 2}])]
    view = build_view([make_record(tests)], [])
    # Most tests first, then by name.
    assert [(p.probe, p.tests, p.leaks, p.keys) for p in view.leak_probes] == [
        ("env", 2, 10, 6), ("attributes", 1, 1, 1), ("cwd", 1, 1, 1)]
    env = view.leak_probes[0]
    assert env.top_keys == [("A", 2), ("B", 2), ("C", 2), ("D", 2), ("E", 1)]
    assert view.leak_rows_total == view.leak_rows_kept == 12
    # Rows by probe, key, then run order; one lane, so no lane named.
    assert [(r.change.probe, r.change.key, r.order) for r in view.leak_rows][:5] == [
        ("attributes", "m:x", 3), ("cwd", "cwd", 2), ("env", "A", 0), ("env", "A", 1),
        ("env", "B", 0)]
    assert {r.test.lane for r in view.leak_rows} == {None}
    view = build_view([make_record([entry(0, "t.py::a", changes=[env_added(long_key, "x")])],
                                   name="one.jsonl")], [])
    assert view.leak_probes[0].top_keys == [("L" * 80, 1)]


def test_leak_rows_of_several_lanes_name_their_lane_and_sort_by_it(
        make_record: RecordFactory) -> None:
    a = make_record([entry(0, "t.py::a", worker="gw1", changes=[env_added("K", "1")])],
                    name="a.jsonl", head=header("gw1"))
    b = make_record([entry(0, "t.py::b", worker="gw0", changes=[env_added("K", "2")])],
                    name="b.jsonl", head=header("gw0"))
    view = build_view([a, b], [])
    assert [(r.test.lane, r.test.nodeid) for r in view.leak_rows] == [
        ("gw0", "t.py::b"), ("gw1", "t.py::a")]
    assert view.leak_probes[0].tests == 2
    assert ("workers / shards", "2", "") in view.stats


def test_a_page_of_leaks_is_100_rows(make_record: RecordFactory) -> None:
    tests = [entry(i, f"t.py::test_{i}", changes=[env_added(f"V{i:04d}", "x")])
             for i in range(101)]
    view = build_view([make_record(tests)], [])
    assert len(view.leak_rows) == 100 and view.data["leak_page"] == 100
    assert len(view.data["leaks"]) == 101


def test_stats_count_tests_failures_leaks_findings_and_crashes(
        make_record: RecordFactory) -> None:
    tests = [entry(0, "t.py::a", changes=[env_added("K", "1")]),
             entry(1, "t.py::b", "failed"), entry(2, "t.py::c", "error"),
             entry(3, "t.py::d", "skipped"), entry(4, "t.py::f", "failed")]
    record = make_record(tests, running="t.py::e", footer=False)
    findings = [_finding(status="suspected"), _finding(status="verified"),
                _finding(status="verified"), _finding(status="brand-new")]
    view = build_view([record], findings)
    assert view.stats == [
        ("tests", "5", ""), ("failed", "3", "bad"), ("leaked state", "1", "warn"),
        ("verified", "2", "status-verified"), ("suspected", "1", "status-suspected"),
        ("other findings", "1", "status-other"), ("crashed runs", "1", "bad")]
    quiet = build_view([make_record([entry(0, "t.py::a")], name="q.jsonl")], [])
    assert quiet.stats == [("tests", "1", ""), ("failed", "0", ""), ("leaked state", "0", "")]
    assert build_view([], []).stats == [
        ("tests", "0", ""), ("failed", "0", ""), ("leaked state", "0", "")]


def test_each_status_has_its_label_and_findings_follow_their_order(
        make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    order = ["verified", "suspected", "latent", "brittle", "not-deterministic",
             "unexplained", "not-order-dependent"]
    findings = [_finding(status=s, logs=["x.log"]) for s in reversed(order)]
    view = build_view([record], findings)
    assert [f.status for f in view.findings] == order
    assert [f.status_label for f in view.findings] == [
        "verified", "suspected", "latent", "brittle", "not deterministic", "unexplained",
        "not order-dependent"]
    assert [f.id for f in view.findings] == [f"finding-{i}" for i in range(1, 8)]
    assert view.findings[0].status_help == (
        "the victim passes alone and fails after the polluter, in fresh processes")
    assert all(f.status_class == f.status for f in view.findings)
    # Only a suspect that nothing replayed is "not replayed"; other verdicts keep their label.
    # Statuses as a record gives them: read from JSON, not the interned literals.
    statuses = ["".join(s) for s in (("unex", "plained"), ("sus", "pected"),
                                     ("not-deter", "ministic"), ("aaa", "-new"))]
    bare = build_view([record], [_finding(status=s) for s in statuses])
    assert [(f.status_label, f.source) for f in bare.findings] == [
        ("suspected, not replayed", "not replayed"), ("not deterministic", "replayed"),
        ("unexplained", "replayed"), ("aaa-new", "replayed")]


def test_where_a_verdict_comes_from(make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    stored = _finding(status="verified")
    stored.source = "".join(["ses", "sion"])  # as read from a record, not the literal
    replayed = _finding(status="verified")
    view = build_view([record], [stored, replayed])
    assert [f.source for f in view.findings] == ["stored by the run", "replayed"]


def test_a_finding_card_shows_its_failure_key_values_and_reproduction(
        make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    long_key = "K" * 400
    f = _finding(status="verified", exc_type="AssertionError", message="m" * 3000,
                 key=long_key, before="old", after={"a": 1}, proven_keys=[long_key],
                 hint="use monkeypatch", hint_proven=True, note="a note",
                 setter="tests/test_a.py::test_plain", cleaners=["tests/test_a.py::test_plain"],
                 candidates=[Candidate("tests/test_a.py::test_sets_mode", 0, "env", "ZOO_MODE",
                                       None, "fast", 2.3456, ["why"])])
    f.repro = "python -m pytest a b"  # proven: the status is verified
    (card,) = build_view([record], [f]).findings
    assert card.failure == ("AssertionError: " + "m" * 3000)[:2000]
    assert card.ref == ("env:" + long_key)[:300]
    assert card.proven_keys == [long_key[:300]]
    assert card.before is not None and card.before.text == "old" and not card.before.absent
    assert card.after is not None and card.after.text == '{"a": 1}'
    assert (card.repro, card.repro_proven) == ("python -m pytest a b", True)
    assert (card.hint, card.hint_proven, card.note) == ("use monkeypatch", True, "a note")
    assert card.setter is not None and card.setter.key == "0.1"
    assert [c.key for c in card.cleaners] == ["0.1"]
    assert card.candidates[0].score == 2.35
    assert card.candidates[0].before.absent and card.candidates[0].after.text == "fast"
    assert card.mtime is None
    only_message = _finding(message="boom")
    only_type = _finding(exc_type="KeyError")
    neither = _finding(probe=None, key=None)
    cards = build_view([record], [only_message, only_type, neither]).findings
    assert [c.failure for c in cards] == ["boom", "KeyError", None]
    assert (cards[2].ref, cards[2].before, cards[2].after) == (None, None, None)
    key_only = build_view([record], [_finding(probe=None, key="K")]).findings[0]
    assert key_only.ref == ":K" and key_only.before is not None
    unproven = _finding(status="suspected")
    unproven.repro = "python -m pytest a b"
    assert build_view([record], [unproven]).findings[0].repro == ""


def test_a_file_changed_in_place_gets_the_mtime_sentence_and_hint(
        make_record: RecordFactory) -> None:
    record = make_record(polluted_tests())
    # The probe's name as a record gives it (read from JSON: not the interned literal).
    files = _finding(probe="".join(["fi", "les"]), key="data/cache.json", hint="original hint",
                     polluters=["tests/test_a.py::test_sets_mode", "tests/test_a.py::test_plain"],
                     before={"size": 10, "mtime_ns": 5},
                     after={"size": 12, "mtime_ns": 5, "flag": "size-changed-mtime-kept"})
    (card,) = build_view([record], [files]).findings
    assert card.mtime is not None and card.mtime.startswith(
        "data/cache.json: tests/test_a.py::test_sets_mode changed its size")
    # The victim's record says how fine the filesystem's mtime is.
    assert "mtime resolution: mtime to 1 ns); caches keyed on mtime" in card.mtime
    assert card.hint is not None and card.hint != "original hint"
    assert card.before is not None and card.before.text == "10 bytes"
    env = build_view([record], [_finding(hint="original hint")]).findings[0]
    assert (env.mtime, env.hint) == (None, "original hint")
    # Another probe's values shaped like a file's are no file.
    other = _finding(probe="knob", key="k", before={"size": 10, "mtime_ns": 5},
                     after={"size": 12, "mtime_ns": 5, "flag": "size-changed-mtime-kept"})
    assert build_view([record], [other]).findings[0].mtime is None


def test_the_page_title_time_and_facts(make_record: RecordFactory) -> None:
    record = make_record([entry(0, "t.py::a")])
    view = build_view([record], [], generated=1_700_000_000.0,
                      summary={"k" * 101: "v" * 300, "flag": True, "ratio": 0.5})
    assert view.title == "statesnap pollution report"
    assert view.generated == "2023-11-14 22:13:20 UTC"
    assert view.facts == [("k" * 100, "v" * 200), ("flag", "true"), ("ratio", "0.5")]
    assert build_view([record], [], title="mine").title == "mine"


def test_a_finding_names_the_failed_run_of_its_victim_and_its_lane_when_several(
        make_record: RecordFactory) -> None:
    # A rerun victim appears twice: the card opens the run that failed; the polluter's first.
    tests = [entry(0, "t.py::p", changes=[env_added("K", "1")]), entry(1, "t.py::v"),
             entry(2, "t.py::v", "failed"), entry(3, "t.py::p", "failed")]
    record = make_record(tests)
    (card,) = build_view([record], [_finding(victim="t.py::v", polluters=["t.py::p"])]).findings
    assert (card.victim.key, card.polluters[0].key) == ("0.2", "0.0")
    assert (card.victim.lane, card.polluters[0].lane) == (None, None)
    other = make_record([entry(0, "t.py::x", worker="gw1")], name="b.jsonl",
                        head=header("gw1"))
    (card,) = build_view([record, other],
                         [_finding(victim="t.py::v", polluters=["t.py::p"])]).findings
    assert (card.victim.key, card.victim.lane) == ("0.2", "main")
    assert build_view([record], [_finding(victim="gone.py::t")]).findings[0].victim.key is None


def test_a_suspect_gets_no_fix_in_its_card(make_record: RecordFactory) -> None:
    # A hint under a polluter no replay proved would read as the known fix (a stored verdict
    # of an older version may carry one); the mtime hint of a file's race too.
    record = make_record(polluted_tests())
    plain = _finding(status="suspected", hint="use monkeypatch")
    race = _finding(status="suspected", probe="".join(["fi", "les"]), key="data/cache.json",
                    before={"size": 10, "mtime_ns": 5},
                    after={"size": 12, "mtime_ns": 5, "flag": "size-changed-mtime-kept"})
    cards = build_view([record], [plain, race]).findings
    assert [c.hint for c in cards] == [None, None]
    assert cards[1].mtime is not None  # the race itself is still said
