"""Strict mode: ``--statesnap-strict[=PROBES]`` makes a test that leaks state error at teardown.

This module is the feature's registration (options, configure, terminal lines); the check
itself, the outermost wrapper of ``pytest_runtest_teardown`` raising
:class:`~statesnap.contain.strictcheck.StateLeaked` with the diff, is in
:mod:`statesnap.contain.strictcheck`, imported only when strict mode is on.  Its rules (wide
fixtures, allowances, isolated tests, the ``warnings`` probe): docs/ARCHITECTURE.md
("Strict mode").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from statesnap.plugin import markers, options
from statesnap.plugin.hookplugin import module_dir
from statesnap.plugin.run import MAX_LINES, RunState

if TYPE_CHECKING:
    from statesnap.contain.strictcheck import StrictPlugin

ALLOW_MARKER = markers.ALLOW
STRICT_KEY: pytest.StashKey[StrictPlugin] = pytest.StashKey()
#: The field of a test's record line: the ``probe:key`` refs it errored for.
FIELD = "strict"


def escaped_leak_message(run: RunState, item: pytest.Item) -> str | None:
    """For an isolated test, in the parent: what escaped its child (files), if strict is on."""
    strict = run.config.stash.get(STRICT_KEY, None)
    return None if strict is None else strict.check_escaped(item)


# -- the feature's registration: options, configure, terminal lines ----------------------
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
    config.addinivalue_line("markers", markers.HELP[ALLOW_MARKER])
    spec = options.probe_selection(config.option.statesnap_strict, "strict")
    allow = tuple(config.getini("statesnap_allow"))
    for pattern in allow:
        if ":" not in pattern:
            raise pytest.UsageError(
                f"statesnap_allow: {pattern!r} is not probe:key (for instance env:MY_VAR_*)"
            )
    run = RunState.of(config)
    run.modes["strict"] = spec
    if spec is not None and not run.child:
        from statesnap.contain.strictcheck import StrictPlugin

        config.pluginmanager.register(StrictPlugin(run, spec, allow), "statesnap-strict")
    run.add_lines(terminal_lines)


def terminal_lines(run: RunState) -> list[str]:
    strict = run.results.tests_with(FIELD)
    if not strict:
        return []
    return [f"strict mode: {len(strict)} test(s) errored for leaking state:"] + [
        f"    {nodeid}: {', '.join(map(str, refs))}" for nodeid, refs in strict[:MAX_LINES]]


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
