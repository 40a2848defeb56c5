"""One victim's candidate pairs side by side: ``[suspect, victim]`` for each suspect, run on the
workers that have no victim left to verify, with the verdict one at a time gives.

One at a time, the first suspect in rank order whose pair fails the victim as the run did is
the polluter.  Here the victim's own worker and the idle workers take the pairs in rank order,
but the answers are read in rank order too: a later pair that fails the victim is accepted only
once every earlier one has answered no, and the pairs after the accepted one are not needed (not
started; one in flight is killed, :meth:`Runner.abort`, which signals only the replays statesnap
started, and its files dropped).  A pair's error (budget spent, timeout, repeats that disagree,
a replay that cannot run) counts where one at a time would have met it: at its rank.

A pair may be the printed line itself (``printed``: the top suspect's pair, run cold as
printed, statesnap.proof.verify): that one is run by the victim's own worker only, in the files
and environment its confirmation would use, never on a helper's scratch copy.

What each pair ran is kept apart and merged into the finding in rank order, so the finding
lists the replays one at a time lists.  A pair is compared only with the recorded failure, so
it may run in another worker's environment (its scratch copy); what is compared with the alone
replay, and the key proofs, stay on the victim's own worker.  Why: docs/ARCHITECTURE.md
("Replays side by side").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from statesnap.analysis.findings import Finding, ReplayRun
from statesnap.proof.replays import Replayer, Stopped
from statesnap.replay.runner import Runner

#: The label of a pair run cold, exactly as printed (what also confirms that line).
PRINTED_PAIR = "pair-printed"

#: How often a thread waiting for a pair looks at the stop event (a Ctrl-C).
_POLL = 0.2


class _Pair:
    """One suspect's pair: who runs it, and what it answered."""

    __slots__ = ("error", "failed", "kept", "logs", "printed", "runner", "runs", "state",
                 "suspect")

    def __init__(self, suspect: str, printed: str | None = None) -> None:
        self.suspect = suspect
        #: The printed line this pair runs as printed (the owner's only), or None: a replay.
        self.printed = printed
        #: "pending", "running" or "done".
        self.state = "pending"
        self.runner: Runner | None = None
        self.failed = False
        self.error: Exception | None = None
        self.logs: list[str] = []
        self.runs: list[ReplayRun] = []
        #: Its replays were merged into the finding (its rank's answer was read).
        self.kept = False


class _Batch:
    """The pairs of one victim, in rank order."""

    def __init__(self, finding: Finding, victim: str, suspects: Sequence[str],
                 base: Path, printed: Sequence[str | None] = ()) -> None:
        self.finding = finding
        #: The record's folder: the logs' links are relative to it.
        self.base = base
        self.victim = victim
        lines = [*printed, *[None] * (len(suspects) - len(printed))]
        self.pairs = [_Pair(s, line) for s, line in zip(suspects, lines, strict=True)]
        #: Set once the verdict is settled: the pairs still pending are not started, and the
        #: answers of those in flight are thrown away.
        self.closed = False

    def next_pending(self, owner: bool = True) -> _Pair | None:
        """The first pair not started; a helper (``owner`` false) skips the printed ones."""
        if self.closed:
            return None
        return next((p for p in self.pairs if p.state == "pending"
                     and (owner or p.printed is None)), None)


