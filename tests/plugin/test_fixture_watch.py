"""The ``fixtures`` probe: wide fixtures' shared values, seen changed in place, re-created
before a chosen test (the key-level replay's restore).

Real inner pytest runs (subprocesses: the probe hooks pytest's fixture machinery), on a suite
written on the pattern of a real one: a session-scoped index built from a session-scoped list
of records, which one test edits through the index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statesnap.probes.base import Severity
from statesnap.record.journal import Record

#: The plugin conftest's inner-run helper (``conftest.Runner``; not imported by name: every
#: test folder has a ``conftest`` module).
Runner = Any

ONLY = ["--statesnap-probes", "env,fixtures", "--statesnap-verify-budget", "0"]

CONFTEST = '''
import pytest


class Index:
    """Records by their code; edits go to the records themselves."""

    def __init__(self, records):
        self.by_code = {r["code"]: r for r in records}

    def rename(self, code, name):
        self.by_code[code]["name"] = name


@pytest.fixture(scope="session")
def records():
    return [{"code": 1, "name": "north"}, {"code": 2, "name": "south"}]


@pytest.fixture(scope="session")
def index(records):
    return Index(records)


@pytest.fixture(scope="module", params=["a", "b"])
def flavour(request):
    return {"flavour": request.param}
'''

SUITE = '''
def test_names(index):
    assert index.by_code[1]["name"] == "north", "renamed by an earlier test"


def test_rename(index):
    index.rename(1, "east")
    assert index.by_code[1]["name"] == "east"


def test_reads(index):
    assert len(index.by_code) == 2


def test_flavours(flavour):
    assert flavour["flavour"] in "ab"
'''


def _changes(record: Record, nodeid_end: str) -> list[Any]:
    [test] = [t for t in record.tests if t.nodeid.endswith(nodeid_end)]
    return [c for c in test.changes if c.probe == "fixtures"]


def _probe_names(record: Record) -> list[str]:
    return [str(p.get("name")) for p in record.header.get("probes") or []]


@pytest.fixture
def suite(inner: Runner, pytester: pytest.Pytester) -> Runner:
    inner.conftest(CONFTEST)
    pytester.makepyfile(test_shared=SUITE)
    return inner


def test_off_in_a_recording_run_unless_asked(suite: Runner) -> None:
    # The recording run pays nothing for it: the probe is not even set up.
    run = suite("--statesnap-verify-budget", "0", subprocess=True)
    assert run.ret == 0, run.result.stdout.str()
    assert "fixtures" not in _probe_names(run.record())
    assert not any(c.probe == "fixtures" for t in run.record().tests for c in t.changes)


def test_a_change_in_place_is_a_key_set_up_and_teardown_are_not(suite: Runner) -> None:
    plain = suite(statesnap=False, subprocess=True)
    run = suite("--statesnap-watch-fixtures", *ONLY, subprocess=True)
    assert run.ret == plain.ret == 0, run.result.stdout.str()
    assert run.comparable() == plain.comparable()
    assert "fixtures" in _probe_names(run.record())
    # Setting the fixtures up (test_names) is no change; the parametrized module fixture
    # re-created for its second parameter is none either.
    assert _changes(run.record(), "::test_names") == []
    assert _changes(run.record(), "::test_flavours[a]") == []
    last = _changes(run.record(), "::test_flavours[b]")
    # The last test tears the session down: the changed values go, a LOW change each.
    assert {(c.key, c.change, c.phase, c.severity) for c in last} == {
        ("records", "removed", "teardown", Severity.LOW),
        ("index", "removed", "teardown", Severity.LOW)}, last
    renamed = {c.key: c for c in _changes(run.record(), "::test_rename")}
    # The records the index holds were edited: both fixtures' shared values changed.
    assert set(renamed) == {"records", "index"}, renamed
    for c in renamed.values():
        assert c.before is None and c.severity == Severity.HIGH, c
        assert "changed in place since its set-up" in str(c.after), c
    assert "'east'" in str(renamed["records"].after)
    # Still changed, not changed again: nothing for the next test.
    assert _changes(run.record(), "::test_reads") == []


def test_on_in_every_replay(suite: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    # A replay's parent marks its children so (statesnap.replay.runner.Runner.child_env).
    monkeypatch.setenv("STATESNAP_REPLAY", "1")
    run = suite("--statesnap-verify-budget", "0", subprocess=True)
    assert "fixtures" in _probe_names(run.record())
    assert {c.key for c in _changes(run.record(), "::test_rename")} == {"records", "index"}


def _restore_run(suite: Runner, tmp_path: Path, keys: list[str], order: list[str]
                 ) -> Any:
    spec = tmp_path / f"restore-{len(keys)}-{'-'.join(keys)}.json"
    spec.write_text(json.dumps({"before": "test_shared.py::test_names",
                                "keys": [["fixtures", k] for k in keys]}), encoding="utf-8")
    order_file = tmp_path / "order.txt"
    order_file.write_text("\n".join(order) + "\n", encoding="utf-8")
    return suite(*ONLY, f"--statesnap-order={order_file}",
                 f"--statesnap-restore-before={spec}", subprocess=True)


@pytest.mark.parametrize("key", ["records", "*"])
def test_re_creating_a_fixture_before_a_test_heals_it(suite: Runner, tmp_path: Path,
                                                      key: str) -> None:
    order = ["test_shared.py::test_rename", "test_shared.py::test_names"]
    spoiled = _restore_run(suite, tmp_path, [], order)
    assert spoiled.outcomes().get("failed") == 1, spoiled.result.stdout.str()
    healed = _restore_run(suite, tmp_path, [key], order)
    assert healed.ret == 0, healed.result.stdout.str()
    [victim] = [t for t in healed.record().tests if t.nodeid.endswith("::test_names")]
    restored = (victim.extra or {}).get("restored")
    # Re-creating the records finalises the index built on them too (pytest's own chain).
    assert restored is not None and "fixtures:records" in restored, victim.extra
    if key == "*":
        assert "fixtures:index" in restored, restored


def test_re_creating_only_the_index_leaves_the_edited_records(suite: Runner,
                                                              tmp_path: Path) -> None:
    # The proof must not claim more than it did: the index rebuilt from the same edited
    # records still fails the victim.
    order = ["test_shared.py::test_rename", "test_shared.py::test_names"]
    run = _restore_run(suite, tmp_path, ["index"], order)
    assert run.outcomes().get("failed") == 1, run.result.stdout.str()
    [victim] = [t for t in run.record().tests if t.nodeid.endswith("::test_names")]
    assert (victim.extra or {}).get("restored") == ["fixtures:index"], victim.extra


def test_strict_mode_in_a_replay_acts_on_fixtures_only_where_named(
        suite: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    # A replay of a run recorded with --statesnap-strict keeps that option, and runs the
    # fixtures probe the recording did not: its tests must not fail where the recording's
    # passed.  Named, strict mode does act on a fixture changed in place.
    monkeypatch.setenv("STATESNAP_REPLAY", "1")
    run = suite("--statesnap-strict", "--statesnap-verify-budget", "0", subprocess=True)
    assert run.ret == 0, run.result.stdout.str()
    named = suite("--statesnap-strict=fixtures", "--statesnap-verify-budget", "0",
                  subprocess=True)
    assert named.ret == 1, named.result.stdout.str()
    assert "test_rename" in named.result.stdout.str()
