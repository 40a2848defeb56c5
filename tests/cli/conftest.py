"""The CLI tests' shared recorded runs (see :mod:`cli_runs`)."""

from __future__ import annotations

from cli_runs import zoo

__all__ = ["zoo"]
