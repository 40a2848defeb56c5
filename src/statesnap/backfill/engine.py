"""Where replays run: a Dask cluster, embedded (a LocalCluster) or given by ``--scheduler``.

Every replay is one task (:func:`statesnap.backfill.tasks.replay_task`), pinned to its victim's
worker; a task whose worker died is submitted again elsewhere, and the victim follows it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from typing import Any

from statesnap.backfill.tasks import replay_task

#: How often a waiting victim checks that its worker is still alive, and looks for the answer.
WATCH_SECONDS = 2.0
POLL_SECONDS = 0.05


def _scheduler_workers(dask_scheduler: Any) -> list[str]:
    return list(dask_scheduler.workers)


class EngineError(Exception):
    """The cluster cannot be reached or started: one line."""


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class Engine:
    def __init__(self, scheduler: str | None = None, workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise EngineError("statesnap backfill needs Dask: pip install "
                              "'statesnap[distributed]'") from None
        self.cluster: Any = None
        self.embedded = scheduler is None
        self._next = 0
        self._lock = threading.Lock()
        try:
            if scheduler is None:
                self.cluster = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=workers or available_cores(), threads_per_worker=1,
                    processes=True, dashboard_address=":0", silence_logs=logging.ERROR)
                self.client: Any = Client(self.cluster)  # type: ignore[no-untyped-call]
            else:
                self.client = Client(scheduler, timeout="30s")  # type: ignore[no-untyped-call]
        except OSError as exc:
            raise EngineError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        if not self.workers():
            self.close()
            raise EngineError(f"the Dask scheduler {scheduler} has no worker")

    def workers(self) -> list[str]:
        """The workers alive now, asked of the scheduler (the client's cached view lags)."""
        found: list[str] = self.client.run_on_scheduler(_scheduler_workers)
        return sorted(found)

    def pick(self) -> str | None:
        """A worker for the next victim, round robin over those alive now."""
        alive = self.workers()
        if not alive:
            return None
        with self._lock:
            self._next += 1
            return alive[self._next % len(alive)]

    def submit(self, spec: dict[str, Any], worker: str | None) -> Any:
        where: dict[str, Any] = {"workers": [worker]} if worker else {}
        return self.client.submit(
            replay_task, spec, key=f"statesnap-replay-{uuid.uuid4().hex}", pure=False, **where)

    def run(self, spec: dict[str, Any], worker: str | None) -> dict[str, Any]:
        """The task's answer, run on ``worker`` (or another when that one is lost)."""
        future = self.submit(spec, worker)
        lost: list[str] = []
        checked = time.monotonic()
        # Polled, not ``future.result(timeout=...)``: a timeout there can race the answer.
        while not future.done():
            time.sleep(POLL_SECONDS)
            if worker is None or time.monotonic() - checked < WATCH_SECONDS:
                continue
            checked = time.monotonic()
            if worker in self.workers():
                continue
            future.cancel()
            lost.append(worker)
            worker = self.pick()
            future = self.submit(spec, worker)
        try:
            result: dict[str, Any] = future.result()
        except Exception as exc:  # the cluster gave up on it (KilledWorker, ...)
            return {"error": f"the cluster could not run the replay: "
                             f"{type(exc).__name__}: {exc}", "lost": lost}
        result["lost"] = lost
        return result

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
