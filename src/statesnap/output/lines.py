"""Values as one short line of text, for the terminal and the explanations."""

from __future__ import annotations

from typing import Any

VALUE_WIDTH = 60


def short(value: Any, width: int = VALUE_WIDTH) -> str:
    """A one-line rendering of a fingerprint for the terminal."""
    text = "∅" if value is None else (value if isinstance(value, str) else repr(value))
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"
