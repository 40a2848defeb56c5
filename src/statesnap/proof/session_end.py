"""The one end-of-session pipeline: from records read back from disk to proven findings and
the output files.

The pytest layer (plain runs and the xdist controller) calls :func:`finish_session`; the CLI
calls :func:`attribute_and_prove`, its first half.  Working from the record on disk keeps one
code path for both and proves the record is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from statesnap.base.plain import Value
from statesnap.base.progress import Progress
from statesnap.base.redact import Redactor
from statesnap.record.journal import Record, append_lines
from statesnap.record.reader import RecordError, read_record
from statesnap.record.reserve import NO_ROOM

if TYPE_CHECKING:
    from statesnap.analysis.findings import Finding
    from statesnap.replay.warmsetting import WarmSetting

    # For the type checker only: a Protocol class costs about 0.5 M instructions to create,
    # at every session's start (issue 13).
    class OutputLedger(Protocol):
        """Where the pytest layer keeps which asked-for files were written."""

        def written(self, path: Path) -> None: ...

        def failed(self, path: Path, no_room: bool = False) -> None: ...


class EndContext(Value):
    """What the end of a session needs from the run that recorded it."""

    _fields = ("record_path", "verify_budget", "verify_repeat", "find_cleaners", "verdicts_from",
               "replaying", "json_path", "report_path", "own_fds", "initial_env", "redactor", "say",
               "outputs", "finders", "replay_warm", "replay_workers")
    __slots__ = _fields

    def __init__(self, record_path: Path | None, verify_budget: float, verify_repeat: int,
                 find_cleaners: bool, verdicts_from: Path | None, replaying: bool,
                 json_path: Path | None, report_path: Path | None, own_fds: set[int],
                 initial_env: dict[str, str], redactor: Redactor, say: Progress,
                 outputs: OutputLedger,
                 finders: list[Callable[[Record, list[Finding]], list[Finding]]] | None = None,
                 replay_warm: WarmSetting | None = None, replay_workers: int = 1) -> None:
        self.record_path = record_path
        self.verify_budget = verify_budget
        self.verify_repeat = verify_repeat
        self.find_cleaners = find_cleaners
        #: ``statesnap replay``: show the verdicts this record stored, not re-ranked ones.
        self.verdicts_from = verdicts_from
        #: A replay child (``--statesnap-order``) never verifies: no recursion.
        self.replaying = replaying
        self.json_path = json_path
        self.report_path = report_path
        #: Descriptors statesnap itself holds (never released as a test's leak).
        self.own_fds = own_fds
        self.initial_env = initial_env
        self.redactor = redactor
        self.say = say
        self.outputs = outputs
        #: Features' own findings per record (pytest-rerunfailures' order-dependent tests).
        self.finders: list[Callable[[Record, list[Finding]], list[Finding]]] = (
            [] if finders is None else finders)
        #: Whether replays may fork from a warm parent (None: the environment decides).
        self.replay_warm = replay_warm
        #: Replays run side by side, up to this many at a time (statesnap.proof.sidebyside).
        self.replay_workers = replay_workers


class EndResult(Value):
    _fields = ("findings", "report_written")
    __slots__ = _fields

    def __init__(self, findings: list[Finding], report_written: Path | None = None) -> None:
        self.findings = findings
        self.report_written = report_written


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C stopped the replays; the verdicts and outputs were written first, with what
    was proven so far (``result``).  A KeyboardInterrupt still, for whoever does not know it."""

    def __init__(self, findings: list[Finding], result: EndResult | None = None) -> None:
        super().__init__()
        self.findings = findings
        self.result = result


def finish_session(ctx: EndContext, records: Sequence[Record]) -> EndResult:
    """Find and prove each record's failures, store the verdicts, write the outputs.

    A first Ctrl-C while finding or proving stops the replays (the runner kills their
    process groups and puts staged files back); the verdicts and outputs are still written,
    every finding not finished saying it was interrupted, and then :class:`Interrupted` is
    raised.  A Ctrl-C while writing them goes through as it came.
    """
    findings: list[Finding] = []
    interrupted = False
    for record in records:
        if interrupted:
            found = _unproven(record)
        else:
            try:
                found = find(ctx, record)
            except Interrupted as exc:
                found, interrupted = exc.findings, True
            except KeyboardInterrupt:  # outside the replays: nothing proven for this record
                found, interrupted = _unproven(record), True
            else:
                try:
                    for finder in ctx.finders:
                        found += finder(record, found)
                except KeyboardInterrupt:  # a feature's replays: its findings are lost
                    interrupted = True
        findings += found
    if not any(r.cut is not None for r in records):
        # A record the disk cut short ends with its note; its verdicts were not replayed
        # (attribution alone, which every reader computes again).
        store_verdicts(ctx, findings)
    result = EndResult(findings, write_outputs(ctx, records, findings))
    if interrupted:
        raise Interrupted(findings, result)
    return result


