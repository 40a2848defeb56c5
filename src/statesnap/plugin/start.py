"""What the core learns and writes at session start: the record header (with how replays
rerun this invocation), and the project under test when it is installed elsewhere."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.fsinfo import mtime_resolution
from statesnap.base.internal import note_internal_error
from statesnap.plugin.run import RunState
from statesnap.record.header import build_header, plugin_label
from statesnap.replay.args import OptionTable, option_table, replay_args


def pytest_option_table(config: pytest.Config) -> OptionTable:
    """Every option pytest's parser knows (plugins and conftests included), with its arity.

    pytest has no public view of its parser: ``config._parser.optparser`` is the argparse
    parser pytest 9 keeps from the start and pytest 8 sets on each parse (the last one has
    every option of the run); ``_getparser()`` builds one on pytest 8 before that.
    """
    parser = getattr(config, "_parser", None)
    optparser = getattr(parser, "optparser", None)
    if not isinstance(optparser, argparse.ArgumentParser) and hasattr(parser, "_getparser"):
        optparser = getattr(parser, "_getparser")()  # noqa: B009
    if not isinstance(optparser, argparse.ArgumentParser):
        raise TypeError(f"pytest {pytest.__version__}: no argparse parser on the config")
    return option_table(optparser)


def watch_installed_project(run: RunState) -> None:
    """The project at the rootdir, installed elsewhere (tox): watch it there, or say so."""
    from statesnap.plugin.project_dist import find_project

    try:
        found = find_project(run.settings.rootdir)
    except Exception as exc:  # odd metadata must not stop the session; the rootdir counts
        note_internal_error("finding the installed project", exc)
        return
    if found is None or run.ctx is None:
        return
    run.ctx.packages = tuple(dict.fromkeys((*run.ctx.packages, *found.top_level)))
    line = found.line()
    if line is not None:
        run.ctx.notes["project"] = line
        run.coverage_notes.append(line)


def session_header(run: RunState, statuses: list[dict[str, Any]]) -> dict[str, Any]:
    """The record's header line: the invocation, the probes' statuses, the modes."""
    resolution: dict[str, Any] = {}
    for root in run.settings.watch_roots:
        try:
            resolution[str(root)] = mtime_resolution(root)
        except Exception as exc:  # read-only checkout: say so, do not fail the run
            resolution[str(root)] = {"error": f"{type(exc).__name__}: {exc}"}
    config = run.config
    plugins = sorted({plugin_label(dist)
                      for _, dist in config.pluginmanager.list_plugin_distinfo()})
    seed = getattr(config.option, "randomly_seed", None)
    assert run.ctx is not None
    return build_header(
        worker=run.worker,
        args=config.invocation_params.args,
        invocation_dir=Path(config.invocation_params.dir),
        rootdir=run.settings.rootdir,
        inifile=config.inipath,
        plugins=plugins,
        seed=seed if isinstance(seed, int) else None,
        probes=statuses,
        mtime_resolution=resolution,
        redactor=run.redactor,
        notes=run.ctx.notes,
        extra={
            "watch_roots": [str(r) for r in run.settings.watch_roots],
            "modes": dict(run.modes),
            "replay": _replay_header(run),
        },
    )


def _replay_header(run: RunState) -> dict[str, Any]:
    """How replays and printed commands rerun this invocation (statesnap.replay.args)."""
    params = run.config.invocation_params
    out: dict[str, Any] = {"cwd": str(params.dir)}
    try:
        table = pytest_option_table(run.config)
    except Exception as exc:
        # Without the table no word can be read safely: replays run without the
        # invocation's options, and the record says so.
        note = (f"statesnap: cannot read pytest's options ({type(exc).__name__}: {exc}); "
                "replays and printed commands leave out this run's options")
        if run.ctx is not None:
            run.ctx.notes["replay"] = note
        run.say(note)
        out.update(args=["-p", "statesnap"], plain_args=[])
        return out
    out["reorders"] = reorderers(run.config)
    out["ini_reorders"] = ini_reorderers(run.config, out["reorders"])
    out["strict_markers"] = strict_markers(run.config)
    out["args"] = replay_args(params.args, table, keep_own=True, cwd=Path(params.dir))
    out["plain_args"] = replay_args(params.args, table, keep_own=False, cwd=Path(params.dir))
    # Whether this run had pytest's cache: a replay points it at a scratch folder only
    # then (``-o cache_dir`` is an unknown ini key, a warning, without the cacheprovider).
    out["cacheprovider"] = run.config.pluginmanager.has_plugin("cacheprovider")
    return out


def reorderers(config: pytest.Config) -> list[str]:
    """The plugins that reorder or spread this run's tests, by distribution name: a command
    that names an order switches each off (statesnap.replay.repro.REORDERERS)."""
    out: list[str] = []
    has = config.pluginmanager.has_plugin
    if has("reverse") and getattr(config.option, "reverse", False) is True:
        out.append("pytest-reverse")
    if has("random_order"):
        try:  # its own test of whether it is on (an option given, in addopts or not)
            from random_order.config import Config as RandomOrderConfig  # type: ignore

            if RandomOrderConfig(config).is_enabled:
                out.append("pytest-random-order")
        except Exception:  # another version: the flags it is switched on with
            if getattr(config.option, "random_order_enabled", False):
                out.append("pytest-random-order")
    if int(getattr(config.option, "numprocesses", 0) or 0) > 0 or hasattr(config, "workerinput"):
        out.append("pytest-xdist")
    return out


def ini_reorderers(config: pytest.Config, reorders: list[str]) -> list[str]:
    """The reorderers of ``reorders`` that the ini file's ``addopts`` or ``PYTEST_ADDOPTS``
    switches on: plain pytest refuses a command that blocks them (``-p no:reverse`` leaves
    that ``--reverse`` an unknown argument), so a command keeps them on and orders its node
    ids for them (statesnap.replay.repro.command_order)."""
    try:
        addopts = [str(a) for a in config.getini("addopts") or []]
    except Exception:  # no such ini key in another pytest: nothing known to come from it
        addopts = []
    try:
        addopts += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:  # unbalanced quotes: pytest itself would have refused to start
        pass
    return ["pytest-reverse"] if "pytest-reverse" in reorders and "--reverse" in addopts else []


def strict_markers(config: pytest.Config) -> bool:
    """Whether an unknown marker is an error in this run (``--strict-markers``, ``strict``):
    a command that blocks a marker-sorting plugin must then say its marker is no error."""
    try:
        value = config.getini("strict_markers")
        if value is None:
            value = config.getini("strict")
    except (ValueError, KeyError):  # a pytest before 9: the command-line flag alone
        value = getattr(config.option, "strict_markers", False)
    return bool(value)


#: Marker-sorting plugins: the plugin name, the distribution, the markers it sorts by.
_MARKER_SORTERS = (("pytest_order", "pytest-order", ("order",)),
                   ("pytest_ordering", "pytest-ordering", ("run", "first", "last")))


def marker_reorderers(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """The plugins that sort this run's collected tests by their markers (pytest-order,
    pytest-ordering): they reorder a command's node ids only where a test has one, so only
    then does a command switch them off."""
    out: list[str] = []
    for name, dist, markers in _MARKER_SORTERS:
        if config.pluginmanager.has_plugin(name) and any(
                item.get_closest_marker(m) is not None for item in items for m in markers):
            out.append(dist)
    return out
