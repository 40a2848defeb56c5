"""The terminal section at the end of a run: leaks by probe, findings, where the files are."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from statesnap.base.text import printable

if TYPE_CHECKING:
    from statesnap.analysis.findings import Finding
    from statesnap.plugin.run import RunState
    from statesnap.record.journal import Record
    from statesnap.state.diff import Change

MAX_PER_PROBE = 12


class Shown:
    """The terminal reporter, every line escaped first: keys, node ids, values and messages
    come from the tested process, and a file name holding an escape sequence must not act on
    the user's terminal or forge a line (statesnap.base.text)."""

    def __init__(self, tr: Any) -> None:
        self._tr = tr

    def write_line(self, line: str, **markup: bool) -> None:
        self._tr.write_line(printable(line), **markup)

    def write_sep(self, sep: str, title: str) -> None:
        self._tr.write_sep(sep, printable(title))


def leak_line(nodeid: str, ch: Change) -> str:
    # Imported where a leak is listed: a session where no test changed anything never runs
    # them (their import and their teardown at exit: issue 28).
    from statesnap.analysis.leaks import by_users_setup, setup_name
    from statesnap.analysis.own_fixtures import display_fixture
    from statesnap.output.lines import needs_delta, short, short_pair

    if by_users_setup(ch):
        # The set-up method's leak (or its tear-down's), not the test pytest ran it for.
        ran = "torn down after" if ch.phase == "teardown" else "set up for"
        nodeid, where = f"{setup_name(ch)} ({ch.scope}, {ran} {nodeid})", ""
    else:
        fixture = (f", fixture {display_fixture(ch.fixture, ch.phase)} ({ch.scope})"
                   if ch.fixture else "")
        where = f" [{ch.phase}{fixture}]" if ch.phase else ""
    if ch.aliases:
        # The same object under other names (statesnap.state.diff.fold_aliases): said once.
        where += f" (also as {len(ch.aliases)} other name{'s' if len(ch.aliases) > 1 else ''})"
    if ch.probe == "files":
        from statesnap.analysis.mtimerace import file_pair

        before, after = file_pair(ch.before, ch.after)
        if before is not None or after is not None:
            return (f"{nodeid}: {ch.key}: {before or short(ch.before)} → "
                    f"{after or short(ch.after)}{where}")
    before, after = short_pair(ch.before, ch.after)
    if ch.before is not None and ch.after is not None and needs_delta(
            before, after, ch.before, ch.after):
        # Too long for the line, or the same once cut: what changed, not both ends.
        from statesnap.output.delta import delta

        said = delta(ch.before, ch.after)
        if said is not None:
            return f"{nodeid}: {ch.key}: {said}{where}"
    return f"{nodeid}: {ch.key}: {before} → {after}{where}"