def _unproven(record: Record) -> list[Finding]:
    """A record's findings from attribution alone, each saying a Ctrl-C stopped the end."""
    if record.running is None and not any(t.failed for t in record.tests):
        return []
    from statesnap.analysis.attribution import attribute
    from statesnap.proof.notes import note_interrupted

    findings = attribute(record)
    for finding in findings:
        note_interrupted(finding)
    return findings


def read_back(ctx: EndContext, *, lean: bool) -> Record | None:
    """The session's record, read back from disk (None, said on the terminal, if it cannot
    be).  ``lean``: tests with nothing but an outcome are not parsed."""
    if ctx.record_path is None:
        return None
    try:
        return read_record(ctx.record_path, skip_plain=lean)
    except RecordError as exc:
        ctx.say(f"statesnap: cannot read back the record: {exc}")
        return None


def find(ctx: EndContext, record: Record) -> list[Finding]:
    """Attribute failures and, within the budget, verify them in fresh processes."""
    if record.running is None and not any(t.failed for t in record.tests):
        return []  # nothing failed: nothing to attribute (and attribution is not imported)
    from statesnap.analysis.attribution import attribute

    if ctx.verdicts_from is not None:
        return _recorded_verdicts(ctx, ctx.verdicts_from, attribute(record))
    if ctx.verify_budget <= 0 or ctx.replaying:
        return attribute(record)
    from statesnap.proof.progress import session_progress
    from statesnap.proof.release import LEFT_RUNNING, release_all, release_lines

    findings = attribute(record)
    if not findings:
        return findings
    # What finished tests still hold in this process (a port, a lock, a child) would meet
    # every replay started from here, and not one started after the session.
    try:
        released = release_all(record, ctx.own_fds)
    except Exception as exc:  # never fail the run over it; the replays then say what they see
        released = []
        ctx.say(f"statesnap: could not let go of what tests leaked: {exc!r}")
    for line in release_lines(released):
        ctx.say(f"statesnap: {line}")
    _record_released(ctx, [r.to_json() for r in released])
    try:
        return prove(record, findings, Replays(budget=ctx.verify_budget,
                                               repeat=ctx.verify_repeat,
                                               find_cleaners=ctx.find_cleaners,
                                               env=ctx.initial_env, redactor=ctx.redactor,
                                               warm=ctx.replay_warm,
                                               beside=[r.what for r in released
                                                       if r.kind == LEFT_RUNNING],
                                               workers=ctx.replay_workers),
                     progress=session_progress(ctx.say))
    except KeyboardInterrupt:  # verify_findings noted which findings it did not finish
        raise Interrupted(findings) from None


class Replays(Value):
    """How findings are proven: the budget and the replays' settings."""

    _fields = ("budget", "repeat", "find_cleaners", "timeout", "env", "redactor", "raise_errors",
               "beside", "warm", "workers")
    __slots__ = _fields

    def __init__(self, budget: float, repeat: int = 1, find_cleaners: bool = False,
                 timeout: float = 300.0, env: dict[str, str] | None = None,
                 redactor: Redactor | None = None, raise_errors: bool = False,
                 beside: list[str] | None = None, warm: WarmSetting | None = None,
                 workers: int = 1) -> None:
        self.budget = budget
        self.repeat = repeat
        self.find_cleaners = find_cleaners
        self.timeout = timeout
        self.env = env
        self.redactor = redactor
        #: The CLI stops at a replay that cannot run; a session goes on without it.
        self.raise_errors = raise_errors
        #: Child processes the tests left running, which the replays run beside.
        self.beside = list(beside or ())
        #: Whether replays may fork from a warm parent (None: ``STATESNAP_REPLAY_WARM`` decides).
        self.warm = warm
        #: Replays run side by side, up to this many at a time (statesnap.proof.sidebyside).
        self.workers = workers


