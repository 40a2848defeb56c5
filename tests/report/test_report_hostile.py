"""Hostile keys in every table of pollution.html stay text: file names, env names, modules,
node ids, probe names, header fields, findings, cleaners, candidates, probe errors.

Each payload would run script (``window.__pwned``) or add an element if one table rendered it
as markup (a ``|safe`` slipped into a template, a view model that builds HTML).  Checked with
an HTML parser (what a browser would build) and in Debian's Chromium.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from report_records import RecordFactory, entry, header

from statesnap.analysis.findings import Candidate, Finding
from statesnap.output.report import build_html, write_report

#: One payload per place, each naming where it came from, so a failure says which table.
FILE = "/src/app/<img src=x onerror=window.__pwned=1>.txt"
ENV = "E<img src=x onerror=window.__pwned=2>"
MODULE = "mod<script>window.__pwned=3</script>"
SYSPATH = '/opt/"><svg onload=window.__pwned=4>'
PROBE = "prb<b onmouseover=window.__pwned=5>"
VICTIM = "tests/test_v.py::test_v[<img src=x onerror=window.__pwned=6>]"
POLLUTER = "tests/test_p.py::test_p[</script><script>window.__pwned=7</script>]"
CLEANER = "tests/test_c.py::test_c[<iframe srcdoc=x>]"
VALUE = "<img src=x onerror=window.__pwned=8>"
ARG = "--opt=<img src=x onerror=window.__pwned=9>"
HEADER_ENV = "HE<img src=x onerror=window.__pwned=10>"
ERROR = "boom <img src=x onerror=window.__pwned=11>"
HINT = "<a href=javascript:window.__pwned=12>fix</a>"
PAYLOADS = (FILE, ENV, MODULE, SYSPATH, PROBE, VICTIM, POLLUTER, CLEANER, VALUE, ARG,
            HEADER_ENV, ERROR, HINT)


def _change(probe: str, key: str, after: Any = VALUE, **more: Any) -> dict[str, Any]:
    return {"probe": probe, "key": key, "change": "added", "before": None, "after": after,
            "phase": "call", "severity": 3, **more}


def _page(make_record: RecordFactory) -> tuple[str, list[Any], list[Finding]]:
    head = header(args=["-p", "statesnap", ARG], env={"HOME": "/root", HEADER_ENV: VALUE},
                  probes=[{"name": "env", "status": "ok", "detail": None},
                          {"name": PROBE, "status": "error", "detail": ERROR}])
    tests = [
        entry(0, POLLUTER, changes=[
            _change("files", FILE), _change("env", ENV), _change("modules", MODULE),
            _change("syspath", SYSPATH), _change(PROBE, ENV),
            _change("env", "WIDE", fixture=VALUE, scope="module", phase="setup"),
        ], gauges={PROBE: 3, "fds": 4}),
        entry(1, CLEANER, changes=[_change("env", ENV, after=None, change="removed")],
              gauges={PROBE: 9, "fds": 4}),
        entry(2, VICTIM, "failed", failure={"phase": "call", "exc_type": "AssertionError",
                                            "message": VALUE, "text": VALUE},
              gauges={PROBE: 9, "fds": 4}),
    ]
    record = make_record(tests, head=head,
                         errors=[{"probe": PROBE, "error": ERROR, "where": VALUE}])
    finding = Finding(
        victim=VICTIM, polluters=[POLLUTER], probe="files", key=FILE, status="verified",
        before=None, after=VALUE, repro=f"python -m pytest '{POLLUTER}' '{VICTIM}'",
        exc_type=VALUE, message=VALUE, hint=HINT, proven_keys=[f"env:{ENV}"],
        cleaners=[CLEANER], setter=CLEANER, note=VALUE, logs=[f"{VALUE}.log"],
        candidates=[Candidate(POLLUTER, 0, "modules", MODULE, None, VALUE, 1.0, [VALUE])])
    unexplained = Finding(victim=VICTIM, polluters=[], probe=PROBE, key=SYSPATH,
                          status="unexplained", note=ERROR)
    findings = [finding, unexplained]
    return build_html([record], findings), [record], findings


class _Scan(HTMLParser):
    """Elements, attributes and text (script bodies apart) as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.attr_text: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.attr_text += [v for _, v in attrs if v]
        self._script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._script = False

    def handle_data(self, data: str) -> None:
        if not self._script:
            self.text.append(data)


def test_every_payload_is_text_and_no_element_comes_from_the_record(
        make_record: RecordFactory) -> None:
    html, _, _ = _page(make_record)
    scan = _Scan()
    scan.feed(html)
    tags = [t for t, _ in scan.tags]
    for injected in ("img", "iframe", "b"):
        assert injected not in tags, injected
    assert tags.count("script") == 2  # the page data and the page's own code
    events = [(t, n) for t, attrs in scan.tags for n in attrs if n.startswith("on")]
    assert events == []
    hrefs = [a.get("href") or "" for t, a in scan.tags if t == "a"]
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    text = "".join(scan.text)
    # Each payload is shown, as text, in the tables rendered on the server.
    for payload in (FILE, ENV, MODULE, SYSPATH, PROBE, VICTIM, POLLUTER, CLEANER, VALUE,
                    HEADER_ENV, ERROR, HINT):
        assert payload in text, payload
    assert ARG in text or ARG in " ".join(scan.attr_text)


def test_the_leak_table_shows_the_file_name_key_as_text(make_record: RecordFactory) -> None:
    html, _, _ = _page(make_record)
    escaped = FILE.replace("<", "&lt;").replace(">", "&gt;")
    assert f'<code class="key">{escaped}</code>' in html
    assert "<img" not in html.split('id="statesnap-data"')[0]


CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed "
                    "(/usr/bin/chromium): `make chromium`")
def test_nothing_runs_in_chromium(make_record: RecordFactory, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    _, records, findings = _page(make_record)
    out = tmp_path / "hostile.html"
    write_report(out, records, findings)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            def injected(page: Any) -> list[str]:
                return [tag for tag in ("img", "iframe", "b[onmouseover]", "svg[onload]",
                                        "a[href^='javascript']")
                        if page.locator(tag).count()]

            # As served: the page's script re-renders the tables from its data on load, so
            # markup the server let through would be gone before a check with script on.
            served = browser.new_page(java_script_enabled=False)
            served.goto(out.resolve().as_uri())
            assert injected(served) == []
            assert FILE in served.locator("#leak-table").inner_text()
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.resolve().as_uri())
            assert injected(page) == []
            # Open every test's diff, every details element, every leak-table page: the
            # script builds those from the page data.
            for details in page.locator("details").all():
                details.evaluate("d => d.open = true")
            links = page.locator(".test-link")
            for i in range(links.count()):
                if links.nth(i).is_visible():
                    links.nth(i).click()
            for circle in page.locator("circle.step").all():
                circle.hover()
            page.fill("#leak-filter", "<")
            body = page.locator("body").inner_text()
            assert page.evaluate("window.__pwned") is None
            assert injected(page) == []
            assert VICTIM in body and FILE in body
            assert errors == []
        finally:
            browser.close()
