"""The report's view of one finding: its tests, replays, candidates and what it proved.

:mod:`statesnap.output.report.views` builds the whole page with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from statesnap.analysis.findings import (
    BRITTLE,
    LATENT,
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    PROVEN_STATUSES,
    SUSPECTED,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.base.plain import Value
from statesnap.output.report.causes import VictimRow
from statesnap.output.report.changes import KEY_LIMIT, ChangeViews
from statesnap.output.report.lanes import NODEID_LIMIT, Lane, find_test
from statesnap.output.report.values import (
    LONG_LIMIT,
    StructuralDiff,
    ValueView,
    cut,
    show,
)

if TYPE_CHECKING:
    # The replay logs are embedded for findings only: a passing session's report does not
    # import their module (issue 28).
    from statesnap.output.report.logs import LogBudget, LogView
    from statesnap.record.journal import Record

#: Status → (label, what it means), in the order findings are listed.
STATUS_TEXT: dict[str, tuple[str, str]] = {
    VERIFIED: ("verified", "the victim passes alone and fails after the polluter, "
                           "in fresh processes"),
    SUSPECTED: ("suspected", "named from the record; not replayed yet"),
    LATENT: ("latent", "a victim that the recorded order hid"),
    BRITTLE: ("brittle", "passes only after another test set state up for it"),
    NOT_DETERMINISTIC: ("not deterministic", "repeated replays disagreed"),
    UNEXPLAINED: ("unexplained", "no earlier test reproduces the failure"),
    NOT_ORDER_DEPENDENT: ("not order-dependent", "fails when run alone too"),
}


class TestRef(Value):
    """A test named on the page; ``key`` opens its diff when the test is in a record."""

    __test__ = False  # not a pytest test class, despite the name

    _fields = ("nodeid", "key", "lane")
    __slots__ = _fields

    def __init__(self, nodeid: str, key: str | None = None, lane: str | None = None) -> None:
        self.nodeid = nodeid
        self.key = key
        self.lane = lane


class ReplayView(Value):
    _fields = ("label", "command", "outcome", "signature", "restored")
    __slots__ = _fields

    def __init__(self, label: str, command: str, outcome: str, signature: str | None,
                 restored: list[str]) -> None:
        self.label = label
        self.command = command
        self.outcome = outcome
        self.signature = signature
        self.restored = restored


class CandidateView(Value):
    _fields = ("test", "ref", "before", "after", "score", "reasons")
    __slots__ = _fields

    def __init__(self, test: TestRef, ref: str, before: ValueView, after: ValueView, score: float,
                 reasons: list[str]) -> None:
        self.test = test
        self.ref = ref
        self.before = before
        self.after = after
        self.score = score
        self.reasons = reasons


class FindingView(Value):
    _fields = ("id", "status", "status_class", "status_label", "status_help", "victim", "polluters",
               "ref", "before", "after", "diff", "failure", "hint", "hint_proven", "proven_keys",
               "repro", "repro_proven", "source", "replays", "logs", "mtime", "cleaners",
               "candidates", "setter", "note", "victims")
    __slots__ = _fields

    def __init__(self, id: str, status: str, status_class: str, status_label: str, status_help: str,
                 victim: TestRef, polluters: list[TestRef], ref: str | None,
                 before: ValueView | None, after: ValueView | None, diff: StructuralDiff | None,
                 failure: str | None, hint: str | None, hint_proven: bool, proven_keys: list[str],
                 repro: str, repro_proven: bool, source: str, replays: list[ReplayView],
                 logs: list[LogView], mtime: str | None, cleaners: list[TestRef],
                 candidates: list[CandidateView], setter: TestRef | None, note: str | None) -> None:
        self.id = id
        self.status = status
        #: ``status`` when it is a known one (it is also a CSS class), else ``other``.
        self.status_class = status_class
        self.status_label = status_label
        self.status_help = status_help
        self.victim = victim
        self.polluters = polluters
        self.ref = ref
        self.before = before
        self.after = after
        self.diff = diff
        self.failure = failure
        self.hint = hint
        self.hint_proven = hint_proven
        self.proven_keys = proven_keys
        self.repro = repro
        #: The repro is what a replay saw fail the victim (else it is not shown as one).
        self.repro_proven = repro_proven
        #: Where the verdict comes from: "stored by the run", "replayed now", "not replayed".
        self.source = source
        self.replays = replays
        self.logs = logs
        #: The mtime-race sentence of a finding whose state is a file changed in place.
        self.mtime = mtime
        self.cleaners = cleaners
        self.candidates = candidates
        self.setter = setter
        self.note = note
        #: A cause that broke several victims: one row each (statesnap.output.report.causes).
        self.victims: list[VictimRow] = []


def race_hint() -> str:
    from statesnap.analysis.mtimerace import HINT

    return HINT


def ref_of(lanes: Sequence[Lane], nodeid: str, worker: str | None,
         prefer_failed: bool = False) -> TestRef:
    found = find_test(lanes, nodeid, worker, prefer_failed=prefer_failed)
    shown = cut(nodeid, NODEID_LIMIT)
    if found is None:
        return TestRef(shown)
    lane, entry = found
    # Which lane matters only when there are several.
    return TestRef(shown, lane.key(entry.pos), lane.label if len(lanes) > 1 else None)


def _source(f: Finding) -> str:
    if f.source == "session":
        return "stored by the run"
    if f.status == SUSPECTED and not f.replayed:
        return "not replayed"
    return "replayed"


def finding_view(i: int, f: Finding, lanes: Sequence[Lane], views: ChangeViews,
                 logs: LogBudget) -> FindingView:
    from statesnap.output.report.logs import embed_log

    victim_at = find_test(lanes, f.victim, f.worker, prefer_failed=True)
    record: Record | None = victim_at[0].record if victim_at else None
    worker = f.worker
    label, help_text = STATUS_TEXT.get(f.status, (f.status, ""))
    if f.status == SUSPECTED and not f.replayed:
        label, help_text = "suspected, not replayed", STATUS_TEXT[SUSPECTED][1]
    probe, key = f.probe or "", f.key or ""
    has_key = f.probe is not None or f.key is not None
    before, after = views.value(probe, key, f.before), views.value(probe, key, f.after)
    # Only a command a replay saw fail the victim is shown as a reproduction.
    repro = f.repro if f.repro_proven else ""
    mtime = None
    if f.probe == "files" and f.key:
        from statesnap.analysis.mtimerace import finding_sentence

        mtime = finding_sentence(f.key, f.before, f.after,
                                 f.polluters[0] if f.polluters else None, f.victim,
                                 record.header if record is not None else {})
    failure = None
    if f.exc_type or f.message:
        failure = cut(": ".join(x for x in (f.exc_type, f.message) if x), LONG_LIMIT)
    record_dir = record.path.parent if record is not None else Path(".")
    return FindingView(
        id=f"finding-{i + 1}",
        status=f.status,
        status_class=f.status if f.status in STATUS_TEXT else "other",
        status_label=label,
        status_help=help_text,
        victim=ref_of(lanes, f.victim, worker, prefer_failed=True),
        polluters=[ref_of(lanes, p, worker) for p in f.polluters],
        ref=cut(f"{probe}:{key}", KEY_LIMIT) if has_key else None,
        before=show(before, absent=before is None) if has_key else None,
        after=show(after, absent=after is None) if has_key else None,
        diff=views.diff(before, after),
        failure=failure,
        # No fix for a finding no replay proved (Finding.shown_hint), the mtime one included.
        hint=(race_hint() if mtime else f.hint) if f.status in PROVEN_STATUSES else None,
        hint_proven=f.hint_proven,
        proven_keys=[cut(k, KEY_LIMIT) for k in f.proven_keys],
        repro=repro,
        repro_proven=bool(repro),
        source=_source(f),
        replays=[ReplayView(r.label, cut(r.command, LONG_LIMIT), r.outcome, r.signature,
                            list(r.restored)) for r in f.replays],
        logs=[embed_log(log, record_dir, logs) for log in f.logs],
        mtime=mtime,
        cleaners=[ref_of(lanes, c, worker) for c in f.cleaners],
        candidates=[
            CandidateView(
                test=ref_of(lanes, c.nodeid, worker),
                ref=cut(f"{c.probe}:{c.key}", KEY_LIMIT),
                before=views.side(c.probe, c.key, c.before),
                after=views.side(c.probe, c.key, c.after),
                score=round(c.score, 2),
                reasons=list(c.reasons),
            )
            for c in f.candidates
        ],
        setter=ref_of(lanes, f.setter, worker) if f.setter else None,
        note=f.note,
    )
