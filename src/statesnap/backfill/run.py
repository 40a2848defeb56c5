"""The whole backfill: artifacts → order-only records → state → victims → OUTDIR.

Shards with a failing test and no state data get one replay of their order with statesnap
recording (the state replay), which attribution and key-level proof then read as a native
record.  Victims run side by side, each on one worker; within a victim, replays run one at a
time, since each decides the next.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import UNEXPLAINED, Finding
from statesnap.backfill.artifacts import load
from statesnap.backfill.engine import Engine
from statesnap.backfill.journal import Journal
from statesnap.backfill.optiontable import FALLBACK, CheckoutTables
from statesnap.backfill.orderrecord import write_order_record
from statesnap.backfill.plugins import PluginPlan, installed, plan, qualify
from statesnap.backfill.progress import Progress
from statesnap.backfill.remote import Context, RemoteRunner
from statesnap.backfill.shard import Shard
from statesnap.backfill.victim import VictimResult, investigate
from statesnap.base.atomic import write_atomic
from statesnap.record.journal import Record
from statesnap.record.reader import RecordError, read_record
from statesnap.replay.scratch import mapped_header


@dataclass
class Options:
    artifacts: list[Path]
    outdir: Path
    root: Path
    repeat: int = 3
    scheduler: str | None = None
    checkout: str | None = None
    workers: int | None = None
    timeout: float = 900.0
    quiet: bool = False


@dataclass
class Outcome:
    bad: list[str] = field(default_factory=list)
    shards: list[Shard] = field(default_factory=list)
    order_records: list[Path] = field(default_factory=list)
    states: list[Record] = field(default_factory=list)
    results: list[VictimResult] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    replays: int = 0
    executions: int = 0
    resumed: int = 0
    duration: float = 0.0
    workers: int = 0
    commit: str | None = None
    #: Each shard's replay plugins against CI's, by ``id(shard)``.
    plugins: dict[int, PluginPlan] = field(default_factory=dict)


def slug(text: str, limit: int = 80) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:limit] or "x"


def git_commit(root: Path) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=60, check=False)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


class Backfill:
    def __init__(self, opts: Options, progress: Progress) -> None:
        self.opts = opts
        self.progress = progress
        self.out = Outcome()
        self._state_runners: list[RemoteRunner] = []
        self.tables = CheckoutTables(opts.root, sys.executable)

    def load(self) -> Outcome:
        """Read the artifacts and write the order-only records (no replay yet)."""
        loaded = load(self.opts.artifacts, self.opts.root, sys.executable)
        self.tables = loaded.tables or CheckoutTables(self.opts.root, sys.executable)
        self.out.bad = loaded.bad
        self.out.shards = loaded.shards
        return self.out

    def write_orders(self) -> None:
        orders = self.opts.outdir / "orders"
        orders.mkdir(parents=True, exist_ok=True)
        here = installed()
        for shard in self.out.shards:
            plugins = self.out.plugins[id(shard)] = plan(shard.plugins, _KINDS.get(
                shard.kind, shard.kind), here)
            path = orders / f"{slug(shard.source.name)}.{slug(shard.worker)}.jsonl"
            table = self.tables.table(shard.args)
            if table is FALLBACK and shard.args:
                shard.notes.append(self.tables.notes[-1] if self.tables.notes else
                                   "the recorded arguments are read with pytest's own options")
            self.out.order_records.append(
                write_order_record(shard, self.opts.root, path, table, plugins.block_args()))

    def run(self) -> Outcome:
        t0 = time.monotonic()
        opts = self.opts
        self.out.commit = git_commit(opts.root)
        self.write_orders()
        journal = Journal(opts.outdir)
        exclude = []
        if opts.outdir.resolve().is_relative_to(opts.root.resolve()):
            exclude.append(opts.outdir.resolve().relative_to(opts.root.resolve()).parts[0])
        with_victims = [(s, p) for s, p in zip(self.out.shards, self.out.order_records,
                                               strict=True) if s.failing()]
        victims = _victims(with_victims)
        self.progress.set_victims(len(victims))
        if not victims:  # nothing to replay: no cluster to start
            journal.close()
            self.out.duration = time.monotonic() - t0
            return self.out
        try:
            engine = Engine(opts.scheduler, opts.workers)
        except BaseException:
            journal.close()
            raise
        self.out.workers = len(engine.workers())
        ctx = Context(engine=engine, journal=journal, root=opts.root.resolve(),
                      commit=self.out.commit, checkout=opts.checkout, exclude=exclude,
                      timeout=opts.timeout, on_replay=self.progress.replay)
        try:
            with ThreadPoolExecutor(max_workers=max(1, len(with_victims))) as pool:
                states = list(pool.map(lambda sp: self.state(ctx, *sp), with_victims))
            state_of = {id(s): st for (s, _p), st in zip(with_victims, states, strict=True)}
            self.out.states = [st for st in states if isinstance(st, Record)]
            with ThreadPoolExecutor(max_workers=max(1, len(victims))) as pool:
                self.out.results = list(pool.map(
                    lambda sv: self.victim(ctx, sv[0], state_of[id(sv[0])], sv[1]), victims))
        finally:
            engine.close()
            journal.close()
        self.out.refusals = list(dict.fromkeys(ctx.refusals))
        self.out.replays = (sum(r.replays for r in self.out.results)
                            + sum(r.fresh for r in self._state_runners))
        self.out.executions = (sum(r.executions for r in self.out.results)
                               + sum(r.executions for r in self._state_runners))
        self.out.resumed = (sum(r.from_journal for r in self.out.results)
                            + sum(r.from_journal for r in self._state_runners))
        self.out.duration = time.monotonic() - t0
        return self.out

    def state(self, ctx: Context, shard: Shard, order_path: Path) -> Record | str:
        """The record with state data for ``shard``: its own, or its first replay's."""
        root = str(self.opts.root.resolve())
        if shard.record is not None:
            rec = shard.record
            old = str(rec.header.get("rootdir") or root)
            header = with_blocks(mapped_header(rec.header, old, root),
                                 self.out.plugins[id(shard)].block_args())
            return Record(path=rec.path, header=header,
                          collection=rec.collection, tests=rec.tests, errors=rec.errors,
                          footer=rec.footer, running=rec.running)
        order_record = read_record(order_path)
        logs = self.opts.outdir / "logs" / f"state-{slug(shard.label)}"
        runner = RemoteRunner(order_record, ctx, logs)
        self._state_runners.append(runner)
        self.progress.line(f"statesnap backfill: recording state: {shard.label} "
                           f"({len(shard.order)} tests)")
        result = runner.run(shard.order, label="state", want_record=True)
        if result.record is None:
            return (f"the recorded order could not be replayed with statesnap: "
                    f"{result.error or 'no record came back'} (log: {result.log})")
        try:
            child = read_record(result.record)
        except RecordError as exc:
            return f"the state replay left no readable record: {exc}"
        header = mapped_header(child.header, str(child.header.get("rootdir") or root), root)
        header["backfill_source"] = {"path": str(shard.source), "kind": shard.kind,
                                     "worker": shard.worker}
        target = self.opts.outdir / "records" / f"{slug(shard.label)}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        text = result.record.read_text("utf-8")
        _first, _, rest = text.partition("\n")
        from statesnap.record.journal import dumps

        write_atomic(target, dumps(header) + "\n" + rest)
        return read_record(target)

    def victim(self, ctx: Context, shard: Shard, state: Record | str,
               victim: str) -> VictimResult:
        if isinstance(state, str):
            failure = shard.failures.get(victim) or {}
            finding = Finding(victim=victim, polluters=[], probe=None, key=None,
                              status=UNEXPLAINED, worker=shard.worker, note=state,
                              exc_type=failure.get("exc_type"), message=failure.get("message"))
            result = VictimResult(finding=finding, shard=shard)
        else:
            logs = self.opts.outdir / "logs" / slug(victim)
            runner = RemoteRunner(state, ctx, logs, worker=ctx.engine.pick())
            result = investigate(shard, state, victim, runner, self.opts.repeat,
                                 lambda _msg: None)
            result.plugins_doubt = qualify(result.finding, self.out.plugins[id(shard)])
        self.progress.victim_done(f"{result.finding.status}: {victim}")
        return result


#: How an artifact kind is named where it says it names no plugins.
_KINDS = {"junit": "JUnit XML", "pytest-replay": "pytest-replay", "log": "console log",
          "statesnap": "statesnap record"}


def with_blocks(header: dict[str, Any], blocked: list[str]) -> dict[str, Any]:
    """``header`` whose replay arguments also block ``blocked`` (``-p no:NAME`` pairs)."""
    if not blocked:
        return header
    replay = dict(header.get("replay") or {})
    replay["args"] = [*(replay.get("args") or ["-p", "statesnap"]), *blocked]
    if isinstance(replay.get("plain_args"), list):
        replay["plain_args"] = [*replay["plain_args"], *blocked]
    return {**header, "replay": replay}


def _victims(shards: list[tuple[Shard, Path]]) -> list[tuple[Shard, str]]:
    seen: set[str] = set()
    out: list[tuple[Shard, str]] = []
    for shard, _path in shards:
        for victim in shard.failing():
            if victim not in seen:
                seen.add(victim)
                out.append((shard, victim))
    return out
