"""Nothing a test does to the process breaks statesnap (issue 12, section 2).

Each pollution of ``suite/`` gets its own pair of real pytest processes, without and with
``-p statesnap`` (record, summary JSON and report asked for).  With statesnap, pytest's exit
code and final summary line are those of the plain run, all three files are written and
complete, and nothing prints a traceback.  With the victim in the run, the session end
attributes and replays its failure while the process is polluted, and proves it.

The statesnap runs go inside a fresh pid namespace beside a bystander that must survive
(``tests/pidns.py``): a session end that signalled what it did not start (a mocked ``Popen``'s
pid, 1, made ``killpg(1, SIGKILL)``, which is ``kill(-1, SIGKILL)``) kills the bystander there,
never the machine running the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_harness import ARTIFACTS, POLLUTIONS, Pair, read_back, run_pair, verdict_rows

import pidns

pytestmark = [pytest.mark.slow, pytest.mark.needs_pidns]


@pytest.fixture(autouse=True)
def _namespace() -> None:
    pidns.require()


def _check(pair: Pair) -> None:
    context = f"--- plain:\n{pair.plain.output[-2000:]}\n--- statesnap:\n{pair.snap.output[-4000:]}"
    assert pair.snap.bystander_survived, context
    assert pair.plain.summary is not None, context
    assert (pair.snap.returncode, pair.snap.summary) == (pair.plain.returncode,
                                                         pair.plain.summary), context
    assert pair.written() == dict.fromkeys(ARTIFACTS, True), context
    for text in ("Traceback", "INTERNALERROR", "was not written", "failed:",
                 "out of range", "left patched by a hostile test"):
        assert text not in pair.snap.output, context
    assert "- statesnap -" in pair.snap.stdout, context


@pytest.mark.parametrize("pollution", list(POLLUTIONS))
def test_a_polluted_session_end_with_a_victim(pollution: str, tmp_path: Path) -> None:
    pair = run_pair(pollution, tmp_path)
    _check(pair)
    assert pair.plain.returncode == 1 and pair.plain.summary == "1 failed, 2 passed"
    findings = pair.summary_json()["findings"]
    assert isinstance(findings, list)
    [finding] = findings
    assert finding["victim"].endswith("::test_victim_needs_no_flag")
    assert finding["status"] == "verified", pair.snap.output[-4000:]
    assert [p.split("::")[-1] for p in finding["polluters"]] == ["test_leaks_flag"]
    assert finding["proven_keys"] == ["env:HOSTILE_FLAG"]
    # The printed line itself ran (captured Popen, select, json, killpg) and failed the victim.
    # (The first pair is that line when its polluter is the top suspect: pair-printed.)
    [confirm] = [r for r in finding["replays"] if r["label"] in ("pair-printed", "confirm")
                 and r["command"] == finding["repro"]]
    assert confirm["outcome"] == "failed", confirm
    # The verdict proven under the pollution is the one read back from the record later.
    assert read_back(pair) == verdict_rows(findings)


@pytest.mark.parametrize("pollution", list(POLLUTIONS))
def test_a_polluted_session_end_that_passes(pollution: str, tmp_path: Path) -> None:
    pair = run_pair(pollution, tmp_path, victim=False)
    _check(pair)
    assert pair.plain.returncode == 0 and pair.plain.summary == "2 passed, 1 deselected"
    assert pair.summary_json()["findings"] == []
