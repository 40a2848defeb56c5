"""GitHub Actions' own pages: the job summary (Markdown) and workflow annotations.  Pure.

The job summary gives one line per victim (its verdict, polluter, key and reproduction), a
cause that broke several victims once with its victims under it, the counts of leaks, and the
whole issue text (:func:`statesnap.output.explain.markdown`) folded in ``<details>``.  Each
verified victim gets an ``::error`` workflow command on its failing line, naming the polluter.

Whatever a test id or a recorded value holds, it stays inside its line: in the Markdown every
such text is an inline code span with its control characters written as escapes; in a workflow
command it is escaped as GitHub's toolkit does (``%``, CR and LF in the message; ``:`` and
``,`` too in a property).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from statesnap.analysis.causes import Cause, group_by_cause
from statesnap.analysis.findings import PROVEN_STATUSES, VERIFIED, Finding
from statesnap.analysis.resets import listed_leaks
from statesnap.output.lines import markdown_code as code
from statesnap.output.lines import one_line, short, short_pair
from statesnap.record.journal import Record

#: GitHub refuses a step summary over 1 MiB; the issue text is left out past this size.
SUMMARY_LIMIT = 1024 * 1024 - 4096

def escape_data(text: str) -> str:
    """A workflow command's message, escaped as ``@actions/core`` does (``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``escapeProperty``): ``:`` and ``,`` too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _key(f: Finding) -> str | None:
    return f"{f.probe}:{f.key}" if f.probe and f.key else None


def _status(f: Finding) -> str:
    from statesnap.output.explain import status_label

    return status_label(f)


def _victim_line(f: Finding, with_cause: bool = True) -> str:
    parts = [f"**{_status(f)}** {code(f.victim)}"]
    proven = f.status in PROVEN_STATUSES
    if with_cause and f.polluters:
        who = " + ".join(code(p) for p in f.polluters)
        parts.append(f"polluted by {who}" if proven else f"top suspect {who}")
    if with_cause and f.setter:
        parts.append(f"relies on state set by {code(f.setter)}")
    key = _key(f)
    if with_cause and key and f.status != "not-order-dependent":
        parts.append(f"key {code(key)}")
    if f.status == "not-order-dependent":
        parts.append("fails on its own")
    if f.repro_proven:
        parts.append(f"reproduce: {code(f.repro)}")
    return " — ".join(parts)


def finding_lines(causes: Iterable[Cause]) -> list[str]:
    """A Markdown list: one line per victim; a shared cause once, its victims under it."""
    out: list[str] = []
    for cause in causes:
        f = cause.first
        if not cause.shared:
            out.append(f"- {_victim_line(f)}")
            continue
        who = " + ".join(code(p) for p in f.polluters)
        out.append(f"- **{_status(f)}** {who} changed {code(_key(f) or '?')}, which broke "
                   f"{len(cause.findings)} tests:")
        out += [f"  - {_victim_line(v, with_cause=False)}" for v in cause.findings]
    return out


def leak_counts(records: Sequence[Record], low: int = 1) -> tuple[int, Counter[str]]:
    """How many tests leaked state above ``low`` severity, and how many per probe: the leaks
    the terminal and the summary JSON list (:func:`listed_leaks`), so the three agree."""
    tests = 0
    by_probe: Counter[str] = Counter()
    for record in records:
        for changes in listed_leaks(record.tests, record.footer).values():
            probes = {c.probe for c in changes if c.severity > low}
            tests += bool(probes)
            by_probe.update(probes)
    return tests, by_probe


def _headline(findings: Sequence[Finding]) -> str:
    proven = sum(f.status == VERIFIED for f in findings)
    if not findings:
        return "### statesnap: no failure to explain"
    others = len(findings) - proven
    more = f", {others} other finding(s)" if others else ""
    return f"### statesnap: {proven} order-dependent failure(s) proven{more}"


def job_summary(findings: Sequence[Finding], records: Sequence[Record],
                header: Mapping[str, Any], issue_text: str | None) -> str:
    """The Markdown appended to ``$GITHUB_STEP_SUMMARY``."""
    out = [_headline(findings), ""]
    if findings:
        out += [*finding_lines(group_by_cause(findings)), ""]
    tests, by_probe = leak_counts(records)
    if tests:
        per = ", ".join(f"{code(p)} {n}" for p, n in sorted(by_probe.items()))
        out.append(f"**Leaks:** {tests} test(s) leaked state ({per}).")
    else:
        out.append("**Leaks:** no test leaked state.")
    out.append("")
    if issue_text and findings:
        folded = ["<details><summary>Issue text (Markdown, ready to paste)</summary>", "",
                  issue_text.rstrip("\n"), "", "</details>", ""]
        text = "\n".join(out + folded)
        if len(text.encode("utf-8")) <= SUMMARY_LIMIT:
            return text + "\n"
        out.append("The issue text is left out: it is over GitHub's limit for a job summary "
                   "(run `statesnap explain --markdown`).")
        out.append("")
    return "\n".join(out) + "\n"


def _workspace_path(where: str, rootdir: str | None, workspace: str | None) -> tuple[str, str]:
    """``(file, line)`` of a ``file:line`` (relative to the rootdir), the file relative to the
    workspace (the repository GitHub annotates) where under it, else as recorded."""
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        path, line = where, ""
    if not workspace:
        return path, line
    if rootdir and not os.path.isabs(path):
        path = os.path.join(rootdir, path)
    if os.path.isabs(path):
        rel = os.path.relpath(path, workspace)
        if not rel.startswith(".."):
            path = rel
    return path, line


def annotation(f: Finding, rootdir: str | None, workspace: str | None) -> str | None:
    """The ``::error`` workflow command of a verified victim (None: not verified)."""
    if f.status != VERIFIED or not f.polluters:
        return None
    where = f.where or f.victim.split("::", 1)[0]
    path, line = _workspace_path(where, rootdir, workspace)
    props = [f"file={escape_property(one_line(path))}"]
    if line:
        props.append(f"line={line}")
    who = " + ".join(f.polluters)
    props.append("title=" + escape_property(one_line(f"statesnap: order-dependent failure, "
                                                     f"polluted by {short(who, 120)}")))
    lines = [f"{f.victim} fails after {who}."]
    key = _key(f)
    if key:
        before, after = short_pair(f.before, f.after)
        lines.append(f"State {key}: {before} -> {after}")
    if f.repro_proven:
        lines.append(f"Reproduce: {f.repro}")
    # Each line through one_line: a value's ESC or undecodable byte reaches neither the job
    # log nor the terminal raw (a newline of ours stays, escaped as the format wants).
    message = "\n".join(one_line(x) for x in lines)
    return f"::error {','.join(props)}::{escape_data(message)}"
