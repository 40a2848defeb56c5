"""Golden reports: the committed records render to the committed (scrubbed) pages.

A difference means the page changed: if on purpose, rewrite the goldens with
``.venv/bin/python tests/report/report_golden.py`` (``make golden``) and review the diff.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest
from report_golden import GOLDENS, RECORDS, Golden

from statesnap.analysis.findings import NOT_ORDER_DEPENDENT, SUSPECTED, VERIFIED
from statesnap.analysis.verdicts import findings_of, stored
from statesnap.record.journal import FORMAT, READABLE_FORMATS
from statesnap.record.reader import read_record


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


def test_a_format_1_record_has_no_stored_verdicts_and_reads_as_not_replayed() -> None:
    record = read_record(RECORDS / "format1-sample.jsonl")
    assert record.verdicts == [] and stored(record) == []
    found = findings_of(record)
    assert {f.victim for f in found} == {"test_victims.py::test_default_mode_is_safe",
                                         "test_victims.py::test_registry_starts_empty",
                                         "test_config.py::test_genuinely_broken"}
    assert {f.status for f in found} == {SUSPECTED}
    assert not any(f.replays or f.repro_proven for f in found)


def test_the_format_2_sample_keeps_the_verdicts_its_session_proved() -> None:
    record = read_record(RECORDS / "format2-sample.jsonl")
    assert record.header["format"] == 2 in READABLE_FORMATS
    assert record.footer is not None and not record.truncated
    verdicts = {f.victim: f for f in stored(record)}
    # The summary JSON the same run wrote holds the same verdicts.
    summary = json.loads((RECORDS / "format2-sample.findings.json").read_text("utf-8"))
    assert {f["victim"]: (f["status"], f["polluters"], f["key"]) for f in summary} == {
        v: (f.status, f.polluters, f.key) for v, f in verdicts.items()}
    f = verdicts["test_victims.py::test_default_mode_is_safe"]
    assert (f.status, f.polluters, f.proven_keys) == (
        VERIFIED, ["test_config.py::test_enable_fast_mode"], ["env:SAMPLE_MODE"])
    pair = next(r for r in f.replays if r.label == "pair")
    assert pair.command == f.repro and pair.outcome == "failed"
    assert pair.signature == "AssertionError at test_victims.py:7"
    alone = next(r for r in f.replays if r.label == "alone")
    assert alone.outcome == "passed" and alone.signature is None
    assert verdicts["test_config.py::test_genuinely_broken"].status == NOT_ORDER_DEPENDENT


def test_the_sample_golden_shows_its_findings_and_escapes_hostile_ids() -> None:
    html = GOLDENS[1].path.read_text(encoding="utf-8")
    assert html.count('class="badge status-verified"') == 2
    assert html.count('<span class="source">stored by the run</span>') == 3
    assert "test_config.py::test_enable_fast_mode" in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<script>window.__pwned" not in html
    # The replay logs are in the page (one file is enough), not linked beside it.
    assert 'href="' not in html.split('id="findings"', 1)[1].split("</section>", 1)[0]
    assert html.count('<details class="log">') == 7
    assert "not found beside the record" not in html
    pair = html.split("<code>format2-sample.logs/003-pair.log</code></summary>", 1)[1]
    assert pair.lstrip().startswith("<pre>$ ")
    assert "E       AssertionError: assert &#39;fast&#39; == &#39;safe&#39;" in pair.split(
        "</pre>", 1)[0]


def test_a_format_1_sample_golden_labels_what_was_not_replayed() -> None:
    html = GOLDENS[0].path.read_text(encoding="utf-8")
    assert "not found beside the record" in html  # its logs were never committed


def _raw(stem: str) -> list[dict[str, Any]]:
    text = (RECORDS / f"{stem}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_format_3_sample_is_the_current_format_with_chained_changes_and_aliases() -> None:
    raw = _raw("format3-sample")
    assert raw[0]["format"] == FORMAT == 3 in READABLE_FORMATS
    # The file itself holds what format 3 added: an aliases line and a change without its
    # before, so the reader's work on them is what the tests below check.
    assert [(o["key"], o["aliases"]) for o in raw if o["type"] == "aliases"] == [
        ("sample_app:SETTINGS", ["test_victims:SETTINGS"])]
    written = [(t["nodeid"], c) for t in raw if t["type"] == "test"
               for c in t.get("changes") or [] if c["key"] == "sample_app:SETTINGS"]
    assert [n for n, _ in written] == ["test_config.py::test_sets_timeout[10]",
                                       "test_config.py::test_sets_timeout[20]"]
    (_, first), (_, second) = written
    assert "before" in first and "chained" not in first and "aliases" not in first
    assert second.get("chained") is True and "before" not in second and "aliases" not in second
    # Read back whole: the chained change's before is the first one's after.
    record = read_record(RECORDS / "format3-sample.jsonl")
    assert record.footer is not None and not record.truncated
    back = [c for t in record.tests for c in t.changes if c.key == "sample_app:SETTINGS"]
    assert len(back) == 2 and back[1].before == back[0].after == first["after"]
    assert back[0].before == first["before"] and back[1].after == second["after"]
    assert back[0].before != back[1].before
    assert all(c.aliases == ["test_victims:SETTINGS"] for c in back)


def test_the_format_3_sample_keeps_the_verdicts_its_session_proved() -> None:
    record = read_record(RECORDS / "format3-sample.jsonl")
    verdicts = {f.victim: f for f in stored(record)}
    summary = json.loads((RECORDS / "format3-sample.findings.json").read_text("utf-8"))
    assert {f["victim"]: (f["status"], f["polluters"], f["key"]) for f in summary} == {
        v: (f.status, f.polluters, f.key) for v, f in verdicts.items()}
    # The victim that reads the object by its alias is pinned on the test that changed it.
    f = verdicts["test_victims.py::test_settings_have_no_timeout"]
    assert f.status == VERIFIED and f.key == "sample_app:SETTINGS", f
    assert f.polluters and all(p.startswith("test_config.py::test_sets_timeout[")
                               for p in f.polluters)
    assert verdicts["test_victims.py::test_default_mode_is_safe"].status == VERIFIED
    assert verdicts["test_config.py::test_genuinely_broken"].status == NOT_ORDER_DEPENDENT


def test_the_format_3_golden_page_shows_the_chained_change_whole() -> None:
    golden = next(g for g in GOLDENS if g.name == "format3-sample")
    html = golden.path.read_text(encoding="utf-8")
    assert "test_victims.py::test_settings_have_no_timeout" in html
    # The second timeout change was written without its before: the page shows it anyway.
    after = next(c["after"] for t in _raw("format3-sample") if t["type"] == "test"
                 for c in t.get("changes") or []
                 if t["nodeid"] == "test_config.py::test_sets_timeout[10]")
    assert f'"before":{{"text":{json.dumps(after)}}}' in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<script>window.__pwned" not in html
    assert "not found beside the record" not in html
