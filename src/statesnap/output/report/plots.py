"""Inline SVG plots of the per-test gauges (open fds, live threads, children, GPU memory).

Geometry is computed here, so the template only writes numbers into SVG attributes.  Lines
are step lines (a gauge is read after each test's teardown, so a step at a test is that
test's doing), and the largest upward steps are marked and name the test that made them:
the polluter's step a reviewer looks for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from statesnap.base.plain import Value
from statesnap.output.report.lanes import Lane
from statesnap.output.report.values import cut

#: Known gauges: name → (title, unit).  Others are plotted too, under their own name.
KNOWN_GAUGES: dict[str, tuple[str, str]] = {
    "fds": ("Open file descriptors", ""),
    "threads": ("Live threads", ""),
    "children": ("Child processes", ""),
    "gpu_mem": ("GPU memory", "bytes"),
}
WIDTH, HEIGHT = 1000, 170
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 10, 24
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
#: Upward steps marked per lane and gauge.
MARKED_STEPS = 3


class Series(Value):
    _fields = ("lane", "label", "points")
    __slots__ = _fields

    def __init__(self, lane: int, label: str, points: str) -> None:
        self.lane = lane
        self.label = label
        self.points = points


class StepMark(Value):
    _fields = ("x", "y", "key", "title")
    __slots__ = _fields

    def __init__(self, x: float, y: float, key: str, title: str) -> None:
        self.x = x
        self.y = y
        self.key = key
        self.title = title


class PlotView(Value):
    _fields = ("name", "title", "unit", "series", "marks", "y_ticks", "x_ticks", "width", "height",
               "left", "top", "plot_w", "plot_h", "lanes")
    __slots__ = _fields

    def __init__(self, name: str, title: str, unit: str, series: list[Series],
                 marks: list[StepMark], y_ticks: list[tuple[float, str]],
                 x_ticks: list[tuple[float, str]], width: int = WIDTH, height: int = HEIGHT,
                 left: int = LEFT, top: int = TOP, plot_w: int = PLOT_W, plot_h: int = PLOT_H,
                 lanes: list[str] | None = None) -> None:
        self.name = name
        self.title = title
        self.unit = unit
        self.series = series
        self.marks = marks
        self.y_ticks = y_ticks
        self.x_ticks = x_ticks
        self.width = width
        self.height = height
        self.left = left
        self.top = top
        self.plot_w = plot_w
        self.plot_h = plot_h
        self.lanes: list[str] = [] if lanes is None else lanes


def describe(name: str) -> tuple[str, str]:
    """``(title, unit)`` of a gauge: known names, else from a unit suffix (``_mib``, ``_bytes``).

    The torch probe, for one, names its gauge ``torch.cuda:0_allocated_mib``.
    """
    if name in KNOWN_GAUGES:
        return KNOWN_GAUGES[name]
    for suffix, unit in (("_mib", "MiB"), ("_bytes", "bytes")):
        if name.endswith(suffix):
            stem = name.removesuffix(suffix).replace("_", " ")
            return (f"GPU memory: {stem}" if "cuda" in stem else stem), unit
    return name, ""


def format_value(value: float, unit: str) -> str:
    if unit == "MiB":
        return format_value(value * (1 << 20), "bytes")
    if unit == "bytes":
        for suffix, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(value) >= scale:
                return f"{value / scale:.1f} {suffix}"
        return f"{value:.0f} B"
    return f"{value:g}"


def _gauge_maps(lane: Lane) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(position, gauges)`` of each of the lane's tests that has them: the record's tests
    themselves, in run order (their positions are the entries'), without making an entry of
    each (a test running at a crash has no gauges)."""
    for pos, test in enumerate(lane.record.tests):
        g = test.extra.get("gauges")
        if isinstance(g, dict):
            yield pos, g


