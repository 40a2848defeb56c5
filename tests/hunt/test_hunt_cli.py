"""``statesnap hunt`` end to end: xdist lanes, the summary JSON, the report, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hunt_helpers import Suite, change, entry, write_record

from statesnap.hunt.runs import ORDER_KINDS
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow

LANES_SUITE = {
    "test_1_victim.py": '''
import os

def test_reads_level():
    assert os.environ.get("ZOO_LEVEL", "info") == "info"
''',
    "test_2_polluter.py": '''
import os

def test_sets_level():
    os.environ["ZOO_LEVEL"] = "debug"
''',
    "test_3_plain.py": '''
def test_plain():
    assert True
''',
}


def statesnap(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _lanes(record: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in read_record(record).tests:
        out.setdefault(t.worker, []).append(t.nodeid)
    return out


def test_a_whole_xdist_run_is_hunted_across_its_lanes(suite: Suite) -> None:
    pytest.importorskip("xdist")
    suite.write(LANES_SUITE)
    record = suite.record("-n", "2", "--dist", "loadfile")
    lanes = _lanes(record)
    assert set(lanes) == {"gw0", "gw1"}, lanes
    out_json = suite.out / "hunt.json"
    report = suite.out / "hunt.html"
    proc = statesnap("hunt", str(record), "--json", str(out_json), "--report", str(report),
                     "--budget", "600", cwd=suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary: dict[str, Any] = json.loads(out_json.read_text(encoding="utf-8"))
    (f,) = summary["findings"]
    assert f["status"] == "latent"
    assert f["victim"] == "test_1_victim.py::test_reads_level"
    assert f["polluters"] == ["test_2_polluter.py::test_sets_level"]
    assert f["key"] == "ZOO_LEVEL"
    victim_lane = next(w for w, ids in lanes.items() if f["victim"] in ids)
    assert f["worker"] == victim_lane
    assert {t["worker"] for t in summary["tests"]} == {"gw0", "gw1"}
    kinds = [r["kind"] for r in summary["hunt"]["runs"]]
    assert kinds[:2] == ["leakers-first", "without-leakers"]
    assert summary["hunt"]["orders"] == len([k for k in kinds if k in ORDER_KINDS])
    assert summary["hunt"]["pytest_runs"] == len(summary["hunt"]["runs"])
    assert "[LATENT] test_1_victim.py::test_reads_level" in proc.stdout
    assert "test_1_victim.py::test_reads_level" in report.read_text(encoding="utf-8")
    # The run kept one log per pytest process under <record>.logs/.
    logs = sorted((record.with_suffix(".logs")).glob("hunt-*/*.log"))
    assert len(logs) == summary["hunt"]["pytest_runs"]


#: Placement fixed by ``--dist loadfile``: victim and (later) polluter in one file share a
#: lane, the plain test's file has the other one.
SHARED_FILE_SUITE = {
    "test_1_shared.py": '''
import os

def test_reads_level():
    assert os.environ.get("ZOO_LEVEL", "info") == "info"

def test_sets_level():
    os.environ["ZOO_LEVEL"] = "debug"
''',
    "test_3_plain.py": LANES_SUITE["test_3_plain.py"],
}


def test_worker_hunts_one_lane_only(suite: Suite) -> None:
    pytest.importorskip("xdist")
    suite.write(SHARED_FILE_SUITE)
    record = suite.record("-n", "2", "--dist", "loadfile")
    lanes = _lanes(record)
    victim = "test_1_shared.py::test_reads_level"
    polluter = "test_1_shared.py::test_sets_level"
    assert sorted(lanes.values()) == [[victim, polluter], ["test_3_plain.py::test_plain"]], lanes
    (lane,) = [w for w, ids in lanes.items() if victim in ids]
    (other,) = set(lanes) - {lane}
    proc = statesnap("hunt", str(record), "--worker", lane, "--json", "-q", cwd=suite.root)
    summary = json.loads(proc.stdout)
    assert {t["worker"] for t in summary["tests"]} == {lane}
    assert summary["hunt"]["tests"] == 2
    assert [(f["victim"], f["polluters"]) for f in summary["findings"]] == [(victim, [polluter])]
    assert proc.returncode == 1
    # The other lane holds neither: hunting it alone finds nothing, and says so by exit 0.
    proc = statesnap("hunt", str(record), "--worker", other, "--json", "-q", cwd=suite.root)
    summary = json.loads(proc.stdout)
    assert {t["worker"] for t in summary["tests"]} == {other}
    assert summary["hunt"]["tests"] == 1
    assert summary["findings"] == []
    assert proc.returncode == 0, proc.stderr


def test_bad_input_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    # A project root: the last-run lookup stops here whatever a folder above holds.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    record = tmp_path / "run.jsonl"
    write_record(record, [
        entry(0, "t.py::a", worker="gw0", changes=[change("env", "K", "1")]),
    ], worker="gw0")
    cases = [
        (["hunt", str(record), "--worker", "gw9"], "no worker 'gw9'"),
        (["hunt", str(record), "--json", str(record)], "that is a statesnap record"),
        (["hunt", str(tmp_path / "missing.jsonl")], "no such record"),
    ]
    for argv, words in cases:
        proc = statesnap(*argv, cwd=tmp_path)
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        assert words in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    # An unknown option is argparse's usage error (pytest's own options go after --).
    proc = statesnap("hunt", str(record), "--frobnicate", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unrecognized arguments: --frobnicate" in proc.stderr
    # A word after -- is pytest's, never the RECORD.
    proc = statesnap("hunt", "--", str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "no RECORD given" in proc.stderr
    # A suite that changed since the record: its ids are gone, the hunt cannot start.
    proc = statesnap("hunt", str(record), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "the leakers-first-1 run could not run" in errors[0], errors
    assert "not found" in errors[0] and "t.py" in errors[0]
    # --json did not touch the record it refused to overwrite.
    assert read_record(record).tests[0].nodeid == "t.py::a"


def test_options_after_the_record_and_pytest_args_after_the_separator(suite: Suite) -> None:
    suite.write({"test_x.py": "import os\n\ndef test_x():\n"
                 "    os.environ['STATESNAP_TEST_X'] = '1'\n"})
    record = suite.record()
    proc = statesnap("hunt", str(record), "--random", "1", "--seed", "3", "--json", "-q",
                     "--", "-p", "no:cacheprovider", cwd=suite.root)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["findings"] == []
    assert summary["hunt"]["seeds"] == [3]
    first_log = Path(summary["hunt"]["runs"][0]["log"]).read_text(encoding="utf-8")
    assert "no:cacheprovider" in first_log.splitlines()[0]
