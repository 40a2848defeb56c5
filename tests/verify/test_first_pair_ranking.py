"""The first pair replayed is the polluter's: what the victim cannot have tripped over comes last.

Real sessions on small suites shaped like the corpus cases where the top suspect was innocent
and its pair cost a replay (issue 28 §1: "an unrelated test's change of another kind does not
come first"):

- **The victim sets it itself** (krllint, logzero): an innocent test sets an attribute the victim
  sets again before it reads it (``reload(config)`` then ``config.REPORTER = ...``; a function
  it calls first that assigns the module global; ``getLogger("x").setLevel(...)``).  The
  victim's code and failing line name that attribute, so it ranked first.
- **A file rewritten as it was** (easy_python_requirements): an innocent test edits a data file
  and restores it (same size, a later mtime); the victim reads that file, so it ranked first.
- **A module named only by a file path** (the same case): an innocent test imports a module
  whose file the victim opens by path; the path's last part read as the module's name.
- **The victim's fixture** (pysllo): the class whose attribute the polluter changed reaches the
  victim only through a ``conftest.py`` fixture that imports it (from a package that re-exports
  it), and the victim's code names the fixture, whose name is also a module's an innocent test
  imported first.

Each victim must be proven, with its key, in ``alone``, the printed pair, ``key``: the first
pair is the real polluter's.  On the code before, the innocent test's pair ran first (one
replay more, then the pair of the polluter and its confirmation).  Every printed line is run
under plain pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import SuiteRun, run_suite, write_suite

pytestmark = pytest.mark.slow

SUITE = {
    "app/__init__.py": "",
    "app/config.py": '''
        REPORTER = "plain"
        ''',
    "app/registry.py": '''
        RULES = []
        ''',
    "app/linter.py": '''
        from app import registry


        def lint(config):
            return len(registry.RULES), config.REPORTER
        ''',
    "app/logs.py": '''
        import logging

        _loglevel = logging.DEBUG
        SINKS = []


        def reset_default_logger():
            global _loglevel
            _loglevel = logging.DEBUG


        def emit(msg):
            return _loglevel, len(SINKS)
        ''',
    "app/audit.py": '''
        from app import logs


        def sinks():
            return len(logs.SINKS)
        ''',
    "app/counter.py": '''
        NEXT_ID = 1
        OFFSET = 0


        def next_id():
            global NEXT_ID
            NEXT_ID += 1
            return NEXT_ID - 1


        def peek():
            return NEXT_ID

        ''',
    "app/view.py": '''
        from app import counter


        def offset():
            return counter.OFFSET
        ''',
    "plugins/__init__.py": "",
    "plugins/stuff.py": '''
        # id: 1
        VALUE = 1
        ''',
    "data/prices.txt": "apple 3\n",
    # The polluters: each changes, in place, what one victim relies on.
    "test_a_polluters.py": '''
        from app import counter, logs, registry


        def test_registers_a_rule():
            registry.RULES.append("extra")


        def test_adds_a_sink():
            logs.SINKS.append([])


        def test_takes_an_id():
            counter.next_id()


        def test_shifts_the_offset():
            counter.OFFSET = 5
        ''',
    # The innocent tests, after them: each changes what a victim names, but the victim sets
    # it again, or never reads it.
    "test_b_innocent.py": '''
        import logging
        from pathlib import Path

        from app import config, logs


        def test_sets_the_reporter():
            config.REPORTER = "memory"


        def test_sets_the_log_level():
            logs._loglevel = logging.ERROR


        def test_sets_a_logger_level():
            logging.getLogger("zoo.audit").setLevel(logging.ERROR)


        def test_rewrites_prices_as_they_were():
            p = Path("data/prices.txt")
            p.write_text(p.read_text())


        def test_imports_the_plugin():
            import plugins.stuff  # noqa: F401
        ''',
    "test_c_victims.py": '''
        import logging
        from importlib import reload
        from pathlib import Path

        from app import audit, config, counter, linter, logs, view


        def test_lints_with_no_rules():
            reload(config)
            config.REPORTER = "memory"
            assert linter.lint(config) == (0, "memory")


        def test_logs_nowhere_at_debug():
            logs.reset_default_logger()
            assert logs.emit("hello") == (logging.DEBUG, 0)


        def test_audit_logger_has_no_extra_sink():
            log = logging.getLogger("zoo.audit")
            log.setLevel(logging.INFO)
            assert audit.sinks() == 0


        def test_reads_prices_and_the_first_id():
            text = Path("data/prices.txt").read_text()
            assert text.split()[0] == "apple"
            assert counter.peek() == 1


        def test_plugin_header_and_no_offset():
            header = Path("plugins/stuff.py").read_text().splitlines()[0]
            assert header == "# id: 1"
            assert view.offset() == 0
        ''',
}

#: victim -> (its polluter, the key proven).
EXPECTED = {
    "test_lints_with_no_rules": ("test_registers_a_rule", "attributes:app.registry:RULES"),
    "test_logs_nowhere_at_debug": ("test_adds_a_sink", "attributes:app.logs:SINKS"),
    "test_audit_logger_has_no_extra_sink": ("test_adds_a_sink", "attributes:app.logs:SINKS"),
    "test_reads_prices_and_the_first_id": ("test_takes_an_id",
                                           "attributes:app.counter:NEXT_ID"),
    "test_plugin_header_and_no_offset": ("test_shifts_the_offset",
                                         "attributes:app.counter:OFFSET"),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, Path]:
    tmp = tmp_path_factory.mktemp("ranking")
    root = write_suite(tmp / "suite", SUITE)
    return run_suite(root, tmp / "out", budget=600, timeout=900), root


def _proven_at_the_first_pair(run: SuiteRun, victim: str,
                              expected: dict[str, tuple[str, str]] = EXPECTED) -> None:
    polluter, key = expected[victim]
    f = run.finding(f"::{victim}")
    runs = [(r["label"], r["order"][0].rsplit("::", 1)[-1]) for r in f["replays"]]
    assert f["status"] == "verified", (victim, f["note"], runs, run.output[-3000:])
    assert [p.rsplit("::", 1)[-1] for p in f["polluters"]] == [polluter], (victim, runs)
    assert key in f["proven_keys"], (victim, f["proven_keys"], runs)
    # The first pair replayed (the printed line) is the polluter's: alone, that pair, the key.
    assert runs[1] == ("pair-printed", polluter), (victim, runs)
    assert [label for label, _ in runs] == ["alone", "pair-printed", "key"], (victim, runs)


def test_a_class_of_module_reloaded_and_set_by_the_victim_comes_last(
        run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(run[0], "test_lints_with_no_rules")


def test_a_global_the_called_function_sets_first_comes_last(
        run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(run[0], "test_logs_nowhere_at_debug")


def test_a_logger_level_the_victim_sets_comes_last(run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(run[0], "test_audit_logger_has_no_extra_sink")


def test_a_file_rewritten_as_it_was_comes_last(run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(run[0], "test_reads_prices_and_the_first_id")


def test_a_module_named_only_by_a_file_path_comes_last(run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(run[0], "test_plugin_header_and_no_offset")


def test_every_printed_line_fails_its_victim_under_plain_pytest(
        run: tuple[SuiteRun, Path]) -> None:
    session, root = run
    assert sorted(f["victim"].rsplit("::", 1)[-1] for f in session.findings()) == sorted(EXPECTED)
    check_reproductions(session.output, root, list(EXPECTED))


FIXTURE_SUITE = {
    "app/__init__.py": "",
    "app/engines/__init__.py": '''
        from .core import Engine
        ''',
    "app/engines/core.py": '''
        class Engine:
            FORCED = 0

            def run(self):
                return self.FORCED + 1
        ''',
    "app/widget.py": '''
        SIZE = 1
        ''',
    "app/settings.py": '''
        LABEL = "plain"
        ''',
    "app/limits.py": '''
        LIMIT = 10


        def limit():
            return LIMIT
        ''',
    "conftest.py": '''
        import pytest


        @pytest.fixture
        def engine():
            from app.engines import Engine
            return Engine()


        @pytest.fixture
        def widget():
            return {"size": 5}
        ''',
    "test_a_polluters.py": '''
        import app.engines.core
        from app import limits


        def test_forces_the_engine():
            app.engines.core.Engine.FORCED = 3


        def test_lowers_the_limit():
            limits.LIMIT = 1
        ''',
    "test_b_innocent.py": '''
        from app import settings


        def test_sets_a_label():
            settings.LABEL = "fancy"


        def test_imports_the_widget():
            import app.widget  # noqa: F401
        ''',
    "test_c_victims.py": '''
        from app import limits


        def test_engine_runs_normally(engine):
            assert engine.run() == 1


        def test_widget_within_the_limit(widget):
            assert widget["size"] <= limits.limit()
        ''',
}

FIXTURE_EXPECTED = {
    "test_engine_runs_normally": ("test_forces_the_engine",
                                  "attributes:app.engines.core:Engine.FORCED"),
    "test_widget_within_the_limit": ("test_lowers_the_limit", "attributes:app.limits:LIMIT"),
}


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, Path]:
    tmp = tmp_path_factory.mktemp("fixtures")
    root = write_suite(tmp / "suite", FIXTURE_SUITE)
    return run_suite(root, tmp / "out", budget=600, timeout=900), root


def test_a_class_reached_through_the_victims_fixture_comes_first(
        fixture_run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(fixture_run[0], "test_engine_runs_normally",
                              FIXTURE_EXPECTED)


def test_a_fixture_named_like_a_module_does_not_name_the_module(
        fixture_run: tuple[SuiteRun, Path]) -> None:
    _proven_at_the_first_pair(fixture_run[0], "test_widget_within_the_limit",
                              FIXTURE_EXPECTED)


def test_every_printed_line_of_the_fixture_suite_fails_its_victim(
        fixture_run: tuple[SuiteRun, Path]) -> None:
    session, root = fixture_run
    assert sorted(f["victim"].rsplit("::", 1)[-1]
                  for f in session.findings()) == sorted(FIXTURE_EXPECTED)
    check_reproductions(session.output, root, list(FIXTURE_EXPECTED))


#: ``reload`` binds a module's imports to the same objects again: a registry imported from
#: another module and filled in place by the polluter is not reset by the victim's reload.
RELOAD_SUITE = {
    "app/__init__.py": "",
    "app/registry.py": '''
        RULES = []
        ''',
    "app/config.py": '''
        from app.registry import RULES

        MODE = "plain"
        ''',
    "app/lint.py": '''
        def count(config):
            return len(config.RULES)
        ''',
    "test_a_polluter.py": '''
        from app import registry


        def test_registers_a_rule():
            registry.RULES.append("extra")
        ''',
    "test_b_innocent.py": '''
        from app import config


        def test_sets_the_mode():
            config.MODE = "fancy"
        ''',
    "test_c_victim.py": '''
        from importlib import reload

        from app import config, lint


        def test_counts_no_rules_after_a_reload():
            reload(config)
            assert lint.count(config) == 0
        ''',
}


def test_what_a_reload_binds_again_to_the_same_object_is_not_reset(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", RELOAD_SUITE)
    session = run_suite(root, tmp_path / "out", budget=600, timeout=900)
    victim = "test_counts_no_rules_after_a_reload"
    f = session.finding(f"::{victim}")
    runs = [(r["label"], r["order"][0].rsplit("::", 1)[-1]) for r in f["replays"]]
    assert f["status"] == "verified", (f["note"], runs, session.output[-3000:])
    assert runs[1] == ("pair-printed", "test_registers_a_rule"), runs
    assert [label for label, _ in runs] == ["alone", "pair-printed", "key"], runs
    assert any(k.endswith(":RULES") for k in f["proven_keys"]), (f["proven_keys"], runs)
    check_reproductions(session.output, root, [victim])