def prove(record: Record, findings: list[Finding], replays: Replays,
          progress: Progress | None = None) -> list[Finding]:
    """Verify ``findings`` by replay in fresh processes, within the budget; up to
    ``replays.workers`` at a time."""
    from statesnap.replay.scratchrunner import RunnerKit

    kit = RunnerKit(timeout=replays.timeout, env=replays.env, redactor=replays.redactor,
                    beside=replays.beside, warm=replays.warm)
    # One victim too: its candidate pairs may run side by side (statesnap.proof.pairs).
    if replays.workers > 1 and findings:
        from statesnap.proof.sidebyside import verify_side_by_side

        return verify_side_by_side(record, findings, kit=kit, workers=replays.workers,
                                   budget=replays.budget, repeat=replays.repeat,
                                   find_cleaners=replays.find_cleaners, progress=progress,
                                   raise_errors=replays.raise_errors)
    from statesnap.proof.verify import verify_findings

    return verify_findings(record, findings, budget=replays.budget, repeat=replays.repeat,
                           find_cleaners=replays.find_cleaners, progress=progress,
                           runner=kit.build(record), raise_errors=replays.raise_errors)


def attribute_and_prove(record: Record, replays: Replays,
                        progress: Progress | None = None) -> list[Finding]:
    """The CLI's pipeline: attribute from the record alone, then prove by replay."""
    from statesnap.analysis.attribution import attribute

    findings = attribute(record)
    return prove(record, findings, replays, progress) if findings else findings


def _record_released(ctx: EndContext, actions: list[dict[str, object]]) -> None:
    """Keep what was let go of in the record: the replays ran without it."""
    if ctx.record_path is None or not actions:
        return
    try:
        append_lines(ctx.record_path, [{"type": "released", "actions": actions}])
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        ctx.say(f"statesnap: cannot note in {ctx.record_path} what was let go of: {why}")


def _recorded_verdicts(ctx: EndContext, path: Path, findings: list[Finding]) -> list[Finding]:
    """``statesnap replay``: each victim's verdict as the recorded run proved it, not one
    re-ranked from this replay's record (which can name another polluter)."""
    from statesnap.analysis.verdicts import stored

    try:
        proven = {f.victim: f for f in stored(read_record(path))}
    except RecordError as exc:
        ctx.say(f"statesnap: cannot read the recorded verdicts: {exc}")
        return findings
    out = []
    for f in findings:
        kept = proven.get(f.victim)
        if kept is not None:
            extra = f"the verdict the recorded run stored ({path})"
            kept.note = f"{kept.note}; {extra}" if kept.note else extra
        out.append(kept or f)
    return out


def store_verdicts(ctx: EndContext, findings: list[Finding]) -> None:
    """Append the session's verdicts to its record, so every later reader shows them."""
    if ctx.record_path is None or not findings:
        return
    from statesnap.analysis.verdicts import store

    try:
        store(ctx.record_path, findings)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        ctx.say(f"statesnap: cannot store the verdicts in {ctx.record_path}: {why}; "
                "later readers will show them as not replayed")


def write_outputs(ctx: EndContext, records: Sequence[Record],
                  findings: list[Finding]) -> Path | None:
    """Write the summary JSON and the report that were asked for, each on its own; returns
    the report's path when it was written.

    A file that cannot be written gets one line and is noted in ``ctx.outputs``; the session
    then fails for it (the option was checked at start, so something changed during the
    run), unless the disk had no room for it (``statesnap.plugin.outputs`` says why).
    """
    report = None
    if ctx.json_path is not None:
        from statesnap.output.summary import write_summary

        _write(ctx, ctx.json_path, lambda path: write_summary(path, list(records), findings))
    if ctx.report_path is not None:
        from statesnap.output.report import write_report

        if _write(ctx, ctx.report_path,
                  lambda path: write_report(path, list(records), findings)):
            report = ctx.report_path
    return report


def _write(ctx: EndContext, path: Path, write: Callable[[Path], None]) -> bool:
    no_room = False
    try:
        write(path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        no_room = exc.errno in NO_ROOM
    except Exception as exc:  # a bug must cost this file, not the run and the other files
        reason = describe_error(exc)
    else:
        ctx.outputs.written(path)
        return True
    ctx.outputs.failed(path, no_room)
    ctx.say(f"statesnap: cannot write {path}: {reason}")
    return False


def describe_error(exc: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame: one line for a bug report."""
    tb = exc.__traceback__
    where = ""
    while tb is not None:
        where = f" ({Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno})"
        tb = tb.tb_next
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}" + (f": {text}" if text else "") + where
