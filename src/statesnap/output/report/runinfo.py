"""The run section: environment from the headers, probe status and cost, probe errors.

Several records (xdist workers, CI shards) usually share most of their environment, so each
row says a value once when every run agrees and lists it per run when they differ: the
difference is what a reviewer is looking for.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from statesnap.base.fsinfo import resolution_parts
from statesnap.base.plain import Value
from statesnap.output.report.lanes import Lane
from statesnap.output.report.values import SHORT_LIMIT, Scrubber, as_text, cut

#: Header fields shown in their own rows (everything else goes under "other header fields").
KNOWN_HEADER = frozenset({
    "type", "format", "statesnap_version", "run_id", "worker", "pid", "started", "python",
    "platform", "packages", "plugins", "args", "invocation_dir", "rootdir", "inifile", "seed",
    "probes", "mtime_resolution", "env", "notes", "watch_roots",
})
ENV_VALUE_LIMIT = 300


class RunValue(Value):
    _fields = ("label", "text")
    __slots__ = _fields

    def __init__(self, label: str, text: str) -> None:
        self.label = label
        self.text = text


class InfoRow(Value):
    """One fact about the run(s): one value if all runs agree, else one per run."""

    _fields = ("name", "values", "volatile")
    __slots__ = _fields

    def __init__(self, name: str, values: list[RunValue], volatile: bool = False) -> None:
        self.name = name
        self.values = values
        #: Changes on every run (times, pids): golden files scrub it.
        self.volatile = volatile

    @property
    def same(self) -> bool:
        return len({v.text for v in self.values}) <= 1

    @property
    def text(self) -> str:
        return self.values[0].text if self.values else ""


class RunStatus(Value):
    """One record: where it came from and how it ended."""

    _fields = ("label", "source", "tests", "exitstatus", "crashed", "truncated", "running",
               "cut")
    __slots__ = _fields

    def __init__(self, label: str, source: str, tests: int, exitstatus: Any, crashed: bool,
                 truncated: bool, running: str | None, cut: str | None = None) -> None:
        self.label = label
        self.source = source
        self.tests = tests
        self.exitstatus = exitstatus
        self.crashed = crashed
        self.truncated = truncated
        self.running = running
        #: Why the disk cut the record short mid-run (None: it was not).
        self.cut = cut


class ProbeRow(Value):
    _fields = ("name", "status", "details", "per_test_us", "total_ms", "tokens", "reads", "share")
    __slots__ = _fields

    def __init__(self, name: str, status: str, details: list[str], per_test_us: float | None,
                 total_ms: float | None, tokens: int, reads: int, share: float = 0.0) -> None:
        self.name = name
        self.status = status
        self.details = details
        self.per_test_us = per_test_us
        self.total_ms = total_ms
        self.tokens = tokens
        self.reads = reads
        #: per_test_us relative to the costliest probe, for the bar (0..1).
        self.share = share


class ProbeError(Value):
    _fields = ("lane", "probe", "where", "test", "error")
    __slots__ = _fields

    def __init__(self, lane: str, probe: str, where: str, test: str, error: str) -> None:
        self.lane = lane
        self.probe = probe
        self.where = where
        self.test = test
        self.error = error


class RunInfo(Value):
    _fields = ("statuses", "rows", "packages", "env", "other", "probes", "errors", "per_test_us",
               "collection", "facts")
    __slots__ = _fields

    def __init__(self, statuses: list[RunStatus], rows: list[InfoRow], packages: list[InfoRow],
                 env: list[InfoRow], other: list[InfoRow], probes: list[ProbeRow],
                 errors: list[ProbeError], per_test_us: float | None = None, collection: int = 0,
                 facts: list[tuple[str, str]] | None = None) -> None:
        self.statuses = statuses
        self.rows = rows
        self.packages = packages
        self.env = env
        self.other = other
        self.probes = probes
        self.errors = errors
        self.per_test_us = per_test_us
        self.collection = collection
        self.facts: list[tuple[str, str]] = [] if facts is None else facts


def _when(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _python(h: Mapping[str, Any]) -> str:
    py = h.get("python") or {}
    if not isinstance(py, Mapping):
        return as_text(py)
    return f"{py.get('implementation', '')} {py.get('version', '')}".strip()


def _platform(h: Mapping[str, Any]) -> str:
    plat = h.get("platform") or {}
    if isinstance(plat, Mapping):
        return str(plat.get("platform") or plat.get("system") or "")
    return as_text(plat)


def _args(h: Mapping[str, Any]) -> str:
    args = h.get("args")
    if isinstance(args, list):
        return shlex.join(str(a) for a in args)
    return as_text(args) if args is not None else ""


def _resolution(info: Any) -> str:
    """``ext4 at /: mtime to 1 ns, writes tick every 4 ms`` from a header's measurement."""
    if not isinstance(info, Mapping) or "resolution_ns" not in info:
        return as_text(info)
    if info.get("error"):
        return f"not measured ({info['error']})"
    text, where = resolution_parts(info)
    return f"{where}: {text}" if where else text


