"""The right key is named though other changes were recorded by the same polluters.

A real pytest run: one polluter leaves the working directory in a directory it deleted (and
changes a class attribute too); another pops a settings module from ``sys.modules`` and
imports it again in debug mode.  The findings must name ``cwd`` and the settings attribute,
proven by restoring each alone, and the pair they print must fail under plain pytest.
"""

from __future__ import annotations

import json
import shlex

import pytest

SETTINGS = """
import os

DEBUG = os.environ.get("APP_DEBUG") == "1"
"""

TESTS = """
import os
import shutil
import sys
import tempfile

import settings as settings_at_import


class Registry:
    mode = "plain"


def test_leaves_cwd_in_a_deleted_directory():
    Registry.mode = "fancy"
    scratch = tempfile.mkdtemp()
    os.chdir(scratch)
    shutil.rmtree(scratch)


def test_reloads_settings_in_debug():
    os.environ["APP_DEBUG"] = "1"
    sys.modules.pop("settings", None)
    import settings  # a fresh module object, read in debug mode

    del os.environ["APP_DEBUG"]


def test_settings_are_not_debug():
    import settings

    assert settings.DEBUG is False


def test_needs_a_working_directory():
    assert os.path.isabs(os.getcwd())
"""


def test_cwd_and_reimported_settings_are_named_and_proven(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(settings=SETTINGS, test_keys=TESTS)
    result = pytester.runpytest_subprocess("-p", "statesnap", "--statesnap-json=out.json")
    result.assert_outcomes(passed=2, failed=2)
    findings = {f["victim"].split("::")[1]: f
                for f in json.loads((pytester.path / "out.json").read_text())["findings"]}
    cwd = findings["test_needs_a_working_directory"]
    assert (cwd["status"], cwd["probe"], cwd["key"]) == ("verified", "cwd", "cwd")
    assert cwd["proven_keys"][0] == "cwd:cwd"
    debug = findings["test_settings_are_not_debug"]
    assert (debug["status"], debug["probe"], debug["key"]) == (
        "verified", "attributes", "settings:DEBUG")
    assert "stub" not in debug["hint"]
    for f in (cwd, debug):
        argv = shlex.split(f["repro"])
        assert argv[:3] == ["python", "-m", "pytest"]
        plain = pytester.runpytest_subprocess("-p", "no:statesnap", *argv[3:])
        plain.assert_outcomes(passed=1, failed=1)
