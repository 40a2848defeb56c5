"""Budget left over: a finding the budget cut short says what it still owes, and
``explain --verify`` finishes the work and stores it, so every later reader shows the proof.

Real runs: a session whose budget ends after the first replay, then the CLI on its record.
Before, the finding said only that the budget was spent, and a report built after
``explain --verify`` still showed the session's ``[suspected]``.
"""

from __future__ import annotations

import json
from pathlib import Path

from suite_runs import run_suite, statesnap_cli, write_suite

SUITE = {
    "test_zoo.py": """
        import os

        def test_a_polluter():
            os.environ["ZOO_LEFT"] = "1"

        def test_b_plain():
            pass

        def test_c_victim():
            assert os.environ.get("ZOO_LEFT") is None, "ZOO_LEFT leaked"
        """,
}
VICTIM = "test_zoo.py::test_c_victim"


def test_a_cut_short_finding_is_finished_and_stored_by_explain_verify(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    # Time for the first replay to start, none for a second.
    run = run_suite(root, tmp_path / "out", budget=0.01)
    f = run.finding("test_c_victim")
    assert f["status"] == "suspected", run.output[-3000:]
    note = f["note"] or ""
    assert note.startswith("the verification budget was spent"), note
    assert "1 of 1 candidate polluter(s) left untried" in note, note
    assert "statesnap explain --verify" in note, note

    proc = statesnap_cli("explain", str(run.record_path), "--verify", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[VERIFIED] {VICTIM}" in proc.stdout, proc.stdout

    # Every later reader shows what explain --verify proved, without replaying.
    shown = statesnap_cli("explain", str(run.record_path), cwd=root)
    assert f"[VERIFIED] {VICTIM}" in shown.stdout, shown.stdout
    assert "suspected" not in shown.stdout.lower(), shown.stdout
    md = statesnap_cli("explain", str(run.record_path), "--markdown", "--no-verify", cwd=root)
    assert "statesnap: replaying" not in md.stderr, md.stderr
    assert "VERIFIED" in md.stdout.upper() and "Reproduce" in md.stdout, md.stdout
    as_json = statesnap_cli("explain", str(run.record_path), "--json", cwd=root)
    (stored,) = json.loads(as_json.stdout)
    assert stored["status"] == "verified" and stored["proven_keys"] == ["env:ZOO_LEFT"]
    html = tmp_path / "pollution.html"
    rep = statesnap_cli("report", str(run.record_path), "-o", str(html), cwd=root)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    page = html.read_text(encoding="utf-8")
    assert 'class="finding status-verified"' in page
    assert 'class="finding status-suspected"' not in page


def test_explain_verify_leaves_a_record_cut_mid_line_readable(tmp_path: Path) -> None:
    # A run killed mid-write: its record ends in a cut line, which readers drop.  Verdicts
    # appended after it would join the cut text into a line that is no JSON, and every
    # later reader would refuse the record.
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", budget=0.01)
    data = run.record_path.read_bytes()
    run.record_path.write_bytes(data[:-5])  # the footer cut before its end
    cut = run.record_path.read_bytes()

    proc = statesnap_cli("explain", str(run.record_path), "--verify", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[VERIFIED] {VICTIM}" in proc.stdout, proc.stdout
    assert "cannot store the verdicts" in proc.stderr and "cut short" in proc.stderr, (
        proc.stderr)
    assert run.record_path.read_bytes() == cut
    shown = statesnap_cli("explain", str(run.record_path), cwd=root)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert VICTIM in shown.stdout, shown.stdout
