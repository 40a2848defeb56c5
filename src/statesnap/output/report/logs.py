"""Replay logs embedded in pollution.html, bounded in size.

A CI job may upload only the report: linking the logs beside the record would leave broken
links.  Each log is read in (it was scrubbed of secrets when the replay wrote it), cut around a
marker when long, and the page's logs together stay under a budget; the template escapes them.
"""

from __future__ import annotations

from pathlib import Path

from statesnap.base.plain import Value


class LogView(Value):
    """A replay log embedded in the page (the page must be enough on its own: a CI job may
    upload only the report).  ``text`` is cut to :data:`LOG_LIMIT` characters around a
    marker that says how much was left out; ``missing`` says why there is no text."""

    _fields = ("name", "text", "truncated", "missing")
    __slots__ = _fields

    def __init__(self, name: str, text: str | None, truncated: bool = False,
                 missing: str | None = None) -> None:
        self.name = name
        self.text = text
        self.truncated = truncated
        self.missing = missing



#: Characters of one replay log embedded in the page; a longer log keeps its head (the
#: command, the order) and its tail (pytest's failure summary) around a marker.
LOG_LIMIT = 16_000
LOG_HEAD = 3_000
#: Characters of all embedded logs together: a report of a long verification stays small.
LOGS_TOTAL_LIMIT = 600_000


class LogBudget:
    """What is left of :data:`LOGS_TOTAL_LIMIT` for the logs of one page."""

    def __init__(self, total: int = LOGS_TOTAL_LIMIT) -> None:
        self.left = total


def embed_log(log: str, record_dir: Path, budget: LogBudget) -> LogView:
    """A replay log (as a finding names it, relative to its record) read into the page."""
    path = Path(log)
    if not path.is_absolute():
        path = record_dir / path
    name = Path(log).as_posix()
    if budget.left <= 0:
        return LogView(name, None, missing="not embedded: the report's size limit for logs "
                       f"was reached (the file: {path})")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return LogView(name, None, missing=f"not found beside the record ({exc.strerror})")
    truncated = False
    limit = min(LOG_LIMIT, max(budget.left, LOG_HEAD * 2))
    if len(text) > limit:
        tail = limit - LOG_HEAD
        cut_out = len(text) - LOG_HEAD - tail
        text = (text[:LOG_HEAD]
                + f"\n[… statesnap: {cut_out:,} characters of this log left out; the whole "
                f"log is {path} …]\n" + text[-tail:])
        truncated = True
    budget.left -= len(text)
    return LogView(name, text, truncated)
