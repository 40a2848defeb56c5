"""Golden reports: the committed records render to the committed (scrubbed) pages.

A difference means the page changed: if on purpose, rewrite the goldens with
``.venv/bin/python tests/report/report_golden.py`` (``make golden``) and review the diff.
"""

from __future__ import annotations

import difflib

import pytest
from report_golden import GOLDENS, RECORDS, Golden

from statesnap.record import READABLE_FORMATS, read_record


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: g.name)
def test_golden_report(golden: Golden) -> None:
    expected = golden.path.read_text(encoding="utf-8")
    actual = golden.render()
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=str(golden.path), tofile="rendered now", n=2))
        pytest.fail(f"{golden.path.name} changed; if intended, run "
                    f"`python tests/report/report_golden.py`:\n{diff[:6000]}")


def test_the_format_1_sample_record_stays_readable() -> None:
    record = read_record(RECORDS / "format1-sample.jsonl")
    assert record.header["format"] == 1 in READABLE_FORMATS
    assert record.footer is not None and not record.truncated
    nodeids = record.order()
    assert "test_victims.py::test_default_mode_is_safe" in nodeids
    assert any("<script>" in n for n in nodeids)
    assert any(t.extra.get("gauges") for t in record.tests)


def test_the_sample_golden_shows_its_findings_and_escapes_hostile_ids() -> None:
    html = GOLDENS[0].path.read_text(encoding="utf-8")
    assert html.count('class="badge status-verified"') == 2
    assert "test_config.py::test_enable_fast_mode" in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<script>window.__pwned" not in html
    assert 'href="../records/format1-sample.logs/003-pair.log"' in html