def _mtime(h: Mapping[str, Any]) -> str:
    res = h.get("mtime_resolution") or {}
    if not isinstance(res, Mapping):
        return as_text(res)
    return "\n".join(f"{root} — {_resolution(value)}" for root, value in sorted(res.items()))


def _field(name: str) -> Callable[[Mapping[str, Any]], str]:
    def get(h: Mapping[str, Any]) -> str:
        value = h.get(name)
        if value is None:
            return ""
        if isinstance(value, list):
            return ", ".join(as_text(v) for v in value)
        return as_text(value)

    return get


#: (row name, how to read it from a header, volatile)
_ROWS: tuple[tuple[str, Callable[[Mapping[str, Any]], str], bool], ...] = (
    ("Python", _python, False),
    ("Executable", lambda h: str((h.get("python") or {}).get("executable") or "")
     if isinstance(h.get("python"), Mapping) else "", False),
    ("Platform", _platform, False),
    ("statesnap", _field("statesnap_version"), False),
    ("Worker", _field("worker"), False),
    ("Root directory", _field("rootdir"), False),
    ("Invoked from", _field("invocation_dir"), False),
    ("Ini file", _field("inifile"), False),
    ("Arguments", _args, False),
    ("Random seed", _field("seed"), False),
    ("Plugins", _field("plugins"), False),
    ("Watched roots", _field("watch_roots"), False),
    ("mtime resolution", _mtime, False),
    ("Started", lambda h: _when(h.get("started")), True),
    ("Process id", _field("pid"), True),
    ("Run id", _field("run_id"), True),
)


def _row(lanes: Sequence[Lane], texts: Sequence[str], name: str,
         volatile: bool = False) -> InfoRow | None:
    if not any(texts):
        return None
    values = [RunValue(lane.label, cut(text, SHORT_LIMIT * 5) or "—")
              for lane, text in zip(lanes, texts, strict=True)]
    return InfoRow(name, values, volatile)


def _keyed(lanes: Sequence[Lane], maps: Sequence[Mapping[str, Any]],
           limit: int) -> list[InfoRow]:
    names = sorted({str(k) for m in maps for k in m}, key=str.lower)
    if len(maps) == 1 and all(type(k) is str for k in maps[0]):
        # One record (most runs): one value a row, without a list of values made a row at a
        # time over the lanes (about 0.7 M instructions of a small run's report, issue 28).
        label, only = lanes[0].label, maps[0]
        return [InfoRow(name, [RunValue(label, cut(as_text(only[name]), limit))])
                for name in names]
    rows = []
    for name in names:
        values = [RunValue(lane.label, cut(as_text(m[name]), limit) if name in m else "—")
                  for lane, m in zip(lanes, maps, strict=True)]
        rows.append(InfoRow(name, values))
    return rows


_SCALARS = (str, int, float, type(None))


