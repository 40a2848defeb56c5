"""Cleaners of a verdict read back from the record (``explain --verify --find-cleaners`` on a
run whose session stored its verdicts).

A stored verdict's node ids are read from its ``finding`` line, not shared with the record's
test entries: the victim must still never be tried as its own cleaner, and a cleaner found
again must be proven by its own replay.
"""

from __future__ import annotations

from pathlib import Path

from rule_world import RuleRunner, env_change, failure, nid, record_of, verify

from statesnap.analysis.findings import VERIFIED
from statesnap.analysis.verdicts import findings_of, store
from statesnap.proof.verify import verify_findings
from statesnap.record.reader import read_record


def test_a_stored_verdicts_victim_is_never_its_own_cleaner(tmp_path: Path) -> None:
    # The victim itself put the key back (say in its teardown), as a real cleaner did.
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO", None, "1")]),
        ("test_zz_unsets", [env_change("ZOO", "1", None)]),
        ("test_a2", [env_change("ZOO", None, "1")])], "test_victim", failure(),
        extras={"test_victim": {"changes": [env_change("ZOO", "1", None)]}}, fmt=2)

    def rule(order: list[str], restore: object) -> object:
        if restore or nid("test_zz_unsets") in order:
            return None
        return failure() if nid("test_a2") in order or nid("test_a") in order else None

    session, _ = verify(record, rule)  # what the session proved and stored
    store(record.path, [session])
    again = read_record(record.path)
    (f,) = findings_of(again)
    assert f.source == "session" and f.victim == nid("test_victim")
    runner = RuleRunner(again, rule)  # type: ignore[arg-type]
    verify_findings(again, [f], find_cleaners=True, runner=runner)
    assert f.status == VERIFIED and f.polluters == [nid("test_a2")]
    assert [o for label, o in runner.asked if label == "cleaner"] == [
        [nid("test_a2"), nid("test_zz_unsets"), nid("test_victim")]]
    assert f.cleaners == [nid("test_zz_unsets")]
    assert f.cleaner_proofs[nid("test_zz_unsets")].split()[-3:] == [
        nid("test_a2"), nid("test_zz_unsets"), nid("test_victim")]
