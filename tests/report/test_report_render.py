"""The rendered page: untrusted text stays text, the JSON is safe, writes are atomic."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_records import HOSTILE_IDS, RecordFactory, entry, env_added, polluted_tests

from readonly import read_only_dir
from statesnap.analysis.findings import Finding
from statesnap.output.report import build_html, write_report
from statesnap.output.report.render import environment, inline_safe, script_json
from statesnap.output.report.values import ValueView


class _Scan(HTMLParser):
    """Collects what a browser would see: elements, attributes, script bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))
        else:
            self.text.append(data)


def _hostile_page(make_record: RecordFactory) -> str:
    tests = [entry(i, nodeid, "failed" if i == 1 else "passed",
                   changes=[env_added(f"K{i}", nodeid)]) for i, nodeid in enumerate(HOSTILE_IDS)]
    record = make_record(tests)
    finding = Finding(victim=HOSTILE_IDS[1], polluters=[HOSTILE_IDS[0]], probe="env",
                      key="K0<b>", status="verified", before=None, after=HOSTILE_IDS[2],
                      repro=f"python -m pytest '{HOSTILE_IDS[0]}'", hint="<i>hint</i>",
                      note='"><script>window.__pwned=4</script>', logs=["<x>.log"])
    return build_html([record], [finding])


def test_hostile_node_ids_render_as_text_only(make_record: RecordFactory) -> None:
    html = _hostile_page(make_record)
    scan = _Scan()
    scan.feed(html)
    # Exactly two scripts: the JSON data and our own code; no element came from a record.
    assert [a.get("type") for a, _ in scan.scripts] == ["application/json", None]
    assert not any(tag == "img" for tag, _ in scan.tags)
    assert not any(name.startswith("on") for _, attrs in scan.tags for name in attrs)
    text = "".join(scan.text)
    assert HOSTILE_IDS[0] in text and HOSTILE_IDS[1] in text
    assert "<i>hint</i>" in text


def test_embedded_json_cannot_end_its_script_element(make_record: RecordFactory) -> None:
    html = _hostile_page(make_record)
    body = re.search(r'<script type="application/json" id="statesnap-data">(.*?)</script>',
                     html, re.S)
    assert body is not None
    raw = body.group(1)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in raw
    data = json.loads(raw)
    assert [row[2] for row in data["tests"]] == list(HOSTILE_IDS)


def test_script_json_round_trips() -> None:
    value = {"a": "</script><!-- & \u2028\u2029 é", "n": [1, None, True]}
    assert json.loads(str(script_json(value))) == value


@pytest.mark.parametrize("text", [
    "x = 1; // </script><script>alert(1)", "a { color: red } </STYLE><b>", "x <!-- y",
    "</Script>", "</style", "<!--",
])
def test_own_code_that_could_end_its_element_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"static/report\.js must not contain a closing tag"):
        inline_safe("report.js", text)


def test_own_code_without_those_is_inlined_as_is() -> None:
    text = "if (a < b && c > d) { s = '<script>' + '<style>' + '-->' }"
    assert inline_safe("report.js", text) is text


def test_every_template_autoescapes_files_and_strings_alike() -> None:
    env = environment()
    payload = '<img src=x onerror="alert(1)">&'
    escaped = "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&amp;"
    assert env.from_string("{{ v }}").render(v=payload) == escaped
    macros = env.get_template("_macros.html.j2").module
    shown = str(macros.value(ValueView(payload, len(payload))))
    assert shown == f'<code class="value">{escaped}</code>'


def test_the_csp_allows_exactly_the_inline_script_and_style(
        make_record: RecordFactory) -> None:
    html = build_html([make_record(polluted_tests())], [])
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = dict(part.strip().split(" ", 1) for part in unescape(csp.group(1)).split(";"))
    assert policy["default-src"] == "'none'"
    code = re.findall(r"<script>(.*?)</script>", html, re.S)
    style = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(code) == 1 and len(style) == 1

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["script-src"] == digest(code[0])
    assert policy["style-src"] == digest(style[0])


def test_the_page_fetches_nothing(make_record: RecordFactory) -> None:
    html = build_html([make_record(polluted_tests())], [])
    assert not re.search(r'\s(src|href)="(https?:)?//', html)
    assert "<link" not in html and "@import" not in html


def test_lone_surrogates_from_a_record_do_not_break_writing(
        make_record: RecordFactory, tmp_path: Path) -> None:
    record = make_record([entry(0, "t.py::a", changes=[env_added("S", "x")])])
    record.tests[0].changes[0].after = "bad \ud800 text"
    out = tmp_path / "pollution.html"
    write_report(out, [record], [])
    html = out.read_text(encoding="utf-8")
    # Shown escaped in the page, and kept as JSON's own escape in its embedded data.
    assert "bad \\ud800 text" in html and "bad ? text" not in html


def test_control_characters_from_the_tested_process_are_escaped_in_the_report(
        make_record: RecordFactory, tmp_path: Path) -> None:
    """A file name holding an escape sequence or a byte that was not UTF-8 is shown escaped;
    the page holds no raw control character of the tested process's."""
    key = "flag\udcff\x1b[31mRED.txt"
    record = make_record([entry(0, "t.py::a", changes=[env_added(key, "v\x07")])])
    out = tmp_path / "pollution.html"
    write_report(out, [record], [])
    html = out.read_text(encoding="utf-8")
    assert "\x1b" not in html and "\x07" not in html
    assert "flag\\xff\\x1b[31mRED.txt" in html


def test_write_report_creates_parent_folders(make_record: RecordFactory, tmp_path: Path) -> None:
    out = tmp_path / "artifacts" / "ci" / "pollution.html"
    write_report(out, [make_record(polluted_tests())], [])
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_an_unwritable_path_raises_and_leaves_no_partial_file(
        make_record: RecordFactory, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    with read_only_dir(ro):
        with pytest.raises(OSError):
            write_report(ro / "pollution.html", [make_record(polluted_tests())], [])
        assert list(ro.iterdir()) == []


def test_a_failed_write_leaves_no_partial_file(make_record: RecordFactory,
                                               tmp_path: Path) -> None:
    # A path whose parent is a regular file fails for root too.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(OSError):
        write_report(blocker / "pollution.html", [make_record(polluted_tests())], [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir", "record.jsonl"]


def test_an_empty_report_still_renders() -> None:
    html = build_html([], [])
    assert "No findings" in html and "No test leaked state" in html
