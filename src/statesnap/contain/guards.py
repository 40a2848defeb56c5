"""Guards: ``@pytest.mark.statesnap_requires_clean("cuda", "env:CUDA_VISIBLE_DEVICES", ...)``.

A guarded test whose required state is already dirty errors at setup, naming the test that
dirtied it.  Arguments and aliases: docs/ARCHITECTURE.md ("Guards").
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import pytest
from _pytest.outcomes import Failed

from statesnap.output.lines import short
from statesnap.plugin import markers
from statesnap.plugin.hookplugin import HookPlugin, module_dir
from statesnap.plugin.run import RunState
from statesnap.state.diff import Change

MARKER = markers.REQUIRES_CLEAN
#: Names that stand for several probe:key globs.
ALIASES: dict[str, tuple[str, ...]] = {
    "cuda": ("torch:*cuda*", "nvml:*"),
}
_VERDICT = pytest.StashKey[str | None]()
_SETUP_NAME = "statesnap-guard-setup"


class StateDirty(Failed):
    """Raised at setup: state the test requires clean was dirtied by an earlier test."""


def expand(spec: str) -> list[tuple[str, str]]:
    """``(probe, key glob)`` pairs of one marker argument."""
    if spec in ALIASES:
        return [tuple(s.split(":", 1)) for s in ALIASES[spec]]  # type: ignore[misc]
    probe, _, key = spec.partition(":")
    return [(probe, key or "*")]


def guard_verdict(item: pytest.Item) -> str | None:
    """The error a guarded item will raise at setup (reached before it started), or None."""
    return item.stash.get(_VERDICT, None)


class GuardPlugin:
    """Decides before each marked test whether its required state is clean.

    A per-test observer of the run (:meth:`RunState.observe`), not a pytest plugin: it has
    no hook of its own, so a session with no guarded test registers nothing for guards (each
    registration costs a session ~1 M instructions: pytest and pluggy read its names)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        #: ``(probe, key) -> (nodeid, index)`` of the last test whose diff changed it.
        self.writers: dict[tuple[str, str], tuple[str, int]] = {}
        #: Whether any collected item is guarded (None: not known, look at every test).
        self.any_marked: bool | None = None

    def _known(self) -> set[str]:
        p = self.run
        names = {pr.name for pr in p.snapshotter.probes} if p.snapshotter else set()
        return names | set(p.unavailable) | set(p.snapshotter.disabled if p.snapshotter else {})

    def verdict(self, item: pytest.Item) -> str | None:
        """The error text when required state is dirty (or a spec is unknown), else None."""
        specs = [str(a) for m in item.iter_markers(MARKER) for a in m.args]
        p = self.run
        base = p.session_baseline
        now = p.tracker.current if p.tracker is not None else None
        if not specs or base is None or now is None:
            return None
        known = self._known()
        lines: list[str] = []
        for spec in specs:
            for probe, glob in expand(spec):
                if spec not in ALIASES and probe not in known:
                    return (f"statesnap: @pytest.mark.{MARKER}({spec!r}): no probe {probe!r} "
                            f"(probes: {', '.join(sorted(known))}; aliases: "
                            f"{', '.join(sorted(ALIASES))})")
                a, b = base.get(probe), now.get(probe)
                for key in sorted(set(a) | set(b)):
                    if a.get(key) == b.get(key) or not fnmatch.fnmatchcase(key, glob):
                        continue
                    writer = self.writers.get((probe, key))
                    who = (f"dirtied by {writer[0]} (index {writer[1]})" if writer
                           else "dirtied before this test by an unknown writer")
                    lines.append(f"  {probe}:{key}: {short(a.get(key))} → "
                                 f"{short(b.get(key))}: {who}")
        if not lines:
            return None
        return (f"statesnap: {item.nodeid} requires this state as the session started, "
                "but it is dirty:\n" + "\n".join(lines))

    # -- per-test observer (statesnap.plugin.run.TestObserver) ------------------------------
    def before_test(self, item: pytest.Item) -> None:
        if self.any_marked is None:
            # Once, at the first test, over the session's collected items: with no guarded
            # test in the session (the usual case), no test looks again.
            items = getattr(item.session, "items", None)
            if isinstance(items, list) and item in items:
                self.any_marked = MARKER in markers.names_on(items)
        if self.any_marked is not False and item.get_closest_marker(MARKER) is not None:
            verdict = item.stash[_VERDICT] = self.verdict(item)
            pm = self.run.config.pluginmanager
            if verdict is not None and not pm.has_plugin(_SETUP_NAME):
                # Registered on the first dirty verdict: until then no test pays for a setup
                # hook that has nothing to raise.
                pm.register(_GuardSetup(), _SETUP_NAME)

    def after_test(self, item: pytest.Item, index: int, changes: Sequence[Change]) -> list[str]:
        for ch in changes:
            self.writers[(ch.probe, ch.key)] = (item.nodeid, index)
        return []


class _GuardSetup(HookPlugin):
    """Raises a guarded test's verdict at its setup (registered when some test is guarded)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        message = item.stash.get(_VERDICT, None)
        if message is not None:
            raise StateDirty(message, pytrace=False)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Guards are always on: a test pays only when some collected test is marked."""
    config.addinivalue_line("markers", markers.HELP[MARKER])
    run = RunState.of(config)
    run.observe(GuardPlugin(run))


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
