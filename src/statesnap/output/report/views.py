"""Plain view models of the whole report, built from records and findings; no HTML here.

As in coverage.py's ``html.py``, building the data and rendering it are separate steps: the
template only loops and prints, and tests can check the views without parsing HTML.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statesnap.analysis.findings import Finding
from statesnap.base.plain import Value
from statesnap.base.version import __version__
from statesnap.output.report.causes import grouped
from statesnap.output.report.changes import ChangeView, ChangeViews
from statesnap.output.report.findingviews import (
    STATUS_TEXT,
    FindingView,
    TestRef,
    finding_view,
    race_hint,
    ref_of,
)
from statesnap.output.report.lanes import (
    NODEID_LIMIT,
    Lane,
    TimelineView,
    build_lanes,
    page_data,
    timeline,
)
from statesnap.output.report.plots import PlotView, plots
from statesnap.output.report.runinfo import RunInfo, run_info
from statesnap.output.report.values import (
    SHORT_LIMIT,
    Scrubber,
    as_text,
    cut,
)
from statesnap.record.journal import Record

if TYPE_CHECKING:
    # The replay logs are embedded for findings only: a passing session's report does not
    # import their module (issue 28).
    from statesnap.output.report.logs import LogBudget

#: Leak table rows carried in the page's data; beyond that the table says how many more.
LEAK_ROWS_LIMIT = 50_000
#: Leak table rows per page.  Only one page is ever in the DOM: a table of thousands of rows
#: costs the browser seconds of layout, a page of a hundred costs nothing.
LEAK_PAGE = 100
class LeakRow(Value):
    _fields = ("change", "test", "order")
    __slots__ = _fields

    def __init__(self, change: ChangeView, test: TestRef, order: int) -> None:
        self.change = change
        self.test = test
        self.order = order

    def to_json(self) -> list[Any]:
        """``[probe, key, change, before, after, severity, where, test key, node id, lane,
        position]``: the page's script renders the table from these."""
        c = self.change
        return [c.probe, c.key, c.change, c.before.to_json(), c.after.to_json(), c.severity,
                c.where, self.test.key, self.test.nodeid, self.test.lane or "", self.order]


class ProbeLeaks(Value):
    _fields = ("probe", "tests", "leaks", "keys", "top_keys")
    __slots__ = _fields

    def __init__(self, probe: str, tests: int, leaks: int, keys: int,
                 top_keys: list[tuple[str, int]]) -> None:
        self.probe = probe
        self.tests = tests
        self.leaks = leaks
        self.keys = keys
        self.top_keys = top_keys


class ReportView(Value):
    _fields = ("title", "generated", "version", "stats", "findings", "run", "timeline",
               "leak_probes", "leak_rows", "leak_rows_total", "leak_rows_kept", "plots", "data",
               "facts", "races", "mtime_hint")
    __slots__ = _fields

    def __init__(self, title: str, generated: str, version: str, stats: list[tuple[str, str, str]],
                 findings: list[FindingView], run: RunInfo, timeline: TimelineView,
                 leak_probes: list[ProbeLeaks], leak_rows: list[LeakRow], leak_rows_total: int,
                 leak_rows_kept: int, plots: list[PlotView], data: dict[str, Any],
                 facts: list[tuple[str, str]] | None = None, races: list[str] | None = None,
                 mtime_hint: str | None = None) -> None:
        self.title = title
        self.generated = generated
        self.version = version
        self.stats = stats
        self.findings = findings
        self.run = run
        self.timeline = timeline
        self.leak_probes = leak_probes
        #: The first page of the leak table (the rest is in ``data["leaks"]``).
        self.leak_rows = leak_rows
        #: Leaks in all, and how many of them the page carries.
        self.leak_rows_total = leak_rows_total
        self.leak_rows_kept = leak_rows_kept
        self.plots = plots
        self.data = data
        self.facts: list[tuple[str, str]] = [] if facts is None else facts
        #: "mtime did not change" sentences: files changed in place during the run.
        self.races: list[str] = [] if races is None else races
        #: The fix said under them (statesnap.analysis.mtimerace.HINT where there are races).
        self.mtime_hint = mtime_hint if mtime_hint is not None or not self.races else race_hint()


def _races(lanes: Sequence[Lane]) -> list[str]:
    """The "mtime did not change" sentences.  A race is a flagged ``files`` change: a record
    without a ``files`` change has none, and the rules (their module) are not imported for it
    (issue 28)."""
    if not any(ch.probe == "files" for lane in lanes for t in lane.record.tests
               for ch in t.changes):
        return []
    from statesnap.analysis.mtimerace import races, sentence

    return [sentence(r) for lane in lanes for r in races(lane.record.tests, lane.record.header)]