def write_summary(run: RunState, tr: Any) -> None:
    tr = Shown(tr)
    record = run.results.record
    if record is None:
        if run.record_path is not None:
            tr.write_sep("-", "statesnap")
            tr.write_line(f"record: {run.record_path}")
        return
    tr.write_sep("-", "statesnap")
    for line in run.pitfalls:
        tr.write_line(line, yellow=True)
    for line in run.coverage_notes:
        tr.write_line(line)
    verbose = run.config.get_verbosity() > 0
    for name, reason in sorted(run.unavailable.items()):
        if verbose or name not in run.quiet_unavailable:
            tr.write_line(f"probe {name} unavailable: {reason}")
    for err in run.errors:
        tr.write_line(f"probe {err['probe']} switched off after an error: {err['error']}", red=True)
    for line in internal_error_lines(run):
        tr.write_line(line, red=True)
    if record.collection:
        tr.write_line(f"collection changed {len(record.collection)} key(s) "
                      "(imports with side effects)")
    leaks = listed(record)
    by_probe: dict[str, list[str]] = defaultdict(list)
    ids = {t.index: t.nodeid for t in record.tests}
    causes = proven_causes(run.results.findings) if run.results.findings else set()
    leaking_tests = 0
    setups: set[str] = set()
    if leaks:
        from statesnap.analysis.leaks import by_users_setup, setup_name
    for index in sorted(leaks):
        shown = [c for c in leaks[index]
                 if c.severity > 1 or (ids[index], f"{c.probe}:{c.key}") in causes]
        if not shown:
            continue
        own = [c for c in shown if not by_users_setup(c)]
        leaking_tests += bool(own)
        setups.update(setup_name(c) for c in shown if by_users_setup(c))
        for ch in shown:
            by_probe[ch.probe].append(leak_line(ids[index], ch))
    if by_probe:
        tr.write_line(leaked_header(leaking_tests, len(setups)))
        for probe in sorted(by_probe):
            lines = by_probe[probe]
            tr.write_line(f"  {probe}:", bold=True)
            for line in lines[:MAX_PER_PROBE]:
                tr.write_line(f"    {line}")
            if len(lines) > MAX_PER_PROBE:
                tr.write_line(f"    … and {len(lines) - MAX_PER_PROBE} more (see the record)")
    else:
        tr.write_line("no test leaked state")
    findings = run.results.findings
    # Races are flagged ``files`` changes, findings come from failures: a session with
    # neither does not import the text of either (findings, mtime races, reproductions).
    if findings or any(ch.probe == "files" for t in record.tests for ch in t.changes):
        from statesnap.output.explain import format_findings, race_lines

        for line in race_lines(record.tests, record.header):
            tr.write_line(line)
        if findings:
            for line in format_findings(findings, record.header):
                tr.write_line(line)
    tr.write_line(f"record: {run.record_path}")
    summary = run.settings.json_path
    if summary is not None and summary in run.outputs.done:
        tr.write_line(f"summary: {summary}")
    report = run.results.report_written
    if report is not None:
        tr.write_line(f"report: {report}")


def listed(record: Record) -> dict[int, list[Change]]:
    """The leaks the terminal lists (statesnap.analysis.resets.listed_leaks): none where no
    test changed anything, and then the rules that list them are not imported."""
    if not any(t.changes for t in record.tests):
        return {}
    from statesnap.analysis.resets import listed_leaks

    return listed_leaks(record.tests, record.footer)


def leaked_header(tests: int, setups: int) -> str:
    """``2 test(s) leaked state:``, with the class and module set-ups counted apart."""
    parts = [f"{tests} test(s)"] if tests or not setups else []
    if setups:
        parts.append(f"{setups} class or module set-up(s)")
    return " and ".join(parts) + " leaked state:"


#: The internal errors named one by one in the terminal section; the rest are counted.
MAX_INTERNAL = 3


def internal_error_lines(run: RunState) -> list[str]:
    """statesnap's own caught errors (this process's and the records'), so that a verdict
    built on a part that failed is never shown without saying so."""
    from statesnap.base.internal import noted

    seen: dict[tuple[str, str], None] = {}
    for entry, _count in noted()[run.internal_mark:]:
        seen.setdefault((str(entry.get("where")), str(entry.get("error"))), None)
    for record in run.results.all():
        for entry in record.internal_errors:
            seen.setdefault((str(entry.get("where")), str(entry.get("error"))), None)
    if not seen:
        return []
    lines = [f"statesnap caught {len(seen)} error(s) of its own and went on; what they "
             "touched may be incomplete:"]
    lines += [f"  {where}: {error}" for where, error in list(seen)[:MAX_INTERNAL]]
    if len(seen) > MAX_INTERNAL:
        lines.append(f"  … and {len(seen) - MAX_INTERNAL} more (see the record)")
    return lines


def proven_causes(findings: Iterable[Finding]) -> set[tuple[str, str]]:
    """``(polluter, probe:key)`` of every key a replay proved a verified finding's cause.

    A low-severity leak (a new module, an RNG state) is not listed for its own sake, but one
    that broke a test is the leak the user must see.
    """
    from statesnap.analysis.findings import VERIFIED  # imported by whoever made a finding

    out: set[tuple[str, str]] = set()
    for f in findings:
        if f.status != VERIFIED:
            continue
        out.update((polluter, key) for polluter in f.polluters for key in f.proven_keys)
    return out


def write_containment(run: RunState, tr: Any) -> None:
    """The features' lines (isolation, restore, strict, lanes, reruns), when there are any."""
    lines = run.containment_lines()
    if not lines:
        return
    tr = Shown(tr)
    tr.write_sep("-", "statesnap containment")
    for line in lines:
        tr.write_line(line)
