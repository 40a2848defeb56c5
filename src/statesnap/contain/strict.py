"""Strict mode: ``--statesnap-strict[=PROBES]`` makes a test that leaks state error at teardown.

This module is the feature's registration (its options and configure step); the check
itself, the outermost wrapper of ``pytest_runtest_teardown`` raising
:class:`~statesnap.contain.strictcheck.StateLeaked` with the diff, and its terminal lines are
in :mod:`statesnap.contain.strictcheck`, imported only when strict mode is on.  Its rules (wide
fixtures, allowances, isolated tests, the ``warnings`` probe): docs/ARCHITECTURE.md
("Strict mode").
"""

from __future__ import annotations

import pytest

from statesnap.plugin import markers, options
from statesnap.plugin.hookplugin import module_dir
from statesnap.plugin.run import RunState


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(options.GROUP)
    group.addoption(
        "--statesnap-strict",
        nargs="?",
        const="all",
        default=None,
        metavar="PROBES",
        help="a test that leaks state errors at teardown, showing the diff (default: every "
        "probe, changes of medium or high severity; '=env,cwd' selects probes, then every "
        "change counts); allowances: ini statesnap_allow, @pytest.mark.statesnap_allow",
    )
    parser.addini(
        "statesnap_allow",
        "state that --statesnap-strict tolerates: probe:key globs, one per line "
        "(env:MY_CACHE_*, modules:*)",
        type="linelist",
        default=[],
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", markers.HELP[markers.ALLOW])
    spec = options.probe_selection(config.option.statesnap_strict, "strict")
    allow = tuple(config.getini("statesnap_allow"))
    for pattern in allow:
        if ":" not in pattern:
            raise pytest.UsageError(
                f"statesnap_allow: {pattern!r} is not probe:key (for instance env:MY_VAR_*)"
            )
    run = RunState.of(config)
    run.modes["strict"] = spec
    if spec is None:
        return
    # Only a session with strict mode on has tests it flagged: the check and its lines.
    from statesnap.contain.strictcheck import StrictPlugin, terminal_lines

    if not run.child:
        config.pluginmanager.register(StrictPlugin(run, spec, allow), "statesnap-strict")
    run.add_lines(terminal_lines)


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
