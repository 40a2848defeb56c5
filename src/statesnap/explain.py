"""Findings as text: terminal lines and a Markdown block for an issue tracker.  Pure."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.findings import NOT_ORDER_DEPENDENT, UNEXPLAINED, Finding
from statesnap.fsinfo import resolution_parts
from statesnap.repro import repro_command
from statesnap.terminal import short

#: Statuses no replay tied to a change: they show no ``state:`` line.
NO_STATE = (NOT_ORDER_DEPENDENT, UNEXPLAINED)
#: How many earlier changes a not-order-dependent finding lists (the rest: the JSON).
MAX_NOT_CAUSES = 3

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
    if f.probe and f.key and f.status not in NO_STATE:
        proven = " (restoring it makes the victim pass)" if f.hint_proven else ""
        lines.append(f"    state: {f.probe}:{f.key}: {short(f.before)} → {short(f.after)}{proven}")
        others = [k for k in f.proven_keys if k != f"{f.probe}:{f.key}"]
        if others:
            lines.append(f"    restoring also heals it: {', '.join(others)}")
    for lo in f.leftovers:
        lines.append(f"    left on disk by an earlier run: {lo.get('path')} "
                     f"(written by {lo.get('writer')})")
    if f.status == NOT_ORDER_DEPENDENT:
        for c in f.candidates[:MAX_NOT_CAUSES]:
            lines.append(f"    earlier change, not the cause: {c.probe}:{c.key} by {c.nodeid}")
    if f.exc_type:
        msg = f": {short(f.message, 80)}" if f.message else ""
        lines.append(f"    failure: {f.exc_type}{msg}")
    if f.hint and (f.polluters or f.setter):
        lines.append(f"    fix: {f.hint}")
    if f.cleaners:
        lines.append(f"    cleaned by: {', '.join(f.cleaners)}")
    if f.note:
        lines.append(f"    note: {f.note}")
    if f.repro:
        lines.append(f"    reproduce: {f.repro}")
    if f.logs:
        where = logs_folder(f.logs)
        beside = "" if Path(where).is_absolute() else " (beside the record)"
        lines.append(f"    logs: {where}{beside}, {len(f.logs)} replay(s)")
    return lines


def logs_folder(logs: list[str]) -> str:
    """The folder of a finding's replay logs (they all lie beside one record)."""
    folders = list(dict.fromkeys(str(Path(p).parent) for p in logs))
    return folders[0] + "/" if len(folders) == 1 else ", ".join(logs)


def resolution_text(info: Any) -> str:
    """``mtime to 1 ns, writes tick every 4 ms (ext4 at /)`` from a header's measurement."""
    if not isinstance(info, Mapping):
        return str(info)
    if info.get("error") or info.get("resolution_ns") is None:
        return f"not measured ({info.get('error') or 'unknown'})"
    text, where = resolution_parts(info)
    return f"{text} ({where})" if where else text


def format_findings(findings: Iterable[Finding]) -> list[str]:
    items = list(findings)
    if not items:
        return []
    lines = [f"{len(items)} finding(s):"]
    for f in items:
        lines += ["  " + line for line in format_finding(f)]
    return lines


def _code(text: str) -> str:
    """Inline Markdown code that survives backticks inside ``text``."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _title(f: Finding) -> str:
    victim = _code(f.victim)
    if f.status == "not-order-dependent":
        return f"### {victim} fails on its own"
    if f.polluters:
        return f"### {victim} fails after " + " + ".join(_code(p) for p in f.polluters)
    return f"### {victim} fails ({f.status})"


def markdown(findings: Iterable[Finding], header: Mapping[str, Any]) -> str:
    """A block ready to paste into an issue: what fails, why, how to reproduce, where."""
    out: list[str] = []
    for f in findings:
        out += [_title(f), "", f"- **status**: {f.status}"]
        if f.polluters:
            out.append("- **polluter(s)**: " + ", ".join(_code(p) for p in f.polluters))
        if f.exc_type:
            msg = f": {_code(short(f.message, 200))}" if f.message else ""
            out.append(f"- **failure**: {_code(f.exc_type)}{msg}")
        if f.probe and f.key and f.status not in NO_STATE:
            proven = " (proven: restoring it makes the victim pass)" if f.hint_proven else ""
            out.append(f"- **state**: {_code(f'{f.probe}:{f.key}')}: {_code(short(f.before))}"
                       f" → {_code(short(f.after))}{proven}")
        if f.hint and (f.polluters or f.setter):
            out.append(f"- **fix**: {f.hint}")
        if f.note:
            out.append(f"- **note**: {f.note}")
        if f.repro:
            fails = "Reproduce (the victim fails):" if f.polluters else "Reproduce:"
            out += ["", fails, "", "```sh", f.repro, "```"]
            alone = repro_command(header, [f.victim])
            if f.polluters and alone != f.repro:
                out += ["", "The victim alone (passes):", "", "```sh", alone, "```"]
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
        out.append(f"- filesystem of `{root}`: {resolution_text(res)}")
    out.append(f"- args: `{shlex.join(str(a) for a in header.get('args') or [])}`")
    out.append("")
    out.append("</details>")
    return "\n".join(out) + "\n"
