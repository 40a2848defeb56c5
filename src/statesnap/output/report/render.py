"""Rendering: the Jinja2 environment, the inlined CSS and script, and the embedded JSON.

Autoescaping everywhere; only our own stylesheet, script and escaped JSON enter unescaped, under
a Content-Security-Policy that allows exactly those.  See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from markupsafe import Markup

from statesnap.base.text import FILE_ERRORS, printable_block
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


def script_json(data: Any) -> Markup:
    """JSON that is safe inside ``<script type="application/json">`` (and parses the same)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=repr)
    # A lone surrogate (a byte that was not UTF-8) as JSON's own \udcXX escape.
    text = text.encode("utf-8", FILE_ERRORS).decode("utf-8")
    return Markup(text.translate(_JSON_TABLE))


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
    return env


def _finalize(value: Any) -> Any:
    """Every value a template prints: text from the tested process (a file name holding an
    escape sequence, a byte that was not UTF-8) with its control characters escaped
    (statesnap.base.text); our own markup (``Markup``: the stylesheet, the script, the JSON)
    is left alone."""
    if type(value) is str:
        return printable_block(value)
    return value


def render(view: ReportView) -> str:
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
        data=script_json(view.data),
    )
    # A lone surrogate (from a JSON escape in a record) cannot be written as UTF-8.
    return html.encode("utf-8", "replace").decode("utf-8")