def leak_tables(lanes: Sequence[Lane], views: ChangeViews
                ) -> tuple[list[ProbeLeaks], list[LeakRow], int]:
    """Per-probe leak summary; one row per leak (up to :data:`LEAK_ROWS_LIMIT`); the total."""
    rows: list[LeakRow] = []
    total = 0
    tests: dict[str, set[str]] = {}
    keys: dict[str, Counter[str]] = {}
    many = len(lanes) > 1
    for lane in lanes:
        for e in lane.entries:
            for ch in e.leaks:
                total += 1
                tests.setdefault(ch.probe, set()).add(lane.key(e.pos))
                keys.setdefault(ch.probe, Counter())[ch.key] += 1
                if len(rows) < LEAK_ROWS_LIMIT:
                    ref = TestRef(cut(e.nodeid, NODEID_LIMIT), lane.key(e.pos),
                                  lane.label if many else None)
                    rows.append(LeakRow(views.build(ch, leak=True), ref, e.pos))
    summary = [
        ProbeLeaks(probe, len(tests[probe]), sum(keys[probe].values()), len(keys[probe]),
                   [(cut(k, 80), n) for k, n in keys[probe].most_common(5)])
        for probe in sorted(tests, key=lambda p: (-len(tests[p]), p))
    ]
    rows.sort(key=lambda r: (r.change.probe, r.change.key, r.test.lane or "", r.order))
    return summary, rows, total


def _stats(lanes: Sequence[Lane], tl: TimelineView,
           findings: Sequence[Finding]) -> list[tuple[str, str, str]]:
    counts = dict(tl.outcomes)
    tests = sum(n for o, n in tl.outcomes if o != "crashed")
    failed = counts.get("failed", 0) + counts.get("error", 0)
    out = [("tests", str(tests), ""),
           ("failed", str(failed), "bad" if failed else ""),
           ("leaked state", str(tl.leaked), "warn" if tl.leaked else "")]
    # Counted apart, as the terminal lists them: a class or module set-up's leak is not the
    # leak of the test it ran for.
    setups = {name for lane in lanes for e in lane.entries for name in e.setup_leakers}
    if setups:
        out.append(("set-ups that leaked", str(len(setups)), "warn"))
    by_status = Counter(f.status for f in findings)
    for status in STATUS_TEXT:
        if by_status[status]:
            out.append((STATUS_TEXT[status][0], str(by_status[status]), f"status-{status}"))
    unknown = sum(n for s, n in by_status.items() if s not in STATUS_TEXT)
    if unknown:
        out.append(("other findings", str(unknown), "status-other"))
    crashed = sum(1 for lane in lanes if lane.record.running is not None)
    if crashed:
        out.append(("crashed runs", str(crashed), "bad"))
    if len(lanes) > 1:
        out.append(("workers / shards", str(len(lanes)), ""))
    return out


def _facts(summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if not summary:
        return []
    return [(cut(str(k), 100), cut(as_text(v), SHORT_LIMIT))
            for k, v in summary.items() if isinstance(v, (str, int, float, bool))]


def _order(findings: Iterable[Finding]) -> list[Finding]:
    rank = {status: i for i, status in enumerate(STATUS_TEXT)}
    return sorted(findings, key=lambda f: rank.get(f.status, len(rank)))


def build_view(records: Sequence[Record], findings: Iterable[Finding], *,
               report_dir: Path | None = None, summary: Mapping[str, Any] | None = None,
               title: str | None = None, generated: float | None = None) -> ReportView:
    """Everything the template shows, computed once."""
    scrubber = Scrubber()
    views = ChangeViews(scrubber)
    lanes = build_lanes(records)
    ordered = _order(findings)
    tl = timeline(lanes)
    leak_probes, leak_rows, leak_total = leak_tables(lanes, views)
    when = time.time() if generated is None else generated
    data = page_data(lanes, views)
    data["leaks"] = [r.to_json() for r in leak_rows]
    data["leak_page"] = LEAK_PAGE
    budget: list[LogBudget] = []  # one for the page's logs, made at its first finding

    def finding(i: int, f: Finding) -> FindingView:
        if not budget:
            from statesnap.output.report.logs import LogBudget

            budget.append(LogBudget())
        return finding_view(i, f, lanes, views, budget[0])

    return ReportView(
        title=title or "statesnap pollution report",
        generated=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(when)),
        version=__version__,
        stats=_stats(lanes, tl, ordered),
        findings=grouped(ordered, finding,
                         lambda f: ref_of(lanes, f.victim, f.worker, prefer_failed=True)),
        races=_races(lanes),
        run=run_info(lanes, scrubber),
        timeline=tl,
        leak_probes=leak_probes,
        leak_rows=leak_rows[:LEAK_PAGE],
        leak_rows_total=leak_total,
        leak_rows_kept=len(leak_rows),
        plots=plots(lanes),
        data=data,
        facts=_facts(summary),
    )
