"""Every verified finding's printed line was run exactly as printed and failed the victim.

The rule behind the first pair run as printed (``pair-printed``): whichever way a finding was
proven (the printed pair itself, a later suspect's replay, the top suspect's replay after its
printed pair missed, delta debugging over two polluters), the line it prints is among its runs
as printed, with the victim failed, and the line printed is never run as printed twice.
Replays answered by rules (rule_world): the printed line is answered as a replay of its order
would be, or, where the rule says so, passes where the replay fails (statesnap loaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rule_world import Outcome, env_change, failure, labels, nid, record_of, verify

from statesnap.analysis.findings import VERIFIED, Finding

AS_PRINTED = ("pair-printed", "confirm")


def _two_writers(tmp_path: Path) -> Any:
    return record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO_A", None, "1")]),
                                            ("test_b", [env_change("ZOO_B", None, "1")])],
                     "test_victim", failure())


def _a(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
    keys = {k for _p, k in (restore or {}).get("keys", [])}
    return failure() if nid("test_a") in order and "ZOO_A" not in keys else None


def _both(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
    together = {nid("test_a"), nid("test_b")} <= set(order)
    return failure() if together and not (restore or {}).get("keys") else None


def _b(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
    keys = {k for _p, k in (restore or {}).get("keys", [])}
    return failure() if nid("test_b") in order and "ZOO_B" not in keys else None


def _printed_runs(f: Finding) -> list[tuple[str, str, str]]:
    return [(r.label, r.command, r.outcome) for r in f.replays if r.label in AS_PRINTED]


@pytest.mark.parametrize(("rule", "polluters", "runs"), [
    # test_b, the latest writer, is the top suspect: its printed pair proves and confirms.
    (_b, ["test_b"], ["alone", "pair-printed", "key"]),
    # test_a's replay proves it after test_b's printed pair missed; its line is confirmed.
    (_a, ["test_a"], ["alone", "pair-printed", "pair", "key", "confirm"]),
    # Two polluters: no pair fails; delta debugging proves both; the three-id line confirmed.
    (_both, ["test_a", "test_b"], None),
], ids=["printed-pair", "later-suspect", "two-polluters"])
def test_the_printed_line_of_every_verified_finding_failed_the_victim_as_printed(
        tmp_path: Path, rule: Any, polluters: list[str], runs: list[str] | None) -> None:
    f, runner = verify(_two_writers(tmp_path), rule)
    assert f.status == VERIFIED and f.polluters == [nid(p) for p in polluters], f
    if runs is not None:
        assert labels(runner) == runs
    printed = _printed_runs(f)
    assert [(c, o) for _l, c, o in printed if c == f.repro] == [(f.repro, "failed")], printed
    assert runner.printed.count(f.repro) == 1, runner.printed
