"""pytest-xdist: one lane per worker, merged by the controller into one record.

Each worker writes its own lane next to the controller's record (``run.jsonl`` →
``run.gw0.jsonl``); at session end the controller merges the lanes and finds per lane.
:mod:`statesnap.record.lanes` writes and reads the merged record (docs/ARCHITECTURE.md,
"Merged xdist records").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from statesnap.plugin.hookplugin import HookPlugin, module_dir
from statesnap.plugin.run import RunState
from statesnap.record.journal import Record, TestEntry
from statesnap.record.reader import RecordError, read_record
from statesnap.state.diff import Change

WORKERINPUT_KEY = "statesnap_record"


def lane_path(record: Path, worker: str) -> Path:
    """Where worker ``worker`` writes its lane of the run recorded at ``record``."""
    suffix = record.suffix or ".jsonl"
    return record.with_name(f"{record.stem}.{worker}{suffix}")


def worker_record_path(config: pytest.Config, worker: str) -> Path | None:
    """In an xdist worker: its lane's path, next to the controller's record; else None."""
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict) or not workerinput.get(WORKERINPUT_KEY):
        return None
    return lane_path(Path(str(workerinput[WORKERINPUT_KEY])), worker)


def is_controller(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller (it distributes tests, runs none)."""
    return (getattr(config, "workerinput", None) is None
            and config.pluginmanager.get_plugin("dsession") is not None)


class XdistHooks(HookPlugin):
    """The controller's hooks: registered only when pytest-xdist is installed (so its hooks
    exist) and the session distributes tests."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        #: Worker ids in the order they were configured (restarted workers get new ids).
        self.workers: list[str] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Known by now (xdist registers its scheduler at configure): the controller runs no
        # tests, and merges the workers' lanes at the end.
        if is_controller(session.config):
            self.run.take_over_end(lambda run: finish_controller(run, self))

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        worker = str(node.gateway.id)
        if worker not in self.workers:
            self.workers.append(worker)
        if self.run.record_path is not None:
            node.workerinput[WORKERINPUT_KEY] = str(self.run.record_path)


def combined_view(path: Path, header: dict[str, Any], lanes: list[Record]) -> Record:
    """All lanes as one Record with distinct indexes (for the terminal section)."""
    tests: list[TestEntry] = []
    collection: list[Change] = []
    errors: list[dict[str, Any]] = []
    for lane in lanes:
        offset = len(tests)
        tests += [t.renumbered(offset + i) for i, t in
                  enumerate(sorted(lane.tests, key=lambda t: t.index))]
        collection += lane.collection
        errors += lane.errors
    return Record(path=path, header=header, collection=collection, tests=tests, errors=errors,
                  footer={"type": "footer"})


def finish_controller(run: RunState, hooks: XdistHooks) -> None:
    """Merge the workers' lanes, then find, verify and write outputs per lane."""
    from statesnap.proof.session_end import finish_session
    from statesnap.record.lanes import merge_lanes

    if run.record_path is None:
        return
    try:
        controller = read_record(run.record_path)
    except RecordError as exc:
        run.say(f"statesnap: cannot read back the record: {exc}")
        return
    found = [(w, lane_path(run.record_path, w)) for w in hooks.workers]
    found = [(w, p) for w, p in found if p.is_file()]
    try:
        merge_lanes(run.record_path, controller, found)
    except OSError as exc:
        run.say(f"statesnap: cannot write the merged record: {exc.strerror}")
    lanes: list[Record] = []
    for worker, path in found:
        try:
            lanes.append(read_record(path))
        except RecordError as exc:
            run.say(f"statesnap: lane of {worker} unreadable: {exc}")
    run.results.records = lanes
    run.results.record = combined_view(run.record_path, controller.header, lanes)
    result = finish_session(run.end_context(), lanes)
    run.results.findings = result.findings
    run.results.report_written = result.report_written


def note_worker_output(run: RunState) -> None:
    """In a worker: tell the controller where this lane is (xdist's workeroutput)."""
    output = getattr(run.config, "workeroutput", None)
    if isinstance(output, dict) and run.record_path is not None:
        output[WORKERINPUT_KEY] = str(run.record_path)


# -- the feature's registration ----------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Only with pytest-xdist installed: a worker records its lane, the controller merges."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    run = RunState.of(config)
    worker = getattr(config, "workerinput", None) is not None
    if not worker and getattr(config.option, "dist", "no") != "no":
        # The hooks are the controller's (it configures the workers, then merges): xdist
        # makes one only when distributing (``-n``, ``--dist``), decided before configure.
        # A plain session or a worker registers nothing (a registration costs ~1 M).
        config.pluginmanager.register(XdistHooks(run), "statesnap-xdist")
    if worker:
        run.lane_path = worker_record_path(config, run.worker)
        run.take_over_end(note_worker_output)  # the controller merges the lanes and finds
    run.add_lines(terminal_lines)


def terminal_lines(run: RunState) -> list[str]:
    lanes = run.results.records
    if len(lanes) <= 1:
        return []
    return ["xdist lanes merged into the record: " + ", ".join(
        f"{r.worker} ({len(r.tests)} tests" + (", crashed" if r.crashed else "") + ")"
        for r in lanes)]


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
