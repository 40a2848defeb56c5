"""Findings as text: terminal lines and a Markdown block for an issue tracker.  Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.analysis.causes import Cause, group_by_cause
from statesnap.analysis.findings import (
    NOT_ORDER_DEPENDENT,
    PROVEN_STATUSES,
    SUSPECTED,
    UNEXPLAINED,
    Finding,
)
from statesnap.analysis.mtimerace import HINT, file_pair, finding_sentence, flagged, races, sentence
from statesnap.base.fsinfo import resolution_parts
from statesnap.base.text import printable
from statesnap.output.lines import markdown_code as _code
from statesnap.output.lines import markdown_text, short, short_pair
from statesnap.record.journal import TestEntry
from statesnap.replay.repro import repro_command, shell_join, shell_quote

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


def status_label(f: Finding) -> str:
    """The status as the terminal shows it; a suspicion nothing replayed says so."""
    if f.status == SUSPECTED and not f.replayed:
        return "suspected, not replayed"
    return _STATUS_WORDS.get(f.status, f.status)


def _values(before: Any, after: Any) -> tuple[str, str]:
    """Both sides of a change, cut so that they still differ where both are long."""
    pair = short_pair(before, after)
    words = file_pair(before, after)
    return words[0] or pair[0], words[1] or pair[1]


def race_line(f: Finding, header: Mapping[str, Any] | None) -> str | None:
    """The mtime-race sentence of a finding whose state is a file changed in place."""
    if f.probe != "files" or not f.key:
        return None
    return finding_sentence(f.key, f.before, f.after, f.polluters[0] if f.polluters else None,
                            f.victim, header or {})


def fix_hint(f: Finding) -> str | None:
    """The ``fix:`` line's text; none before a replay proved the polluter (a hint for a
    suspect would read as if it were known to be the polluter)."""
    if f.status not in PROVEN_STATUSES:
        return None
    if f.probe == "files" and flagged(f.after) is not None:
        return HINT
    return f.shown_hint


#: The fix line's label where the key it is about is only ranked, not proven.
UNPROVEN_FIX = "fix, if that key is the cause (not proven)"


def fix_label(f: Finding) -> str:
    """``fix``; for a key no replay proved, words saying the hint rests on a ranked key (the
    polluter is proven, what it left that matters is not)."""
    return UNPROVEN_FIX if _unproven(f) else "fix"


def _made_by_fixture(f: Finding) -> bool:
    """A fixture proven by re-creating it, with no recorded change: the state lies in what
    it made (its directory, its files), not in its value."""
    return f.probe == "fixtures" and f.before is None and f.after is None


def _change_text(f: Finding) -> str:
    if _made_by_fixture(f):
        return "what the fixture made (not its value: no probe saw it change)"
    before, after = _values(f.before, f.after)
    return f"{before} → {after}"


def _healed(f: Finding) -> str:
    # A fixture is re-created (pytest's teardown of it), not put back.
    if f.probe == "fixtures":
        return "re-creating it before the victim makes it pass"
    return "restoring it makes the victim pass"


#: After the state of a proven finding (its polluter replayed) whose key no replay proved.
UNPROVEN_KEY = " (ranked first from the record; no replay proved the key)"


def _unproven(f: Finding) -> str:
    """Said where a proven finding names a key no key replay showed: the polluter is
    proven, the key is not (no time left, or no restoration healed the victim)."""
    if f.status in PROVEN_STATUSES and f"{f.probe}:{f.key}" not in f.proven_keys:
        return UNPROVEN_KEY
    return ""


def candidate_lines(f: Finding, limit: int = 3) -> list[str]:
    """The ranked candidates of an unproven finding, each with why it ranks there."""
    out = []
    for i, c in enumerate(f.candidates[:limit], start=1):
        why = "; ".join(c.reasons) or "changed state the victim saw"
        out.append(f"      {i}. {c.nodeid}: {c.probe}:{c.key} ({why})")
    if len(f.candidates) > limit:
        out.append(f"      … and {len(f.candidates) - limit} more")
    return out


def format_finding(f: Finding, header: Mapping[str, Any] | None = None) -> list[str]:
    lines = [f"[{status_label(f)}] {f.victim}"]
    proven = f.status in PROVEN_STATUSES
    if f.polluters:
        who = " + ".join(f.polluters)
        lines.append(f"    polluted by: {who}" if proven else f"    top suspect: {who}")
    if f.setter:
        lines.append(f"    relies on state set by: {f.setter}")
    if f.probe and f.key and f.status not in NO_STATE:
        healed = f" ({_healed(f)})" if f.hint_proven else _unproven(f)
        lines.append(f"    state: {f.probe}:{f.key}: {_change_text(f)}{healed}")
        named = f"{f.probe}:{f.key}"
        others = [k for k in f.proven_keys if k != named]
        if others and not f.hint_proven and f.proven_keys[0] == named:
            # A healing set led by the named key: none of them heals the victim alone.
            lines.append(f"    restoring it heals only together with: {', '.join(others)}")
        elif others:
            lines.append(f"    restoring also heals it: {', '.join(others)}")
        race = race_line(f, header)
        if race:
            lines.append(f"    mtime: {race}")
    for lo in f.leftovers:
        lines.append(f"    left on disk by an earlier run: {lo.get('path')} "
                     f"(written by {lo.get('writer')})")
    if f.status == NOT_ORDER_DEPENDENT:
        for c in f.candidates[:MAX_NOT_CAUSES]:
            lines.append(f"    earlier change, not the cause: {c.probe}:{c.key} by {c.nodeid}")
    if f.exc_type:
        msg = f": {short(f.message, 80)}" if f.message else ""
        lines.append(f"    failure: {f.exc_type}{msg}")
    hint = fix_hint(f)
    if hint and (f.polluters or f.setter):
        lines.append(f"    {fix_label(f)}: {hint}")
    if f.cleaners:
        lines.append(f"    cleaned by: {', '.join(f.cleaners)}")
    if f.note:
        lines.append(f"    note: {f.note}")
    if not proven and f.candidates:
        unreplayed = "" if f.replayed else ", not replayed"
        lines.append(f"    candidates (ranked from the record{unreplayed}):")
        lines += candidate_lines(f)
    if f.repro_proven:
        lines.append(f"    reproduce: {f.repro}")
    elif f.status in (SUSPECTED, UNEXPLAINED) and not f.replayed:
        lines.append(f"    to prove it: statesnap explain --verify --test {shell_quote(f.victim)}")
    if f.logs:
        where = logs_folder(f.logs)
        beside = "" if Path(where).is_absolute() else " (beside the record)"
        lines.append(f"    logs: {where}{beside}, {len(f.logs)} replay(s)")
    # Keys, node ids, values and messages come from the tested process: escaped here, the
    # one place a finding becomes display text (statesnap.base.text).
    return [printable(line) for line in lines]


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


#: The lines of a shared cause's first finding that hold for all its victims.
_CAUSE_LINES = ("    polluted by:", "    relies on", "    state:", "    restoring", "    mtime:",
                "    fix:", "    cleaned by:")


def format_cause(cause: Cause, header: Mapping[str, Any] | None = None) -> list[str]:
    """A cause that broke several victims, once: its state and fix, then the victims, then
    one reproduction (each victim's: ``statesnap explain --test``)."""
    if not cause.shared:
        return format_finding(cause.first, header)
    first = cause.first
    lines = [f"[{status_label(first)}] {len(cause.findings)} tests broken by one cause: "
             f"{' + '.join(first.polluters)}"]
    lines += [line for line in format_finding(first, header) if line.startswith(_CAUSE_LINES)]
    lines.append("    victims:")
    for f in cause.findings:
        failure = f" ({f.exc_type}: {short(f.message, 60)})" if f.exc_type and f.message else (
            f" ({f.exc_type})" if f.exc_type else "")
        lines.append(f"      {f.victim}{failure}")
    if first.repro_proven:
        lines.append(f"    reproduce ({first.victim}): {first.repro}")
    lines.append("    each victim's reproduction: statesnap explain --test ID")
    return [printable(line) for line in lines]


def format_findings(findings: Iterable[Finding],
                    header: Mapping[str, Any] | None = None) -> list[str]:
    """One entry per cause: victims that share their polluter(s) and key are listed under
    it (statesnap.analysis.causes)."""
    items = list(findings)
    if not items:
        return []
    causes = group_by_cause(items)
    shared = sum(c.shared for c in causes)
    grouped = f", {len(causes)} cause(s)" if shared else ""
    lines = [f"{len(items)} finding(s){grouped}:"]
    for cause in causes:
        lines += ["  " + line for line in format_cause(cause, header)]
    return lines


def race_lines(tests: Iterable[TestEntry], header: Mapping[str, Any]) -> list[str]:
    """``mtime did not change`` sentences for every file changed in place during the run."""
    found = races(tests, header)
    if not found:
        return []
    lines = [f"{len(found)} file(s) changed while the mtime did not change:"]
    lines += [f"  {sentence(r)}" for r in found]
    lines.append(f"  fix: {HINT}")
    return [printable(line) for line in lines]


def _block(command: str) -> list[str]:
    """A fenced ``sh`` block whose fence no line of ``command`` can close."""
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", command)), default=0) + 1)
    return [f"{fence}sh", command, fence]


def _title(f: Finding) -> str:
    victim = _code(f.victim)
    if f.status == "not-order-dependent":
        return f"### {victim} fails on its own"
    if f.polluters:
        return f"### {victim} fails after " + " + ".join(_code(p) for p in f.polluters)
    return f"### {victim} fails ({f.status})"


def _alone_passed(f: Finding, alone: str) -> bool:
    return any(r.command == alone and r.outcome == "passed" and not r.restored
               for r in f.replays)


def markdown(findings: Iterable[Finding], header: Mapping[str, Any],
             tests: Iterable[TestEntry] = ()) -> str:
    """A block ready to paste into an issue: what fails, why, how to reproduce, where.

    A command is given as one that fails (or passes) the victim only where a replay showed
    it; an unproven finding gets its ranked candidates instead.
    """
    out: list[str] = []
    for f in findings:
        proven = f.status in PROVEN_STATUSES
        shown = ("suspected, not replayed" if f.status == SUSPECTED and not f.replayed
                 else f.status)
        out += [_title(f), "", f"- **status**: {shown}"]
        if f.polluters:
            label = ("polluter(s)" if proven else "top suspect (not replayed)"
                     if not f.replayed else "top suspect (not proven)")
            out.append(f"- **{label}**: " + ", ".join(_code(p) for p in f.polluters))
        if f.exc_type:
            msg = f": {_code(short(f.message, 200))}" if f.message else ""
            out.append(f"- **failure**: {_code(f.exc_type)}{msg}")
        if f.probe and f.key and f.status not in NO_STATE:
            healed = f" (proven: {_healed(f)})" if f.hint_proven else _unproven(f)
            sides = _values(f.before, f.after)
            change = (_change_text(f) if _made_by_fixture(f) else
                      f"{_code(sides[0])} → {_code(sides[1])}")
            out.append(f"- **state**: {_code(f'{f.probe}:{f.key}')}: {change}{healed}")
            race = race_line(f, header)
            if race:
                out.append(f"- **mtime**: {markdown_text(race)}")
        hint = fix_hint(f)
        if hint and (f.polluters or f.setter):
            out.append(f"- **{fix_label(f)}**: {markdown_text(hint)}")
        if f.note:
            out.append(f"- **note**: {markdown_text(f.note)}")
        if not proven and f.candidates:
            unreplayed = "" if f.replayed else ", not replayed"
            out.append(f"- **candidates** (ranked from the record{unreplayed}):")
            for c in f.candidates[:5]:
                why = "; ".join(c.reasons) or "changed state the victim saw"
                out.append(f"  - {_code(c.nodeid)}: {_code(f'{c.probe}:{c.key}')} ({why})")
        if f.repro_proven:
            fails = "Reproduce (the victim fails):"
            out += ["", fails, "", *_block(f.repro)]
            alone = repro_command(header, [f.victim])
            if f.polluters and alone != f.repro and _alone_passed(f, alone):
                out += ["", "The victim alone (passes):", "", *_block(alone)]
        elif f.status in (SUSPECTED, UNEXPLAINED) and not f.replayed:
            out += ["", "Not replayed: prove it with", "",
                    *_block(f"statesnap explain --verify --test {shell_quote(f.victim)}")]
        out.append("")
    found = races(tests, header)
    if found:
        out += ["### Files changed while the mtime did not change", ""]
        out += [f"- {sentence(r)}" for r in found]
        out += [f"- **fix**: {HINT}", ""]
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
    out.append(f"- args: `{shell_join(str(a) for a in header.get('args') or [])}`")
    out.append("")
    out.append("</details>")
    # Each item is one line of ours; what the tested process wrote in it is escaped.
    return "\n".join(map(printable, out)) + "\n"
