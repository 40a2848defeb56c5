"""Leaks an autouse fixture overwrites before the next test body (analysis/resets.py), with the
real libraries whose suites do it: loguru's and structlog's.

Each suite copies the installed library into the project (as its own source tree is, when the
library runs its own suite), so the ``attributes`` probe watches it as the project's code.  A
folder ``a_unit`` has an autouse fixture that resets the library before every test; several
tests change the library's state after that reset; the last of them is followed by a test of
another folder, ``z_other``, that no reset runs for and that fails on what it finds.  Only that
last change is listed above LOW, and the session proves it by replay.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from suite_runs import run_suite, write_suite


def _with_library(root: Path, name: str) -> None:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, f"{name} is a test dependency"
    shutil.copytree(Path(spec.origin).parent, root / name,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _listed(summary: dict[str, Any]) -> dict[str, list[str]]:
    """Per test listed above LOW (last part of its id): its keys above LOW."""
    return {t["nodeid"].rsplit("::", 1)[1]: [x["key"] for x in t["leaks"]
                                              if x["severity"] != "low"]
            for t in summary["tests"] if t["leaked"]}


LOGURU = {
    "a_unit/__init__.py": "",
    "a_unit/conftest.py": """
        import loguru
        import pytest


        @pytest.fixture(autouse=True)
        def reset_logger():
            # loguru's own reset (its tests/conftest.py), here before each test only.
            loguru.logger.remove()
            loguru.logger.__init__(loguru._logger.Core(), None, 0, False, False, False,
                                   False, True, [], {})
        """,
    "a_unit/test_sinks.py": """
        from loguru import logger


        def test_adds_sink():
            logger.add(lambda message: None, level="TRACE")


        def test_adds_another_sink():
            logger.add(lambda message: None, level="TRACE")


        def test_plain():
            logger.info("nothing kept")


        def test_adds_the_last_sink():
            logger.add(lambda message: None, level="TRACE")
        """,
    "z_other/__init__.py": "",
    "z_other/test_levels.py": """
        from loguru import logger


        def test_no_trace_handler():
            # No handler takes TRACE messages: a test added one and nothing removed it.
            assert logger._core.min_level >= 10
        """,
}


STRUCTLOG = {
    "a_unit/__init__.py": "",
    "a_unit/conftest.py": """
        import pytest
        import structlog


        @pytest.fixture(autouse=True)
        def _reset_config():
            structlog.reset_defaults()  # structlog's own autouse fixture
        """,
    "a_unit/test_config.py": """
        import structlog


        def test_configures_json():
            structlog.configure(processors=[structlog.processors.JSONRenderer()])


        def test_configures_keyvalue():
            structlog.configure(processors=[structlog.processors.KeyValueRenderer()])


        def test_reads():
            assert structlog.get_config()["processors"]


        def test_configures_last():
            structlog.configure(cache_logger_on_first_use=True)
        """,
    "z_other/__init__.py": "",
    "z_other/test_defaults.py": """
        import structlog


        def test_unconfigured():
            assert not structlog.is_configured()
        """,
}


@pytest.mark.parametrize(("library", "files", "polluter", "victim"), [
    ("loguru", LOGURU, "test_adds_the_last_sink", "test_no_trace_handler"),
    ("structlog", STRUCTLOG, "test_configures_last", "test_unconfigured"),
])
def test_only_the_change_a_later_test_sees_is_listed(
        tmp_path: Path, library: str, files: dict[str, str], polluter: str,
        victim: str) -> None:
    root = write_suite(tmp_path / "suite", files)
    _with_library(root, library)
    run = run_suite(root, tmp_path / "out", "-q")
    summary = _summary(run.json_path)
    listed = _listed(summary)
    # The reset overwrites what each earlier test left before the next test body runs: LOW.
    assert list(listed) == [polluter], (listed, run.output[-3000:])
    global_name = ":logger" if library == "loguru" else ":_CONFIG"
    assert any(k.endswith(global_name) for k in listed[polluter]), listed
    # Still in the record at its own severity, and listed (at LOW) in the summary.
    leaks = {t["nodeid"].rsplit("::", 1)[1]: t["leaks"] for t in summary["tests"]}
    assert leaks["test_adds_sink" if library == "loguru" else "test_configures_json"]
    # The change a later test can see is proven by replay.
    finding = run.finding(victim)
    assert finding["status"] == "verified", (finding, run.output[-3000:])
    assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == [polluter]


def test_a_reset_after_each_test_too_leaves_nothing_listed(tmp_path: Path) -> None:
    """loguru's own fixture resets before and after: every test's net change is the fresh
    core the reset made, which the next test's reset replaces again."""
    files = dict(LOGURU)
    files["a_unit/conftest.py"] = """
        import loguru
        import pytest


        @pytest.fixture(autouse=True)
        def reset_logger():
            def reset():
                loguru.logger.remove()
                loguru.logger.__init__(loguru._logger.Core(), None, 0, False, False, False,
                                       False, True, [], {})

            reset()
            yield
            reset()
        """
    files["z_other/test_levels.py"] = "def test_nothing():\n    pass\n"
    root = write_suite(tmp_path / "suite", files)
    _with_library(root, "loguru")
    run = run_suite(root, tmp_path / "out", "-q")
    summary = _summary(run.json_path)
    assert run.proc.returncode == 0, run.output[-3000:]
    # Only the last test the reset runs for is listed: the tests of z_other start from what
    # its reset made.
    assert list(_listed(summary)) == ["test_adds_the_last_sink"], run.output[-3000:]
    record = [json.loads(line) for line in run.record_path.read_text().splitlines()]
    (footer,) = [x for x in record if x["type"] == "footer"]
    assert ["reset_logger", "a_unit"] in footer["autouse"]
