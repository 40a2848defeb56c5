"""Hostile names from a real run stay text in every table of pollution.html.

A real inner pytest run (in this process) writes the record: a file named like a tag, an
environment variable, a ``sys.modules`` entry, a ``sys.path`` entry, a third-party probe and
node ids holding ``<``, ``"`` and ``&``.  The page built from that record is parsed as a browser
would, and each table is checked on its own: the names are there, as text, and no element or
attribute came from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

# Imported once, here: pytester takes out of sys.modules what an in-process run imported.
import statesnap.plugin.core  # noqa: F401
from statesnap.analysis.verdicts import findings_of
from statesnap.output.report import build_html
from statesnap.record.journal import Record
from statesnap.record.reader import read_record

FILE = "<img src=x onerror=window.__pwned=1>.txt"
#: Environment names cannot hold "=": a live tag is enough to fail.
ENV = 'E<img src onerror>"&amp;'
MODULE = "mod<script>window.__pwned=3</script>"
SYSPATH = '/opt/"><svg onload=window.__pwned=4>'
PROBE = "prb<b onmouseover=window.__pwned=5>"
GAUGE = "g<i onclick=window.__pwned=6>"
ERROR = "boom <img src=x onerror=window.__pwned=7> & more"
VALUE = '"><img src=x onerror=window.__pwned=8>'
POLLUTER_ID = '<img src=x onerror=window.__pwned=9>"&amp;'
VICTIM_ID = '</script><script>window.__pwned=10</script>"&'
HEADER_ENV = "HE<iframe srcdoc>"

CONFTEST = f'''
import pytest
from statesnap.probes.base import Probe, Severity


class Hostile(Probe):
    name = {PROBE!r}
    severity = Severity.HIGH

    def __init__(self):
        self.value = 0

    def read(self):
        if self.value == 2:
            raise RuntimeError({ERROR!r})
        return {{{VALUE!r}: self.value}}

    def gauges(self, current):
        return {{{GAUGE!r}: float(self.value)}}


HOSTILE = Hostile()


@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [HOSTILE]
'''

SUITE = f'''
import os, sys, types, pytest
from conftest import HOSTILE


@pytest.mark.parametrize("v", [1], ids=[{POLLUTER_ID!r}])
def test_polluter(v, request):
    (request.config.rootpath / {FILE!r}).write_text("x")
    os.environ[{ENV!r}] = {VALUE!r}
    sys.modules[{MODULE!r}] = types.ModuleType("hostile")
    sys.path.append({SYSPATH!r})
    HOSTILE.value = 1


@pytest.mark.parametrize("v", [1], ids=[{VICTIM_ID!r}])
def test_victim(v):
    assert {ENV!r} not in os.environ, {VALUE!r}


def test_breaks_the_probe():
    HOSTILE.value = 2
'''

#: Elements HTML never closes.
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "source", "track", "wbr"})


@dataclass
class Page(HTMLParser):
    """Every element with its attributes, and the text under each element with an id or a
    class (as a browser builds the tree; script bodies apart)."""

    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    text: dict[str, list[str]] = field(default_factory=dict)
    scripts: int = 0

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        self.scripts += tag == "script"
        names = [f"#{attributes['id']}"] if attributes.get("id") else []
        names += [f".{c}" for c in (attributes.get("class") or "").split()]
        if tag not in VOID:
            self._open.append((tag, names))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if any(tag == "script" for tag, _ in self._open):
            return
        for _, names in self._open:
            for name in names:
                self.text.setdefault(name, []).append(data)

    def under(self, name: str) -> str:
        """The text of every element matching ``#id`` or ``.class``."""
        return "".join(self.text.get(name, []))


@pytest.fixture
def hostile_record(pytester: pytest.Pytester, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> Record:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_hostile_names=SUITE)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv(HEADER_ENV, VALUE)  # in the header's environment
    saved, cwd = dict(os.environ), os.getcwd()
    try:
        result = pytester.runpytest(
            "-p", "no:randomly", "-p", "statesnap", f"--statesnap-record={record}",
            "--statesnap-verify-budget=0", "-W", "ignore::pytest.PytestAssertRewriteWarning")
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)
    result.assert_outcomes(passed=2, failed=1)
    return read_record(record)


def test_hostile_names_from_a_real_run_are_text_in_every_table(hostile_record: Record) -> None:
    findings = findings_of(hostile_record)
    assert [f.victim for f in findings] == [f"test_hostile_names.py::test_victim[{VICTIM_ID}]"]
    page = Page()
    page.feed(build_html([hostile_record], findings))
    tags = [tag for tag, _ in page.tags]
    for injected in ("img", "b", "i", "iframe"):
        assert injected not in tags, injected
    assert page.scripts == 2  # the page data and the page's own code
    assert not [(t, a) for t, attrs in page.tags for a in attrs if a.startswith("on")]
    polluter = f"test_hostile_names.py::test_polluter[{POLLUTER_ID}]"
    victim = f"test_hostile_names.py::test_victim[{VICTIM_ID}]"
    # Each table, with what it must show as text.
    expected = {
        "#leak-table": [FILE, ENV, MODULE, SYSPATH, PROBE, VALUE, polluter],
        ".probe-leaks": [FILE, ENV, MODULE, SYSPATH, PROBE, VALUE],
        "#findings": [victim, polluter, ENV, VALUE],
        ".candidates": [polluter, ENV, VALUE],
        ".probes": [PROBE],
        ".errors": [PROBE, ERROR],
        ".env-more": [HEADER_ENV, VALUE],
        "#plots": [GAUGE],
    }
    for table, payloads in expected.items():
        text = page.under(table)
        assert text, f"no {table} in the page"
        for payload in payloads:
            assert payload in text, (table, payload)
