"""Third-party probes through both registration routes, a raising probe, and probe selection.

A raising probe is switched off with one terminal line and an error entry in the record, and
no test's outcome changes.  The entry-point route is exercised for real: a ``*.dist-info``
directory on ``PYTHONPATH`` of a subprocess run, found by ``importlib.metadata``.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

SMALL_SUITE = '''
import json
import os
import re


def test_one():
    pass


def test_two_fails():
    assert 0, "plain failure"


def test_three_leaks():
    os.environ["PROBES_SUITE_LEAK"] = "1"


def test_four():
    pass


def test_five():
    pass
'''

#: A probe registered by the conftest hook; it raises in ``BOOM_WHERE`` after ``BOOM_AFTER``
#: token calls and logs every call it gets to ``BOOM_CALLS`` (outside the rootdir).
BOOM_CONFTEST = '''
import json
import os
import re

import pytest

from statesnap.probes.base import Probe


class BoomProbe(Probe):
    name = "boom"

    def __init__(self, where, after):
        self.where = where
        self.after = after
        self.calls = 0

    def _log(self, what):
        with open(os.environ["BOOM_CALLS"], "a", encoding="utf-8") as f:
            f.write(what + "\\n")

    def setup(self, ctx):
        self._log("setup")
        if self.where == "setup":
            raise RuntimeError("boom in setup")

    def token(self):
        self._log("token")
        self.calls += 1
        if self.where == "token" and self.calls > self.after:
            raise RuntimeError("boom in token")
        # A moving token makes the snapshotter call read() every time.
        return self.calls if self.where == "read" else 0

    def read(self):
        self._log("read")
        if self.where == "read" and self.calls > self.after:
            raise RuntimeError("boom in read")
        return {"constant": 1}


# optionalhook: the same conftest must also work when statesnap is not active.
@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [BoomProbe(os.environ["BOOM_WHERE"], int(os.environ["BOOM_AFTER"]))]
'''


def _boom(inner, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
          where: str, after: int) -> Path:
    calls = tmp_path / "boom-calls.txt"
    monkeypatch.setenv("BOOM_CALLS", str(calls))
    monkeypatch.setenv("BOOM_WHERE", where)
    monkeypatch.setenv("BOOM_AFTER", str(after))
    inner.conftest(BOOM_CONFTEST)
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    return calls


@pytest.mark.parametrize("where", ["token", "read"])
@pytest.mark.parametrize("subprocess", [False, True], ids=["inprocess", "subprocess"])
def test_raising_probe_is_switched_off(inner, pytester, monkeypatch, tmp_path, where: str,
                                       subprocess: bool) -> None:
    calls = _boom(inner, pytester, monkeypatch, tmp_path, where, after=4)
    plain = inner(statesnap=False, subprocess=subprocess)
    calls.unlink(missing_ok=True)
    args = ["--statesnap-verify-budget", "0", "-W", "error"]
    run = inner(*args, subprocess=subprocess)

    assert run.comparable() == plain.comparable()
    assert run.outcomes() == plain.outcomes() == {"passed": 4, "failed": 1}
    # One line while it happened (not one per test), and the probe named in the section.
    raised = [line for line in run.result.outlines if "probe 'boom' raised" in line]
    assert len(raised) == 1, run.result.outlines
    assert f"raised in {where}" in raised[0] and "switched off" in raised[0]
    assert [line for line in run.section() if "boom" in line] == [
        f"probe boom switched off after an error: RuntimeError: boom in {where}"]
    assert "Traceback" not in run.result.stdout.str() + run.result.stderr.str()

    record = run.record()
    assert len(record.errors) == 1
    error = record.errors[0]
    assert error["type"] == "probe_error" and error["probe"] == "boom"
    assert error["where"] == where and "boom in" in error["error"]
    assert record.footer is not None and "boom" in record.footer["disabled"]
    assert record.test_by_id("test_probes_suite.py::test_three_leaks") is not None
    # The other probes went on working after boom was switched off.
    leak = record.test_by_id("test_probes_suite.py::test_three_leaks")
    assert leak is not None and any(c.key == "PROBES_SUITE_LEAK" for c in leak.changes)
    # Switched off: not one call after the one that raised.
    log = calls.read_text(encoding="utf-8").split()
    assert log[-1] == where
    assert log.count("token") == 5  # four good ones and the fifth that raised (or led to read)


def test_probe_failing_in_setup_is_reported_once(inner, pytester, monkeypatch,
                                                  tmp_path) -> None:
    calls = _boom(inner, pytester, monkeypatch, tmp_path, "setup", after=0)
    plain = inner(statesnap=False)
    calls.unlink(missing_ok=True)
    run = inner("--statesnap-verify-budget", "0")

    assert run.comparable() == plain.comparable()
    failed = [line for line in run.result.outlines if "probe 'boom' failed to start" in line]
    assert len(failed) == 1
    statuses = {p["name"]: p for p in run.record().header["probes"]}
    assert statuses["boom"]["status"] == "error"
    assert "boom in setup" in statuses["boom"]["detail"]
    assert calls.read_text(encoding="utf-8").split() == ["setup"]  # never called again


# -- the entry-point route, for real ---------------------------------------------------------

ANSWER_PROBE = '''
"""A third-party probe package: watches its own REGISTRY dict."""

from statesnap.probes.base import Probe, Severity

REGISTRY = {}


class AnswerProbe(Probe):
    name = "answer"
    severity = Severity.HIGH

    def token(self):
        return tuple(sorted(REGISTRY.items()))

    def read(self):
        return {key: repr(value) for key, value in REGISTRY.items()}


def make_probes():
    return [AnswerProbe()]
'''

ANSWER_SUITE = '''
import answer_probe


def test_sets_the_answer():
    answer_probe.REGISTRY["mode"] = 42


def test_reads_the_answer():
    assert answer_probe.REGISTRY["mode"] == 42
'''


def _dist(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")


@pytest.fixture
def answer_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with two installed distributions: a working probe and a broken one."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "answer_probe.py").write_text(ANSWER_PROBE, encoding="utf-8")
    _dist(site, "answer_probe", """
        [statesnap.probes]
        answer = answer_probe:make_probes
    """)
    _dist(site, "broken_probe", """
        [statesnap.probes]
        broken = no_such_module_anywhere:make_probes
    """)
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(site) + (os.pathsep + old if old else ""))
    return site


def test_entry_point_probe_is_found_and_records_changes(inner, pytester,
                                                        answer_site: Path) -> None:
    pytester.makepyfile(test_answer=ANSWER_SUITE)
    run = inner("--statesnap-verify-budget", "0", subprocess=True)
    assert run.outcomes() == {"passed": 2}
    record = run.record()
    statuses = {p["name"]: p["status"] for p in record.header["probes"]}
    assert statuses["answer"] == "ok"
    assert "broken" not in statuses
    setter = record.test_by_id("test_answer.py::test_sets_the_answer")
    assert setter is not None
    assert [(c.probe, c.key, c.change, c.after, c.phase) for c in setter.changes
            if c.probe == "answer"] == [("answer", "mode", "added", "42", "call")]
    # The section groups the leak under the probe's own name.
    section = run.section()
    assert "  answer:" in section
    assert any("test_sets_the_answer: mode: ∅ → 42" in line for line in section)
    # A broken distribution costs one line and nothing else.
    broken = [line for line in run.result.outlines if "'broken' failed to load" in line]
    assert len(broken) == 1


def test_entry_point_probe_obeys_the_selection(inner, pytester, answer_site: Path) -> None:
    pytester.makepyfile(test_answer=ANSWER_SUITE)
    dropped = inner("--statesnap-verify-budget", "0", "--statesnap-probes=-answer",
                    subprocess=True)
    names = [p["name"] for p in dropped.record().header["probes"]]
    assert "answer" not in names and "env" in names
    assert not any(c.probe == "answer" for t in dropped.record().tests for c in t.changes)

    only = inner("--statesnap-verify-budget", "0", "--statesnap-probes", "answer",
                 subprocess=True)
    assert [p["name"] for p in only.record().header["probes"]] == ["answer"]


# -- selection ---------------------------------------------------------------------------


def _names(run) -> list[str]:
    return [p["name"] for p in run.record().header["probes"]]


def test_selecting_one_probe(inner, pytester) -> None:
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    run = inner("--statesnap-verify-budget", "0", "--statesnap-probes", "env")
    assert _names(run) == ["env"]
    assert {c.probe for t in run.record().tests for c in t.changes} == {"env"}
    assert run.record().footer is not None
    assert set(run.record().footer["costs"]) == {"env"}


def test_dropping_one_probe(inner, pytester) -> None:
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    everything = _names(inner("--statesnap-verify-budget", "0"))
    run = inner("--statesnap-verify-budget", "0", "--statesnap-probes=-env")
    assert "env" in everything
    assert _names(run) == [n for n in everything if n != "env"]
    leak = run.record().test_by_id("test_probes_suite.py::test_three_leaks")
    assert leak is not None and not [c for c in leak.changes if c.probe == "env"]


def test_no_probe_at_all_keeps_order_and_outcomes(inner, pytester) -> None:
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    run = inner("--statesnap-verify-budget", "0", "--statesnap-probes", "none")
    record = run.record()
    assert _names(run) == []
    assert [t.outcome for t in record.tests].count("failed") == 1
    assert len(record.tests) == 5 and all(t.changes == [] for t in record.tests)
    assert record.footer is not None and record.footer["costs"] == {}


def test_selection_from_the_ini_file(inner, pytester) -> None:
    pytester.makeini("[pytest]\nstatesnap_probes = env,cwd\n")
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    run = inner("--statesnap-verify-budget", "0")
    assert sorted(_names(run)) == ["cwd", "env"]
    # The command line wins over the ini file.
    assert _names(inner("--statesnap-verify-budget", "0", "--statesnap-probes", "cwd")) == [
        "cwd"]


@pytest.mark.parametrize("selection", ["nosuch", "env,nosuch", "-nosuch"])
def test_unknown_probe_is_a_one_line_usage_error(inner, pytester, selection: str) -> None:
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    run = inner(f"--statesnap-probes={selection}", subprocess=True)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in run.result.errlines if line.strip()]
    assert len(errors) == 1, errors
    assert errors[0].startswith("ERROR: --statesnap-probes: unknown probe(s) nosuch")
    assert "known: " in errors[0] and "env" in errors[0]
    out = run.result.stdout.str() + run.result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert not run.reports_path.exists() or run.reports() == []  # no test ran


# -- built-in probes, end to end -------------------------------------------------------------


def test_own_redirected_output_is_not_a_leak(inner, pytester) -> None:
    pytester.makepyfile(test_clean="def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    # runpytest_subprocess sends the child's stdout to <rootdir>/stdout.
    run = inner("--statesnap-verify-budget", "0", subprocess=True)
    assert run.outcomes() == {"passed": 2}
    record = run.record()
    assert {t.nodeid for t in record.tests} == {"test_clean.py::test_a", "test_clean.py::test_b"}
    assert [(t.nodeid, c.probe, c.key) for t in record.tests for c in t.changes] == []


# -- statesnap's own caught errors land in the record -----------------------------------------

#: A probe whose gauges() raises on every test: a detail statesnap catches so the run goes on.
GAUGES_CONFTEST = '''
import pytest

from statesnap.probes.base import Probe


class BadGaugesProbe(Probe):
    name = "badgauges"

    def token(self):
        return 0

    def read(self):
        return {"k": 1}

    def gauges(self, current):
        return {"ratio": 1 / 0}


@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [BadGaugesProbe()]
'''


@pytest.mark.parametrize("subprocess", [False, True], ids=["inprocess", "subprocess"])
def test_an_internal_error_lands_in_the_record_once(inner, pytester, subprocess: bool) -> None:
    inner.conftest(GAUGES_CONFTEST)
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    plain = inner(statesnap=False, subprocess=subprocess)
    run = inner("--statesnap-verify-budget", "0", "-W", "error", subprocess=subprocess)

    assert run.comparable() == plain.comparable()
    assert run.result.ret == plain.result.ret == 1
    assert run.outcomes() == plain.outcomes() == {"passed": 4, "failed": 1}
    lines = [json.loads(text) for text in run.record_path.read_text("utf-8").splitlines()]
    internal = [obj for obj in lines if obj["type"] == "internal_error"]
    # Five tests, one line: the same error at the same place is written once.
    assert len(internal) == 1, internal
    assert internal[0]["where"] == "probe badgauges: gauges"
    assert re.fullmatch(r"ZeroDivisionError: division by zero \(conftest\.py:\d+\)",
                        internal[0]["error"]), internal[0]
    assert run.record().internal_errors == internal
    # The probe itself still works: it is not switched off for a failing detail.
    assert run.record().errors == []
    # Said at the end of the run too, never only in the record.
    text = run.result.stdout.str()
    assert "statesnap caught 1 error(s) of its own and went on" in text
    assert re.search(r"^  probe badgauges: gauges: ZeroDivisionError: division by zero",
                     text, re.M), text


CHILD_DETAIL_CONFTEST = '''
import os

import pytest

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import Probe

PARENT = os.getpid()


class ChildDetailProbe(Probe):
    """Reads fine, but a detail it tries fails in a forked child (as a socket address can)."""
    name = "childdetail"

    def token(self):
        return os.getpid()  # read again in the child

    def read(self):
        if os.getpid() != PARENT:
            try:
                1 / 0
            except ZeroDivisionError as exc:
                note_internal_error("probe childdetail: detail", exc)
        return {"k": 1}


@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [ChildDetailProbe()]
'''


def test_an_isolated_childs_internal_error_reaches_the_record_and_the_summary(
        inner, pytester) -> None:
    """A forked child has no record: what statesnap caught in it travels back."""
    inner.conftest(CHILD_DETAIL_CONFTEST)
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    plain = inner(statesnap=False, subprocess=True)
    summary = pytester.path / "summary.json"
    run = inner("--statesnap-isolate=fork", "--statesnap-verify-budget", "0",
                "--statesnap-json", str(summary), subprocess=True)

    assert run.result.ret == plain.result.ret == 1
    assert run.outcomes() == plain.outcomes() == {"passed": 4, "failed": 1}
    internal = run.record().internal_errors
    assert [e["where"] for e in internal] == ["isolated child: probe childdetail: detail"]
    assert internal[0]["error"].startswith("ZeroDivisionError: division by zero")
    data = json.loads(summary.read_text("utf-8"))
    assert [(e["where"], e["worker"]) for e in data["internal_errors"]] == [
        ("isolated child: probe childdetail: detail", "main")]
    assert "statesnap caught 1 error(s) of its own" in run.result.stdout.str()


def test_a_healthy_run_says_nothing_of_internal_errors(inner, pytester) -> None:
    pytester.makepyfile(test_probes_suite=SMALL_SUITE)
    summary = pytester.path / "summary.json"
    run = inner("--statesnap-verify-budget", "0", "--statesnap-json", str(summary),
                subprocess=True)
    assert run.record().internal_errors == []
    assert json.loads(summary.read_text("utf-8"))["internal_errors"] == []
    assert "error(s) of its own" not in run.result.stdout.str()


#: A probe whose values cannot be compared (``==`` raises, no hash) and whose token moves on
#: every call: every checkpoint reads it and the diff that follows raises inside statesnap's
#: bookkeeping, at each place that diffs (a fixture's setup and teardown, the end of a test,
#: the snapshot after collection).
TOUCHY_CONFTEST = '''
import pytest

from statesnap.probes.base import Probe


class Touchy:
    __hash__ = None

    def __eq__(self, other):
        raise RuntimeError("touchy compare")

    __ne__ = __eq__


class TouchyProbe(Probe):
    name = "touchy"

    def __init__(self):
        self.calls = 0

    def token(self):
        self.calls += 1
        return self.calls

    def read(self):
        return {"k": Touchy()}


@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [TouchyProbe()]
'''

TOUCHY_SUITE = '''
import os

import pytest


@pytest.fixture(scope="module")
def shared():
    yield 1


@pytest.fixture
def each():
    yield 2


def test_one(shared, each):
    pass


def test_two_fails(shared, tmp_path):
    assert 0, "plain failure"


class TestThree:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def klass(cls):
        yield

    def test_leaks(self):
        os.environ["TOUCHY_SUITE_LEAK"] = "1"

    def test_after(self):
        pass


def test_last():
    pass
'''


@pytest.mark.parametrize("subprocess", [False, True], ids=["inprocess", "subprocess"])
def test_a_diff_that_raises_changes_no_outcome(inner, pytester, subprocess: bool) -> None:
    inner.conftest(TOUCHY_CONFTEST)
    pytester.makepyfile(test_touchy_suite=TOUCHY_SUITE)
    plain = inner(statesnap=False, subprocess=subprocess)
    run = inner("--statesnap-verify-budget", "0", "-W", "error", subprocess=subprocess)

    assert run.comparable() == plain.comparable()
    assert run.result.ret == plain.result.ret == 1
    assert run.outcomes() == plain.outcomes() == {"passed": 4, "failed": 1}
    record = run.record()
    # Every test still has its line; the errors are said once per place, never lost.
    assert [t.nodeid.rsplit("::", 1)[-1] for t in record.tests] == [
        "test_one", "test_two_fails", "test_leaks", "test_after", "test_last"]
    wheres = {e["where"] for e in record.internal_errors}
    assert "snapshot after a test" in wheres, wheres
    assert any(w.startswith("checkpoint after fixture") for w in wheres), wheres
    assert all("touchy compare" in e["error"] for e in record.internal_errors)
    text = run.result.stdout.str()
    assert "statesnap caught" in text and "Traceback" not in text + run.result.stderr.str()
