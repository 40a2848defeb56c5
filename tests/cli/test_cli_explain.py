"""``statesnap explain``: text, JSON, Markdown, one test, verified on demand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_runs import Recorded

from suite_runs import child_env, run_shell, statesnap_cli


def test_text_names_victims_and_suspects_without_replaying(zoo: Recorded) -> None:
    logs = zoo.record.with_suffix(".logs")
    cli = statesnap_cli("explain", str(zoo.record), cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    out = cli.stdout
    assert out.startswith("3 finding(s):")
    # The run stored no verdict (its verification budget was 0): every victim says that
    # nothing was replayed, and no command is offered as a reproduction.
    assert "[suspected, not replayed] test_zoo.py::test_b_victim" in out
    assert "top suspect: test_zoo.py::test_a_sets_mode" in out
    assert "polluted by:" not in out
    assert "state: env:ZOO_MODE: ∅ → fast" in out
    assert "candidates (ranked from the record, not replayed):" in out
    assert "1. test_zoo.py::test_a_sets_mode: env:ZOO_MODE (key named in the failing code" in out
    assert "reproduce:" not in out
    assert "to prove it: statesnap explain --verify --test test_zoo.py::test_b_victim" in out
    assert not logs.exists() or not any(logs.glob("*.log"))  # nothing was replayed


def test_json_is_the_findings_list(zoo: Recorded) -> None:
    cli = statesnap_cli("explain", str(zoo.record), "--json", cwd=zoo.root)
    findings = {f["victim"]: f for f in json.loads(cli.stdout)}
    assert set(findings) == {"test_zoo.py::test_b_victim", "test_zoo.py::test_broken",
                             "test_pair.py::test_f_needs_both"}
    f = findings["test_zoo.py::test_b_victim"]
    assert f["status"] == "suspected"
    assert (f["probe"], f["key"], f["after"]) == ("env", "ZOO_MODE", "fast")
    assert "key named in the failing code" in f["candidates"][0]["reasons"]


def test_test_and_verify_prove_one_finding(zoo: Recorded, tmp_path: Path) -> None:
    own = zoo.own_copy(tmp_path)
    cli = statesnap_cli("explain", str(own), "--test", "test_zoo.py::test_b_victim",
                        "--verify", cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.startswith("1 finding(s):")
    assert "[VERIFIED] test_zoo.py::test_b_victim" in cli.stdout
    assert "(restoring it makes the victim pass)" in cli.stdout
    assert "logs: " in cli.stdout
    # Progress, not a terminal: one line once the victim's verdict is settled.
    assert "statesnap: [1/1] verified test_zoo.py::test_b_victim (" in cli.stderr


def test_verify_of_a_broken_test_and_a_passing_one(zoo: Recorded, tmp_path: Path) -> None:
    own = zoo.own_copy(tmp_path)
    broken = statesnap_cli("explain", str(own), "--test", "test_zoo.py::test_broken",
                           "--verify", "--json", cwd=zoo.root)
    (f,) = json.loads(broken.stdout)
    assert f["status"] == "not-order-dependent"
    passed = statesnap_cli("explain", str(zoo.record), "--test", "test_zoo.py::test_a_sets_mode",
                           cwd=zoo.root)
    assert passed.returncode == 0
    assert "did not fail" in passed.stdout


def test_json_is_json_when_there_is_nothing_to_explain(zoo: Recorded) -> None:
    cli = statesnap_cli("explain", str(zoo.record), "--test", "test_zoo.py::test_a_sets_mode",
                        "--json", cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == []
    assert "nothing to explain" in cli.stderr


def test_markdown_with_no_verify_claims_nothing_it_did_not_replay(zoo: Recorded) -> None:
    cli = statesnap_cli("explain", str(zoo.record), "--test", "test_zoo.py::test_b_victim",
                        "--markdown", "--no-verify", cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    md = cli.stdout
    assert "- **status**: suspected, not replayed" in md
    assert "Reproduce" not in md and "(passes)" not in md
    assert "- **top suspect (not replayed)**: `test_zoo.py::test_a_sets_mode`" in md
    assert "statesnap explain --verify --test test_zoo.py::test_b_victim" in md


def test_markdown_is_ready_for_an_issue_and_its_commands_work(zoo: Recorded,
                                                              tmp_path: Path) -> None:
    # Nothing is stored for this victim: --markdown replays it before writing.
    own = zoo.own_copy(tmp_path)
    cli = statesnap_cli("explain", str(own), "--test", "test_pair.py::test_f_needs_both",
                        "--markdown", cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    md = cli.stdout
    assert md.startswith("### `test_pair.py::test_f_needs_both` fails after "
                         "`test_pair.py::test_c_sets_host` + `test_pair.py::test_d_sets_port`")
    assert "- **status**: verified" in md
    assert "<details><summary>Environment</summary>" in md
    assert "- Python 3." in md and "pytest" in md
    assert "filesystem of `" in md and "mtime to " in md
    blocks = md.split("```sh\n")[1:]
    fails, alone = (b.split("\n```", 1)[0] for b in blocks[:2])
    assert "test_pair.py::test_c_sets_host" in fails
    assert run_shell(fails, cwd=zoo.root).returncode == 1
    assert run_shell(alone, cwd=zoo.root).returncode == 0


def test_the_last_run_is_the_default_record(zoo: Recorded) -> None:
    # A run with the default record location marks itself latest; no RECORD needed then.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "statesnap",
                           "--statesnap-verify-budget=0", "test_zoo.py"], cwd=zoo.root,
                          env=child_env(), capture_output=True, text=True)
    assert proc.returncode == 1
    cli = statesnap_cli("explain", cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    assert "test_zoo.py::test_b_victim" in cli.stdout
    assert "test_pair.py" not in cli.stdout
