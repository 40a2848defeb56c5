"""Attribution from a record alone: dirty keys, last writers, cleaners, ranking, findings."""

from __future__ import annotations

from pathlib import Path

from attribution_records import change, env, failing, nodeid, t, write

from statesnap.analysis.attribution import attribute, dirty_before, rank, victims
from statesnap.analysis.hints import hint_for
from statesnap.record.journal import Record
from statesnap.record.journal import TestEntry as Entry
from statesnap.state.diff import change_kind


def _victim(record: Record, name: str) -> Entry:
    found = record.test_by_id(nodeid(name))
    assert found is not None
    return found


# -- dirty_before ---------------------------------------------------------------------------
def test_a_key_that_differs_from_the_baseline_names_its_last_writer(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_first", env("MODE", None, "fast")),
        t(1, "test_second", env("MODE", "fast", "faster")),
        t(2, "test_quiet"),
        failing(3, "test_victim"),
    ])
    dirty = dirty_before(rec.tests, _victim(rec, "test_victim"))
    assert list(dirty.writes) == [("env", "MODE")]
    w = dirty.writes[("env", "MODE")]
    assert w.test.nodeid == nodeid("test_second")
    assert w.baseline is None  # the value before the first test changed it
    assert w.change.after == "faster"


def test_a_cleaner_clears_the_key_and_a_later_writer_is_named(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_pollute", env("MODE", None, "fast")),
        t(1, "test_clean", env("MODE", "fast", None)),
        failing(2, "test_passes_here"),
        t(3, "test_repollute", env("MODE", None, "slow")),
        failing(4, "test_victim"),
    ])
    between = dirty_before(rec.tests, _victim(rec, "test_passes_here"))
    assert between.writes == {}
    assert between.cleaners == {("env", "MODE"): [nodeid("test_clean")]}
    after = dirty_before(rec.tests, _victim(rec, "test_victim"))
    assert after.writes[("env", "MODE")].test.nodeid == nodeid("test_repollute")


def test_a_value_put_back_by_a_changed_write_is_clean(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_a", change("process", "umask", "0022", "0077")),
        t(1, "test_b", change("process", "umask", "0077", "0022")),
        failing(2, "test_victim"),
    ])
    assert dirty_before(rec.tests, _victim(rec, "test_victim")).writes == {}


def test_other_workers_never_pollute(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_gw1_polluter", env("MODE", None, "fast"), worker="gw1"),
        failing(0, "test_gw0_victim", worker="gw0"),
    ])
    assert dirty_before(rec.tests, _victim(rec, "test_gw0_victim")).writes == {}


def test_a_module_fixture_is_the_victims_own_setup_in_its_module_only(tmp_path: Path) -> None:
    fixture_change = env("DB_URL", None, "sqlite://", phase="setup", fixture="db",
                         scope="module")
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_uses_db", fixture_change),
        failing(1, "test_same_module"),
    ])
    assert dirty_before(rec.tests, _victim(rec, "test_same_module")).writes == {}
    other = failing(1, "test_elsewhere")
    other["nodeid"] = "tests/test_y.py::test_elsewhere"
    rec2 = write(tmp_path / "r2.jsonl", [t(0, "test_uses_db", fixture_change), other])
    victim = rec2.test_by_id("tests/test_y.py::test_elsewhere")
    assert victim is not None
    dirty = dirty_before(rec2.tests, victim)
    assert dirty.writes[("env", "DB_URL")].change.fixture == "db"


