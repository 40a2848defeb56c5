"""pollution.html in a real browser: Debian's Chromium, driven by Playwright, from file://.

Install the browser with ``apt-get install -y chromium`` (``make chromium``); these tests are
skipped, saying so, only when /usr/bin/chromium is missing.  Screenshots land in
``test-artifacts/report/`` for CI to upload.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_golden import GOLDENS, ROOT, Golden
from report_records import HOSTILE_IDS, RecordFactory, entry, env_added

from statesnap.analysis.findings import Finding
from statesnap.output.report import write_report

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "report"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="Debian's chromium is not installed (/usr/bin/chromium): "
                              "run `apt-get install -y chromium` or `make chromium`"),
]

SAMPLE, SAMPLE2, XDIST = GOLDENS[:3]
# Polling assertions: the page's CSP forbids eval, which wait_for_function would need.
expect = pytest.importorskip("playwright.sync_api").expect
VICTIM = "test_victims.py::test_default_mode_is_safe"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()


class Page:
    """A page with every console error and uncaught exception collected."""

    def __init__(self, browser: Any, **context: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900}, **context)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def open(self, path: Path, fragment: str = "") -> Any:
        self.page.goto(path.resolve().as_uri() + fragment)
        self.page.wait_for_load_state("load")
        return self.page

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def new_page(browser: Any) -> Iterator[Any]:
    pages: list[Page] = []

    def make(**context: Any) -> Page:
        pages.append(Page(browser, **context))
        return pages[-1]

    yield make
    for p in pages:
        p.close()


def _report(golden: Golden, tmp_path: Path) -> Path:
    out = tmp_path / f"{golden.name}.html"
    write_report(out, golden.inputs(), golden.findings())
    return out


def test_findings_are_visible_with_no_console_errors(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(SAMPLE, tmp_path))
    badges = page.locator("#findings .badge.status-verified")
    assert badges.count() == 2
    assert badges.first.is_visible()
    victim = page.locator("#findings .victim .test-link", has_text=VICTIM)
    assert victim.is_visible()
    assert page.locator("#findings").get_by_text("env:SAMPLE_MODE").first.is_visible()
    assert page.evaluate("window.__pwned") is None
    p.shot("pollution-sample")
    assert p.errors == []


def test_clicking_a_victim_opens_its_diff(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(SAMPLE, tmp_path))
    page.locator("#findings .victim .test-link", has_text=VICTIM).click()
    detail = page.locator("#test-detail")
    detail.wait_for(state="visible")
    assert page.locator("#td-name").text_content() == VICTIM
    assert "AssertionError" in (page.locator("#td-failure-text").text_content() or "")
    # The polluter's diff names the key and both sides.
    page.locator("#findings .polluters .test-link").first.click()
    table = page.locator("#td-changes table")
    assert "SAMPLE_MODE" in (table.text_content() or "")
    assert "fast" in (table.text_content() or "")
    assert page.evaluate("location.hash").startswith("#test=0.")
    assert p.errors == []


def test_expanding_a_structural_diff(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(XDIST, tmp_path))
    page.locator("#leak-table .test-link", has_text="test_case_20").first.click()
    summary = page.locator("#td-changes details.sdiff summary")
    summary.wait_for(state="visible")
    lines = page.locator("#td-changes .sdiff-lines li")
    assert not lines.first.is_visible()
    summary.click()
    assert lines.first.is_visible()
    texts = lines.all_text_contents()
    assert any("['level']" in t and "WARNING → DEBUG" in t for t in texts)
    assert any(t.startswith("+") and "FileHandler(/tmp/app.log)" in t for t in texts)
    p.shot("pollution-diff")
    assert p.errors == []


def test_filtering_the_timeline(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(SAMPLE, tmp_path))
    page.fill("#tl-filter", "test_victims")
    count = page.locator("#tl-count")
    expect(count).to_have_text("3 of 12 tests match")
    results = page.locator("#tl-results li")
    assert results.count() == 3
    assert page.locator("svg.strip g.hl rect").count() >= 1
    page.select_option("#tl-outcome", "failed")
    expect(count).to_have_text("2 of 12 tests match")
    page.check("#tl-leaked")
    expect(count).to_have_text("0 of 12 tests match")
    page.uncheck("#tl-leaked")
    page.select_option("#tl-outcome", "")
    page.fill("#tl-filter", "")
    expect(count).to_have_text("")
    assert page.locator("svg.strip g.hl rect").count() == 0
    page.fill("#tl-filter", "registry_starts")
    page.locator("#tl-results .test-link").first.click()
    assert page.locator("#td-name").text_content() == "test_victims.py::test_registry_starts_empty"
    assert p.errors == []


def test_clicking_the_timeline_strip_opens_the_test_under_the_pointer(
        new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(XDIST, tmp_path))
    strip = page.locator('svg.strip[data-lane="0"]')
    box = strip.bounding_box()
    assert box is not None
    # Test 33 of worker gw0 failed; the strip is as wide as the longest lane (40 tests).
    strip.click(position={"x": box["width"] * 33.5 / 40, "y": box["height"] / 2})
    assert page.locator("#td-name").text_content() == "tests/test_net.py::test_case_33"
    assert "Address already in use" in (page.locator("#td-failure-text").text_content() or "")
    assert page.locator('svg.strip[data-lane="0"] g.sel rect').count() == 1
    strip.hover(position={"x": box["width"] * 12.5 / 40, "y": box["height"] / 2})
    assert "test_case_12" in (page.locator("#tl-tip").text_content() or "")
    # The crashed worker's last test is on its lane too.
    lane1 = page.locator('svg.strip[data-lane="1"]')
    b1 = lane1.bounding_box()
    assert b1 is not None
    lane1.click(position={"x": b1["width"] * 25.5 / 40, "y": b1["height"] / 2})
    assert "segfaults" in (page.locator("#td-name").text_content() or "")
    assert "died" in (page.locator("#td-changes").text_content() or "")
    assert p.errors == []


def test_copying_a_reproduction_command(new_page: Any, tmp_path: Path) -> None:
    p = new_page(permissions=["clipboard-read", "clipboard-write"])
    page = p.open(_report(SAMPLE, tmp_path))
    finding = page.locator("#findings .finding", has_text=VICTIM)
    expected = finding.locator(".repro code").text_content()
    assert expected and VICTIM in expected
    button = finding.locator("button.copy")
    button.click()
    # file:// pages count as secure in Chromium: the Clipboard API path is taken.
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == expected
    assert p.errors == []


_NO_CLIPBOARD = """
Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});
window.__copied = null;
document.execCommand = function (cmd) {
  if (cmd !== 'copy') { return false; }
  var el = document.activeElement;
  window.__copied = el && 'value' in el ? el.value : String(document.getSelection());
  return true;
};
"""


def test_copying_falls_back_to_a_selected_textarea(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    p.context.add_init_script(_NO_CLIPBOARD)
    page = p.open(_report(SAMPLE, tmp_path))
    assert page.evaluate("navigator.clipboard === undefined")
    finding = page.locator("#findings .finding", has_text=VICTIM)
    finding.locator("button.copy").click()
    expect(finding.locator("button.copy")).to_have_text("Copied")
    assert page.evaluate("window.__copied") == finding.locator(".repro code").text_content()
    assert finding.locator("button.copy").text_content() == "Copied"
    assert page.locator("textarea").count() == 0  # the helper textarea is removed again
    assert p.errors == []


def test_sorting_and_filtering_the_leak_table(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(SAMPLE, tmp_path))
    rows = page.locator("#leak-table tbody tr")
    total = rows.count()
    assert total >= 4
    page.locator("#leak-table th button", has_text="#").click()
    order = page.locator("#leak-table tbody td:last-child")
    first = [int(x) for x in order.all_text_contents()]
    assert first == sorted(first)
    page.locator("#leak-table th button", has_text="#").click()
    again = [int(x) for x in order.all_text_contents()]
    assert again == sorted(first, reverse=True)
    page.fill("#leak-filter", "handler")
    expect(page.locator("#leak-count")).to_have_text(f"2 of {total} leaks")
    assert page.locator("#leak-table tbody tr:visible").count() == 2
    page.fill("#leak-filter", "")
    page.select_option("#leak-probe", "env")
    expect(page.locator("#leak-count")).to_have_text(f"3 of {total} leaks")
    assert page.locator("#leak-table tbody tr:visible").count() == 3
    assert p.errors == []


def test_deep_link_opens_a_test(new_page: Any, tmp_path: Path) -> None:
    p = new_page()
    page = p.open(_report(SAMPLE, tmp_path), "#test=0.0")
    page.locator("#test-detail").wait_for(state="visible")
    assert page.locator("#td-name").text_content() == "test_config.py::test_enable_fast_mode"
    assert p.errors == []


def test_no_injected_script_runs_anywhere(new_page: Any, make_record: RecordFactory,
                                          tmp_path: Path) -> None:
    tests = [entry(i, nodeid, "failed" if i == 1 else "passed",
                   changes=[env_added(f"K{i}<b>", nodeid)],
                   gauges={"fds": 3 + i})
             for i, nodeid in enumerate(HOSTILE_IDS)]
    record = make_record(tests)
    finding = Finding(victim=HOSTILE_IDS[1], polluters=[HOSTILE_IDS[0]], probe="env",
                      key="K0<b>", status="verified", before=None, after=HOSTILE_IDS[2],
                      repro=f"python -m pytest '{HOSTILE_IDS[0]}'",
                      note='"><script>window.__pwned=9</script>',
                      logs=['"><img src=x onerror="window.__pwned=8">.log'])
    out = tmp_path / "hostile.html"
    write_report(out, [record], [finding])
    p = new_page()
    page = p.open(out)
    for i in range(page.locator(".test-link").count()):
        page.locator(".test-link").nth(i).click()
    page.fill("#tl-filter", "test_")  # the result list is built from the same ids
    expect(page.locator("#tl-results li").first).to_be_visible()
    for i in range(page.locator("#tl-results .test-link").count()):
        page.locator("#tl-results .test-link").nth(i).click()
    for hover in page.locator("circle.step").all():
        hover.hover()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0
    assert page.locator("#td-name").text_content() in HOSTILE_IDS
    p.shot("pollution-hostile")
    assert p.errors == []


def test_artifacts_folder_is_ignored_by_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    import subprocess

    proc = subprocess.run(["git", "check-ignore", "-q", "test-artifacts/report/x.png"],
                          cwd=ROOT, check=False)
    assert proc.returncode == 0


def test_the_leak_table_pages_through_many_leaks(new_page: Any, make_record: RecordFactory,
                                                 tmp_path: Path) -> None:
    tests = [entry(i, f"t.py::test_{i:03d}", changes=[env_added(f"VAR_{i:03d}", str(i))])
             for i in range(250)]
    out = tmp_path / "many.html"
    write_report(out, [make_record(tests)], [])
    p = new_page()
    page = p.open(out)
    rows = page.locator("#leak-table tbody tr")
    assert rows.count() == 100  # one page in the DOM, not 250 rows
    expect(page.locator("#leak-range")).to_have_text("1–100 of 250")
    page.click("#leak-next")
    page.click("#leak-next")
    expect(page.locator("#leak-range")).to_have_text("201–250 of 250")
    assert rows.count() == 50
    assert page.locator("#leak-next").is_disabled()
    page.fill("#leak-filter", "var_24")  # VAR_240 .. VAR_249
    expect(page.locator("#leak-count")).to_have_text("10 of 250 leaks")
    assert rows.count() == 10
    assert page.locator("#leak-pager").is_hidden()
    rows.first.locator(".test-link").click()
    assert page.locator("#td-name").text_content() == "t.py::test_240"
    assert p.errors == []


@pytest.mark.slow
def test_a_10000_test_report_stays_light_in_the_browser(new_page: Any, tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_report",
                                                  ROOT / "bench" / "bench_report.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from statesnap.record.reader import read_record

    record_path = tmp_path / "big.jsonl"
    bench.write_bench_record(record_path, 10_000, 0.10)
    record = read_record(record_path)
    out = tmp_path / "big.html"
    write_report(out, [record], bench.bench_findings(record.tests))
    assert out.stat().st_size < 10 * 1024 * 1024
    p = new_page()
    page = p.open(out)
    # Per-test diffs are data, not DOM: the whole page stays a few thousand elements.
    assert page.evaluate("document.getElementsByTagName('*').length") < 10_000
    assert page.locator("#leak-table tbody tr").count() == 100
    page.fill("#tl-filter", "test_case_699[")
    expect(page.locator("#tl-count")).to_have_text("1 of 10,000 tests match")
    page.locator("#tl-results .test-link").first.click()
    assert "AssertionError" in (page.locator("#td-failure-text").text_content() or "")
    page.mouse.wheel(0, 20_000)
    p.shot("pollution-10k")
    assert p.errors == []


def test_replay_logs_open_in_the_page_alone(new_page: Any, tmp_path: Path) -> None:
    # The report alone, away from the record: the logs are in it, collapsed until clicked.
    p = new_page()
    page = p.open(_report(SAMPLE2, tmp_path))
    finding = page.locator("#findings article", has_text=VICTIM).first
    log = finding.locator("details.log").filter(has_text="pair.log").first
    text = log.locator("pre")
    assert not text.is_visible()
    log.locator("summary").click()
    expect(text).to_be_visible()
    expect(text).to_contain_text("AssertionError: assert 'fast' == 'safe'")
    assert p.errors == []


def test_a_shared_cause_is_one_card_with_each_reproduction_on_demand(
        new_page: Any, make_record: RecordFactory, tmp_path: Path) -> None:
    polluter = "t.py::test_chdir"
    victims = [f"t.py::test_reads_{n}" for n in range(3)]
    tests = [entry(0, polluter, changes=[{"probe": "cwd", "key": "", "change": "changed",
                                          "before": "/p", "after": "/p/data", "phase": "call",
                                          "severity": 3}])]
    tests += [entry(i + 1, v, "failed") for i, v in enumerate(victims)]
    record = make_record(tests)
    findings = [Finding(victim=v, polluters=[polluter], probe="cwd", key="", status="verified",
                        before="/p", after="/p/data",
                        repro=f"python -m pytest {polluter} {v}") for v in victims]
    findings[0].key = findings[1].key = findings[2].key = "cwd"
    out = tmp_path / "cause.html"
    write_report(out, [record], findings)
    p = new_page(permissions=["clipboard-read", "clipboard-write"])
    page = p.open(out)
    cards = page.locator("#findings .finding")
    assert cards.count() == 1
    rows = cards.first.locator("li.victim-row")
    assert rows.count() == 3
    second = rows.nth(1)
    code = second.locator(".repro code")
    assert not code.is_visible()  # folded until asked for
    second.locator("summary").click()
    expect(code).to_be_visible()
    assert code.text_content() == f"python -m pytest {polluter} {victims[1]}"
    second.locator("button.copy").click()
    expect(second.locator("button.copy")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == code.text_content()
    p.shot("pollution-shared-cause")
    assert p.errors == []
