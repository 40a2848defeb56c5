"""A :class:`~statesnap.replay.runner.Runner` whose replays run as Dask tasks, journaled in OUTDIR.

The verifier drives it as it drives the local runner; answers that are no verdict (a port that
stayed taken, a refused task) come back as a replay that could not run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.backfill.engine import Engine
from statesnap.backfill.journal import Journal, replay_key
from statesnap.base.text import FILE_ERRORS
from statesnap.record.journal import Record
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import Runner


@dataclass
class Context:
    """What every replay of one backfill shares."""

    engine: Engine
    journal: Journal
    root: Path
    commit: str | None
    checkout: str | None
    exclude: list[str]
    timeout: float
    #: Called with +1 when a replay is queued, -1 when it finished, and whether it ran now.
    on_replay: Callable[[int, bool], None] = lambda _d, _fresh: None
    refusals: list[str] = field(default_factory=list)


class RemoteRunner(Runner):
    def __init__(self, record: Record, ctx: Context, logs_dir: Path,
                 worker: str | None = None) -> None:
        super().__init__(record, logs_dir=logs_dir, timeout=ctx.timeout, stage_files=False)
        self.ctx = ctx
        self.worker = worker
        #: Workers this runner's replays ran on, in order (more than one: a worker was lost).
        self.workers_used: list[str] = []
        #: Workers that died while running one of this runner's replays.
        self.lost: list[str] = []
        self.fresh = 0
        self.from_journal = 0
        self.history: list[tuple[str, ReplayResult]] = []
        #: Files the verifier sets aside (leftovers of earlier runs): removed from the
        #: worker's scratch copy before each replay, which puts them back after.
        self.aside_paths: list[str] = []

    def set_aside(self, paths: Sequence[Path]) -> None:
        self.aside_paths = [str(p) for p in paths]

    def spec(self, order: Sequence[str], restore: Mapping[str, Any] | None, label: str,
             want_record: bool = False, plain: str | None = None) -> dict[str, Any]:
        return {"root": str(self.ctx.root), "checkout": self.ctx.checkout,
                "commit": self.ctx.commit, "exclude": self.ctx.exclude,
                "header": self.header, "order": list(order),
                "restore": dict(restore) if restore is not None else None, "label": label,
                "timeout": self.timeout, "probes": self.probes, "want_record": want_record,
                "plain": plain, "python": self.python(), "aside": list(self.aside_paths)}

    def key(self, spec: Mapping[str, Any], attempt: int) -> str:
        return replay_key(commit=spec["commit"], args=(self.header.get("replay") or {}),
                          probes=spec["probes"], order=spec["order"], restore=spec["restore"],
                          plain=spec["plain"], record=spec["want_record"], attempt=attempt,
                          aside=spec["aside"])

    def answer(self, spec: dict[str, Any], attempt: int = 0) -> dict[str, Any]:
        """The task's answer for ``spec``: from the journal, or run now and journaled."""
        key = self.key(spec, attempt)
        found = self.ctx.journal.get(key)
        if found is not None:
            self.from_journal += 1
            self.ctx.on_replay(0, False)
            return found
        self.ctx.on_replay(1, True)
        try:
            out = self.ctx.engine.run(spec, self.worker)
        finally:
            self.ctx.on_replay(-1, True)
        self.lost += [str(w) for w in out.get("lost") or []]
        ran_on = str(out.get("worker") or "")
        if ran_on:
            if ran_on != self.worker and self.worker is not None and not out.get("refused"):
                self.worker = ran_on  # the pinned worker was lost: its successor compares
            self.workers_used.append(ran_on)
        if out.get("refused"):
            self.ctx.refusals.append(str(out["refused"]))
            return out  # not journaled: another worker may take it next time
        self.fresh += 1
        self.processes += int(out.get("attempts") or 1)
        self.executions += len(spec["order"]) * int(out.get("attempts") or 1)
        self.ctx.journal.put(key, out)
        return out

    def run(self, order: Sequence[str], restore: Mapping[str, Any] | None = None,
            label: str = "replay", timeout: float | None = None,
            attempt: int = 0, want_record: bool = False) -> ReplayResult:
        spec = self.spec(order, restore, label, want_record)
        out = self.answer(spec, attempt)
        return self.result(order, out, label)

    def run_printed(self, command: str, order: Sequence[str], label: str = "confirm",
                    timeout: float | None = None, python: str | None = None) -> ReplayResult:
        """The printed line run as printed on a worker, in its scratch copy (a task's
        ``plain``: statesnap.backfill.tasks)."""
        spec = self.spec(order, None, label, plain=command)
        return self.result(order, self.answer(spec), label)

    def result(self, order: Sequence[str], out: Mapping[str, Any], label: str) -> ReplayResult:
        stem, log = self.claim(label)
        log.write_text(str(out.get("log") or out.get("refused") or out.get("error") or ""),
                       "utf-8", FILE_ERRORS)
        result = ReplayResult(order=list(order), log=log, timeout=self.timeout)
        result.returncode = out.get("returncode")
        result.timed_out = bool(out.get("timed_out"))
        result.duration = float(out.get("duration") or 0.0)
        result.restored = list(out.get("restored") or [])
        result.error = out.get("error")
        if out.get("refused"):
            result.error = str(out["refused"])
        elif out.get("port_conflict"):
            result.error = (f"a port stayed taken in {out.get('attempts')} attempts "
                            f"({out['port_conflict']}): not the victim's verdict")
        else:
            result.outcomes = dict(out.get("outcomes") or {})
            result.failures = dict(out.get("failures") or {})
        if out.get("record"):
            result.record = self.logs_dir / f"{stem}.jsonl"
            result.record.write_text(str(out["record"]), "utf-8", FILE_ERRORS)
        self.history.append((label, result))
        return result
