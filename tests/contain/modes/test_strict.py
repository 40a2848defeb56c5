"""Strict mode on a polluting suite: leaks error at teardown with their diff."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import pytest

Run = Callable[..., Any]

POLLUTING = '''
import os, sys, pytest

@pytest.fixture(scope="module")
def tidy_module_env():
    os.environ["TIDY_FIXTURE"] = "on"
    yield
    del os.environ["TIDY_FIXTURE"]

def test_env_polluter():
    os.environ["ZOO_MODE"] = "fast"

def test_cwd_polluter(tmp_path):
    os.chdir(tmp_path)

@pytest.mark.statesnap_allow("env:ALLOWED_*")
def test_allowed_by_marker():
    os.environ["ALLOWED_BY_MARKER"] = "1"

def test_allowed_by_ini():
    os.environ["INI_ALLOWED"] = "1"

def test_uses_tidy_fixture(tidy_module_env):
    assert os.environ["TIDY_FIXTURE"] == "on"

def test_uses_it_again(tidy_module_env):
    pass

def test_clean(monkeypatch):
    monkeypatch.setenv("PUT_BACK", "1")
    monkeypatch.syspath_prepend("/tmp/put-back")
'''


def _teardown_errors(inner: Any) -> dict[str, str]:
    return {r["nodeid"].split("::")[1]: r["text"] for r in inner.reports()
            if r["when"] == "teardown" and r["outcome"] == "failed"}


def test_leaks_error_at_teardown_with_the_diff(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_polluting=POLLUTING)
    inner = run("--statesnap-strict", "-o", "statesnap_allow=env:INI_*")
    errors = _teardown_errors(inner)
    assert sorted(errors) == ["test_cwd_polluter", "test_env_polluter"]
    text = errors["test_env_polluter"]
    assert "env:ZOO_MODE: added ∅ → fast [call]" in text
    assert "monkeypatch.setenv('ZOO_MODE'" in text  # the probe's fix hint
    assert "statesnap_allow('env:ZOO_MODE')" in text
    assert "cwd:cwd: changed" in errors["test_cwd_polluter"]
    # The call passed: the test errors in teardown only, and its line says why.
    outcomes = inner.result.parseoutcomes()
    assert outcomes["passed"] == 7 and outcomes["errors"] == 2
    line = inner.lines()["test_polluting.py::test_env_polluter"]
    assert line["outcome"] == "error"
    assert line["strict"] == ["env:ZOO_MODE"]
    assert line["failure"]["exc_type"] == "StateLeaked"
    inner.result.stdout.fnmatch_lines(["*strict mode: 2 test(s) errored for leaking state*"])


def test_selected_probes_only(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_polluting=POLLUTING)
    inner = run("--statesnap-strict=cwd")
    assert sorted(_teardown_errors(inner)) == ["test_cwd_polluter"]


def test_a_wide_fixture_that_never_undoes_errors_when_its_scope_ends(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_sloppy='''
import os, pytest

@pytest.fixture(scope="module")
def sloppy():
    os.environ["SLOPPY_FIXTURE"] = "on"
    yield

def test_one(sloppy):
    pass

def test_two(sloppy):
    pass
''', test_zz_other='''
def test_later():
    pass
''')
    inner = run("--statesnap-strict")
    errors = _teardown_errors(inner)
    # Not the first user's fault, nor the second's while the scope lasts: the test whose
    # teardown ended the module scope errors, naming the fixture.
    assert sorted(errors) == ["test_two"]
    assert "SLOPPY_FIXTURE" in errors["test_two"]
    assert "module fixture sloppy" in errors["test_two"]


def test_strict_is_off_in_replays(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_polluting=POLLUTING)
    inner = run("--statesnap-strict", "--statesnap-restore=env")
    header = inner.record().header
    assert header["modes"] == {"isolate": None, "strict": "all", "restore": "env"}
    replay_args = header["replay"]["args"]
    assert not [a for a in replay_args if a.startswith(("--statesnap-strict",
                                                        "--statesnap-restore"))]


def test_the_test_that_overwrote_a_held_key_errors_not_the_last_of_the_module(
        pytester: pytest.Pytester, run: Run) -> None:
    # The module fixture's own change is held for its scope; a test that changes the held
    # key to something else leaked it, and it is that test's teardown that errors.
    pytester.makepyfile(test_held='''
import os, pytest

@pytest.fixture(scope="module")
def mode():
    os.environ["HELD_MODE"] = "on"
    yield
    os.environ.pop("HELD_MODE", None)

def test_first(mode):
    pass

def test_overwrites(mode):
    os.environ["HELD_MODE"] = "hijacked"

def test_reads(mode):
    pass

def test_last(mode):
    pass
''', test_zz_other='''
def test_later():
    pass
''')
    inner = run("--statesnap-strict")
    errors = _teardown_errors(inner)
    assert sorted(errors) == ["test_overwrites"]
    assert "env:HELD_MODE: changed on → hijacked" in errors["test_overwrites"]
    assert inner.lines()["test_held.py::test_overwrites"]["strict"] == ["env:HELD_MODE"]


def test_a_held_key_put_back_by_its_fixture_is_no_leak(pytester: pytest.Pytester,
                                                       run: Run) -> None:
    pytester.makepyfile(test_tidy='''
import os, pytest

@pytest.fixture(scope="module")
def mode():
    os.environ["TIDY_HELD"] = "on"
    yield
    del os.environ["TIDY_HELD"]

def test_one(mode):
    pass

def test_two(mode):
    pass
''')
    inner = run("--statesnap-strict")
    assert _teardown_errors(inner) == {}
    assert inner.result.ret == 0


def test_the_teardown_error_shows_no_statesnap_traceback(pytester: pytest.Pytester,
                                                          run: Run) -> None:
    # pytrace=False: the user sees the diff, not statesnap's hook source.
    pytester.makepyfile(test_polluting=POLLUTING)
    inner = run("--statesnap-strict", "-o", "statesnap_allow=env:INI_*")
    text = _teardown_errors(inner)["test_env_polluter"]
    assert text.startswith("statesnap --statesnap-strict: test_polluting.py::test_env_polluter")
    for trace in ("strict.py", "raise StateLeaked", "def pytest_runtest_teardown", "yield"):
        assert trace not in text
    assert "strict.py" not in inner.out


LEFT_ON_DISK = '''
import os, pytest

def test_empty_folder():
    os.mkdir("made")

def test_empty_file():
    open("made.txt", "w").close()

def test_nested_folders_and_a_file():
    os.makedirs("deep/er/est")
    open("deep/er/est/f.txt", "w").close()

@pytest.mark.statesnap_allow("files:deep2/*")
def test_allowed_by_the_printed_glob():
    os.makedirs("deep2/er/est")
    open("deep2/er/est/f.txt", "w").close()

@pytest.mark.statesnap_allow("files:box")
def test_folder_allowed_by_its_name():
    os.mkdir("box")

def test_folder_made_and_removed():
    os.mkdir("scratch")
    os.rmdir("scratch")

def test_tmp_path(tmp_path):
    (tmp_path / "out").mkdir()
'''


def test_a_folder_left_behind_is_a_leak_like_a_file(pytester: pytest.Pytester, run: Run
                                                      ) -> None:
    # An empty folder left under the project is what an empty file is: a later test's
    # os.mkdir of that name fails, its listing differs.  Same severity (medium), same error.
    pytester.makepyfile(test_disk=LEFT_ON_DISK)
    inner = run("--statesnap-strict")
    errors = _teardown_errors(inner)
    # Not test_tmp_path: pytester's --basetemp lies inside the project, and pytest's own
    # temporary area is not the project's files.
    assert sorted(errors) == ["test_empty_file", "test_empty_folder",
                              "test_nested_folders_and_a_file"], inner.result.stdout.str()
    assert inner.result.ret == 1
    assert inner.result.parseoutcomes() == {"passed": 7, "errors": 3}
    inner.result.stdout.fnmatch_lines([
        "*strict mode: 3 test(s) errored for leaking state*",
        "*= 7 passed, 3 errors in *"])
    folder, file = errors["test_empty_folder"], errors["test_empty_file"]
    assert "files:made/: added ∅ → directory [call]" in folder
    assert "fix: make made/ under tmp_path, or remove it in a fixture finaliser" in folder
    assert "statesnap_allow('files:made/')" in folder
    assert "files:made.txt: added ∅ → " in file and "statesnap_allow('files:made.txt')" in file
    # Every change listed; one fix and one allowance glob for the folder and all in it (the
    # test below allows it by that very glob and passes).
    nested = errors["test_nested_folders_and_a_file"]
    assert "(4 change(s))" in nested
    for key in ("deep/", "deep/er/", "deep/er/est/", "deep/er/est/f.txt"):
        assert f"  files:{key}: added ∅ → " in nested, nested
    assert [ln for ln in nested.splitlines() if ln.startswith("  fix: ")] == [
        "  fix: make deep/ under tmp_path, or remove it in a fixture finaliser"]
    assert "statesnap_allow('files:deep/*')" in nested
    lines = inner.lines()
    assert lines["test_disk.py::test_empty_folder"]["strict"] == ["files:made/"]
    assert "strict" not in lines["test_disk.py::test_folder_allowed_by_its_name"]
    # Without strict mode the same suite passes (from a clean tree: it left all that
    # behind, and its own tests trip over it now): only the opt-in gate errors.
    for name in ("made", "deep", "deep2", "box"):
        shutil.rmtree(pytester.path / name)
    (pytester.path / "made.txt").unlink()
    plain = run()
    assert plain.result.ret == 0
    assert plain.result.parseoutcomes() == {"passed": 7}
