"""pytest -n 2: one lane per worker, merged by the controller into one record and summary."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from statesnap.contain.xdist import lane_path
from statesnap.record.lanes import read_lanes

Run = Callable[..., Any]

POLLUTED_FILE = '''
import os

def test_a_polluter():
    os.environ["LANE_POLLUTION"] = "1"

def test_b_victim():
    assert "LANE_POLLUTION" not in os.environ
'''
OTHER_FILE = '''
import pytest

@pytest.mark.parametrize("i", range(3))
def test_other(i):
    pass
'''


def test_two_workers_make_one_merged_record_with_two_lanes(
        pytester: pytest.Pytester, run: Run, tmp_path: Path) -> None:
    pytester.makepyfile(test_polluted=POLLUTED_FILE, test_other=OTHER_FILE)
    summary = tmp_path / "summary.json"
    # loadfile: each file runs in one worker, so the victim shares its polluter's process.
    inner = run("-n", "2", "--dist", "loadfile", f"--statesnap-json={summary}",
                "--statesnap-verify-budget=60")
    inner.result.assert_outcomes(passed=4, failed=1)
    lanes = read_lanes(inner.record_path)
    assert sorted(lane.worker for lane in lanes) == ["gw0", "gw1"]
    for lane in lanes:
        assert lane.path == lane_path(inner.record_path, lane.worker)
        assert lane.path.is_file()  # each worker's own lane stays next to the merged record
        assert {t.worker for t in lane.tests} == {lane.worker}
        assert [t.index for t in lane.tests] == list(range(len(lane.tests)))
    by_file = {lane.tests[0].nodeid.split("::")[0]: lane for lane in lanes}
    polluted = by_file["test_polluted.py"]
    assert polluted.order() == ["test_polluted.py::test_a_polluter",
                                "test_polluted.py::test_b_victim"]
    header = inner.record().header
    assert [lane["worker"] for lane in header["lanes"]] == [lane.worker for lane in lanes]
    data = json.loads(summary.read_text())
    assert sorted(data["records"]) == sorted(str(lane.path) for lane in lanes)
    assert {t["worker"] for t in data["tests"]} == {"gw0", "gw1"}
    finding = data["findings"][0]
    assert finding["victim"] == "test_polluted.py::test_b_victim"
    assert finding["polluters"] == ["test_polluted.py::test_a_polluter"]
    assert finding["worker"] == polluted.worker
    assert finding["status"] == "verified"
    inner.result.stdout.fnmatch_lines(["*xdist lanes merged into the record: gw0 (* tests), "
                                       "gw1 (* tests)*"])

    # `statesnap replay --worker W` on the merged record runs exactly that lane's order.
    done = subprocess.run(
        [sys.executable, "-m", "statesnap", "replay", str(inner.record_path), "--worker",
         polluted.worker], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 1  # the victim fails again after its polluter
    # The replay runs from the lane's own record, so its files sit beside that lane.
    (order_file,) = polluted.path.with_suffix(".logs").glob("*replay.order.json")
    assert json.loads(order_file.read_text()) == polluted.order()


def test_a_crashed_worker_leaves_its_lane_up_to_the_crash(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_crash='''
import ctypes

def test_before():
    pass

def test_segfault():
    ctypes.string_at(0)
''', test_other=OTHER_FILE)
    inner = run("-n", "2", "--dist", "loadfile", "--max-worker-restart=0")
    lanes = read_lanes(inner.record_path)
    crashed = [lane for lane in lanes if lane.crashed]
    assert len(crashed) == 1
    lane = crashed[0]
    assert lane.order() == ["test_crash.py::test_before"]
    assert lane.running is not None
    assert lane.running["nodeid"] == "test_crash.py::test_segfault"
    described = {d["worker"]: d for d in inner.record().header["lanes"]}
    assert described[lane.worker]["crashed"] is True


def test_isolation_inside_workers(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_polluted=POLLUTED_FILE, test_other=OTHER_FILE)
    inner = run("-n", "2", "--dist", "loadfile", "--statesnap-isolate")
    inner.result.assert_outcomes(passed=5)  # the polluter's leak died with its child
    lanes = read_lanes(inner.record_path)
    assert all(t.extra.get("contained") for lane in lanes for t in lane.tests)
