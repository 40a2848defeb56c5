"""``statesnap report RECORD... -o pollution.html``, run as users run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from report_records import RecordFactory, entry, header, polluted_tests

from statesnap.analysis.findings import Finding
from statesnap.cli import main


def _statesnap(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_report_from_one_record(make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record(polluted_tests())
    out = tmp_path / "pollution.html"
    proc = _statesnap("report", str(record.path), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    html = out.read_text(encoding="utf-8")
    assert "tests/test_b.py::test_reads_mode" in html
    assert "ZOO_MODE" in html
    # Without --findings, the record's failures are attributed afresh (not replayed).
    assert 'class="badge status-suspected"' in html


def test_workers_and_shards_become_lanes(make_record: RecordFactory, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    make_record([entry(0, "t.py::a", worker="gw0")], name="shards/gw0.jsonl",
                head=header("gw0"))
    make_record([entry(0, "t.py::b", worker="gw1")], name="shards/gw1.jsonl",
                head=header("gw1"))
    out = tmp_path / "out.html"
    # A folder stands for every record in it.
    assert main(["report", str(tmp_path / "shards"), "-o", str(out)]) == 0
    assert "2 record(s)" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    assert 'aria-label="tests of gw0 in run order"' in html
    assert 'aria-label="tests of gw1 in run order"' in html


def test_findings_from_a_summary_file(make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record(polluted_tests())
    finding = Finding(victim="tests/test_b.py::test_reads_mode",
                      polluters=["tests/test_a.py::test_sets_mode"], probe="env",
                      key="ZOO_MODE", status="verified", repro="python -m pytest a b",
                      before=None, after="fast")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"format": 1, "findings": [finding.to_summary()]}))
    out = tmp_path / "pollution.html"
    assert main(["report", str(record.path), "--findings", str(summary), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert 'class="badge status-verified"' in html
    assert "python -m pytest a b" in html


def test_an_unwritable_report_path_is_one_line_and_no_file(
        make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record(polluted_tests())
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "pollution.html"
    proc = _statesnap("report", str(record.path), "-o", str(target), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("statesnap report: error: cannot write")
    assert str(target) in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "record.jsonl"]


def test_a_directory_as_output_is_refused(make_record: RecordFactory, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    record = make_record(polluted_tests())
    assert main(["report", str(record.path), "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_missing_record_is_one_line(tmp_path: Path) -> None:
    proc = _statesnap("report", str(tmp_path / "nope.jsonl"), "-o", "x.html", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("no such record")
    assert not (tmp_path / "x.html").exists()


def test_a_bad_findings_file_is_one_line(make_record: RecordFactory, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    record = make_record(polluted_tests())
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["report", str(record.path), "--findings", str(bad), "-o", "x.html"]) == 2
    assert "not JSON" in capsys.readouterr().err
