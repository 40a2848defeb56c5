"""Whose leak a change is (``analysis/leaks.py``), on records read back from disk.

The summary JSON's per-test ``leaks`` and the terminal's leak lines are built from
:func:`resolve_leaks` on a record; the phases, scopes and fixtures come from its JSON, as
they do for every command that reads a record.  Each case pins which test (if any) is
charged with which change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from statesnap.analysis.leaks import Held, resolve_leaks
from statesnap.output.summary import build_summary
from statesnap.plugin.terminal import leak_line
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record
from statesnap.state.diff import Change


def _change(before: Any, after: Any, phase: str, fixture: str | None = None,
            scope: str | None = None) -> dict[str, Any]:
    kind = "added" if before is None else "removed" if after is None else "changed"
    return {"probe": "env", "key": "ZOO", "change": kind, "before": before, "after": after,
            "phase": phase, "fixture": fixture, "scope": scope, "severity": 3}


def _record(path: Path, *tests: list[dict[str, Any]]) -> Record:
    """A finished run of ``t.py::test_<n>``, the n-th with the changes ``tests[n]``."""
    w = RecordWriter(path)
    w.write({"type": "header", "format": 2, "worker": "main", "rootdir": str(path.parent),
             "replay": {"cwd": str(path.parent), "args": []}})
    w.write({"type": "collection", "changes": []})
    for index, changes in enumerate(tests):
        w.write({"type": "start", "index": index, "nodeid": f"t.py::test_{index}"})
        w.write({"type": "test", "index": index, "nodeid": f"t.py::test_{index}",
                 "worker": "main", "outcome": "passed", "phases": {"call": "passed"},
                 "duration": 0.0, "changes": changes})
    w.write({"type": "footer", "exitstatus": 0, "tests": len(tests)})
    w.close()
    return read_record(path)


def _summary_leaks(record: Record) -> dict[str, list[tuple[str, Any, Any]]]:
    """``{test: [(phase, before, after)]}`` from the summary JSON, for tests with leaks."""
    return {t["nodeid"]: [(c["phase"], c["before"], c["after"]) for c in t["leaks"]]
            for t in build_summary([record], [])["tests"] if t["leaks"]}


def test_a_module_fixtures_change_put_back_at_its_teardown_is_nobodys_leak(
        tmp_path: Path) -> None:
    record = _record(tmp_path / "r.jsonl",
                     [_change(None, "1", "setup", "db", "module")], [],
                     [_change("1", None, "teardown", "db", "module")])
    assert resolve_leaks(record.tests) == {}
    assert _summary_leaks(record) == {}


def test_a_value_equal_to_the_one_before_puts_it_back(tmp_path: Path) -> None:
    # Read from two lines of the record, the values are equal but two objects.
    record = _record(tmp_path / "r.jsonl",
                     [_change("the original", "patched", "setup", "db", "module")],
                     [_change("patched", "the original", "teardown", "db", "module")])
    assert _summary_leaks(record) == {}


def test_every_change_of_a_test_is_weighed_past_pytests_own_and_held_ones(
        tmp_path: Path) -> None:
    # pytest's own tmp_path setup is nobody's leak, and a change a module fixture holds is
    # not (yet) a leak: the test's other changes still are its own.
    own = {**_change(None, "/tmp/x", "setup", "tmp_path", "function"), "key": "TMP"}
    held = {**_change(None, "1", "setup", "db", "module"), "key": "DB"}
    record = _record(tmp_path / "r.jsonl", [own, held, _change(None, "on", "call")])
    assert [(ch.key, ch.phase) for ch in resolve_leaks(record.tests)[0]] == [
        ("ZOO", "call"), ("DB", "setup")]


def test_a_test_that_puts_a_held_key_back_in_its_call_is_no_teardown(tmp_path: Path) -> None:
    # Only the scope's end puts a fixture's change back for nobody: a test that undoes it
    # in its body changed the key itself, and the fixture's change stays its first test's.
    record = _record(tmp_path / "r.jsonl",
                     [_change(None, "1", "setup", "db", "module")],
                     [_change("1", None, "call")])
    assert _summary_leaks(record) == {"t.py::test_0": [("setup", None, "1")],
                                      "t.py::test_1": [("call", "1", None)]}


def test_a_wide_fixtures_teardown_change_is_its_tests_leak_not_held(tmp_path: Path) -> None:
    # A tear-down's change is not held for a scope (its scope just ended): a later test's
    # tear-down that changes the key back does not make it nobody's.
    record = _record(tmp_path / "r.jsonl",
                     [_change("a", "b", "teardown", "db", "module")],
                     [_change("b", "a", "teardown", "tmp_env", "function")])
    assert _summary_leaks(record) == {"t.py::test_0": [("teardown", "a", "b")],
                                      "t.py::test_1": [("teardown", "b", "a")]}


def test_a_function_fixtures_setup_change_is_its_tests_leak_not_held(tmp_path: Path) -> None:
    record = _record(tmp_path / "r.jsonl",
                     [_change("a", "b", "setup", "tmp_env", "function")],
                     [_change("b", "a", "teardown", "other", "function")])
    assert _summary_leaks(record) == {"t.py::test_0": [("setup", "a", "b")],
                                      "t.py::test_1": [("teardown", "b", "a")]}


def test_a_class_setups_leak_is_named_by_its_method_on_the_terminal(tmp_path: Path) -> None:
    fixture = "_xunit_setup_class_fixture_TestZoo"
    record = _record(tmp_path / "r.jsonl",
                     [_change(None, "1", "setup", fixture, "class")],
                     [_change("1", "2", "teardown", fixture, "class")])
    lines = [leak_line(record.tests[i].nodeid, ch)
             for i, chs in sorted(resolve_leaks(record.tests).items()) for ch in chs]
    assert lines == ["TestZoo.setup_class (class, set up for t.py::test_0): ZOO: ∅ → 1",
                     "TestZoo.teardown_class (class, torn down after t.py::test_1): "
                     "ZOO: 1 → 2"], lines


def test_a_held_change_names_its_fixture_and_scope() -> None:
    # Strict mode names the fixture holding a key, and checks it against the finalised ones.
    held = Held(Change("env", "ZOO", "added", None, "1", phase="setup", fixture="db",
                       scope="module"))
    assert (held.fixture, held.scope) == ("db", "module")
    bare = Held(Change("env", "ZOO", "added", None, "1"))
    assert (bare.fixture, bare.scope) == ("", "")
