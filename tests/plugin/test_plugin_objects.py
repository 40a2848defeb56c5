"""statesnap's plugins list only their hooks to ``dir()``, and pluggy finds every hook.

pytest parses every name a plugin lists (for fixtures, and pluggy for hooks), so the objects
statesnap registers list only their ``pytest_*`` names (statesnap.plugin.hookplugin); this
checks, on the plugins of a real configured session, that pluggy registered exactly the hooks
that a full ``dir()`` of each object holds.  The same for the modules registered as plugins
(statesnap itself and each containment feature): their ``__dir__`` lists their hooks.
"""

from __future__ import annotations

import types

import pytest


def _hooks_in_full_dir(pm: pytest.PytestPluginManager, plugin: object) -> set[str]:
    names = object.__dir__(plugin)
    return {n for n in names if pm.parse_hookimpl_opts(plugin, n) is not None}


def test_every_hook_of_every_statesnap_plugin_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    config = pytester.parseconfigure("-p", "no:randomly", "-p", "statesnap",
                                     "--statesnap-restore=env", "--statesnap-strict=env",
                                     f"--statesnap-record={pytester.path / 'r.jsonl'}")
    pm = config.pluginmanager
    seen = []
    for name, plugin in pm.list_name_plugin():
        if not str(name).startswith("statesnap-") or plugin is None:
            continue
        seen.append(name)
        listed = dir(plugin)
        assert listed and all(n.startswith("pytest_") for n in listed), name
        registered = {caller.name for caller in pm.get_hookcallers(plugin) or []}
        assert registered == _hooks_in_full_dir(pm, plugin), name
    assert {"statesnap-session", "statesnap-end", "statesnap-isolate",
            "statesnap-strict", "statesnap-restore"} <= set(seen)


def _statesnap_objects(config: pytest.Config) -> set[str]:
    return {str(name) for name, plugin in config.pluginmanager.list_name_plugin()
            if str(name).startswith("statesnap-") and plugin is not None}


def test_a_default_session_registers_only_the_plugin_objects_it_uses(
        pytester: pytest.Pytester) -> None:
    """Each registration costs the session ~1 M instructions (pytest and pluggy read its
    names): features that are off, or that have no hook, register none.  Guards are a per-test
    observer only; xdist's hooks are the controller's, registered only when distributing."""
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    record = f"--statesnap-record={pytester.path / 'r.jsonl'}"
    config = pytester.parseconfigure("-p", "no:randomly", "-p", "statesnap", record)
    pm = config.pluginmanager
    # Both are test dependencies: a session with them installed is the case to look at.
    assert pm.hasplugin("xdist") and pm.hasplugin("rerunfailures")
    # pytest-rerunfailures' hooks are registered with it, and dropped at collection when no
    # test can be rerun (statesnap.contain.reruns).
    assert _statesnap_objects(config) == {"statesnap-session", "statesnap-end",
                                          "statesnap-isolate", "statesnap-reruns"}
    distributing = pytester.parseconfigure("-p", "no:randomly", "-p", "statesnap", record,
                                           "--dist=load", "--tx=popen")
    assert "statesnap-xdist" in _statesnap_objects(distributing)


def test_every_hook_of_every_statesnap_module_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    config = pytester.parseconfigure("-p", "no:randomly", "-p", "statesnap",
                                     f"--statesnap-record={pytester.path / 'r.jsonl'}")
    pm = config.pluginmanager
    modules = {}
    for name, plugin in pm.list_name_plugin():
        if isinstance(plugin, types.ModuleType) and str(name).startswith("statesnap"):
            modules[name] = plugin
    import statesnap

    assert set(modules) == {"statesnap", *statesnap.FEATURES}
    for name, module in modules.items():
        listed = dir(module)
        full = set(vars(module))
        # Fewer names than the module holds, every hook among them.
        assert len(listed) < len(full), name
        hooks = {n for n in full if pm.parse_hookimpl_opts(module, n) is not None}
        assert hooks and hooks <= set(listed), name
        registered = {caller.name for caller in pm.get_hookcallers(module) or []}
        assert registered == hooks, name
    assert "__version__" in dir(statesnap)
