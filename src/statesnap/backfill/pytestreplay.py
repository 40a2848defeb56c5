"""pytest-replay's files (``--replay-record-dir``): ``.pytest-replay[-gwN].txt``.

One JSON object per line: ``{"nodeid", "start"}`` when a test starts, then ``{"nodeid",
"start", "finish", "outcome"}`` when it finishes (older versions wrote bare node ids, one a
line).  A test that started and never finished was running when the process died: it is the
crashed test.  The worker comes from the file name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from statesnap.backfill.shard import BadArtifact, Shard

NAME = re.compile(r"^\.?pytest-replay(?:-(?P<worker>gw\d+))?\.txt$")


def is_replay_file(path: Path) -> bool:
    return NAME.match(path.name) is not None or path.name.startswith(".pytest-replay")


def parse_replay(path: Path, text: str) -> list[Shard]:
    found = re.search(r"-(gw\d+)\.", path.name)
    worker = found.group(1) if found else "main"
    order: list[str] = []
    outcomes: dict[str, str] = {}
    finished = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                obj: Any = json.loads(line)
            except json.JSONDecodeError:
                raise BadArtifact(f"{path}:{lineno}: not a pytest-replay line") from None
            if not isinstance(obj, dict):
                raise BadArtifact(f"{path}:{lineno}: not a pytest-replay line")
            nodeid = obj.get("nodeid")
            if not isinstance(nodeid, str):
                continue  # metadata lines of newer versions
            if nodeid not in order:
                order.append(nodeid)
            finished = finished or "finish" in obj
            outcome = obj.get("outcome")
            if isinstance(outcome, str):
                outcomes[nodeid] = outcome
            elif "finish" not in obj:
                outcomes.setdefault(nodeid, "crashed")
        elif "::" in line or line.endswith(".py"):
            if line not in order:
                order.append(line)
        else:
            raise BadArtifact(f"{path}:{lineno}: not a pytest-replay line")
    if not order:
        raise BadArtifact(f"{path}: a pytest-replay file with no test")
    # Only the last started test can still be running (a finished one's outcome replaced
    # the guess above); a version that writes no finish lines says nothing about crashes.
    for nodeid in order[:-1] if finished else order:
        if outcomes.get(nodeid) == "crashed":
            outcomes.pop(nodeid)
    return [Shard(source=path, kind="pytest-replay", worker=worker, order=order,
                  outcomes=outcomes)]
