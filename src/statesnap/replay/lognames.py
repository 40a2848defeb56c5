"""Replay logs: each replay's ``NNN-label`` stem claimed exclusively, and the heading every
replay log starts with (the command, the folder, the order, any restore).

Numbers continue across runners and processes (the session's verification, then a CLI
``bisect`` on the same record), so no replay's log overwrites another's.
"""

from __future__ import annotations

import json
import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: How many node ids of the order a log's heading lists (the order file has them all).
MAX_LOGGED_IDS = 20

#: Replays side by side (statesnap.proof.sidebyside) claim their log numbers one at a time:
#: two labels would otherwise get the same number.
_CLAIM_LOCK = threading.Lock()


def claim_log(logs_dir: Path, label: str) -> tuple[str, Path]:
    """The next free ``NNN-label`` stem in ``logs_dir`` and its log, created exclusively."""
    with _CLAIM_LOCK:
        logs_dir.mkdir(parents=True, exist_ok=True)
        taken = [int(p.name[:3]) for p in logs_dir.glob("[0-9][0-9][0-9]-*")
                 if p.name[:3].isdigit()]
        n = max(taken, default=0)
        while True:
            n += 1
            stem = f"{n:03d}-{label}"
            log = logs_dir / f"{stem}.log"
            try:
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            os.close(fd)
            return stem, log


def write_heading(log: IO[str], cmd: Sequence[str], cwd: Path, order: Sequence[str],
                  order_file: Path, restore: Mapping[str, Any] | None) -> None:
    """A replay log's first lines: what ran, where, on which order, restoring what."""
    log.write("$ " + shlex.join(cmd) + "\n")
    log.write(f"# cwd: {cwd}\n")
    shown = "\n#   ".join(order[:MAX_LOGGED_IDS])
    more = (f"\n#   … {len(order) - MAX_LOGGED_IDS} more in {order_file.name}"
            if len(order) > MAX_LOGGED_IDS else "")
    log.write(f"# order ({len(order)} test(s)):\n#   {shown}{more}\n")
    if restore is not None:
        log.write(f"# restore before the victim: {json.dumps(restore)}\n")
    log.write("\n")
    log.flush()
