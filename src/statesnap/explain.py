"""Findings as text: terminal lines and a Markdown block for an issue tracker.  Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from statesnap.findings import Finding
from statesnap.terminal import short

_STATUS_WORDS = {
    "verified": "VERIFIED",
    "suspected": "suspected",
    "not-order-dependent": "not order-dependent",
    "unexplained": "unexplained",
    "not-deterministic": "not deterministic",
    "latent": "LATENT",
    "brittle": "BRITTLE",
}


def format_finding(f: Finding) -> list[str]:
    status = _STATUS_WORDS.get(f.status, f.status)
    lines = [f"[{status}] {f.victim}"]
    if f.polluters:
        who = " + ".join(f.polluters)
        lines.append(f"    polluted by: {who}")
    if f.setter:
        lines.append(f"    relies on state set by: {f.setter}")
    if f.probe and f.key:
        proven = " (restoring it makes the victim pass)" if f.hint_proven else ""
        lines.append(f"    state: {f.probe}:{f.key}: {short(f.before)} → {short(f.after)}{proven}")
    if f.exc_type:
        msg = f": {short(f.message, 80)}" if f.message else ""
        lines.append(f"    failure: {f.exc_type}{msg}")
    if f.hint and f.polluters:
        lines.append(f"    fix: {f.hint}")
    if f.cleaners:
        lines.append(f"    cleaned by: {', '.join(f.cleaners)}")
    if f.note:
        lines.append(f"    note: {f.note}")
    if f.repro:
        lines.append(f"    reproduce: {f.repro}")
    return lines


def format_findings(findings: Iterable[Finding]) -> list[str]:
    items = list(findings)
    if not items:
        return []
    lines = [f"{len(items)} finding(s):"]
    for f in items:
        lines += ["  " + line for line in format_finding(f)]
    return lines


def markdown(findings: Iterable[Finding], header: Mapping[str, Any]) -> str:
    """A block ready to paste into an issue: what fails, why, how to reproduce, where."""
    out: list[str] = []
    for f in findings:
        out.append(f"### `{f.victim}` fails after `{' + '.join(f.polluters) or '?'}`")
        out.append("")
        out.append(f"- **status**: {f.status}")
        if f.exc_type:
            out.append(f"- **failure**: `{f.exc_type}`" + (f": {f.message}" if f.message else ""))
        if f.probe and f.key:
            out.append(f"- **state**: `{f.probe}:{f.key}`: `{short(f.before)}` → "
                       f"`{short(f.after)}`" + (" (proven by restoring it)" if f.hint_proven
                                                 else ""))
        if f.hint:
            out.append(f"- **fix**: {f.hint}")
        if f.note:
            out.append(f"- **note**: {f.note}")
        if f.repro:
            out += ["", "Reproduce:", "", "```sh", f.repro, "```"]
        out.append("")
    py = (header.get("python") or {}).get("version", "?")
    plat = (header.get("platform") or {}).get("platform", "?")
    pytest_v = (header.get("packages") or {}).get("pytest", "?")
    out.append("<details><summary>Environment</summary>")
    out.append("")
    out.append(f"- Python {py} on {plat}, pytest {pytest_v}")
    out.append(f"- plugins: {', '.join(header.get('plugins') or []) or 'none'}")
    if header.get("seed") is not None:
        out.append(f"- pytest-randomly seed: {header['seed']}")
    for root, res in (header.get("mtime_resolution") or {}).items():
        out.append(f"- mtime resolution of {root}: {res}")
    out.append(f"- args: `{' '.join(header.get('args') or [])}`")
    out.append("")
    out.append("</details>")
    return "\n".join(out) + "\n"
