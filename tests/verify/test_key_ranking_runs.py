"""The key-level proof tries the key the victim relies on first (statesnap.analysis.keyrank).

Real pytest runs with statesnap, one shape of the real-world corpus each, each counting the
key replays a verified finding spent and checking the key it named:

- a folder the failure quotes ("Directory …/foo already exists!") is the key, not narrowed
  to the folders inside it (python-fs);
- a registry attribute the victim's own autouse fixture resets comes after the one it
  trips over (colltools);
- a config cached from two environment variables: the three keys restored together first,
  then each left out once (vcdriver);
- a class attribute that a method the victim calls on a fixture's object uses comes before
  the logger's level, and before the module's first import (pysllo).

Every printed reproduction is run as printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow


def _keys_tried(f: dict[str, Any]) -> list[list[str]]:
    return [sorted(r["restored"]) for r in f["replays"] if r["label"] in ("key", "keys")]


FOLDER = {"test_mkdir.py": '''
    import os
    import shutil

    HERE = os.path.dirname(os.path.abspath(__file__))
    TOP = os.path.join(HERE, "work")


    def mkdir(path):
        if os.path.isdir(path):
            raise ValueError(f"Directory {path} already exists!")
        os.makedirs(path)


    def test_a_recursive():
        os.makedirs(os.path.join(TOP, "foo", "bar", "baz"), exist_ok=True)


    def test_b_mkdir():
        mkdir(os.path.join(TOP, "foo"))
        shutil.rmtree(TOP)
    '''}


def test_a_folder_the_failure_quotes_is_the_key_without_narrowing(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FOLDER)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_mkdir")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_mkdir.py::test_a_recursive"], f["polluters"]
    assert f["proven_keys"] == ["files:work/foo/"], f["replays"]
    # One key replay: work/foo/ heals, and the folders inside it (work/foo/bar/, …/baz/)
    # are not tried: putting one back leaves work/foo/ there, which the failure names.
    assert _keys_tried(f) == [["files:work/foo/"]], f["replays"]
    check_reproductions(run.output, root, ["test_b_mkdir"], expect="already exists")


REGISTRY = {
    "reg.py": '''
        class Registry:
            items = {}
            subs = []

            @classmethod
            def collect(cls):
                if not cls.items:
                    cls.items = {name: name.upper() for name in cls.subs}
                return cls.items
        ''',
    "test_reg.py": '''
        import pytest

        from reg import Registry


        @pytest.fixture(autouse=True)
        def clean():
            Registry.items = {}


        def test_a_registers():
            Registry.subs.append("zoo")
            assert Registry.collect() == {"zoo": "ZOO"}


        def test_b_empty():
            assert Registry.collect() == {}
        ''',
}


def test_a_key_the_victims_own_setup_resets_comes_after_the_others(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", REGISTRY)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_empty")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_reg.py::test_a_registers"], f["polluters"]
    assert f["proven_keys"] == ["attributes:reg:Registry.subs"], f["replays"]
    # Registry.items, which the victim's autouse fixture resets before its body, is not
    # tried first: the list its body trips over heals in the first key replay.
    assert _keys_tried(f) == [["attributes:reg:Registry.subs"]], f["replays"]
    check_reproductions(run.output, root, ["test_b_empty"], expect="AssertionError")


CONFIG = {
    "settings.py": '''
        import os

        _config = {}


        def read():
            if not _config:
                _config.update(user=os.environ.get("APP_USER", ""),
                               password=os.environ.get("APP_PASSWORD", ""))
            return dict(_config)
        ''',
    "test_settings.py": '''
        import os

        import settings


        def test_a_logs_in():
            os.environ["APP_USER"] = "zoo"
            os.environ["APP_PASSWORD"] = "keeper"
            assert settings.read()["user"] == "zoo"


        def test_b_defaults():
            user = os.environ.get("APP_USER", "")
            password = os.environ.get("APP_PASSWORD", "")
            assert (user, password) == ("", "") and settings.read() == {
                "user": "", "password": ""}
        ''',
}


def test_keys_the_failing_code_names_together_are_restored_together_first(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", CONFIG)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_defaults")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_settings.py::test_a_logs_in"], f["polluters"]
    every = ["attributes:settings:_config", "env:APP_PASSWORD", "env:APP_USER"]
    assert sorted(f["proven_keys"]) == every, f["replays"]
    assert not f["hint_proven"]  # only together
    # All three together heal; each left out once fails: 4 key replays, where one at a
    # time, then all, then delta debugging took 7.
    tried = _keys_tried(f)
    assert tried[0] == every, f["replays"]
    assert len(tried) == 4, f["replays"]
    assert sorted(map(len, tried)) == [2, 2, 2, 3], f["replays"]
    check_reproductions(run.output, root, ["test_b_defaults"], expect="AssertionError")


LOGGER = {
    "plog.py": '''
        import logging


        class PLogger(logging.Logger):
            _global = logging.NOTSET

            def getEffectiveLevel(self):
                if PLogger._global != logging.NOTSET:
                    return PLogger._global
                return super().getEffectiveLevel()

            def force_level(self, level):
                if isinstance(level, dict):
                    for name, value in level.items():
                        logging.getLogger(name).setLevel(value)
                else:
                    PLogger._global = level


        def make(name):
            logging.setLoggerClass(PLogger)
            try:
                return logging.getLogger(name)
            finally:
                logging.setLoggerClass(logging.Logger)
        ''',
    "test_plog.py": '''
        import logging

        import pytest


        @pytest.fixture
        def plog():
            import plog as module
            return module.make("plogger")


        def test_a_forces(plog):
            plog.setLevel(logging.WARNING)
            plog.force_level(logging.ERROR)
            assert plog.getEffectiveLevel() == logging.ERROR


        def test_b_logs(plog, caplog):
            plog.setLevel(logging.INFO)
            plog.force_level({"other": logging.DEBUG})
            plog.info("hello")
            assert "hello" in caplog.text
        ''',
}


def test_a_class_attribute_a_called_method_uses_comes_first(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", LOGGER)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_logs")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_plog.py::test_a_forces"], f["polluters"]
    assert f["proven_keys"] == ["attributes:plog:PLogger._global"], f["replays"]
    # force_level, which the victim calls on the fixture's object, sets PLogger._global:
    # its key is tried first, before the logger's level (which the victim sets again) and
    # the module's first import.
    assert _keys_tried(f)[0] == ["attributes:plog:PLogger._global"], f["replays"]
    assert len(_keys_tried(f)) == 1, f["replays"]
    check_reproductions(run.output, root, ["test_b_logs"], expect="AssertionError")
