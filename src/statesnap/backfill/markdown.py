"""One Markdown file per finding, ready to paste into an issue; the summary JSON and report.

Everything a file states was seen by the backfill: the reproduction line is the one it ran
(and says whether the victim failed in it), the victim-alone line likewise.  Values from the
record are shown as recorded (secret-looking environment values are digests already).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import NOT_DETERMINISTIC, NOT_ORDER_DEPENDENT, VERIFIED, Finding
from statesnap.backfill.plugins import PluginPlan
from statesnap.backfill.victim import Confirmation, VictimResult
from statesnap.base.atomic import write_atomic
from statesnap.record.journal import Record

_PACKAGES = ("pytest", "pytest-xdist", "pytest-randomly", "statesnap", "torch", "numpy")


def title(f: Finding, plugins_doubt: bool = False) -> str:
    if plugins_doubt:
        return (f"`{f.victim}` fails alone here, where the replays could not load CI's pytest "
                "plugins (whether it is order-dependent in CI is not known)")
    if f.status == VERIFIED:
        by = " + ".join(f"`{p}`" for p in f.polluters)
        key = f" through `{f.probe}:{f.key}`" if f.probe and f.key else ""
        return f"`{f.victim}` fails when {by} runs before it{key}"
    if f.status == NOT_ORDER_DEPENDENT:
        return f"`{f.victim}` fails on its own (not order-dependent)"
    if f.status == NOT_DETERMINISTIC:
        return f"`{f.victim}` fails only sometimes in the recorded order (not deterministic)"
    return f"`{f.victim}`: the CI failure was not reproduced from the order ({f.status})"


def _value(value: Any) -> str:
    if value is None:
        return "∅ (absent)"
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 200 else text[:197] + "…"


def _ran(c: Confirmation | None, expect: str) -> str:
    if c is None:
        return ""
    if c.outcome is None:
        return "The backfill could not run this command (see the logs)."
    seen = c.outcome.upper()
    ok = (c.outcome in ("failed", "error")) if expect == "fail" else c.outcome == "passed"
    where = f" on worker {c.worker}" if c.worker else ""
    if ok:
        return f"The backfill ran this command{where}: the victim {seen}."
    return (f"**The backfill ran this command{where} and the victim {seen}, not as expected**: "
            "treat this reproduction with care.")


def environment(header: dict[str, Any], commit: str | None) -> list[str]:
    py = header.get("python") or {}
    plat = header.get("platform") or {}
    packages = header.get("packages") or {}
    lines = [f"- commit: `{commit}`" if commit else "- commit: (not a git checkout)",
             f"- Python {py.get('version', '?')} ({py.get('implementation', '?')})",
             f"- platform: {plat.get('platform') or plat.get('system', '?')}"]
    shown = [f"{n} {packages[n]}" for n in _PACKAGES if n in packages]
    if shown:
        lines.append(f"- packages: {', '.join(shown)}")
    plugins = header.get("plugins") or []
    if plugins:
        lines.append(f"- pytest plugins: {', '.join(map(str, plugins))}")
    return lines


def plugin_lines(p: PluginPlan | None) -> list[str]:
    """CI's pytest plugins against the replays': loaded, blocked, missing, other versions."""
    if p is None:
        return []
    if p.ci is None:
        return [f"- {p.difference()}"]
    ci = ", ".join(f"{n}-{v}" for n, v in sorted(p.ci.items())) or "none"
    out = [f"- CI loaded: {ci}"]
    if p.blocked:
        out.append(f"- blocked in every replay (installed here, not loaded by CI): "
                   f"{', '.join(f'`-p no:{n}`' for n in p.blocked)}")
    if p.differs:
        out.append(f"- {p.difference()}")
    return out


def finding_markdown(r: VictimResult, state: Record | None, commit: str | None,
                     order_record: Path | None, plugins: PluginPlan | None = None) -> str:
    f = r.finding
    out = [f"# {title(f, r.plugins_doubt)}", "", f"**Status:** {f.status}  "]
    if f.exc_type or f.message:
        out.append(f"**Failure:** `{f.exc_type or '?'}`{': ' + f.message if f.message else ''}  ")
    if r.in_order:
        out.append(f"**Recorded order replayed {len(r.in_order)}×:** {', '.join(r.in_order)}  ")
    if f.note:
        out.append(f"**Note:** {f.note}")
    out.append("")
    if f.status == VERIFIED:
        out += ["## Reproduce", "", "```sh", f.repro, "```", "", _ran(r.repro, "fail"), ""]
        if r.alone is not None:
            out += ["## The victim alone passes", "", "```sh", r.alone.command, "```", "",
                    _ran(r.alone, "pass"), ""]
        if f.probe and f.key:
            proof = ("restoring it just before the victim made the victim pass"
                     if f.hint_proven else "not proven key by key")
            out += ["## State", "", "| key | before | after | proof |", "| --- | --- | --- | --- |",
                    f"| `{f.probe}:{f.key}` | {_value(f.before)} | {_value(f.after)} | {proof} |",
                    ""]
        if f.hint:
            out += ["## Fix hint", "", f.hint, ""]
    elif f.repro:
        out += ["## Reproduce", "", "```sh", f.repro, "```", ""]
    out += ["## Environment", "", *environment(state.header if state else {}, commit), ""]
    if plugins is not None:
        out += ["## pytest plugins", "", *plugin_lines(plugins), ""]
    src = [f"- artifact: `{r.shard.source}` ({r.shard.kind}, worker `{r.shard.worker}`)"]
    if order_record is not None:
        src.append(f"- order-only record: `{order_record}`")
    if state is not None:
        src.append(f"- record with state: `{state.path}`")
    if r.workers:
        src.append(f"- replayed on: {', '.join(r.workers)} ({r.replays} replay(s) run, "
                   f"{r.from_journal} from an earlier run's journal)")
    if f.logs:
        src.append(f"- replay logs: {', '.join(f'`{x}`' for x in f.logs[-6:])}")
    out += ["## Source", "", *src, ""]
    return "\n".join(out)


def write_findings(outdir: Path, results: Sequence[VictimResult], states: dict[int, Record],
                   orders: dict[int, Path], commit: str | None,
                   plugins: dict[int, PluginPlan] | None = None) -> list[Path]:
    folder = outdir / "findings"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.md"):
        old.unlink()
    written: list[Path] = []
    from statesnap.backfill.run import slug

    for i, r in enumerate(results, start=1):
        path = folder / f"{i:03d}-{slug(r.finding.victim, 100)}.md"
        text = finding_markdown(r, states.get(id(r.shard)), commit, orders.get(id(r.shard)),
                                (plugins or {}).get(id(r.shard)))
        write_atomic(path, text)
        written.append(path)
    return written
