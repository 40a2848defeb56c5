"""The run section's package, environment and other-field rows, joined in Python
(``render.detail_rows``), are the HTML the template's own loop over them wrote: character for
character, hostile values included (the golden pages hold only tame ones)."""

from __future__ import annotations

import pytest

from statesnap.output.report.render import make_environment
from statesnap.output.report.runinfo import InfoRow, RunValue

#: The loop as ``_run.html.j2`` held it, in the report's environment (trimmed blocks, the
#: finalize hook, autoescaping).
TEMPLATE_LOOP = """\
    <tbody>
    {% for row in rows %}
      <tr><th>{{ row.name }}</th><td>
      {% if row.same %}<code>{{ row.text }}</code>
      {% else %}<ul class="per-run">{% for v in row.values %}<li><span class="lane-tag">\
{{ v.label }}</span> <code>{{ v.text }}</code></li>{% endfor %}</ul>{% endif %}
      </td></tr>
    {% endfor %}
    </tbody>
"""
FILTER = """\
    <tbody>
{{ rows | detail_rows }}    </tbody>
"""

HOSTILE = [
    "</code></td></tr><script>alert(1)</script>",
    "a & b < c > d \" e ' f",
    "nul\x00byte",
    "esc\x1b[31mred",
    "lone \udcff surrogate",
    "bidi \u202e override",
    "tab\tand\nnewline",
    "",
    "—",
    "&amp; already escaped",
]


class Subclass(str):
    """A str subclass: the template's finalize hook leaves it alone (a NUL stays)."""


def _rows() -> list[InfoRow]:
    rows = []
    for n, text in enumerate(HOSTILE):
        rows.append(InfoRow(f"one {text}", [RunValue("gw0", text)]))
        rows.append(InfoRow(f"same {text}", [RunValue("gw0", text), RunValue("gw1", text)]))
        rows.append(InfoRow(text, [RunValue(f"<gw{n}>", text), RunValue("gw1\x00", f"x{text}"),
                                   RunValue("gw2", "—")]))
    rows.append(InfoRow("no values", []))
    return rows


@pytest.mark.parametrize("rows", [
    _rows(),
    [],
    # A value that is not a plain str keeps its NUL: each value is escaped on its own.
    [InfoRow("sub", [RunValue("gw0", Subclass("a\x00<b>")), RunValue("gw1", "c")]),
     InfoRow(Subclass("x\x00y"), [RunValue("gw0", "&")])],
], ids=["hostile", "none", "str-subclass"])
def test_the_joined_rows_are_the_template_loop(rows: list[InfoRow]) -> None:
    env = make_environment(None)
    old = env.from_string(TEMPLATE_LOOP).render(rows=rows)
    new = env.from_string(FILTER).render(rows=rows)
    assert new == old
