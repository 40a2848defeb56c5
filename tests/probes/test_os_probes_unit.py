"""The env, cwd and syspath probes on their own: tokens, reads, hints, save and restore.

Real process state, changed and put back by the tests (monkeypatch undoes what a probe's
restore might miss): a replaced ``os.environ``, a value changed in place, a deleted working
directory, ``sys.path`` rebound and reordered.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.base import ProbeContext
from statesnap.probes.cwd import CwdProbe
from statesnap.probes.env import IDENTITY_KEY, EnvProbe
from statesnap.probes.syspath import SysPathProbe


@pytest.fixture
def env_probe(tmp_path: Path) -> EnvProbe:
    probe = EnvProbe()
    probe.setup(ProbeContext(rootdir=tmp_path, redactor=Redactor(salt=b"s")))
    return probe


@pytest.fixture
def bare_env_probe(tmp_path: Path) -> EnvProbe:
    probe = EnvProbe()
    probe.setup(ProbeContext(rootdir=tmp_path))
    return probe


def test_env_token_sees_added_removed_and_changed_in_place(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAP_UNIT_A", "1")
    start, light = env_probe.token(), env_probe.light_token()
    assert env_probe.token() == start and env_probe.light_token() == light
    monkeypatch.setenv("SNAP_UNIT_A", "2")  # in place: the light token cannot tell
    assert env_probe.token() != start
    assert env_probe.light_token() == light
    monkeypatch.setenv("SNAP_UNIT_B", "x")
    assert env_probe.light_token() != light
    monkeypatch.delenv("SNAP_UNIT_B")
    monkeypatch.setenv("SNAP_UNIT_A", "1")
    assert env_probe.token() == start and env_probe.light_token() == light


def test_env_ignores_pytest_current_test(env_probe: EnvProbe,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    before = (env_probe.token(), env_probe.light_token())
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "elsewhere.py::t (call)")
    assert (env_probe.token(), env_probe.light_token()) == before
    assert "PYTEST_CURRENT_TEST" not in env_probe.read()


def test_env_read_redacts_secret_names_only(env_probe: EnvProbe, bare_env_probe: EnvProbe,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAP_UNIT_API_TOKEN", "tok-123456789")
    monkeypatch.setenv("SNAP_UNIT_PLAIN", "visible")
    data = env_probe.read()
    assert data["SNAP_UNIT_PLAIN"] == "visible"
    assert data["SNAP_UNIT_API_TOKEN"].startswith("<redacted:")
    assert IDENTITY_KEY not in data
    assert bare_env_probe.read()["SNAP_UNIT_API_TOKEN"] == "tok-123456789"


def test_env_sees_a_replaced_os_environ(env_probe: EnvProbe,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    start = env_probe.token()
    replacement = os._Environ(  # type: ignore[attr-defined]
        dict(os.environ._data), os.environ.encodekey,  # type: ignore[attr-defined]
        os.environ.decodekey, os.environ.encodevalue,  # type: ignore[attr-defined]
        os.environ.decodevalue)  # type: ignore[attr-defined]
    monkeypatch.setattr(os, "environ", replacement)
    assert env_probe.token() != start  # same contents, another object
    assert env_probe.read()[IDENTITY_KEY] == "replaced by os._Environ"
    hint = env_probe.hint(IDENTITY_KEY, "added")
    assert hint is not None and "do not rebind os.environ" in hint
    monkeypatch.setattr(os, "environ", {"A": "1"})  # not an _Environ at all
    assert env_probe.token() is None and env_probe.light_token() is None
    assert env_probe.read() == {"A": "1", IDENTITY_KEY: "replaced by builtins.dict"}


def test_env_hints_per_change(env_probe: EnvProbe) -> None:
    assert env_probe.hint("FOO", "added") == (
        "set FOO with monkeypatch.setenv('FOO', ...) so it is removed after the test")
    assert env_probe.hint("FOO", "removed") == (
        "delete FOO with monkeypatch.delenv('FOO') so it comes back after the test")
    assert env_probe.hint("FOO", "changed") == (
        "change FOO with monkeypatch.setenv('FOO', ...) so it is put back after the test")


def test_env_restore_puts_back_changed_added_and_removed(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAP_UNIT_CHANGED", "old")
    monkeypatch.setenv("SNAP_UNIT_REMOVED", "here")
    monkeypatch.delenv("SNAP_UNIT_ADDED", raising=False)
    monkeypatch.setenv("SNAP_UNIT_UNTOUCHED", "keep")
    saved = env_probe.save()
    os.environ["SNAP_UNIT_CHANGED"] = "new"
    del os.environ["SNAP_UNIT_REMOVED"]
    os.environ["SNAP_UNIT_ADDED"] = "extra"
    os.environ["SNAP_UNIT_UNTOUCHED"] = "left as the test made it"
    done = env_probe.restore(saved, ["SNAP_UNIT_CHANGED", "SNAP_UNIT_REMOVED",
                                     "SNAP_UNIT_ADDED", IDENTITY_KEY])
    assert done == ["SNAP_UNIT_CHANGED", "SNAP_UNIT_REMOVED", "SNAP_UNIT_ADDED"]
    assert os.environ["SNAP_UNIT_CHANGED"] == "old"
    assert os.environ["SNAP_UNIT_REMOVED"] == "here"
    assert "SNAP_UNIT_ADDED" not in os.environ
    assert os.environ["SNAP_UNIT_UNTOUCHED"] == "left as the test made it"  # not asked
    assert env_probe.restore(saved, ["SNAP_UNIT_ADDED"]) == ["SNAP_UNIT_ADDED"]


def test_env_save_is_a_copy(env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAP_UNIT_COPY", "before")
    saved = env_probe.save()
    os.environ["SNAP_UNIT_COPY"] = "after"
    assert isinstance(saved, dict) and saved["SNAP_UNIT_COPY"] == "before"


def test_cwd_token_read_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = CwdProbe()
    start = tmp_path / "start"
    other = tmp_path / "other"
    start.mkdir()
    other.mkdir()
    monkeypatch.chdir(start)
    saved = probe.save()
    token = probe.token()
    assert probe.read() == {"cwd": str(start)} and token == str(start)
    os.chdir(other)
    assert probe.token() != token
    assert probe.restore(saved, ["something else"]) == []
    assert os.getcwd() == str(other)
    assert probe.restore(saved, ["cwd"]) == ["cwd"]
    assert os.getcwd() == str(start)
    hint = probe.hint("cwd", "changed")
    assert hint is not None and "monkeypatch.chdir" in hint


def test_cwd_deleted_under_the_test_and_not_restored_to_a_gone_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = CwdProbe()
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    monkeypatch.chdir(doomed)
    saved = probe.save()
    doomed.rmdir()
    assert probe.read() == {"cwd": "<deleted directory>"}
    assert probe.token() == "<deleted directory>"
    os.chdir(tmp_path)
    assert probe.restore(saved, ["cwd"]) == []  # nowhere to go back to
    assert os.getcwd() == str(tmp_path)
    assert probe.restore(123, ["cwd"]) == []


@pytest.fixture
def syspath_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SysPathProbe:
    # Copies for the test to change; monkeypatch puts the real lists back.
    monkeypatch.setattr(sys, "path", ["/a", "/b", "/c"])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    probe = SysPathProbe()
    probe.setup(ProbeContext(rootdir=tmp_path))
    return probe


class _Finder:
    def find_spec(self, *args: object) -> None:
        return None


def test_syspath_keys_entries_by_text_with_the_one_before(
        syspath_probe: SysPathProbe) -> None:
    data = syspath_probe.read()
    paths = {k: v for k, v in data.items() if k.startswith("sys.path:")}
    assert paths == {"sys.path:/a": "after <start>", "sys.path:/b": "after /a",
                     "sys.path:/c": "after /b"}
    sys.path.insert(0, "/new")
    after = syspath_probe.read()
    changed = {k for k in after.keys() | data.keys() if after.get(k) != data.get(k)}
    assert changed == {"sys.path:/new", "sys.path:/a"}  # not every later entry
    sys.path.append("/a")  # twice: both places in one fingerprint
    assert syspath_probe.read()["sys.path:/a"] == "after /new; after /c"


def test_syspath_meta_path_and_hooks_by_name_and_position(
        syspath_probe: SysPathProbe) -> None:
    token = syspath_probe.token()
    sys.meta_path.insert(0, _Finder())
    sys.path_hooks.append(_Finder)
    assert syspath_probe.token() != token
    data = syspath_probe.read()
    assert data[f"sys.meta_path:{__name__}._Finder instance"] == "at 0"
    assert data[f"sys.path_hooks:{_Finder.__qualname__}"] == f"at {len(sys.path_hooks) - 1}"
    hint = syspath_probe.hint("sys.path:/x", "added")
    assert hint is not None and "syspath_prepend" in hint


def test_syspath_sees_rebound_lists_and_restores_the_objects(
        syspath_probe: SysPathProbe) -> None:
    path_obj, meta_obj, hooks_obj = sys.path, sys.meta_path, sys.path_hooks
    meta, hooks = list(sys.meta_path), list(sys.path_hooks)
    saved = syspath_probe.save()
    token = syspath_probe.token()
    sys.path = ["/a", "/b", "/c"]  # same contents, another list
    assert syspath_probe.token() != token
    assert syspath_probe.read()["<sys.path object>"] == "replaced"
    sys.meta_path = [*meta, _Finder()]
    sys.path_hooks = []
    data = syspath_probe.read()
    assert data["<sys.meta_path object>"] == data["<sys.path_hooks object>"] == "replaced"
    sys.path.append("/d")
    done = syspath_probe.restore(saved, ["<sys.path object>", "sys.path:/d",
                                         "sys.meta_path:x._Finder instance",
                                         "<sys.path_hooks object>"])
    assert done == ["<sys.path object>", "sys.path:/d", "sys.meta_path:x._Finder instance",
                    "<sys.path_hooks object>"]
    assert sys.path is path_obj and sys.path == ["/a", "/b", "/c"]
    assert sys.meta_path is meta_obj and sys.meta_path == meta
    assert sys.path_hooks is hooks_obj and sys.path_hooks == hooks
    assert not [k for k in syspath_probe.read() if k.startswith("<")]


def test_syspath_restores_only_the_lists_asked_for(syspath_probe: SysPathProbe) -> None:
    saved = syspath_probe.save()
    sys.path.insert(0, "/x")
    finder = _Finder()
    sys.meta_path.append(finder)
    sys.path_importer_cache["/sentinel-entry"] = None
    assert syspath_probe.restore(saved, ["sys.path:/x"]) == ["sys.path:/x"]
    assert sys.path == ["/a", "/b", "/c"]
    assert sys.meta_path[-1] is finder  # not asked for: left as the test made it
    assert "/sentinel-entry" in sys.path_importer_cache  # cleared only with the hooks
    assert syspath_probe.restore(saved, []) == []
    hooks = list(sys.path_hooks)
    sys.path_hooks.append(_Finder)
    assert syspath_probe.restore(saved, [f"sys.path_hooks:{_Finder.__qualname__}"]) == [
        f"sys.path_hooks:{_Finder.__qualname__}"]
    assert sys.path_hooks == hooks
    assert "/sentinel-entry" not in sys.path_importer_cache


def test_the_three_probes_can_put_state_back() -> None:
    # Restore mode and key-level replays use only restorable probes: these three must be.
    from statesnap.analysis.hints import restorable

    assert EnvProbe.restorable and CwdProbe.restorable and SysPathProbe.restorable
    assert restorable("env") and restorable("cwd") and restorable("syspath")


def test_env_light_token_does_not_count_pytest_s_variable(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "t.py::x (call)")
    with_it = env_probe.light_token()
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert env_probe.light_token() == with_it


@pytest.mark.parametrize("current", [True, False], ids=["in-a-test", "outside-pytest"])
def test_env_light_token_counts_every_variable_added(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch, current: bool) -> None:
    # Two at once, too: the count, not its parity; with or without pytest's own variable.
    if not current:
        monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    start = env_probe.light_token()
    monkeypatch.setenv("SNAP_UNIT_ONE", "1")
    one = env_probe.light_token()
    monkeypatch.setenv("SNAP_UNIT_TWO", "2")
    two = env_probe.light_token()
    assert len({start, one, two}) == 3
    monkeypatch.delenv("SNAP_UNIT_ONE")
    monkeypatch.delenv("SNAP_UNIT_TWO")
    assert env_probe.light_token() == start


def test_env_hints_and_restore_compare_keys_by_value(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys and changes come from records (fresh strings), and an env name may sort before
    # the identity key ("0...", "%...").
    identity = "".join(["<os.environ", " object>"])
    assert identity is not IDENTITY_KEY
    assert "do not rebind" in (env_probe.hint(identity, "changed") or "")
    added, removed = "".join(["ad", "ded"]), "".join(["re", "moved"])
    assert (env_probe.hint("0VAR", added) or "").startswith("set 0VAR")
    assert (env_probe.hint("0VAR", removed) or "").startswith("delete 0VAR")
    monkeypatch.setenv("0SNAP_UNIT", "old")
    monkeypatch.setenv("SNAP_UNIT_AFTER", "old")
    saved = env_probe.save()
    os.environ["0SNAP_UNIT"] = "new"
    os.environ["SNAP_UNIT_AFTER"] = "new"
    done = env_probe.restore(saved, [identity, "0SNAP_UNIT", "SNAP_UNIT_AFTER"])
    assert done == ["0SNAP_UNIT", "SNAP_UNIT_AFTER"]  # the identity key is skipped, not the rest
    assert os.environ["0SNAP_UNIT"] == os.environ["SNAP_UNIT_AFTER"] == "old"


def test_env_sees_a_replacement_wherever_it_lies_in_memory(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    # Objects both below and above the real os.environ's address: "replaced" is a
    # difference of identity, not an order.
    real = id(os.environ)
    pool = [dict(os.environ) for _ in range(200)]
    lower = [d for d in pool if id(d) < real][:1]
    higher = [d for d in pool if id(d) > real][:1]
    assert lower or higher
    for replacement in lower + higher:
        monkeypatch.setattr(os, "environ", replacement)
        assert env_probe.read()[IDENTITY_KEY] == "replaced by builtins.dict"


def test_env_token_ignores_pytest_s_variable_wherever_it_sits(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    # The token looks for pytest's variable where it was last time: moved (removed and added
    # back at the end, as pytest does per test) or gone, a change elsewhere is still seen.
    monkeypatch.setenv("SNAP_UNIT_MID", "1")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "a.py::t (setup)")
    monkeypatch.setenv("SNAP_UNIT_END", "1")
    start = env_probe.token()
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert env_probe.token() == start  # gone: ignored as before
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "a.py::t (call)")  # back, now the last one
    assert env_probe.token() == start
    monkeypatch.setenv("SNAP_UNIT_MID", "2")  # in place, before pytest's variable
    assert env_probe.token() != start
    monkeypatch.setenv("SNAP_UNIT_MID", "1")
    assert env_probe.token() == start
    monkeypatch.setenv("SNAP_UNIT_END", "2")  # in place, where pytest's variable was
    assert env_probe.token() != start
    monkeypatch.setenv("SNAP_UNIT_END", "1")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "a.py::t (teardown)")
    assert env_probe.token() == start


def test_env_token_sees_a_key_renamed_with_the_same_value(
        env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys and values are compared as two sequences: the same values under other names move
    # the token, and the same items in another order too (a read then finds no change).
    monkeypatch.setenv("SNAP_UNIT_OLD", "v")
    start = env_probe.token()
    monkeypatch.delenv("SNAP_UNIT_OLD")
    monkeypatch.setenv("SNAP_UNIT_NEW", "v")
    assert env_probe.token() != start
    assert "SNAP_UNIT_NEW" in env_probe.read() and "SNAP_UNIT_OLD" not in env_probe.read()


def test_env_read_decodes_the_raw_environment_as_os_environ_does(
        bare_env_probe: EnvProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAP_UNIT_TEXT", "caf\u00e9 \udcff")  # an undecodable byte, escaped
    assert bare_env_probe.read() == {k: v for k, v in os.environ.items()
                                     if k != "PYTEST_CURRENT_TEST"}
    # A replacement mapping without os._Environ's raw dict is read through its items.
    monkeypatch.setattr(os, "environ", {"ONLY": "1"})
    assert bare_env_probe.read() == {"ONLY": "1", IDENTITY_KEY: "replaced by builtins.dict"}
