"""The ``logging`` probe against real loggers and handlers."""

from __future__ import annotations

import io
import itertools
import json
import logging
import logging.config
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.logging_ import DISABLE_KEY, LoggingProbe
from statesnap.state.diff import diff_maps

_names = itertools.count()


@pytest.fixture
def probe(tmp_path: Path) -> LoggingProbe:
    p = LoggingProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    return p


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    """A real, uniquely named logger, put back to a fresh logger's state afterwards."""
    lg = logging.getLogger(f"statesnap_test.lg{next(_names)}")
    yield lg
    lg.setLevel(logging.NOTSET)
    lg.handlers.clear()
    lg.propagate, lg.disabled = True, False


def test_untouched_loggers_have_no_keys_root_always_does(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    got = probe.read()
    assert not [k for k in got if k.startswith(logger.name)]
    assert "root:level" in got and "root:handlers" in got
    assert got[DISABLE_KEY] == logging.getLevelName(logging.root.manager.disable)
    json.dumps(got)  # fingerprints are JSON-able


@pytest.mark.parametrize(
    ("field", "change", "expected"),
    [
        ("level", lambda lg: lg.setLevel(logging.DEBUG), "DEBUG"),
        ("propagate", lambda lg: setattr(lg, "propagate", False), False),
        ("disabled", lambda lg: setattr(lg, "disabled", True), True),
    ],
)
def test_logger_settings_move_both_tokens(
    probe: LoggingProbe, logger: logging.Logger, field: str,
    change: Callable[[logging.Logger], None], expected: Any,
) -> None:
    before = probe.read()
    token, light = probe.token(), probe.light_token()
    change(logger)
    assert probe.token() != token
    assert probe.light_token() != light  # seen at checkpoints too (wide-fixture attribution)
    changes = diff_maps("logging", before, probe.read())
    assert [(c.key, c.change, c.after) for c in changes] == [
        (f"{logger.name}:{field}", "added", expected)]


def test_handlers_by_type_and_target_and_their_own_level(
    probe: LoggingProbe, logger: logging.Logger, tmp_path: Path
) -> None:
    before = probe.read()
    token = probe.token()
    stream = logging.StreamHandler(io.StringIO())
    file = logging.FileHandler(tmp_path / "app.log", delay=True)
    logger.addHandler(stream)
    logger.addHandler(file)
    assert probe.token() != token
    shown = probe.read()[f"{logger.name}:handlers"]
    assert shown[0].startswith("StreamHandler(StringIO) level=NOTSET #")
    assert shown[1].startswith(f"FileHandler({tmp_path / 'app.log'}) level=NOTSET #")
    token = probe.token()
    stream.setLevel(logging.ERROR)
    assert probe.token() != token
    assert "level=ERROR" in probe.read()[f"{logger.name}:handlers"][0]
    assert diff_maps("logging", before, probe.read())[0].change == "added"
    file.close()


def test_pytest_handlers_are_left_out(
    probe: LoggingProbe, caplog: pytest.LogCaptureFixture
) -> None:
    # caplog's LogCaptureHandler is on the root logger right now.
    assert any(type(h).__module__ == "_pytest.logging" for h in logging.root.handlers)
    assert not [h for h in probe.read()["root:handlers"] if "LogCapture" in h]


def test_logging_disable_and_globals(probe: LoggingProbe) -> None:
    before = probe.read()
    token, light = probe.token(), probe.light_token()
    old = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        assert probe.token() != token and probe.light_token() != light
        changes = diff_maps("logging", before, probe.read())
        assert [(c.key, c.after) for c in changes] == [(DISABLE_KEY, "CRITICAL")]
        assert probe.severity_of(DISABLE_KEY, "NOTSET", "CRITICAL") == Severity.HIGH
    finally:
        logging.disable(old)
    raise_before = logging.raiseExceptions
    logging.raiseExceptions = not raise_before
    try:
        assert probe.read()["logging.raiseExceptions"] is (not raise_before)
    finally:
        logging.raiseExceptions = raise_before


def test_dictconfig_disabling_existing_loggers_is_seen(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    before = probe.read()
    token = probe.token()
    existing = [lg for lg in logging.root.manager.loggerDict.values()
                if isinstance(lg, logging.Logger) and not lg.disabled]
    root_level, root_handlers = logging.root.level, list(logging.root.handlers)
    logging.config.dictConfig({"version": 1})  # disable_existing_loggers defaults to True
    try:
        assert probe.token() != token
        changes = {c.key: c for c in diff_maps("logging", before, probe.read())}
        assert changes[f"{logger.name}:disabled"].after is True
        hint = probe.hint(f"{logger.name}:disabled", "added") or ""
        assert "disable_existing_loggers=False" in hint
    finally:
        for lg in existing:
            lg.disabled = False
        logging.root.setLevel(root_level)
        logging.root.handlers[:] = root_handlers


def test_a_new_logger_alone_is_no_change(probe: LoggingProbe) -> None:
    before = probe.read()
    token = probe.token()
    logging.getLogger(f"statesnap_test.fresh{next(_names)}")
    assert probe.token() != token  # the logger set moved...
    assert diff_maps("logging", before, probe.read()) == []  # ...but nothing is configured


def test_restore_levels_flags_handlers_and_disable(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    handler = logging.NullHandler()
    logger.addHandler(handler)
    original = probe.read()
    saved = probe.save()
    logger.setLevel(logging.ERROR)
    logger.propagate = False
    logger.disabled = True
    logger.removeHandler(handler)
    logger.addHandler(logging.StreamHandler(io.StringIO()))
    old_disable = logging.root.manager.disable
    logging.disable(logging.WARNING)
    late = logging.getLogger(f"statesnap_test.late{next(_names)}")
    late.setLevel(logging.DEBUG)
    changed = [c.key for c in diff_maps("logging", original, probe.read())]
    assert len(changed) == 6
    try:
        assert sorted(probe.restore(saved, changed)) == sorted(changed)
        assert diff_maps("logging", original, probe.read()) == []
        assert logger.handlers == [handler] and logger.getEffectiveLevel() == logging.WARNING
        assert late.level == logging.NOTSET  # created after the save: back to a fresh logger
    finally:
        logging.disable(old_disable)


def test_hints(probe: LoggingProbe) -> None:
    assert "caplog.set_level" in (probe.hint("app.db:level", "added") or "")
    assert "logger='app.db'" in (probe.hint("app.db:level", "added") or "")
    assert "removeHandler" in (probe.hint("root:handlers", "changed") or "")
    assert "logging.NOTSET" in (probe.hint(DISABLE_KEY, "changed") or "")


def test_swapping_a_handler_for_another_moves_the_token(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    first, second = logging.NullHandler(), logging.NullHandler()
    logger.addHandler(first)
    before = probe.read()
    token = probe.token()
    logger.removeHandler(first)
    other = logging.getLogger(f"{logger.name}.child")
    other.addHandler(second)  # same number of handlers overall, on another logger
    try:
        assert probe.token() != token
        keys = {c.key for c in diff_maps("logging", before, probe.read())}
        assert keys == {f"{logger.name}:handlers", f"{other.name}:handlers"}
    finally:
        other.removeHandler(second)


def test_restore_the_logging_module_globals(probe: LoggingProbe) -> None:
    original = probe.read()
    saved = probe.save()
    factory, klass, last, raising = (logging.getLogRecordFactory(), logging.getLoggerClass(),
                                     logging.lastResort, logging.raiseExceptions)

    class AppLogger(logging.Logger):
        pass

    try:
        logging.setLogRecordFactory(lambda *a, **k: factory(*a, **k))
        logging.setLoggerClass(AppLogger)
        logging.lastResort = None
        logging.raiseExceptions = not raising
        changed = [c.key for c in diff_maps("logging", original, probe.read())]
        assert sorted(changed) == ["logging.lastResort", "logging.loggerClass",
                                   "logging.raiseExceptions", "logging.recordFactory"]
        assert sorted(probe.restore(saved, changed)) == sorted(changed)
        assert diff_maps("logging", original, probe.read()) == []
        assert logging.getLoggerClass() is klass and logging.lastResort is last
    finally:
        logging.setLogRecordFactory(factory)
        logging.setLoggerClass(klass)
        logging.lastResort, logging.raiseExceptions = last, raising


def test_pytest_handlers_coming_and_going_move_no_full_token(probe: LoggingProbe) -> None:
    # pytest attaches its capture handlers to the root logger around each phase, and a
    # wide-scoped fixture's checkpoint (full token) finds them there: the map leaves them
    # out, so must that token.  The suite's own handler on the root still moves both.
    from _pytest.logging import LogCaptureHandler

    before, token, light = probe.read(), probe.token(), probe.light_token()
    for _ in range(2):  # the first time, a handler type not seen before
        capture = LogCaptureHandler()
        logging.root.addHandler(capture)
        try:
            probe.token()
            assert probe.token() == token
            assert probe.read() == before
        finally:
            logging.root.removeHandler(capture)
        assert probe.token() == token and probe.light_token() == light
    own = logging.NullHandler()
    logging.root.addHandler(own)
    try:
        assert probe.token() != token and probe.light_token() != light
        assert [c.key for c in diff_maps("logging", before, probe.read())] == ["root:handlers"]
        own.setLevel(logging.ERROR)  # its own attributes, by version tag
        moved = probe.token()
        assert moved != token
        own.setLevel(logging.WARNING)
        assert probe.token() != moved
    finally:
        logging.root.removeHandler(own)
    assert probe.token() == token


def test_a_handler_list_put_back_equal_moves_no_token(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    # structlog's autouse fixture: ``LOGGER.handlers = before_handlers`` after every test, an
    # equal copy; the logger's dict tag moves, what a read shows does not: no read.
    logger.addHandler(logging.NullHandler())
    before = probe.read()
    token, light = probe.token(), probe.light_token()
    for _ in range(3):
        logger.handlers = list(logger.handlers)
        assert probe.token() == token
        assert probe.light_token() == light
    assert probe.read() == before
    logger.setLevel(logging.WARNING)  # a real change after it still moves both
    assert probe.token() != token and probe.light_token() != light


def test_a_handler_list_bound_anew_is_the_one_watched(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    class Marker(logging.NullHandler):
        pass

    first = logging.NullHandler()
    logger.addHandler(first)
    probe.read()
    logger.handlers = [first]  # a new list, equal
    token = probe.token()
    logger.handlers[0] = Marker()  # the same length, in the new list
    assert probe.token() != token
    assert ".Marker(" in probe.read()[f"{logger.name}:handlers"][0]


def test_a_handler_list_bound_to_a_non_list_keeps_the_tokens_working(
    probe: LoggingProbe, logger: logging.Logger
) -> None:
    probe.read()
    token = probe.token()
    logger.handlers = None  # type: ignore[assignment]  # a test's own mess
    try:
        moved = probe.token()  # no exception: the probe stays on
        assert moved != token
        assert probe.light_token() is not None
        assert f"{logger.name}:handlers" in probe.read()  # unreadable, said so
    finally:
        logger.handlers = []
    assert probe.token() != moved
