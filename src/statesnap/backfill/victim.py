"""One failing test, the PyTorch workflow: rerun in order, classify, minimise, prove, confirm.

The order up to the victim ``repeat`` times, then :class:`statesnap.proof.verify.Verifier` as in
the plugin, then the printed reproduction and the victim alone run as a user would run them.
The steps are in docs/ARCHITECTURE.md ("Backfill").
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import Any

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import (
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.backfill.remote import RemoteRunner
from statesnap.backfill.shard import Shard
from statesnap.base.progress import Progress
from statesnap.proof.verify import Verifier
from statesnap.record.journal import Record
from statesnap.replay.repro import repro_command


@dataclass
class Confirmation:
    """A printed command run exactly as printed, and what the victim did in it."""

    command: str
    outcome: str | None
    worker: str | None = None


@dataclass
class VictimResult:
    finding: Finding
    shard: Shard
    in_order: list[str] = field(default_factory=list)
    repro: Confirmation | None = None
    alone: Confirmation | None = None
    workers: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    replays: int = 0
    executions: int = 0
    from_journal: int = 0
    #: It failed alone here, where the replays could not load CI's plugins: whether it is
    #: order-dependent in CI is not known (statesnap.backfill.plugins.qualify).
    plugins_doubt: bool = False


def prefix_order(record: Record, victim: str) -> list[str]:
    order = [t.nodeid for t in sorted(record.tests, key=lambda t: t.index)]
    if record.running is not None:
        order.append(str(record.running["nodeid"]))
    return order[: order.index(victim) + 1] if victim in order else [victim]


def base_finding(state: Record, victim: str, shard: Shard) -> Finding:
    """The attributed finding of ``victim`` in the state record (or a bare one)."""
    for finding in attribute(state):
        if finding.victim == victim:
            return finding
    failure = shard.failures.get(victim) or {}
    return Finding(victim=victim, polluters=[], probe=None, key=None, status=UNEXPLAINED,
                   worker=state.worker, exc_type=failure.get("exc_type"),
                   message=failure.get("message"))


def investigate(shard: Shard, state: Record, victim: str, runner: RemoteRunner,
                repeat: int, progress: Progress) -> VictimResult:
    shutil.rmtree(runner.logs_dir, ignore_errors=True)  # a resumed run writes them again
    finding = base_finding(state, victim, shard)
    finding.worker = shard.worker
    out = VictimResult(finding=finding, shard=shard)
    order = prefix_order(state, victim)
    fails: list[bool] = []
    sig: str | None = None
    # Whether the victim fails needs no state data: the cheapest probe only.
    runner.select_probes([])
    for attempt in range(repeat):
        progress(f"{victim}: the recorded order ({len(order)} tests), run {attempt + 1}/{repeat}")
        result = runner.run(order, label="in-order", attempt=attempt)
        if result.log is not None:
            finding.logs.append(str(result.log))
        if result.error is not None and not result.outcomes:
            finding.status = UNEXPLAINED
            finding.note = f"the recorded order could not be replayed: {result.error}"
            return _done(out, runner)
        failed = result.failed(victim)
        fails.append(failed)
        if failed and sig is None:
            sig = result.exc_type(victim)
            f = result.failures.get(victim) or {}
            finding.message = f.get("message") or finding.message
    out.in_order = ["failed" if f else "passed" for f in fails]
    if not any(fails):
        finding.status = UNEXPLAINED
        finding.polluters = []
        finding.note = (f"passed in all {repeat} replay(s) of the recorded order: the CI "
                        "failure depends on something outside the order")
        return _done(out, runner)
    if not all(fails):
        finding.status = NOT_DETERMINISTIC
        finding.polluters = []
        finding.note = (f"the failure is not deterministic: the victim failed in "
                        f"{sum(fails)} of {repeat} replays of the recorded order")
        return _done(out, runner)
    finding.exc_type = sig
    verifier = Verifier(state, runner, budget=float("inf"), repeat=1, progress=progress)
    verifier.verify(finding)
    if finding.status == NOT_ORDER_DEPENDENT:
        _same_signature(finding, runner, sig)
    if finding.status == VERIFIED:
        # The verifier ran this line already (its confirmation): the journal answers.
        out.repro = _confirm(runner, finding.repro, victim, "repro",
                             [*finding.polluters, victim])
        out.alone = _confirm(runner, repro_command(state.header, [victim]), victim, "alone-plain")
    return _done(out, runner)


def _same_signature(finding: Finding, runner: RemoteRunner, sig: str | None) -> None:
    alone = next((r for label, r in runner.history if label == "alone"), None)
    if alone is None:
        return
    there = alone.exc_type(finding.victim)
    if sig and there and there != sig:
        finding.note = (f"fails alone too, but with {there} where the recorded order gives "
                        f"{sig}: two different failures")


def _confirm(runner: RemoteRunner, command: str, victim: str, label: str,
             order: list[str] | None = None) -> Confirmation:
    order = order or [victim]
    spec = runner.spec(order, None, label, plain=command)
    answer: dict[str, Any] = runner.answer(spec)
    runner.result(order, answer, label)
    outcome = None if answer.get("refused") or answer.get("port_conflict") else (
        (answer.get("outcomes") or {}).get(victim, "not run"))
    return Confirmation(command=command, outcome=outcome, worker=answer.get("worker"))


def _done(out: VictimResult, runner: RemoteRunner) -> VictimResult:
    out.workers = list(dict.fromkeys(runner.workers_used))
    out.lost = list(runner.lost)
    if out.lost:
        words = (f"worker(s) {', '.join(out.lost)} died during a replay; it ran again on "
                 f"{out.workers[-1] if out.workers else 'another worker'}")
        out.finding.note = f"{out.finding.note}; {words}" if out.finding.note else words
    out.replays = runner.fresh
    out.executions = runner.executions
    out.from_journal = runner.from_journal
    runner.close()
    return out
