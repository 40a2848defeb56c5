"""Probe discovery: entry points (group ``statesnap.probes``) plus a pytest hook.

Each entry point names a callable returning probe instances.  Built-ins come the same way; if
the package is used from a source tree without being installed, they are added directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from statesnap.probes.base import Probe, ProbeContext, ProbeUnavailable, Severity
from statesnap.probes.entrypoints import entry_points

__all__ = [
    "Probe",
    "ProbeContext",
    "ProbeUnavailable",
    "Severity",
    "discover",
    "parse_selection",
    "select",
]

ENTRY_POINT_GROUP = "statesnap.probes"


def discover(warn: Callable[[str], None] | None = None) -> list[Probe]:
    """Probes from every installed entry point, built-ins first."""
    probes: list[Probe] = []
    have_builtin = False
    eps = sorted(
        entry_points(ENTRY_POINT_GROUP),
        key=lambda ep: (ep.name != "builtin", ep.name),
    )
    for ep in eps:
        try:
            factory = ep.load()
            made = factory()
            items: Iterable[Probe] = [made] if isinstance(made, Probe) else made
            for probe in items:
                probes.append(probe)
            if ep.value.startswith("statesnap.probes.builtin"):
                have_builtin = True
        except Exception as exc:  # a broken third-party package must not stop the run
            if warn is not None:
                warn(f"statesnap: probe entry point {ep.name!r} failed to load: {exc!r}")
    if not have_builtin:
        from statesnap.probes.builtin import builtin_probes

        probes[:0] = builtin_probes()
    return probes


def parse_selection(text: str | None) -> tuple[set[str] | None, set[str]]:
    """``"env,fds"`` → only those; ``"-files,-random"`` → all but those; both may mix;
    ``"none"`` → no probe at all (the record keeps the order and outcomes only)."""
    if not text:
        return None, set()
    if text.strip() == "none":
        return set(), set()
    only: set[str] = set()
    drop: set[str] = set()
    for part in text.replace(" ", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if part.startswith("-"):
            drop.add(part[1:])
        else:
            only.add(part.lstrip("+"))
    return (only or None), drop


def select(probes: Sequence[Probe], only: set[str] | None, drop: set[str]) -> list[Probe]:
    """Apply a parsed selection, keeping the first probe of each name."""
    seen: set[str] = set()
    out: list[Probe] = []
    for p in probes:
        if p.name in seen:
            continue
        seen.add(p.name)
        if only is not None and p.name not in only:
            continue
        if p.name in drop:
            continue
        out.append(p)
    return out