def _gauges(lanes: Sequence[Lane]) -> list[str]:
    seen: dict[str, None] = {}
    for lane in lanes:
        for _pos, g in _gauge_maps(lane):
            for name, value in g.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    seen.setdefault(str(name), None)
    known = [n for n in KNOWN_GAUGES if n in seen]
    return known + sorted(n for n in seen if n not in KNOWN_GAUGES)


def _values(lane: Lane, name: str) -> list[tuple[int, float]]:
    out = []
    for pos, g in _gauge_maps(lane):
        value = g.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((pos, float(value)))
    return out


def _step_points(xy: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A step line through ``xy``; within one pixel column, its first, lowest, highest, last.

    Keeps a 10,000-test plot to about four points per pixel column while every spike stays
    visible.
    """
    columns: dict[int, list[float]] = {}
    order: list[int] = []
    for x, y in xy:
        col = int(x)
        if col not in columns:
            columns[col] = [x, y, y, y, y]
            order.append(col)
        else:
            c = columns[col]
            c[2], c[3], c[4] = min(c[2], y), max(c[3], y), y
    points: list[tuple[float, float]] = []
    for col in order:
        x, first, low, high, last = columns[col]
        if points:
            points.append((x, points[-1][1]))  # horizontal run, then the step
        for y in (first, low, high, last):
            if not points or points[-1] != (x, y):
                points.append((x, y))
    # A flat stretch needs only its two ends.
    flat: list[tuple[float, float]] = []
    for p in points:
        if len(flat) >= 2 and flat[-1][1] == p[1] == flat[-2][1]:
            flat[-1] = p
        else:
            flat.append(p)
    return flat


def plots(lanes: Sequence[Lane]) -> list[PlotView]:
    width = max((len(lane.entries) for lane in lanes), default=1)
    span = max(width - 1, 1)

    def x_of(pos: int) -> float:
        return LEFT + pos / span * PLOT_W

    out = []
    for name in _gauges(lanes):
        title, unit = describe(name)
        per_lane = [(lane, _values(lane, name)) for lane in lanes]
        all_values = [v for _, vals in per_lane for _, v in vals]
        lo, hi = min(all_values), max(all_values)
        integral = all(v.is_integer() for v in all_values)
        if hi == lo:  # a flat line sits mid-plot: widen by one count, or by a tenth of a size
            pad = 1.0 if integral and abs(lo) < 1000 else (abs(lo) * 0.1 or 1.0)
            lo, hi = lo - pad, hi + pad

        def y_of(v: float, lo: float = lo, hi: float = hi) -> float:
            return TOP + PLOT_H - (v - lo) / (hi - lo) * PLOT_H

        series, marks = [], []
        for lane, vals in per_lane:
            if not vals:
                continue
            pts = _step_points([(x_of(p), y_of(v)) for p, v in vals])
            series.append(Series(lane.index, lane.label,
                                 " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
            steps = [(vals[i][1] - vals[i - 1][1], i) for i in range(1, len(vals))
                     if vals[i][1] > vals[i - 1][1]]
            for _delta, i in sorted(steps, reverse=True)[:MARKED_STEPS]:
                pos, value = vals[i]
                entry = lane.entries[pos]
                before = format_value(vals[i - 1][1], unit)
                marks.append(StepMark(
                    x=round(x_of(pos), 1), y=round(y_of(value), 1), key=lane.key(pos),
                    title=f"{cut(entry.nodeid, 300)} ({lane.label}): {before} → "
                          f"{format_value(value, unit)}",
                ))
        mid = (lo + hi) / 2
        ticks = (hi, mid, lo) if mid.is_integer() or not integral else (hi, lo)
        y_ticks = [(round(y_of(v), 1), format_value(v, unit)) for v in ticks]
        x_ticks = [(round(x_of(p), 1), f"#{p + 1}") for p in sorted({0, span // 2, span})]
        out.append(PlotView(name, title, unit, series, marks, y_ticks, x_ticks,
                            lanes=[lane.label for lane in lanes]))
    return out
