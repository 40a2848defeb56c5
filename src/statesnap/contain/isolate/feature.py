"""The isolation feature's registration: its options, configure step, record field and
terminal lines.  The work itself is in :mod:`~statesnap.contain.isolate.plugin` (which tests,
how) and :mod:`~statesnap.contain.isolate.run` (the child and its reports)."""

from __future__ import annotations

import argparse

import pytest

from statesnap.base.argtypes import nonnegative_seconds
from statesnap.contain.isolate.modes import FIELD, MARKER, MODES, IsolateSettings
from statesnap.contain.isolate.plugin import IsolatePlugin
from statesnap.plugin import markers, options
from statesnap.plugin.hookplugin import module_dir
from statesnap.plugin.run import MAX_LINES, RunState


def _mode(text: str) -> str:
    if text in MODES:
        return text
    raise argparse.ArgumentTypeError(
        f"expected one of {', '.join(MODES)}, got {text!r}; "
        + options.ATTACH_HINT.format(name="isolate"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(options.GROUP)
    group.addoption(
        "--statesnap-isolate",
        nargs="?",
        const="auto",
        default=None,
        type=_mode,
        metavar="fork|spawn",
        help="run every test in a fresh child process, so what it leaks dies with it: fork "
        "when safe, spawn a new interpreter when CUDA is initialised (or when asked); "
        "single tests: @pytest.mark.statesnap_isolate",
    )
    group.addoption(
        "--statesnap-isolate-timeout",
        type=nonnegative_seconds,
        metavar="SECONDS",
        default=None,
        help="kill an isolated test's process group after SECONDS and fail the test "
        "(default: no limit)",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", markers.HELP[MARKER])
    run = RunState.of(config)
    settings = IsolateSettings(mode=config.option.statesnap_isolate,
                               timeout=config.option.statesnap_isolate_timeout or None)
    run.modes["isolate"] = settings.mode
    channel = run.settings.isolate_child
    if channel is not None:
        from statesnap.contain.isolate.spawn import SpawnedChild

        config.pluginmanager.register(SpawnedChild(run, channel), "statesnap-spawned-child")
        return
    config.pluginmanager.register(IsolatePlugin(run, settings), "statesnap-isolate")
    run.add_lines(terminal_lines)


def terminal_lines(run: RunState) -> list[str]:
    # An isolated test's line carries its field (every test's line may carry others: the
    # gauges): without one, nothing to say, and the typed fields (their module) are not
    # imported.
    tests = [t for record in run.results.all() for t in record.tests if FIELD in t.extra]
    if not tests:
        return []
    from statesnap.contain.isolate.fields import Isolation

    modes: dict[str, int] = {}
    crashed: list[str] = []
    for t in tests:
        info = Isolation.of(t)
        if info is None:
            continue
        modes[info.mode] = modes.get(info.mode, 0) + 1
        if info.crashed:
            crashed.append(f"    {t.nodeid}: {info.how_it_died()}")
    if not modes:
        return []
    total = sum(modes.values())
    how = ", ".join(f"{m} {n}" for m, n in sorted(modes.items()))
    lines = [f"isolated {total} test(s) in child processes ({how}); their own changes died "
             "with them"]
    if crashed:
        lines.append(f"  {len(crashed)} isolated test process(es) died:")
        lines += crashed[:MAX_LINES]
    return lines


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
