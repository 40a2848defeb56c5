"""No fix hint for a polluter no replay proved: the terminal, explain, Markdown, JSON, report.

A suspect is only the test that last changed state the victim saw; a hint such as "set
ZOO_MODE with monkeypatch.setenv" under it reads as if it were the polluter.  The hint comes
with the proof (``explain --verify``).
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_runs import Recorded

from statesnap.analysis.findings import Finding
from statesnap.output.explain import format_finding, markdown
from suite_runs import statesnap_cli

VICTIM = "test_zoo.py::test_b_victim"
HINT = "monkeypatch.setenv('ZOO_MODE'"


def test_the_recording_run_prints_no_hint_for_its_suspects(zoo: Recorded) -> None:
    # The zoo run had no verification budget: every finding is a suspicion.
    out = zoo.run.output
    assert f"[suspected, not replayed] {VICTIM}" in out
    assert "top suspect: test_zoo.py::test_a_sets_mode" in out
    assert "fix:" not in out and HINT not in out
    summary = json.loads(zoo.run.json_path.read_text(encoding="utf-8"))
    assert [f["hint"] for f in summary["findings"]] == [None, None, None]


def test_explain_markdown_and_the_report_give_a_suspect_no_hint(
        zoo: Recorded, tmp_path: Path) -> None:
    text = statesnap_cli("explain", str(zoo.record), cwd=zoo.root)
    assert text.returncode == 0, text.stderr
    assert f"[suspected, not replayed] {VICTIM}" in text.stdout
    assert "fix:" not in text.stdout and HINT not in text.stdout
    as_json = statesnap_cli("explain", str(zoo.record), "--json", cwd=zoo.root)
    assert [f["hint"] for f in json.loads(as_json.stdout)] == [None, None, None]
    md = statesnap_cli("explain", str(zoo.record), "--test", VICTIM, "--markdown",
                       "--no-verify", cwd=zoo.root)
    assert "- **status**: suspected, not replayed" in md.stdout
    assert "**fix**" not in md.stdout and HINT not in md.stdout
    html = tmp_path / "r.html"
    report = statesnap_cli("report", str(zoo.record), "-o", str(html), cwd=zoo.root)
    assert report.returncode == 0, report.stderr
    page = html.read_text(encoding="utf-8")
    assert "suspected, not replayed" in page
    assert 'class="hint"' not in page and "monkeypatch.setenv" not in page


def test_the_hint_comes_with_the_proof(zoo: Recorded, tmp_path: Path) -> None:
    cli = statesnap_cli("explain", str(zoo.own_copy(tmp_path)), "--test", VICTIM, "--verify",
                        "--json", cwd=zoo.root)
    (f,) = json.loads(cli.stdout)
    assert f["status"] == "verified"
    assert HINT in f["hint"] and f["hint_proven"]


def test_a_stored_suspect_with_a_hint_shows_none() -> None:
    # A verdict stored by an older version (or any path that set one) before a proof.
    f = Finding(victim="t.py::test_v", polluters=["t.py::test_p"], probe="env", key="K",
                status="suspected", after="1", hint="set K with monkeypatch.setenv")
    assert not any("fix" in line for line in format_finding(f))
    assert "**fix**" not in markdown([f], {})
    assert f.shown_hint is None and f.to_summary()["hint"] is None
    f.status = "verified"
    # The polluter proven, the key not: the hint is shown as resting on a ranked key.
    assert ("    fix, if that key is the cause (not proven): set K with monkeypatch.setenv"
            in format_finding(f))
    assert "- **fix, if that key is the cause (not proven)**: set K" in markdown([f], {})
    assert not any(line.startswith("    fix: ") for line in format_finding(f))
    f.proven_keys = ["env:K"]
    assert "    fix: set K with monkeypatch.setenv" in format_finding(f)
    assert "- **fix**: set K with monkeypatch.setenv" in markdown([f], {})
    assert f.to_summary()["hint"] == "set K with monkeypatch.setenv"
