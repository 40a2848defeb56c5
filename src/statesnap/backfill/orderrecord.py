"""Order-only records: a record (format 1) with the order and outcomes, and no state data.

The header says where it came from (``source``) and that it holds no state (``order_only``), so
``statesnap replay``, ``bisect`` and ``hunt`` run on it as on any record.
"""

from __future__ import annotations

import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from statesnap.backfill.optiontable import FALLBACK
from statesnap.backfill.shard import FAILING, Shard
from statesnap.base.version import __version__
from statesnap.record.journal import FORMAT, RecordWriter
from statesnap.replay.args import OptionTable, replay_args

#: Dropped with their value as well: outputs of the recorded run a replay must not write.
_OUTPUTS = frozenset({"--replay-record-dir", "--replay", "--replay-base-name"})


def replay_invocation(args: list[str] | None, table: OptionTable = FALLBACK,
                      cwd: Path | None = None) -> list[str]:
    """The recorded arguments a replay keeps, statesnap first; ``table`` is the checkout's
    (statesnap.backfill.optiontable), ``cwd`` where ``@FILE`` arguments are read from."""
    kept = replay_args(args or [], table, cwd=cwd)
    out: list[str] = []
    skip = False
    for arg in kept:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _OUTPUTS:
            skip = "=" not in arg
            continue
        out.append(arg)
    if "statesnap" not in " ".join(out):
        out = ["-p", "statesnap", *out]
    return out


def order_header(shard: Shard, root: Path, table: OptionTable = FALLBACK,
                 blocked: list[str] | None = None) -> dict[str, Any]:
    """``blocked``: ``-p no:NAME`` arguments for the plugins installed here that CI did not
    load (statesnap.backfill.plugins); every replay and printed command carries them."""
    return {
        "type": "header",
        "format": FORMAT,
        "statesnap_version": __version__,
        "run_id": uuid.uuid4().hex[:12],
        "worker": shard.worker,
        "started": time.time(),
        "python": {"version": platform.python_version(),
                   "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.system(), "machine": platform.machine()},
        "plugins": [f"{n}-{v}" for n, v in sorted((shard.plugins or {}).items())],
        "args": list(shard.args or []),
        "invocation_dir": str(root),
        "rootdir": str(root),
        "seed": None,
        "probes": [],
        "env": {},
        "notes": {"backfill": "; ".join(shard.notes)} if shard.notes else {},
        "replay": {"args": [*replay_invocation(shard.args, table, root), *(blocked or [])],
                   "cwd": str(root)},
        "order_only": True,
        "source": {"path": str(shard.source), "kind": shard.kind, "worker": shard.worker},
    }


def write_order_record(shard: Shard, root: Path, path: Path,
                       table: OptionTable = FALLBACK, blocked: list[str] | None = None) -> Path:
    """Write ``shard`` as an order-only record at ``path`` (replaced whole)."""
    tmp = path.with_name(f".{path.name}.tmp")
    writer = RecordWriter(tmp)
    try:
        writer.write(order_header(shard, root, table, blocked))
        for index, nodeid in enumerate(shard.order):
            outcome = shard.outcomes.get(nodeid, "unknown")
            if outcome == "crashed":
                writer.write({"type": "start", "index": index, "nodeid": nodeid})
                continue
            line: dict[str, Any] = {
                "type": "test", "index": index, "nodeid": nodeid, "worker": shard.worker,
                "outcome": "failed" if outcome in FAILING else outcome,
                "phases": _phases(outcome), "duration": 0.0, "changes": []}
            failure = shard.failures.get(nodeid)
            if failure is not None:
                line["failure"] = {k: v for k, v in failure.items() if v is not None}
            writer.write(line)
        if not any(shard.outcomes.get(n) == "crashed" for n in shard.order):
            writer.write({"type": "footer", "tests": len(shard.order)})
    finally:
        writer.close()
    tmp.replace(path)
    return path


def _phases(outcome: str) -> dict[str, str]:
    if outcome == "error":
        return {"setup": "failed"}
    if outcome == "failed":
        return {"setup": "passed", "call": "failed"}
    if outcome == "skipped":
        return {"setup": "skipped"}
    return {"setup": "passed", "call": "passed" if outcome != "unknown" else outcome}
