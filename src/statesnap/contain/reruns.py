"""pytest-rerunfailures: reruns in the record, and tests that only fail in the suite.

A rerun test's record line gets ``reruns``; at session end each is run once more alone, in a
fresh process, to tell order-dependent from flaky (docs/ARCHITECTURE.md, "Reruns").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from statesnap.plugin import markers
from statesnap.plugin.hookplugin import HookPlugin, module_dir
from statesnap.plugin.run import MAX_LINES, RunState
from statesnap.record.journal import Record, TestEntry

if TYPE_CHECKING:
    from statesnap.analysis.findings import Finding

#: The field of a test's record line: how many extra attempts it had.
FIELD = "reruns"
#: At most this many tests are rerun alone at session end.
MAX_ALONE = 10


class RerunHooks(HookPlugin):
    """Registered only when pytest-rerunfailures is installed, and kept only when some test
    may be rerun: otherwise its per-phase hook would be called for nothing on every test."""

    def __init__(self, run: RunState) -> None:
        self.run = run

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if not reruns_possible(config, items):
            config.pluginmanager.unregister(self)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        attempts = getattr(report, "rerun", None)
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]
            attempts = (attempts or 0) + 1
        if isinstance(attempts, int) and attempts > 0:
            test = self.run.test
            test.add_field(FIELD, max(int(test.fields.get(FIELD, 0)), attempts))


def reruns_possible(config: pytest.Config, items: list[pytest.Item]) -> bool:
    """Whether pytest-rerunfailures may rerun any of ``items``: a rerun count given on the
    command line or in the ini file, or a ``flaky`` marker (the places it looks)."""
    for name in ("reruns", "force_reruns"):
        try:
            if config.getoption(name, None):
                return True
        except ValueError:
            pass
    try:
        if str(config.getini("reruns") or "").strip() not in ("", "0"):
            return True
    except ValueError:  # an older release without the ini option
        pass
    return "flaky" in markers.names_on(items)


def rerun_tests(record: Record) -> list[TestEntry]:
    """Tests that needed at least one rerun, in run order."""
    return [t for t in sorted(record.tests, key=lambda t: t.index)
            if int(t.extra.get("reruns") or 0) > 0]


def _finding(record: Record, test: TestEntry) -> Finding:
    from statesnap.analysis.attribution import dirty_before, rank
    from statesnap.analysis.findings import SUSPECTED, Finding
    from statesnap.replay.repro import repro_command

    failure = test.failure or {}
    victim = TestEntry(index=test.index, nodeid=test.nodeid, outcome="failed",
                       worker=test.worker, phases={"call": "failed"}, failure=test.failure)
    cands = rank(victim, dirty_before(sorted(record.tests, key=lambda t: t.index), victim))
    f = Finding(victim=test.nodeid, polluters=[], probe=None, key=None, status=SUSPECTED,
                worker=test.worker, exc_type=failure.get("exc_type"),
                message=failure.get("message"), candidates=cands[:20])
    if cands:
        top = cands[0]
        f.polluters = [top.nodeid]
        f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
        f.repro = repro_command(record.header, [top.nodeid, test.nodeid])
    else:
        f.repro = repro_command(record.header, [test.nodeid])
    return f


def flag_order_dependent(run: RunState, record: Record,
                         findings: list[Finding]) -> list[Finding]:
    """New findings for rerun tests that passed alone in a fresh process (or flaky ones)."""
    s = run.settings
    tests = rerun_tests(record)
    if not tests:
        return []
    victims = {f.victim: f for f in findings}
    for t in tests:
        if t.nodeid in victims:  # already a victim: say that it was rerun
            f = victims[t.nodeid]
            note = f"rerun {t.extra['reruns']} time(s) by pytest-rerunfailures"
            f.note = f"{f.note}; {note}" if f.note else note
    todo = [t for t in tests if t.nodeid not in victims][:MAX_ALONE]
    if not todo or s.verify_budget <= 0 or s.order_file is not None or run.child:
        return []
    from statesnap.analysis.findings import NOT_DETERMINISTIC
    from statesnap.replay.runner import Runner

    # Cold: a few replays of one test each, whose notes say "in a fresh process"; a warm
    # parent would cost its preload for next to nothing (statesnap.replay.warm).
    runner = Runner(record, env=run.initial_env, redactor=run.redactor, warm=False)
    deadline = time.monotonic() + s.verify_budget
    out: list[Finding] = []
    for t in todo:
        if time.monotonic() > deadline:
            break
        run.say(f"statesnap: rerunning {t.nodeid} alone (it needed "
                f"{t.extra['reruns']} rerun(s) in the suite)")
        result = runner.run([t.nodeid], label="rerun-alone")
        f = _finding(record, t)
        if result.log is not None:
            f.logs.append(str(result.log))
        reruns = t.extra["reruns"]
        if result.passed(t.nodeid):
            f.note = (f"likely order-dependent: failed in the suite (rerun {reruns} time(s) by "
                      "pytest-rerunfailures) and passed alone in a fresh process")
        elif result.failed(t.nodeid):
            f.status = NOT_DETERMINISTIC
            f.polluters = []
            f.note = (f"flaky: failed in the suite, passed on a rerun ({reruns}), and failed "
                      "alone in a fresh process")
        else:
            continue  # the replay did not run the test: nothing to say
        out.append(f)
    return out


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Only with pytest-rerunfailures installed (its hooks exist only then)."""
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    run = RunState.of(config)
    config.pluginmanager.register(RerunHooks(run), "statesnap-reruns")
    run.add_finder(lambda record, findings: flag_order_dependent(run, record, findings))
    run.add_lines(terminal_lines)


def terminal_lines(run: RunState) -> list[str]:
    reruns = run.results.tests_with(FIELD)
    if not reruns:
        return []
    return [f"pytest-rerunfailures reran {len(reruns)} test(s): "
            + ", ".join(f"{n} ({k})" for n, k in reruns[:MAX_LINES])]


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