def test_what_a_test_changed_after_its_shared_class_setup_is_its_write(tmp_path: Path) -> None:
    # setup_class made the buffer (shared by the class's tests); the same test then filled it.
    made = change("attributes", "test_x:TestX.buf", None, "['a'] len=1", phase="setup",
                  fixture="_xunit_setup_class_fixture_TestX", scope="class",
                  then={"before": "[] len=0", "phase": "call"})
    victim = failing(1, "test_victim")
    victim["nodeid"] = "tests/test_x.py::TestX::test_victim"
    polluter = t(0, "test_fills", made)
    polluter["nodeid"] = "tests/test_x.py::TestX::test_fills"
    rec = write(tmp_path / "r.jsonl", [polluter, victim])
    in_class = rec.test_by_id("tests/test_x.py::TestX::test_victim")
    assert in_class is not None
    w = dirty_before(rec.tests, in_class).writes[("attributes", "test_x:TestX.buf")]
    assert (w.change.change, w.change.before, w.change.after, w.change.phase) == (
        "changed", "[] len=0", "['a'] len=1", "call")
    assert w.baseline == "[] len=0"  # put back as the setup left it, not deleted
    # Without a later change, the class setup's part is the victim's own setup.
    quiet = dict(made)
    del quiet["then"]
    polluter["changes"] = [quiet]
    rec2 = write(tmp_path / "r2.jsonl", [polluter, victim])
    v2 = rec2.test_by_id("tests/test_x.py::TestX::test_victim")
    assert v2 is not None and dirty_before(rec2.tests, v2).writes == {}
    # A victim of another class shares nothing: the whole change is the polluter's.
    victim["nodeid"] = "tests/test_x.py::TestY::test_victim"
    polluter["changes"] = [made]
    rec3 = write(tmp_path / "r3.jsonl", [polluter, victim])
    v3 = rec3.test_by_id("tests/test_x.py::TestY::test_victim")
    assert v3 is not None
    w3 = dirty_before(rec3.tests, v3).writes[("attributes", "test_x:TestX.buf")]
    assert (w3.change.change, w3.baseline) == ("added", None)


# -- rank -----------------------------------------------------------------------------------
def test_a_key_the_failing_code_names_outranks_severity_and_recency(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_sets_mode", change("env", "ZOO_MODE", None, "fast", severity=2)),
        t(1, "test_later_severe", change("syspath", "sys.path:/opt/x", None, "at 0",
                                         severity=3)),
        failing(2, "test_victim", code='assert os.environ.get("ZOO_MODE") is None'),
    ])
    victim = _victim(rec, "test_victim")
    cands = rank(victim, dirty_before(rec.tests, victim))
    assert [c.key for c in cands] == ["ZOO_MODE", "sys.path:/opt/x"]
    assert "key named in the failing code" in cands[0].reasons


def test_the_changed_value_in_the_failure_counts(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_mode", change("attributes", "zoo.settings:SETTINGS", "{'mode': 'slow'}",
                                 "fastest", severity=2)),
        t(1, "test_unrelated", change("env", "OTHER", None, "1", severity=2)),
        failing(2, "test_victim", code="assert get_mode() == 'slow'",
                said="AssertionError: assert 'fastest' == 'slow'"),
    ])
    victim = _victim(rec, "test_victim")
    top = rank(victim, dirty_before(rec.tests, victim))[0]
    assert top.key == "zoo.settings:SETTINGS"
    assert top.reasons == ["changed value appears in the failure"]


def test_words_match_whole_not_inside_longer_names(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_path", change("env", "PATH", "/bin", "/x", severity=3)),
        t(1, "test_pythonpath", change("env", "PYTHONPATH", None, "/y", severity=3)),
        failing(2, "test_victim", code='assert "PYTHONPATH" not in os.environ'),
    ])
    victim = _victim(rec, "test_victim")
    cands = rank(victim, dirty_before(rec.tests, victim))
    assert cands[0].key == "PYTHONPATH"
    assert cands[1].reasons == []


def test_an_introspection_dump_naming_every_key_does_not_beat_the_code(tmp_path: Path) -> None:
    dump = "AssertionError: assert 'ZOO_MODE' not in environ({'HARMLESS': 'yes', 'ZOO_MODE': 'on'})"
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_real", env("ZOO_MODE", None, "on")),
        t(1, "test_harmless", env("HARMLESS", None, "yes")),
        failing(2, "test_victim", code='assert "ZOO_MODE" not in os.environ', said=dump),
    ])
    victim = _victim(rec, "test_victim")
    cands = rank(victim, dirty_before(rec.tests, victim))
    assert [c.nodeid for c in cands] == [nodeid("test_real"), nodeid("test_harmless")]
    assert cands[0].score > cands[1].score


