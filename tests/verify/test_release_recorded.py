"""What the session let go of before its replays is kept in the record, beside the verdicts.

The replays ran without a child process (or port, or lock) the tests had left: a reader of the
record must be able to see that, not only the terminal of the run.
"""

from __future__ import annotations

import json
from pathlib import Path

from suite_runs import run_suite, statesnap_cli, write_suite


def test_a_child_process_let_go_of_is_in_the_record(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_zoo.py": '''
        import os
        import subprocess
        import sys

        _keepers = []

        def test_1_hires_a_keeper():
            _keepers.append(subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"]))   # never stopped
            os.environ["ZOO_MODE"] = "night"

        def test_2_mode_is_day():
            assert os.environ.get("ZOO_MODE", "day") == "day"
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_2_mode_is_day")
    assert f["status"] == "verified", run.output[-3000:]
    assert "replaying beside (statesnap signals only processes it started) child process" \
        in run.output
    record = run.record()
    (action,) = record.released
    assert action["probe"] == "children"
    assert action["test"] == "test_zoo.py::test_1_hires_a_keeper"
    assert action["what"].startswith(f"child process {action['key']} (pid ")
    assert f"started) {action['what']}" in run.output
    # One line of its own after the footer, before the verdicts, read by every reader.
    kinds = [json.loads(line)["type"] for line in run.record_path.read_text().splitlines()]
    assert kinds[-2:] == ["released", "finding"], kinds
    assert [v["victim"] for v in record.verdicts] == ["test_zoo.py::test_2_mode_is_day"]
    explain = statesnap_cli("explain", str(run.record_path), "--json", cwd=root)
    assert [g["status"] for g in json.loads(explain.stdout)] == ["verified"], explain.stdout
