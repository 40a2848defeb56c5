"""pollution.html: one self-contained HTML report of one or several records and their findings.

:mod:`~statesnap.output.report.views` builds view models, :mod:`~statesnap.output.report.render`
writes them with Jinja2 (autoescaping on); no network needed.  Used by ``--report PATH`` and
``statesnap report RECORD... -o PATH``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.base.atomic import write_atomic
from statesnap.record.journal import Record

__all__ = ["build_html", "write_report"]


def build_html(
    records: Sequence[Record],
    findings: Iterable[Finding],
    *,
    summary: Mapping[str, Any] | None = None,
    report_dir: Path | None = None,
    title: str | None = None,
    generated: float | None = None,
) -> str:
    """The whole page as a string.

    ``records`` are the workers of one run or the shards of one pipeline, one timeline lane
    each.  ``summary`` holds short facts about the run shown as they are (label → scalar, e.g.
    ``{"verification": "3 replays in 12.1 s"}``; nested values are left out).  Links to replay
    logs are made relative to ``report_dir`` (where the page will live; default: as recorded).
    ``generated`` is the timestamp printed in the footer (default: now).
    """
    return "".join(_html_chunks(records, findings, summary=summary, report_dir=report_dir,
                                title=title, generated=generated))


def _html_chunks(
    records: Sequence[Record],
    findings: Iterable[Finding],
    *,
    summary: Mapping[str, Any] | None,
    report_dir: Path | None,
    title: str | None,
    generated: float | None = None,
) -> Iterator[str]:
    """:func:`build_html`'s page in pieces (the page data a batch of tests at a time)."""
    from statesnap.output.report.render import render_chunks
    from statesnap.output.report.views import build_view

    view = build_view(records, findings, report_dir=report_dir, summary=summary, title=title,
                      generated=generated)
    yield from render_chunks(view)


def write_report(
    path: Path | str,
    records: Sequence[Record],
    findings: Iterable[Finding],
    *,
    summary: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> None:
    """Write the report to ``path`` atomically: on any error no partial file is left.

    Missing parent directories are created (CI artifact folders).  Raises :class:`OSError`
    when the path cannot be written.
    """
    path = Path(path)
    chunks = _html_chunks(records, findings, summary=summary, report_dir=path.parent, title=title)
    # Built before the folder or a file is made: a view that cannot be built leaves nothing.
    first = next(chunks)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, itertools.chain((first,), chunks))


