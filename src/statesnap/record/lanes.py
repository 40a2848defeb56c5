"""The merged record of an xdist run: one lane per worker, written and read back.

The merged record, format 1 still (older readers see every test, each with its worker):

``header``       the controller's, plus ``lanes``: ``[{"worker", "path", "tests", "crashed"}]``
``lane``         starts a lane: ``worker``, ``path`` and the worker's own ``header``
(lines)          the lane's ``collection``, ``test``, ``probe_error`` ... lines as the worker
                 wrote them (each with its ``worker``); of ``start`` lines only the one a
                 crashed worker never finished
``lane_footer``  the worker's footer (absent for a worker that died)
``footer``       the controller's

:func:`read_lanes` reads it back as one Record per lane (and a plain record as one lane):
every command and backfill read lanes through it, so findings and replays never mix the tests
of two processes.  The controller writes it with :func:`merge_lanes` (statesnap.contain.xdist).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from statesnap.base.atomic import write_atomic
from statesnap.base.text import FILE_ERRORS
from statesnap.record.journal import Record, dumps
from statesnap.record.reader import read_record


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a record; a line cut short by a crash is left out."""
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for text in f:
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and "type" in obj:
                out.append(obj)
    return out


def _lane_body(lines: list[dict[str, Any]], worker: str) -> tuple[list[dict[str, Any]],
                                                                   dict[str, Any] | None]:
    """A worker's lines for the merged record (no header), and its footer."""
    finished = {obj.get("index") for obj in lines if obj["type"] == "test"}
    body: list[dict[str, Any]] = []
    footer = None
    for obj in lines[1:]:
        kind = obj["type"]
        if kind == "footer":
            footer = obj
            continue
        if kind == "start" and obj.get("index") in finished:
            continue
        body.append({**obj, "worker": obj.get("worker", worker)})
    return body, footer


def merge_lanes(target: Path, controller: Record, lanes: list[tuple[str, Path]]) -> None:
    """Write the merged record at ``target`` from the controller's record and the lane files."""
    parts: list[str] = []
    described: list[dict[str, Any]] = []
    bodies: list[str] = []
    for worker, path in lanes:
        lines = _lines(path)
        if not lines or lines[0]["type"] != "header":
            continue
        body, footer = _lane_body(lines, worker)
        tests = sum(1 for obj in body if obj["type"] == "test")
        described.append({"worker": worker, "path": str(path), "tests": tests,
                          "crashed": footer is None})
        bodies.append(dumps({"type": "lane", "worker": worker, "path": str(path),
                             "header": lines[0]}))
        bodies += [dumps(obj) for obj in body]
        if footer is not None:
            bodies.append(dumps({**footer, "type": "lane_footer", "worker": worker}))
    parts.append(dumps({**controller.header, "lanes": described}))
    parts += bodies
    parts.append(dumps(controller.footer or {"type": "footer"}))
    write_atomic(target, "\n".join(parts) + "\n")


def _record_from(lines: list[dict[str, Any]], path: Path) -> Record:
    """A Record from a lane's lines, through the one record reader there is."""
    fd, tmp = tempfile.mkstemp(suffix=".jsonl", prefix="statesnap-lane-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=FILE_ERRORS) as f:
            for obj in lines:
                f.write(dumps(obj) + "\n")
        record = read_record(tmp)
    finally:
        os.unlink(tmp)
    record.path = path
    return record


def read_lanes(path: Path | str, names: dict[str, str] | None = None) -> list[Record]:
    """One Record per lane of a merged record; a plain record is one lane.

    ``names``: as :func:`statesnap.record.reader.read_record`'s (a plain record's tests).

    Never empty: a merged record without a lane (no worker left one) is its own only lane.
    Errors reading the record (missing, truncated, unknown format) are :class:`RecordError`.
    """
    path = Path(path)
    record = read_record(path, names=names)
    if "lanes" not in record.header:
        return [record]
    lanes: list[Record] = []
    current: list[dict[str, Any]] | None = None
    current_path = path
    for obj in _lines(path)[1:]:
        kind = obj["type"]
        if kind == "lane":
            if current is not None:
                lanes.append(_record_from(current, current_path))
            current = [dict(obj.get("header") or {"type": "header", "format": 1})]
            current_path = Path(str(obj.get("path") or path))
        elif kind == "lane_footer" and current is not None:
            current.append({**obj, "type": "footer"})
        elif kind not in ("footer", "finding") and current is not None:
            current.append(obj)
    if current is not None:
        lanes.append(_record_from(current, current_path))
    # The session's verdicts follow the last lane: each lane gets its own worker's.
    for lane in lanes:
        lane.verdicts = [v for v in record.verdicts if v.get("worker", "main") == lane.worker]
    return lanes or [record]
