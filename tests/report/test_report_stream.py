"""The report of a long record is written in pieces, and the pieces are the page.

A record of 267,000 tests makes a page of some 80 MB, nearly all of it the page data's
``tests`` rows (issue 27).  The rows are made as they are written, a batch at a time, and
the page never stands whole in memory: writing the report costs less than the page's size
on top of the record read, where holding the page, its JSON and their escaped copies cost
several times it.  What is written must be exactly the page :func:`build_html` makes, and
the page data exactly what ``json.dumps`` of the rows as lists gives.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest
from report_records import HOSTILE_IDS, RecordFactory, entry, env_added, polluted_tests

from statesnap.output.report import build_html, write_report
from statesnap.output.report import render as render_module
from statesnap.output.report.render import script_json
from statesnap.output.report.views import build_view

_DATA = re.compile(r'<script type="application/json" id="statesnap-data">(.*?)</script>', re.S)


def _long_ids(count: int) -> list[dict[str, object]]:
    """``count`` plain tests with node ids as long as a big suite's (some 150 characters)."""
    return [entry(i, f"tests/integration/suite_{i // 400:04d}/test_module_{i // 40:05d}.py::"
                     f"TestTheServiceLayerUnderLoad::test_a_long_descriptive_case_name[param-{i}]")
            for i in range(count)]


def test_writing_the_report_of_a_long_record_costs_less_than_the_page(
        make_record: RecordFactory, tmp_path: Path) -> None:
    # The first page loads and compiles the template: not what a long record costs.
    write_report(tmp_path / "first.html", [make_record(_long_ids(3), name="first.jsonl")], [])
    record = make_record(_long_ids(20_000))
    out = tmp_path / "report.html"
    tracemalloc.start()
    try:
        write_report(out, [record], [])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    page = out.stat().st_size
    rows = json.loads(_DATA.search(out.read_text(encoding="utf-8")).group(1))["tests"]
    assert len(rows) == 20_000
    # Holding the page whole (and its JSON, and their escaped copies) costs several pages.
    assert peak < 0.75 * page, (peak, page)


def test_the_written_report_is_the_built_page(make_record: RecordFactory,
                                              tmp_path: Path) -> None:
    tests = polluted_tests()
    tests += [entry(len(tests) + i, nodeid, changes=[env_added(f"K{i}", nodeid)])
              for i, nodeid in enumerate(HOSTILE_IDS)]
    record = make_record(tests)
    out = tmp_path / "report.html"
    write_report(out, [record], [])
    written = out.read_text(encoding="utf-8")
    built = build_html([record], [], report_dir=tmp_path)
    # The footer's time is the moment each was made.
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
    assert stamp.sub("T", written) == stamp.sub("T", built)


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_the_page_data_in_batches_is_json_dumps_of_the_rows(
        make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    # Hostile ids (a closing script tag, a lone surrogate, a line separator) across the
    # batches' edges: each batch escapes as the whole would.
    ids = [*HOSTILE_IDS, "tests/test_s.py::test_s[\udcff]", "tests/test_l.py::test_l[\u2028]",
           "tests/test_u.py::test_u[Ünïcödé & <b>]"]
    record = make_record([entry(i, nodeid) for i, nodeid in enumerate(ids)])
    view = build_view([record], [])
    monkeypatch.setattr(render_module, "ROW_BATCH", batch)
    got = str(script_json(view.data))
    as_lists = dict(view.data, tests=[list(r) for r in view.data["tests"]])
    assert got == str(script_json(as_lists))
    text = json.dumps(as_lists, ensure_ascii=False, separators=(",", ":"), default=repr)
    assert json.loads(got) == json.loads(text.encode("utf-8", "backslashreplace").decode())
    assert "</script" not in got and "\u2028" not in got
    # The lone surrogate as JSON's \udcff escape, read back as itself.
    assert [r[2] for r in json.loads(got)["tests"]] == ids
