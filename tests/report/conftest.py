"""Fixtures of the report tests; the record builders live in ``report_records``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from report_records import RecordFactory, write_record

from statesnap.record.journal import Record


@pytest.fixture
def make_record(tmp_path: Path) -> RecordFactory:
    """``make_record(tests, name="record.jsonl", **write_record options)``."""

    def make(tests: Iterable[Mapping[str, Any]], name: str = "record.jsonl",
             **kwargs: Any) -> Record:
        return write_record(tmp_path / name, tests, **kwargs)

    return make