def _scrub_envs(value: Any, scrubber: Scrubber) -> Any:
    """Redact every mapping held under a key named ``env`` (a replay's environment, say)."""
    if isinstance(value, _SCALARS):  # most of a header: no ABC check (about 2 K each)
        return value
    if isinstance(value, Mapping):
        return {
            k: scrubber.mapping(v) if k == "env" and isinstance(v, Mapping)
            else _scrub_envs(v, scrubber)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub_envs(v, scrubber) for v in value]
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def run_info(lanes: Sequence[Lane], scrubber: Scrubber) -> RunInfo:
    headers = [lane.record.header for lane in lanes]
    rows = [r for name, get, vol in _ROWS
            if (r := _row(lanes, [get(h) for h in headers], name, vol))]
    finished = _row(lanes, [_when((lane.record.footer or {}).get("finished")) for lane in lanes],
                    "Finished", volatile=True)
    if finished is not None:
        rows.append(finished)
    envs = [scrubber.mapping(_mapping(h.get("env"))) for h in headers]
    others = [{k: _scrub_envs(v, scrubber) for k, v in h.items() if k not in KNOWN_HEADER}
              for h in headers]
    notes = [_mapping(h.get("notes")) for h in headers]
    statuses = [
        RunStatus(
            label=lane.label,
            source=lane.record.path.name,
            tests=len(lane.record.tests),
            exitstatus=(lane.record.footer or {}).get("exitstatus"),
            crashed=lane.record.crashed,
            truncated=lane.record.truncated,
            running=cut(str(lane.record.running.get("nodeid", "?")), 1000)
            if lane.record.running else None,
            cut=None if lane.record.cut is None else str(lane.record.cut.get("error", "?")),
        )
        for lane in lanes
    ]
    probes, per_test = probe_rows(lanes)
    return RunInfo(
        statuses=statuses,
        rows=rows,
        packages=_keyed(lanes, [_mapping(h.get("packages")) for h in headers], 100),
        env=_keyed(lanes, envs, ENV_VALUE_LIMIT),
        other=_keyed(lanes, [{**o, **{f"note: {k}": v for k, v in n.items()}}
                             for o, n in zip(others, notes, strict=True)], SHORT_LIMIT * 5),
        probes=probes,
        errors=probe_errors(lanes),
        per_test_us=per_test,
        collection=sum(len(lane.record.collection) for lane in lanes),
    )


def probe_rows(lanes: Sequence[Lane]) -> tuple[list[ProbeRow], float | None]:
    """Per-probe status and cost summed over all runs; and all probes' cost per test."""
    #: probe -> [(run label, status, detail)], in the order the headers list the probes
    states: dict[str, list[tuple[str, str, str]]] = {}
    totals: dict[str, list[float]] = {}
    tests = sum(len(lane.record.tests) for lane in lanes)
    for lane in lanes:
        footer = lane.record.footer or {}
        disabled = _mapping(footer.get("disabled"))
        for p in lane.record.header.get("probes") or []:
            if not isinstance(p, Mapping):
                continue
            name = str(p.get("name"))
            status, detail = str(p.get("status", "ok")), p.get("detail")
            if name in disabled:
                status, detail = "switched off", disabled[name]
            states.setdefault(name, []).append((lane.label, status, str(detail or "")))
        for name, cost in _mapping(footer.get("costs")).items():
            if not isinstance(cost, Mapping):
                continue
            states.setdefault(str(name), [])
            acc = totals.setdefault(str(name), [0.0, 0.0, 0.0])
            acc[0] += float(cost.get("total_ms") or 0.0)
            acc[1] += float(cost.get("tokens") or 0)
            acc[2] += float(cost.get("reads") or 0)
    rows = []
    for name, runs in states.items():
        got = totals.get(name)
        kinds = {status for _, status, _ in runs}
        distinct = {(status, detail) for _, status, detail in runs}
        if len(distinct) <= 1:  # every run agrees: say it once
            details = [detail for _, detail in distinct if detail]
        else:
            details = [f"{label}: {status}" + (f" ({detail})" if detail else "")
                       for label, status, detail in runs]
        rows.append(ProbeRow(
            name=name,
            status=next(iter(kinds)) if len(kinds) == 1 else ("mixed" if kinds else "ok"),
            details=details,
            per_test_us=round(got[0] * 1000 / tests, 2) if got is not None and tests else None,
            total_ms=round(got[0], 3) if got is not None else None,
            tokens=int(got[1]) if got is not None else 0,
            reads=int(got[2]) if got is not None else 0,
        ))
    top = max((r.per_test_us or 0.0 for r in rows), default=0.0)
    for r in rows:
        r.share = (r.per_test_us or 0.0) / top if top else 0.0
    costed = [r.per_test_us for r in rows if r.per_test_us is not None]
    return rows, round(sum(costed), 2) if costed else None


def probe_errors(lanes: Sequence[Lane]) -> list[ProbeError]:
    out = []
    for lane in lanes:
        # Only where there are errors: a dict of every test costs 10 MB on a record of
        # 267,000 tests (issue 27).
        ids = ({e.test.index: e.nodeid for e in lane.entries if e.test is not None}
               if lane.record.errors else {})
        for err in lane.record.errors:
            index = err.get("index")
            out.append(ProbeError(
                lane=lane.label,
                probe=str(err.get("probe", "?")),
                where=str(err.get("where", "")),
                test=ids.get(index, f"before test #{index}") if isinstance(index, int) else "",
                error=cut(str(err.get("error", "")), SHORT_LIMIT * 5),
            ))
    return out
