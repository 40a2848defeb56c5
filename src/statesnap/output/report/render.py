"""Rendering: the Jinja2 environment, the inlined CSS and script, and the embedded JSON.

Autoescaping everywhere; only our own stylesheet, script and escaped JSON enter unescaped, under
a Content-Security-Policy that allows exactly those.  See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from itertools import islice
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from markupsafe import Markup, escape

from statesnap.base.text import FILE_ERRORS, printable_block
from statesnap.output.report.lanes import TestRows
from statesnap.output.report.runinfo import InfoRow
from statesnap.output.report.templatecache import pycache_for
from statesnap.output.report.views import ReportView

#: What a JSON string may hold that would end the script element or confuse an HTML parser
#: (``</script>``, ``<!--``), or that old JavaScript engines treat as line breaks.
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_JSON_TABLE = str.maketrans(_JSON_ESCAPES)


#: Rows of :class:`TestRows` encoded at once: big enough that the per-call cost vanishes, small
#: enough that a batch's text is a few hundred kB.
ROW_BATCH = 500
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr).encode


def _safe(text: str) -> str:
    """A piece of JSON text as it may stand in the page (see :func:`script_json`); each
    character is escaped on its own, so pieces escape as the whole would."""
    # A lone surrogate (a byte that was not UTF-8) as JSON's own \udcXX escape.
    text = text.encode("utf-8", FILE_ERRORS).decode("utf-8")
    return text.translate(_JSON_TABLE)


def json_chunks(data: Any) -> Iterator[str]:
    """:func:`script_json`'s text in pieces, the same text joined: the page data of a record
    of 267,000 tests is some 70 MB of JSON, which whole (and its escaped copies) would
    triple the report's memory (issue 27).  :class:`TestRows` are encoded a batch at a
    time; the rest as ``json.dumps`` does."""
    if not isinstance(data, dict) or not any(isinstance(v, TestRows) for v in data.values()):
        yield _safe(_DUMPS(data))
        return
    for n, (key, value) in enumerate(data.items()):
        yield _safe(("{" if n == 0 else ",") + _DUMPS(key) + ":")
        if not isinstance(value, TestRows):
            yield _safe(_DUMPS(value))
            continue
        yield "["
        rows = iter(value)
        first = True
        while batch := list(islice(rows, ROW_BATCH)):
            yield _safe(("" if first else ",") + _DUMPS(batch)[1:-1])
            first = False
        yield "]"
    yield "}"


def script_json(data: Any) -> Markup:
    """JSON that is safe inside ``<script type="application/json">`` (and parses the same)."""
    return Markup("".join(json_chunks(data)))


def inline_safe(name: str, text: str) -> str:
    """``text`` as is, if it can go inside a ``<script>`` or ``<style>`` element unescaped;
    ValueError when it could end the element or open an HTML comment there."""
    lowered = text.lower()
    if "</script" in lowered or "</style" in lowered or "<!--" in lowered:
        raise ValueError(f"static/{name} must not contain a closing tag or '<!--'")
    return text


@cache
def _static(name: str) -> str:
    text = resources.files("statesnap.output.report").joinpath("static", name).read_text("utf-8")
    return inline_safe(name, text)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


@cache
def environment() -> Environment:
    return make_environment(pycache_for(__file__))


def make_environment(compiled: BytecodeCache | None) -> Environment:
    """The report's environment, with ``compiled`` templates kept there (None: not kept)."""
    env = Environment(
        loader=PackageLoader("statesnap.output.report", "templates"),
        bytecode_cache=compiled,
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    env.filters["thousands"] = lambda n: f"{n:,}"
    env.filters["detail_rows"] = detail_rows
    return env


def detail_rows(rows: Iterable[InfoRow]) -> Markup:
    """The run section's package, environment-variable and other-field rows, as the template's
    loop over them wrote them (trimmed blocks), character for character::

        <tr><th>{{ row.name }}</th><td>
        {% if row.same %}<code>{{ row.text }}</code>
        {% else %}<ul class="per-run">{% for v in row.values %}<li><span class="lane-tag">
        {{ v.label }}</span> <code>{{ v.text }}</code></li>{% endfor %}</ul>{% endif %}
        </td></tr>

    Some 130 rows in a small run, two or more values each, each printed through
    :func:`_finalize` and escaped: the template's loop cost about 3 M instructions, most of
    them in one ``escape`` call per value (issue 28).  Escaping replaces each character on its
    own, so here every value is escaped in one call, joined by a NUL (which no finalized value
    holds: :func:`printable_block` escapes it), and the pieces are put back in their places."""
    rows = list(rows)
    same = [len(row.values) < 2 or row.same for row in rows]
    texts: list[str] = []
    for row, alike in zip(rows, same, strict=True):
        texts.append(row.name)
        if alike:
            texts.append(row.values[0].text if row.values else "")
        else:
            for v in row.values:
                texts += (v.label, v.text)
    shown = [_finalize(text) for text in texts]
    joined = _SEP.join(shown)
    if joined.count(_SEP) == len(shown) - 1:
        pieces = iter(str(escape(joined)).split(_SEP))
    else:  # a value that is not a plain str held one: each on its own
        pieces = iter([escape(text) for text in shown])
    out: list[str] = []
    for row, alike in zip(rows, same, strict=True):
        if alike:
            out.append(f"      <tr><th>{next(pieces)}</th><td>\n<code>{next(pieces)}</code>\n"
                       "      </td></tr>\n")
            continue
        out.append(f'      <tr><th>{next(pieces)}</th><td>\n<ul class="per-run">')
        for _ in row.values:
            label, text = next(pieces), next(pieces)
            out.append(f'<li><span class="lane-tag">{label}</span> <code>{text}</code></li>')
        out.append("</ul>      </td></tr>\n")
    return Markup("".join(out))


#: Joins the values :func:`detail_rows` escapes at once: a NUL, which :func:`_finalize` never
#: leaves in a value.
_SEP = "\x00"


def _finalize(value: Any) -> Any:
    """Every value a template prints: text from the tested process (a file name holding an
    escape sequence, a byte that was not UTF-8) with its control characters escaped
    (statesnap.base.text); our own markup (``Markup``: the stylesheet, the script, the JSON)
    is left alone."""
    if type(value) is str:
        return printable_block(value)
    return value


#: Where the page data goes in the rendered template, replaced by :func:`json_chunks`' pieces
#: (the template prints ``data`` once).
_DATA_SLOT = "\x00statesnap-page-data\x00"


def render(view: ReportView) -> str:
    return "".join(render_chunks(view))


def render_chunks(view: ReportView) -> Iterator[str]:
    """The page in pieces, joined the same as :func:`render`: the page data streams in
    batches (:func:`json_chunks`) instead of standing whole in the page's text."""
    css, js = _static("report.css"), _static("report.js")
    csp = "; ".join((
        "default-src 'none'",
        f"style-src '{_sha256(css)}'",
        f"script-src '{_sha256(js)}'",
        "img-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ))
    html = environment().get_template("report.html.j2").render(
        view=view,
        css=Markup(css),
        js=Markup(js),
        csp=csp,
        data=Markup(_DATA_SLOT),
    )
    head, tail = html.split(_DATA_SLOT)  # a NUL never leaves _finalize unescaped
    # A lone surrogate (from a JSON escape in a record) cannot be written as UTF-8.
    yield head.encode("utf-8", "replace").decode("utf-8")
    yield from json_chunks(view.data)  # no lone surrogate left (_safe)
    yield tail.encode("utf-8", "replace").decode("utf-8")
