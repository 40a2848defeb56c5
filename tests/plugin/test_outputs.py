"""What a run leaves behind: the summary JSON (a contract other tools read), the record where
it was asked for or in pytest's cache with ``latest`` naming it; an output path that cannot be
written is a usage error at start, a write that fails at the end one line and a failed session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import statesnap
from readonly import read_only_dir
from statesnap.record.journal import FORMAT
from statesnap.record.paths import find_latest

SUITE = '''
import os


def test_clean():
    pass


def test_leaks():
    os.environ["OUTPUTS_SUITE_MODE"] = "fast"


def test_fails():
    assert 0


def test_skipped():
    import pytest
    pytest.skip("no")
'''

QUICK = ["--statesnap-verify-budget", "0"]


def test_summary_json_follows_the_contract(inner, pytester: pytest.Pytester,
                                           tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    summary = tmp_path / "summary.json"
    run = inner("--statesnap-json", str(summary), *QUICK)
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["format"] == 1
    assert data["statesnap_version"] == statesnap.__version__
    assert isinstance(data["findings"], list)
    tests = data["tests"]
    assert [t["nodeid"] for t in tests] == [
        "test_outputs_suite.py::test_clean",
        "test_outputs_suite.py::test_leaks",
        "test_outputs_suite.py::test_fails",
        "test_outputs_suite.py::test_skipped",
    ]
    assert [t["index"] for t in tests] == [0, 1, 2, 3]
    assert {t["worker"] for t in tests} == {"main"}
    assert [t["outcome"] for t in tests] == ["passed", "passed", "failed", "skipped"]
    for t in tests:
        assert {"nodeid", "worker", "index", "outcome", "leaks"} <= set(t)
    env_leaks = [leak for leak in tests[1]["leaks"] if leak["probe"] == "env"]
    assert env_leaks == [{"probe": "env", "key": "OUTPUTS_SUITE_MODE", "change": "added",
                          "before": None, "after": "fast", "phase": "call",
                          "severity": "high"}]
    assert tests[1]["leaked"] and not tests[0]["leaked"]
    assert not [leak for leak in tests[0]["leaks"] if leak["probe"] == "env"]
    # The summary names the record it was built from.
    assert data["records"] == [str(run.record_path)]
    # Complete and well-formed: no temporary sibling left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs", "summary.json"]


def test_summary_json_relative_path_is_from_the_invocation_dir(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    # Relative to the directory pytest was started in; a missing parent directory is
    # created, as for the report (CI artifact folders).
    run = inner("--statesnap-json", "out/summary.json", *QUICK)
    written = pytester.path / "out" / "summary.json"
    assert json.loads(written.read_text())["format"] == 1
    assert f"summary: {written}" in run.section()


def test_record_path_is_honoured(inner, pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    target = tmp_path / "ci-artifacts" / "nested" / "run.jsonl"
    result = pytester.runpytest("-p", "no:randomly", "-p", "statesnap",
                                "--statesnap-record", str(target), *QUICK)
    assert target.is_file()
    first = json.loads(target.read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "header" and first["format"] == FORMAT
    assert f"record: {target}" in result.outlines
    # Asked-for records are not mixed into the cache's run history.
    assert not (pytester.path / ".pytest_cache" / "statesnap" / "latest").exists()


def test_default_record_lives_in_the_cache_with_latest(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    pytester.mkdir("sub")
    first = inner(*QUICK, record=False)
    runs = pytester.path / ".pytest_cache" / "statesnap" / "runs"
    records = sorted(runs.glob("*.jsonl"))
    assert len(records) == 1
    assert find_latest(pytester.path) == records[0].resolve()
    assert find_latest(pytester.path / "sub") == records[0].resolve()  # from below, too
    # ...but never across another project's root: its own last run or none.
    pytester.mkdir("other")
    (pytester.path / "other" / "pyproject.toml").write_text("", encoding="utf-8")
    assert find_latest(pytester.path / "other") is None
    assert f"record: {records[0]}" in first.result.outlines

    inner(*QUICK, record=False)
    newest = find_latest(pytester.path)
    assert newest is not None and newest != records[0].resolve()
    assert newest.parent == runs.resolve() and newest.is_file()
    assert len(list(runs.glob("*.jsonl"))) == 2


def test_default_record_without_the_cacheprovider(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    inner("-p", "no:cacheprovider", *QUICK, record=False)
    latest = find_latest(pytester.path)
    assert latest is not None and latest.is_file()
    assert latest.is_relative_to((pytester.path / ".pytest_cache" / "statesnap").resolve())


PASSING = """
def test_one():
    pass
