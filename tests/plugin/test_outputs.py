"""What a run leaves behind: the summary JSON (a DESIGN.md contract), the record where it was
asked for or in pytest's cache with ``latest`` naming it, and clear lines when an output
cannot be written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import statesnap
from statesnap.recordpath import find_latest

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
                          "before": None, "after": "fast", "phase": "call"}]
    assert not [leak for leak in tests[0]["leaks"] if leak["probe"] == "env"]
    # The summary names the record it was built from.
    assert data["records"] == [str(run.record_path)]
    # Complete and well-formed: no temporary sibling left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs", "summary.json"]


def test_summary_json_relative_path_is_from_the_invocation_dir(inner, pytester) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    missing = inner("--statesnap-json", "out/summary.json", *QUICK)
    # A missing parent directory is not created: a line says so (see below), naming the
    # path resolved against the directory pytest was started in.
    expected = pytester.path / "out" / "summary.json"
    assert any(f"cannot write {expected}" in line for line in missing.result.outlines)
    pytester.mkdir("out")
    inner("--statesnap-json", "out/summary.json", *QUICK)
    assert json.loads((pytester.path / "out" / "summary.json").read_text())["format"] == 1


def test_record_path_is_honoured(inner, pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    target = tmp_path / "ci-artifacts" / "nested" / "run.jsonl"
    result = pytester.runpytest("-p", "no:randomly", "-p", "statesnap",
                                "--statesnap-record", str(target), *QUICK)
    assert target.is_file()
    first = json.loads(target.read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "header" and first["format"] == 1
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


def _cannot_write(inner, pytester: pytest.Pytester, target: Path, *extra: str) -> None:
    plain = inner(statesnap=False)
    if target.is_dir():  # made by the plain run's suite: make way for the real one
        shutil.rmtree(target)
    run = inner("--statesnap-json", str(target), *QUICK, *extra)
    assert run.comparable() == plain.comparable()
    assert run.ret == plain.ret
    lines = [line for line in run.result.outlines if f"cannot write {target}" in line]
    assert len(lines) == 1, run.result.outlines
    assert lines[0].startswith("statesnap: ")
    assert "Traceback" not in run.result.stdout.str()
    assert not target.exists() or target.is_dir()
    parent = target.parent
    if parent.is_dir():
        assert not [p for p in parent.iterdir() if p.name.startswith(f".{target.name}.tmp")]


def test_summary_into_a_missing_directory(inner, pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    target = tmp_path / "no" / "such" / "dir" / "summary.json"
    _cannot_write(inner, pytester, target)
    assert not (tmp_path / "no").exists()


def test_summary_under_a_regular_file(inner, pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    _cannot_write(inner, pytester, blocker / "summary.json")
    assert blocker.read_text() == "not a directory\n"


def test_summary_write_failing_at_the_last_step_leaves_no_partial_file(
        inner, pytester, tmp_path: Path) -> None:
    """The temporary file is written, then the rename fails: it must be removed."""
    target = tmp_path / "out" / "summary.json"
    target.parent.mkdir()
    # The suite itself puts a directory where the summary should go, after the option check.
    pytester.makepyfile(test_outputs_suite=SUITE + f'''

def test_occupies_the_summary_path():
    os.makedirs({str(target)!r} + "/inside")
''')
    _cannot_write(inner, pytester, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["summary.json"]
    assert target.is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_summary_into_a_read_only_directory(inner, pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_outputs_suite=SUITE)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        _cannot_write(inner, pytester, locked / "summary.json")
    finally:
        locked.chmod(0o700)


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
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: --statesnap-record {target}")
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