def test_without_any_clue_severity_then_recency_decide(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_old_severe", change("cwd", "cwd", "/a", "/b", severity=3)),
        t(1, "test_low", change("modules", "json", None, "module#1", severity=1)),
        t(2, "test_new_severe", env("X", None, "1", severity=3)),
        failing(3, "test_victim"),
    ])
    victim = _victim(rec, "test_victim")
    assert [c.nodeid for c in rank(victim, dirty_before(rec.tests, victim))] == [
        nodeid("test_new_severe"), nodeid("test_old_severe"), nodeid("test_low")]


# -- attribute ------------------------------------------------------------------------------
def test_attribute_makes_one_suspected_finding_per_failure(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_pollute", env("ZOO_MODE", None, "fast")),
        failing(1, "test_victim", code='assert "ZOO_MODE" not in os.environ'),
        failing(2, "test_broken_alone", code="assert 1 == 2"),
    ])
    findings = {f.victim: f for f in attribute(rec)}
    f = findings[nodeid("test_victim")]
    assert f.status == "suspected"
    assert f.polluters == [nodeid("test_pollute")]
    assert (f.probe, f.key, f.before, f.after) == ("env", "ZOO_MODE", None, "fast")
    # No fix hint for a suspect: one is given once a replay proved the polluter.
    assert f.hint is None
    assert f.repro.endswith(f"{nodeid('test_pollute')} {nodeid('test_victim')}")
    # The second failure saw the same dirty key: it is suspected too (verification decides).
    assert findings[nodeid("test_broken_alone")].status == "suspected"


def test_the_hint_follows_the_kind_of_change(tmp_path: Path) -> None:
    assert [change_kind(None, "1"), change_kind("1", None), change_kind("1", "2")] == [
        "added", "removed", "changed"]
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_unset", env("ZOO_HOME", "/zoo", None)),
        failing(1, "test_victim", code='assert os.environ["ZOO_HOME"]'),
    ])
    (f,) = attribute(rec)
    assert (f.before, f.after) == ("/zoo", None)
    # The hint a proof will give (proof.verify asks for it with the change's kind).
    assert hint_for("env", "ZOO_HOME", change_kind(f.before, f.after)) == hint_for(
        "env", "ZOO_HOME", "removed") != hint_for("env", "ZOO_HOME", "added")


def test_a_failure_with_nothing_dirty_is_unexplained(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [t(0, "test_quiet"), failing(1, "test_victim")])
    (f,) = attribute(rec)
    assert f.status == "unexplained"
    assert f.polluters == []
    assert f.note and "no state differed" in f.note
    assert f.repro.endswith(nodeid("test_victim"))


def test_the_test_running_when_the_run_died_is_a_victim(tmp_path: Path) -> None:
    rec = write(tmp_path / "r.jsonl", [t(0, "test_arms", env("CRASH_ME", None, "1"))],
                running="test_segfaults")
    assert [v.nodeid for v in victims(rec)] == [nodeid("test_segfaults")]
    (f,) = attribute(rec)
    assert f.victim == nodeid("test_segfaults")
    assert f.exc_type == "crash"
    assert f.polluters == [nodeid("test_arms")]


def test_teardown_errors_are_not_victims(tmp_path: Path) -> None:
    entry = t(1, "test_teardown_fails")
    entry["phases"] = {"setup": "passed", "call": "passed", "teardown": "failed"}
    entry["outcome"] = "error"
    rec = write(tmp_path / "r.jsonl", [t(0, "test_p", env("X", None, "1")), entry])
    assert attribute(rec) == []
