"""After the last test: find and verify the failures of a record, and write the outputs.

:func:`statesnap.contain.finish` (and, under xdist, the controller) reads the record back and
calls these.  Working from the record on disk (rather than in-memory state) keeps one code path
for the plugin and the CLI, and proves the record is complete.  Every output error becomes a
terminal line, never a failed run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statesnap.record import Record

if TYPE_CHECKING:
    from statesnap.findings import Finding
    from statesnap.plugin import StatesnapPlugin


def find(plugin: StatesnapPlugin, record: Record) -> list[Finding]:
    """Attribute failures and, within the budget, verify them in fresh processes."""
    if record.running is None and not any(t.failed for t in record.tests):
        return []  # nothing failed: nothing to attribute (and attribution is not imported)
    try:
        from statesnap import attribution
    except ImportError:
        return []
    findings = attribution.attribute(record)
    if not findings or plugin.settings.verify_budget <= 0 or plugin.settings.order_file:
        # A replay child (running --statesnap-order) never verifies: no recursion.
        return findings
    from statesnap import verify
    from statesnap.runner import Runner

    return verify.verify_findings(
        record,
        findings,
        budget=plugin.settings.verify_budget,
        repeat=plugin.settings.verify_repeat,
        find_cleaners=plugin.settings.find_cleaners,
        progress=plugin._terminal_line,
        runner=Runner(record, env=plugin.initial_env, redactor=plugin.redactor),
    )


def write_outputs(plugin: StatesnapPlugin, records: list[Record], findings: list[Finding]) -> None:
    s = plugin.settings
    if s.json_path is not None:
        from statesnap.summary import write_summary

        try:
            write_summary(s.json_path, records, findings)
        except OSError as exc:
            plugin._terminal_line(f"statesnap: cannot write {s.json_path}: {exc.strerror}")
    if s.report_path is not None:
        try:
            from statesnap.report import write_report
        except ImportError:
            plugin._terminal_line("statesnap: the HTML report is not available in this build")
            return
        try:
            write_report(s.report_path, records, findings)
            plugin.report_written = s.report_path
        except OSError as exc:
            plugin._terminal_line(f"statesnap: cannot write {s.report_path}: {exc.strerror}")
