"""Scale: a test that fills a folder with thousands of files (issue 27, section 4).

A real pytest run with and without statesnap, the statesnap one inside a fresh pid namespace
(replays signal process groups).  The folder is one summarised change in the record (one key,
a bounded list of examples), the record stays small, pytest's outcomes, exit code and summary
line are plain pytest's, and a victim that depends on one file of the folder is still proven
by replay, its printed reproduction run as printed.  The same code path as 100,000 files,
with fewer so that the test stays quick (bench/bench_scale.py measures the real size).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pidns
from repro_check import check_reproductions
from statesnap.base.fsinfo import FOLDER_EXAMPLES, parse_folder_fingerprint
from statesnap.record.reader import read_record
from suite_runs import BASE_ARGS, child_env, summary_line, write_suite

pytestmark = pytest.mark.needs_pidns

FILES = 5000
SUITE = {
    "test_fill.py": f"""
        import os

        def test_a_fills():
            os.makedirs("out", exist_ok=True)
            for i in range({FILES}):
                with open(os.path.join("out", f"f{{i}}.txt"), "w") as f:
                    f.write("x")

        def test_b_victim():
            assert not os.path.exists("out/f1234.txt"), "out/f1234.txt is left over"

        def test_c_plain():
            assert True
        """,
}
VICTIM = "test_fill.py::test_b_victim"
POLLUTER = "test_fill.py::test_a_fills"
def test_a_folder_of_thousands_of_files_is_one_summarised_change(tmp_path: Path) -> None:
    pidns.require()
    root = write_suite(tmp_path / "suite", SUITE)
    out = tmp_path / "out"
    plain = subprocess.run([sys.executable, "-m", "pytest", *BASE_ARGS], cwd=root,
                           env=child_env(), capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL)
    shutil.rmtree(root / "out")
    record, summary = out / "run.jsonl", out / "run.json"
    out.mkdir()
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
            f"--statesnap-record={record}", f"--statesnap-json={summary}"]
    proc = subprocess.run(pidns.wrap(argv), cwd=root, env=child_env(), capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    output = proc.stdout + proc.stderr
    assert pidns.bystander_survived(proc.stderr)

    # pytest's own verdict, as plain pytest gave it.
    assert proc.returncode == plain.returncode == 1, output[-3000:]
    assert summary_line(proc.stdout) == summary_line(plain.stdout) == "1 failed, 2 passed"
    assert "Traceback" not in proc.stderr

    # One key for the folder, with a bounded list of examples; the record stays small.
    rec = read_record(record)
    filler = next(t for t in rec.tests if t.nodeid == POLLUTER)
    files = [c for c in filler.changes if c.probe == "files"]
    assert [(c.key, c.change) for c in files] == [("out/", "added")], files[:3]
    folder = parse_folder_fingerprint(files[0].after)
    assert folder is not None and folder.files == FILES and folder.size == FILES
    assert 0 < len(folder.examples) <= FOLDER_EXAMPLES
    assert all(e.startswith("out/f") for e in folder.examples)
    assert record.stat().st_size < 64 * 1024, record.stat().st_size
    assert summary.stat().st_size < 64 * 1024
    json.loads(summary.read_text(encoding="utf-8"))
    leak_lines = [ln for ln in output.splitlines() if f"{POLLUTER}: out/" in ln]
    assert len(leak_lines) == 1 and f"{FILES} files" in leak_lines[0], output[-3000:]

    # The victim depends on one file in the folder: proven by replays that set it aside.
    assert f"[VERIFIED] {VICTIM}" in output, output[-4000:]
    # The replays put the folder back as the run left it.
    assert len(list((root / "out").iterdir())) == FILES
    # Every printed reproduction fails the victim under plain pytest, once the folder the
    # run left is gone (so that the polluter in the command is what makes it again).
    shutil.rmtree(root / "out")
    check_reproductions(output, root, [VICTIM], expect="out/f1234.txt is left over")
