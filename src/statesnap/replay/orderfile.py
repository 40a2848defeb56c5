"""The order file of a replay: the exact node ids a child pytest runs, in order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from statesnap.base.text import FILE_ERRORS


def write_order(path: Path, order: Sequence[str]) -> None:
    """A JSON list of node ids (``--statesnap-order`` reads it)."""
    path.write_text(json.dumps(list(order), ensure_ascii=False) + "\n", encoding="utf-8",
                    errors=FILE_ERRORS)


def read_order(path: Path) -> list[str]:
    """The node ids of an order file: a JSON list, or one id per line.

    Raises ``ValueError`` on a JSON value that is not a list of node ids.
    """
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        data = json.loads(text)
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise ValueError("expected a JSON list of node ids")
        return data
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]
