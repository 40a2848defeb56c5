"""The session's probes: which ones run (installed, added by plugins, chosen on the command
line) and starting each, noting those that cannot run and why.

Called once, at session start, before anything is written: an unknown probe name is a usage
error that leaves no record behind.
"""

from __future__ import annotations

from typing import Any

import pytest

from statesnap import probes as probe_registry
from statesnap.plugin.run import RunState
from statesnap.probes.base import Probe, ProbeUnavailable, is_statesnap_module

#: The on-demand probe of wide fixtures' values (statesnap.probes.fixtures), imported only in
#: the runs that use it: a recording run pays no import for it.
FIXTURES = "fixtures"


def make_probes(run: RunState) -> list[Probe]:
    """The probes this session runs, not yet set up; a usage error for an unknown name."""
    config, settings = run.config, run.settings
    found = probe_registry.discover(warn=run.say)
    for extra in config.hook.pytest_statesnap_add_probes(config=config):
        if extra:
            found.extend(extra)
    only, drop = probe_registry.parse_selection(settings.probes)
    # Known by name everywhere; run only where asked (its read digests every live wide
    # fixture after each test) or where a selection names it.
    if settings.watch_fixtures or (only is not None and FIXTURES in only):
        from statesnap.probes.fixtures import FixturesProbe

        found.append(FixturesProbe())
    known = {p.name for p in found} | {FIXTURES}
    unknown = (only or set()) - known | (drop - known)
    if unknown:
        raise pytest.UsageError(
            f"--statesnap-probes: unknown probe(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})"
        )
    return probe_registry.select(found, only, drop)


def start_probes(run: RunState, chosen: list[Probe]
                 ) -> tuple[list[Probe], list[dict[str, Any]]]:
    """Set up each chosen probe: those that started, and every probe's status for the record
    header (a probe that is unavailable or fails to start is noted and left out)."""
    assert run.ctx is not None
    active: list[Probe] = []
    statuses: list[dict[str, Any]] = []
    for probe in chosen:
        try:
            probe.setup(run.ctx)
        except ProbeUnavailable as exc:
            run.unavailable[probe.name] = str(exc)
            statuses.append({"name": probe.name, "status": "unavailable", "detail": str(exc)})
            continue
        except Exception as exc:
            detail = f"setup: {type(exc).__name__}: {exc}"
            run.unavailable[probe.name] = detail
            statuses.append({"name": probe.name, "status": "error", "detail": detail})
            run.say(f"statesnap: probe {probe.name!r} failed to start ({detail})")
            continue
        mode = getattr(probe, "mode", None)
        status: dict[str, Any] = {"name": probe.name, "status": "ok",
                                  "detail": str(mode) if mode else None}
        if not is_statesnap_module(type(probe).__module__):
            # A third-party probe's class is not importable where the record is read (the
            # CLI, the hunt): whether a key-level replay may put its keys back is noted here.
            status["restorable"] = bool(probe.restorable or probe.replay_restorable)
        statuses.append(status)
        active.append(probe)
    return active, statuses
