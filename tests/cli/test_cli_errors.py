"""Bad input: one clear line on stderr, exit code 2, no traceback, no partial files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runs import Recorded

from suite_runs import statesnap_cli


def _one_error_line(cli_stderr: str, command: str) -> str:
    lines = [ln for ln in cli_stderr.splitlines() if ln.strip()]
    assert "Traceback" not in cli_stderr
    assert lines[-1].startswith(f"statesnap {command}: error: "), cli_stderr
    return lines[-1]


def _files(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def _bad_records(tmp: Path) -> dict[str, tuple[Path, str]]:
    truncated = tmp / "truncated.jsonl"
    truncated.write_text('{"type": "header", "format": 1, "worker": "ma')
    future = tmp / "future.jsonl"
    future.write_text(json.dumps({"type": "header", "format": 99}) + "\n")
    other = tmp / "other.jsonl"
    other.write_text('{"hello": "world"}\n')
    return {
        "missing": (tmp / "nope.jsonl", "no such record"),
        "truncated": (truncated, "truncated inside its header line"),
        "unknown format": (future, "unknown record format 99"),
        "not a record": (other, "not a statesnap record line"),
    }


@pytest.mark.parametrize("command", [["explain"], ["explain", "--verify"], ["replay"],
                                     ["bisect", "--test", "x.py::t"]])
@pytest.mark.parametrize("kind", ["missing", "truncated", "unknown format", "not a record"])
def test_a_record_that_cannot_be_read(tmp_path: Path, command: list[str], kind: str) -> None:
    path, words = _bad_records(tmp_path)[kind]
    before = _files(tmp_path)
    cli = statesnap_cli(command[0], str(path), *command[1:], cwd=tmp_path)
    assert cli.returncode == 2
    line = _one_error_line(cli.stderr, command[0])
    assert words in line and str(path.name) in line
    assert cli.stdout == ""
    assert _files(tmp_path) == before


def test_diff_of_a_missing_record(tmp_path: Path, zoo: Recorded) -> None:
    cli = statesnap_cli("diff", str(zoo.record), str(tmp_path / "gone.jsonl"), cwd=tmp_path)
    assert cli.returncode == 2
    assert "gone.jsonl: no such record" in _one_error_line(cli.stderr, "diff")


def test_no_record_given_and_no_last_run(tmp_path: Path) -> None:
    # A project root: the lookup stops here whatever a folder above holds.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    cli = statesnap_cli("explain", cwd=tmp_path)
    assert cli.returncode == 2
    assert "no last run found" in _one_error_line(cli.stderr, "explain")


@pytest.mark.parametrize("command", [
    ["explain", "--test"], ["bisect", "--test"], ["replay", "--until"]])
def test_an_id_not_in_the_record(zoo: Recorded, command: list[str]) -> None:
    logs = zoo.record.with_suffix(".logs")
    before = _files(logs) if logs.exists() else set()
    cli = statesnap_cli(command[0], str(zoo.record), *command[1:], "test_zoo.py::test_b_victm",
                        cwd=zoo.root)
    assert cli.returncode == 2
    line = _one_error_line(cli.stderr, command[0])
    assert "'test_zoo.py::test_b_victm' is not in" in line
    # A typo of one test's id names that test, and only it.
    assert line.endswith("(did you mean test_zoo.py::test_b_victim?)"), line
    assert (_files(logs) if logs.exists() else set()) == before


def test_a_replay_that_cannot_start(zoo: Recorded, tmp_path: Path) -> None:
    # The record's suite is gone (another checkout): pytest refuses the replay.
    root = tmp_path / "copy"
    shutil.copytree(zoo.root, root)
    record = tmp_path / "run.jsonl"
    text = zoo.record.read_text(encoding="utf-8").replace(str(zoo.root), str(root))
    record.write_text(text, encoding="utf-8")
    (root / "test_zoo.py").unlink()
    logs = record.with_suffix(".logs")
    for command in (["replay"], ["explain", "--verify"], ["bisect", "--test",
                                                          "test_zoo.py::test_b_victim"]):
        cli = statesnap_cli(*command[:1], str(record), *command[1:], cwd=root)
        assert cli.returncode == 2, (command, cli.stdout, cli.stderr)
        line = _one_error_line(cli.stderr, command[0])
        assert "could not" in line and "test_zoo.py" in line
        log = Path(line.rsplit("(log: ", 1)[1].rstrip(")"))
        assert log.is_file() and log.read_text().startswith("$ ")
    # Only logs stay: no order files or child records of replays that never ran.
    assert {p.suffix for p in logs.iterdir()} == {".log"}


def test_a_recorded_id_that_no_longer_exists(zoo: Recorded, tmp_path: Path) -> None:
    # The victim was renamed since the run: its file is there, its id is not.
    root = tmp_path / "renamed"
    shutil.copytree(zoo.root, root)
    record = tmp_path / "run.jsonl"
    text = zoo.record.read_text(encoding="utf-8").replace(str(zoo.root), str(root))
    record.write_text(text, encoding="utf-8")
    source = root / "test_zoo.py"
    source.write_text(source.read_text().replace("def test_b_victim", "def test_b_renamed"))
    for command in (["replay"], ["explain", "--verify"]):
        cli = statesnap_cli(*command[:1], str(record), *command[1:], cwd=root)
        assert cli.returncode == 2, (command, cli.stdout, cli.stderr)
        line = _one_error_line(cli.stderr, command[0])
        assert "1 node id(s) no longer exist: test_zoo.py::test_b_victim" in line


@pytest.mark.parametrize(("args", "words"), [
    (["explain", "--timeout", "-1"], "argument --timeout: must be more than 0: '-1'"),
    (["explain", "--repeat", "0"], "argument --repeat: must be 1 or more: '0'"),
    (["explain", "--budget", "soon"], "argument --budget: not a number of seconds: 'soon'"),
    (["bisect", "--test", "x.py::t", "--timeout", "0"], "argument --timeout: must be more than 0"),
    (["report", "--budget", "-3"], "argument --budget: must be 0 or more: '-3'"),
    (["hunt", "--random", "-1"], "argument --random: must be 0 or more: '-1'"),
])
def test_a_bad_number_is_a_usage_error(tmp_path: Path, args: list[str], words: str) -> None:
    cli = statesnap_cli(*args, cwd=tmp_path)
    assert cli.returncode == 2
    assert words in _one_error_line(cli.stderr, args[0])
    assert not _files(tmp_path)  # nothing was written
