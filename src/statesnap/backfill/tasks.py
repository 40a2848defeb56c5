"""The replay task a Dask worker runs: an order, the victim, the invocation in; outcomes out.

Runs in the worker's own scratch copy of its checkout (:mod:`.scratch`) with the replay runner
(:class:`statesnap.replay.runner.Runner`); answers ``refused`` (another commit) or
``port_conflict`` (a port stayed taken) instead of outcomes.  See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record
from statesnap.replay.ports import port_taken
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import Runner
from statesnap.replay.scratch import ScratchTree, map_paths, mapped_header

PORT_ATTEMPTS = 3

_TREES: dict[tuple[str, tuple[str, ...]], ScratchTree] = {}


def worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def checkout_commit(path: str) -> str | None:
    """The commit checked out at ``path`` now (asked per task: a worker outlives a backfill,
    and its checkout may move between two)."""
    try:
        proc = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _tree(checkout: str, commit: str | None, exclude: list[str]) -> ScratchTree:
    """This process's scratch copy of ``checkout`` at ``commit`` (a new one if it moved)."""
    key = (checkout, tuple(exclude))
    tree = _TREES.get(key)
    if tree is not None and tree.commit != commit:
        tree.remove()
        tree = None
    if tree is None:
        tree = _TREES[key] = ScratchTree(Path(checkout), exclude)
        tree.commit = commit
    return tree


def replay_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one replay described by ``spec`` (see :mod:`statesnap.backfill.engine`)."""
    me = worker_name()
    checkout = str(spec.get("checkout") or spec["root"])
    if not Path(checkout).is_dir():
        return {"worker": me, "refused": f"worker {me}: no checkout at {checkout}"}
    want = spec.get("commit")
    have = checkout_commit(checkout)
    if want and have != want:
        return {"worker": me, "refused": f"worker {me}: checkout {checkout} is at "
                f"{(have or 'no commit')[:12]}, the backfill is at {want[:12]}"}
    tree = _tree(checkout, have, list(spec.get("exclude") or []))
    attempts = 0
    while True:
        attempts += 1
        tree.reset()
        _set_aside(spec, tree)
        out = _plain(spec, tree) if spec.get("plain") else _replay(spec, tree)
        out["worker"] = me
        out["attempts"] = attempts
        conflict = port_taken(out.get("failures") or {}, out.get("outcomes") or {},
                              out.get("log") or "")
        if not conflict:
            return out
        if attempts >= PORT_ATTEMPTS:
            out["port_conflict"] = conflict
            return out
        time.sleep(0.5 * attempts)  # whoever holds the port may be about to release it


def _set_aside(spec: dict[str, Any], tree: ScratchTree) -> None:
    """Remove the files the verifier sets aside from the copy (the next reset restores them)."""
    for path in spec.get("aside") or []:
        given = Path(str(path))
        mine = (Path(map_paths(str(given), str(spec["root"]), str(tree.tree)))
                if given.is_absolute() else tree.tree / given)
        if mine.is_relative_to(tree.tree):  # never a file outside the copy
            mine.unlink(missing_ok=True)


def _runner(spec: dict[str, Any], tree: ScratchTree) -> Runner:
    root = str(spec["root"])
    header = mapped_header(dict(spec["header"]), root, str(tree.tree))
    record = Record(path=tree.logs / "task.jsonl", header=header)
    # One replay per runner here: a warm parent would never be forked from.
    return Runner(record, logs_dir=tree.logs, timeout=float(spec.get("timeout") or 600),
                  stage_files=False, warm=False)


def _replay(spec: dict[str, Any], tree: ScratchTree) -> dict[str, Any]:
    runner = _runner(spec, tree)
    probes = spec.get("probes")
    runner.probes = list(probes) if probes is not None else None
    try:
        result = runner.run(list(spec["order"]), restore=spec.get("restore"),
                            label=str(spec.get("label") or "replay"))
    finally:
        runner.close()
    out = _answer(result)
    if spec.get("want_record") and result.record is not None:
        out["record"] = _read(result.record)
    for path in (result.log, result.record, tree.logs / f"{_stem(result.log)}.order.json",
                 tree.logs / f"{_stem(result.log)}.restore.json"):
        if path is not None:
            path.unlink(missing_ok=True)
    return out


def _plain(spec: dict[str, Any], tree: ScratchTree) -> dict[str, Any]:
    """The printed line run exactly as printed, in the copy (statesnap.replay.printed)."""
    command = str(spec["plain"]).replace(str(spec["root"]), str(tree.tree))
    runner = _runner(spec, tree)
    python = str(spec.get("python") or "")
    try:
        result = runner.run_printed(command, list(spec["order"]),
                                    label=str(spec.get("label") or "plain"),
                                    python=python if python and Path(python).parent.is_dir()
                                    else None)
    finally:
        runner.close()
    out = _answer(result)
    if result.log is not None:
        result.log.unlink(missing_ok=True)
    return out


def _answer(result: ReplayResult) -> dict[str, Any]:
    return {"outcomes": result.outcomes, "failures": result.failures,
            "returncode": result.returncode, "timed_out": result.timed_out,
            "error": result.error, "duration": result.duration, "restored": result.restored,
            "log": _read(result.log), "record": None}


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return None


def _stem(log: Path | None) -> str:
    return "" if log is None else log.name.removesuffix(".log")
