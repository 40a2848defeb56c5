"""The note and fix hint of a verified finding whose key a wide fixture's tear-down (or a
class set-up of the user's) changed, as ``explain`` prints them from a record read back.

The phases come from the record's JSON here, as every command that reads a record sees them:
a check that compares them by identity instead of by value would say the wrong thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rule_world import env_change, failure, record_of, verify

from statesnap.analysis.findings import VERIFIED

POLLUTER = "tests/test_db.py::TestZoo::test_a"


@pytest.mark.parametrize(("fixture", "scope", "phase", "note", "hint"), [
    ("db", "module", "teardown",
     f"the change was made in db (torn down after {POLLUTER}), not by the test: put the "
     "value back after its yield (or in a finaliser)", None),
    ("_unittest_setUpClass_fixture_TestZoo", "class", "teardown",
     f"the change was made in TestZoo.tearDownClass (torn down after {POLLUTER}), not by the "
     "test: put the value back in tearDownClass itself",
     "TestZoo.tearDownClass changes ZOO_A on its way out and leaves it: put the value back "
     "in tearDownClass itself"),
    ("_xunit_setup_class_fixture_TestZoo", "class", "setup",
     f"the change was made in TestZoo.setup_class (set up for {POLLUTER}), not by the test, "
     "and never undone: undo it in teardown_class",
     "TestZoo.setup_class changes ZOO_A and nothing undoes it: undo it in teardown_class"),
])
def test_the_fixture_that_made_the_change_is_named_in_its_own_terms(
        tmp_path: Path, fixture: str, scope: str, phase: str, note: str,
        hint: str | None) -> None:
    change = {**env_change("ZOO_A", None, "1"), "phase": phase, "fixture": fixture,
              "scope": scope}
    record = record_of(tmp_path / "r.jsonl", [(POLLUTER, [change]), ("test_b", [])],
                       "test_victim", failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Any:
        keys = {k for _probe, k in (restore or {}).get("keys", [])}
        return failure() if POLLUTER in order and "ZOO_A" not in keys else None

    f, _ = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [POLLUTER]
    assert f.note == note
    if hint is not None:
        assert f.hint == hint