"""


def _fails_at_the_end(inner, pytester: pytest.Pytester, target: Path, option: str,
                      expected_ret: int) -> None:
    """The path was fine at start; the write at the end fails: one line, a failed session."""
    plain = inner(statesnap=False)
    if target.is_dir():  # made by the plain run's suite: make way for the real one
        shutil.rmtree(target)
    run = inner(option, str(target), *QUICK)
    assert run.comparable() == plain.comparable()
    assert run.ret == expected_ret
    # pytest's summary line is the plain run's: only the exit code says the file is missing.
    assert run.result.outlines[-1].split(" in ")[0] == plain.result.outlines[-1].split(" in ")[0]
    lines = [line for line in run.result.outlines if str(target) in line]
    assert lines == [f"statesnap: cannot write {target}: Is a directory"], run.result.outlines
    assert "Traceback" not in run.result.stdout.str()
    assert target.is_dir()
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no partial file


def _occupier(target: Path) -> str:
    # The suite itself puts a directory where the output should go, after the start check.
    return f'''

def test_occupies_the_output_path():
    import os
    os.makedirs({str(target)!r} + "/inside")
'''


def test_summary_write_failing_at_the_end_fails_a_failing_run_as_it_was(
        inner, pytester, tmp_path: Path) -> None:
    target = tmp_path / "out" / "summary.json"
    target.parent.mkdir()
    pytester.makepyfile(test_outputs_suite=SUITE + _occupier(target))
    _fails_at_the_end(inner, pytester, target, "--statesnap-json", 1)


@pytest.mark.parametrize("option", ["--statesnap-json", "--report"])
def test_output_write_failing_at_the_end_fails_a_passing_run(
        inner, pytester, tmp_path: Path, option: str) -> None:
    target = tmp_path / "out" / "artifact"
    target.parent.mkdir()
    pytester.makepyfile(test_outputs_suite=PASSING + _occupier(target))
    _fails_at_the_end(inner, pytester, target, option, pytest.ExitCode.INTERNAL_ERROR)


def test_missing_output_directories_are_created(inner, pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    summary = tmp_path / "no" / "such" / "summary.json"
    report = tmp_path / "ci" / "artifacts" / "pollution.html"
    run = inner("--statesnap-json", str(summary), "--report", str(report), *QUICK)
    assert run.ret == 1  # the suite's own failure
    assert json.loads(summary.read_text())["format"] == 1
    assert report.read_text().rstrip().endswith("</html>")
    section = run.section()
    assert f"summary: {summary}" in section and f"report: {report}" in section
    # The start check leaves nothing behind.
    assert sorted(p.name for p in summary.parent.iterdir()) == ["summary.json"]


def _usage_error(pytester: pytest.Pytester, option: str, target: Path | str,
                 reason: str) -> None:
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "statesnap",
                                           f"{option}={target}", *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert errors == [f"ERROR: {option} {target}: {reason}"], errors
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "passed" not in result.stdout.str()  # before the run, not after it


@pytest.mark.parametrize("option", ["--statesnap-json", "--report", "--statesnap-record"])
def test_unwritable_output_is_a_usage_error_at_start(pytester, tmp_path: Path,
                                                     option: str) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    _usage_error(pytester, option, "/proc/nope/out.file",
                 "cannot write in /proc (No such file or directory)")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    _usage_error(pytester, option, blocker / "sub" / "out.file", f"{blocker} is not a directory")
    assert blocker.read_text() == "not a directory\n"


def test_output_in_a_read_only_directory_is_a_usage_error(pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    locked = tmp_path / "locked"
    locked.mkdir()
    with read_only_dir(locked) as error:
        _usage_error(pytester, "--report", locked / "x.html",
                     f"cannot write in {locked} ({error})")
        assert list(locked.iterdir()) == []


def test_summary_path_that_is_a_directory_is_a_usage_error(inner, pytester,
                                                           tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    run = inner("--statesnap-json", str(tmp_path), *QUICK)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in run.result.errlines if line.strip()] == [
        f"ERROR: --statesnap-json {tmp_path}: is a directory, expected a file path"]


def test_record_that_cannot_be_created_is_a_usage_error(inner, pytester,
                                                        tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = blocker / "run.jsonl"
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "statesnap",
                                           "--statesnap-record", str(target), *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert errors == [f"ERROR: --statesnap-record {target}: {blocker} is not a directory"]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_help_lists_the_statesnap_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "statesnap", "--help")
    assert result.ret == 0
    out = result.stdout.str()
    assert "statesnap: find the test that polluted global state:" in out
    for flag in ("--statesnap-record=PATH", "--statesnap-json=PATH", "--statesnap-probes=LIST",
                 "--report=PATH"):
        assert flag in out, flag
    assert "statesnap_probes" in out  # the ini option


def test_installed_alone_it_does_nothing(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    run = inner(statesnap=False)
    assert run.section() == []
    assert not (pytester.path / ".pytest_cache" / "statesnap").exists()
    assert "statesnap" not in pytester.runpytest("--help").stdout.str()


def test_usage_error_leaves_no_empty_record(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    run = inner("--statesnap-probes", "nosuch", record=False)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    runs = pytester.path / ".pytest_cache" / "statesnap" / "runs"
    assert not runs.is_dir() or [p.stat().st_size for p in runs.glob("*.jsonl")] == []
