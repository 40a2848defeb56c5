"""The command a hunt prints for an order of tests: plain pytest, whatever the order's length.

A long order's node ids go into an arguments file passed as ``@FILE`` (pytest 8.2 and later);
the command holds nothing of statesnap's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.base.text import FILE_ERRORS
from statesnap.replay.repro import command_order, repro_command

#: Orders up to this many tests are printed as node ids.
MAX_INLINE = 8
#: The first pytest that reads ``@FILE`` arguments.
ARGS_FILE_PYTEST = (8, 2)


def up_to(order: Sequence[str], nodeid: str) -> list[str]:
    """``order`` cut after ``nodeid``: what ran after a test cannot have made it fail."""
    items = list(order)
    return items[: items.index(nodeid) + 1] if nodeid in items else items


def reads_args_files(header: Mapping[str, Any]) -> bool:
    """Whether the recorded run's pytest reads ``@FILE`` arguments."""
    version = str((header.get("packages") or {}).get("pytest") or "")
    found = re.match(r"(\d+)\.(\d+)", version)
    return found is not None and (int(found[1]), int(found[2])) >= ARGS_FILE_PYTEST


def order_command(header: Mapping[str, Any], order: Sequence[str],
                  args_file: Path | None) -> str:
    """A plain pytest command running ``order`` exactly; a long order through ``args_file``
    (written here) where the recorded pytest reads one."""
    if len(order) <= MAX_INLINE or args_file is None or not reads_args_files(header):
        return repro_command(header, order)
    named = command_order(header, order)
    args_file.write_text("".join(f"{nodeid}\n" for nodeid in named), encoding="utf-8",
                         errors=FILE_ERRORS)
    return repro_command(header, [f"@{args_file.resolve()}"])


def args_file_of(order_file: str | None) -> Path | None:
    """``NNN-label.args`` beside a run's ``NNN-label.order.json`` (None without one)."""
    if not order_file:
        return None
    path = Path(order_file)
    name = path.name.removesuffix(".order.json")
    return path.with_name(f"{name}.args")