class PairBoard:
    """The pairs the victims' workers put up, and the idle workers that run them."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self._cond = threading.Condition()
        self._batches: list[_Batch] = []
        #: Workers still verifying a victim of their own: they may yet put pairs up.
        self._busy = 0

    # -- the victims' workers -------------------------------------------------------------
    def busy(self) -> None:
        with self._cond:
            self._busy += 1

    def idle(self) -> None:
        """A worker has no victim of its own any more (none left to take, or it failed)."""
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def first_failing(self, owner: Replayer, finding: Finding, victim: str,
                      suspects: Sequence[str], printed: Sequence[str | None] = ()
                      ) -> int | None:
        """The rank of the first of ``suspects`` whose pair fails ``victim`` as the run did
        (None: none does), the pairs run by ``owner`` and the idle workers; the finding gets
        the replays of the pairs up to that one, in rank order.  A pair's error is raised at
        its rank.  ``printed``: per rank, the line that pair runs as printed (owner only)."""
        batch = _Batch(finding, victim, suspects, owner.record.path.parent, printed)
        with self._cond:
            self._batches.append(batch)
            self._cond.notify_all()
        settled = 0
        try:
            while settled < len(batch.pairs):
                pair = batch.pairs[settled]
                with self._cond:
                    if pair.state == "done":
                        settled += 1
                        self._keep(batch, pair)
                        if pair.error is not None:
                            raise pair.error
                        if pair.failed:
                            return settled - 1
                        continue
                    mine = batch.next_pending()
                    if mine is not None:
                        mine.state, mine.runner = "running", owner.runner
                    else:
                        self._cond.wait(_POLL)
                if owner.stop is not None and owner.stop.is_set():
                    raise Stopped()
                if mine is not None:
                    self._run(owner, batch, mine)
            return None
        finally:
            self._close(batch)

    def _keep(self, batch: _Batch, pair: _Pair) -> None:
        pair.kept = True
        batch.finding.logs.extend(pair.logs)
        batch.finding.replays.extend(pair.runs)

    def _close(self, batch: _Batch) -> None:
        """The verdict is settled (or cut short): kill the pairs still in flight on other
        workers; their workers throw their answers away, as this does with the answers
        that came after the verdict's."""
        with self._cond:
            batch.closed = True
            if batch in self._batches:
                self._batches.remove(batch)
            for pair in batch.pairs:
                if pair.state == "running" and pair.runner is not None:
                    pair.runner.abort()
                elif pair.state == "done" and not pair.kept:
                    _forget(batch.base, pair.logs)
            self._cond.notify_all()

    # -- the idle workers -----------------------------------------------------------------
    def help(self, helper: Replayer) -> None:
        """Run pairs others put up until no worker is verifying a victim any more."""
        while True:
            with self._cond:
                batch, pair = self._take(helper)
                while pair is None:
                    if self._busy == 0 or self.stop.is_set():
                        return
                    self._cond.wait(_POLL)
                    batch, pair = self._take(helper)
            assert batch is not None
            helper.runner.select_probes([c.probe for c in batch.finding.candidates])
            self._run(helper, batch, pair)

    def _take(self, helper: Replayer) -> tuple[_Batch | None, _Pair | None]:
        for batch in self._batches:
            pair = batch.next_pending(owner=False)
            if pair is not None:
                pair.state, pair.runner = "running", helper.runner
                return batch, pair
        return None, None

    def _run(self, replayer: Replayer, batch: _Batch, pair: _Pair) -> None:
        """Run ``pair`` with ``replayer``; its replays are kept on the pair, not the finding."""
        f = batch.finding
        if batch.closed:  # settled between its taking and now: not needed
            with self._cond:
                pair.state, pair.runner = "done", None
                self._cond.notify_all()
            return
        scratch = Finding(victim=f.victim, polluters=[], probe=None, key=None, status=f.status,
                          worker=f.worker, exc_type=f.exc_type, message=f.message, where=f.where)
        failed, error = False, None
        replayer.progress(f"statesnap: replaying {pair.suspect} → {batch.victim}")
        try:
            verdict = replayer.replay([pair.suspect, batch.victim], batch.victim, scratch,
                                      PRINTED_PAIR if pair.printed else "pair",
                                      printed=pair.printed)
            failed = (replayer.same_printed_failure(verdict, scratch) if pair.printed
                      else replayer.same_failure(verdict, scratch))
        except Stopped:
            with self._cond:
                pair.state = "done"  # its replay was killed: no answer, nothing kept
                self._cond.notify_all()
            raise
        except Exception as exc:  # every error is the owner's to raise, at this pair's rank
            error = exc
        with self._cond:
            pair.state, pair.runner = "done", None
            if batch.closed:
                _forget(batch.base, scratch.logs)
            else:
                pair.failed, pair.error = failed, error
                pair.logs, pair.runs = scratch.logs, scratch.replays
            self._cond.notify_all()


def _forget(base: Path, logs: Sequence[str]) -> None:
    """A pair not needed (killed, or answered after the verdict): its order, record and
    restore files go, as a replay a Ctrl-C killed; its log stays."""
    for link in logs:
        log = Path(link) if Path(link).is_absolute() else base / link
        stem = log.name.removesuffix(".log")
        for name in (f"{stem}.jsonl", f"{stem}.order.json", f"{stem}.restore.json"):
            log.with_name(name).unlink(missing_ok=True)
