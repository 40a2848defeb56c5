"""A real module written from source under ``tmp_path`` and imported, for the probes' tests
(the attributes probe watches only modules of the project under its rootdir)."""

from __future__ import annotations

import importlib
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest


def imported_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str,
                    source: str) -> Iterator[types.ModuleType]:
    """Yield module ``<prefix><tmp_path's name>`` made from ``source``; gone from
    ``sys.modules`` afterwards (a fixture's body: ``yield from imported_module(...)``)."""
    name = f"{prefix}{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield importlib.import_module(name)
    sys.modules.pop(name, None)
