"""``logging``: logger levels, handlers, ``propagate`` and ``disabled`` flags, ``logging.disable``.

Only loggers that differ from a fresh logger get keys; pytest's own handlers are left out.  The
keys and the token (dict version tags, :mod:`._dictwatch`): docs/PROBES.md.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from itertools import chain
from operator import attrgetter
from typing import Any

from statesnap.probes._dictwatch import Reader, version_reader
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, unreadable

DISABLE_KEY = "logging.disable"
GLOBAL_KEYS = ("logging.loggerClass", "logging.recordFactory", "logging.lastResort",
               "logging.raiseExceptions")
FIELDS = ("level", "handlers", "propagate", "disabled")

#: What a read shows of a logger that lives in its ``__dict__`` (the handler list by what it
#: holds: :func:`_settings`).
_FLAGS = attrgetter("level", "propagate", "disabled")
_HANDLERS = attrgetter("handlers")


def is_pytest_handler(handler: object) -> bool:
    """pytest's capture/live/file handlers, attached and detached by pytest around phases."""
    return type(handler).__module__.startswith("_pytest")


def _tag(obj: object) -> str:
    return f"#{id(obj) & 0xFFFFFF:06x}"


def _callable_name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{name}{_tag(obj)}"


def describe_handler(handler: Any) -> str:
    """``Type(target) level=NAME #tag``; the target is a stream's name, a file or an address."""
    target = ""
    if isinstance(handler, logging.FileHandler):
        target = str(handler.baseFilename)
    elif isinstance(handler, logging.StreamHandler):
        stream = handler.stream
        name = getattr(stream, "name", None)
        target = name if isinstance(name, str) else type(stream).__qualname__
    else:
        host, port = getattr(handler, "host", None), getattr(handler, "port", None)
        if host is not None:
            target = f"{host}:{port}"
    level = logging.getLevelName(handler.level)
    return f"{type(handler).__qualname__}({target}) level={level} {_tag(handler)}"


def _logger_one_by_one(name: str, lg: logging.Logger, is_root: bool) -> ProbeMap:
    """A logger's keys each read on its own: one that raises is that key's unreadable value
    (a level whose ``__ne__`` raises, a handler whose level cannot be hashed)."""
    out: ProbeMap = {}
    try:
        if lg.level != logging.NOTSET or is_root:
            out[f"{name}:level"] = logging.getLevelName(lg.level)
    except Exception as exc:
        out[f"{name}:level"] = unreadable(exc)
    handlers: list[str] = []
    try:
        for h in list(lg.handlers):
            try:
                if not is_pytest_handler(h):
                    handlers.append(describe_handler(h))
            except Exception as exc:
                handlers.append(f"{type(h).__qualname__} {_tag(h)} {unreadable(exc)}")
    except Exception as exc:
        out[f"{name}:handlers"] = unreadable(exc)
    else:
        if handlers or is_root:
            out[f"{name}:handlers"] = handlers
    for field, shown in (("propagate", False), ("disabled", True)):
        try:
            if bool(getattr(lg, field)) is shown:
                out[f"{name}:{field}"] = shown
        except Exception as exc:
            out[f"{name}:{field}"] = unreadable(exc)
    return out


def _held(handlers: object) -> object:
    """A handler list by the handlers in it; anything else bound there by its identity."""
    if isinstance(handlers, list) and issubclass(type(handlers), list):  # its real type too
        return tuple(handlers)
    return id(handlers)


def _settings(loggers: list[tuple[str, logging.Logger]], handler_lists: list[list[Any]]
              ) -> object:
    """What a read shows of the loggers' and the module's dicts, by value and identity: each
    logger's level and flags, the handlers in its list, and the module's globals read shows
    (C-level loops: this runs whenever a tag moved)."""
    return (tuple(map(_FLAGS, (lg for _, lg in loggers))), tuple(map(_held, handler_lists)),
            id(logging.getLoggerClass()), id(logging.getLogRecordFactory()),
            id(logging.lastResort), logging.raiseExceptions)


def _loggers() -> list[tuple[str, logging.Logger]]:
    items = list(logging.root.manager.loggerDict.items())  # a copy: threads may add loggers
    out: list[tuple[str, logging.Logger]] = [("root", logging.root)]
    out += [(name, lg) for name, lg in items if isinstance(lg, logging.Logger)]
    return out


class LoggingProbe(Probe):
    """Configuration of every logger, and the logging module's global switches."""

    name = "logging"
    severity = Severity.MEDIUM
    restorable = True

    def __init__(self) -> None:
        self._ld_version: Reader = version_reader([logging.root.manager.loggerDict])
        self._ld_seen: object = None
        self._loggers: list[tuple[str, logging.Logger]] = []
        self._handler_lists: list[list[Any]] = []
        self._versions: Reader = tuple
        self._handler_sig: tuple[int, int] = (-1, -1)
        #: The same sums with pytest's handlers in: what is compared on every token.
        self._handler_raw: tuple[int, int] = (-1, -1)
        self._handler_filled: list[list[Any]] = []
        self._handler_versions: Reader = tuple
        #: The version tags last read, what the loggers and the module's globals held then
        #: (:func:`_settings`), and the number that stands for those settings in the tokens.
        self._tags_seen: object = None
        self._settings_seen: object = None
        self._generation = 0

    def setup(self, ctx: ProbeContext) -> None:
        self._ld_version = version_reader([logging.root.manager.loggerDict])
        self._rebuild()

    def _rebuild(self) -> None:
        self._ld_seen = self._ld_version()
        self._loggers = _loggers()
        # vars() makes each logger keep its attributes in a real dict (invisible to Python
        # code), so that dict's version tag moves on setLevel, .disabled = ..., .propagate = ...
        dicts: list[dict[str, Any]] = [logging.__dict__]
        dicts += [vars(lg) for _, lg in self._loggers]
        self._versions = version_reader(dicts)
        self._handler_lists = [lg.handlers for _, lg in self._loggers]
        self._handler_sig = self._handler_raw = (-1, -1)
        self._tags_seen = None

    def _settings_moved(self, tags: object) -> None:
        """The loggers' or the module's dict tags moved to ``tags``: :attr:`_generation` moves
        too where what a read shows of those dicts moved.

        A tag moves on every store, also of an equal value: structlog's suite puts a copy of
        the root logger's handler list back after every test (``LOGGER.handlers = before``),
        which made a read of every logger per test, always to find the same map.  (Called
        from the tokens only when the tags moved: the usual checkpoint costs one comparison.)
        """
        self._tags_seen = tags
        # A handler list bound anew (that list is what the handler sums must read from now
        # on): the lists gathered again, cheap next to a read.
        try:
            found = list(map(_HANDLERS, (lg for _, lg in self._loggers)))
            settings = _settings(self._loggers, found)
            moved = bool(settings != self._settings_seen)
        except Exception:  # a hostile level, flag or handler list: taken as moved
            found, settings, moved = None, None, True
        if found is not None:
            # Only lists are summed (a test's ``logger.handlers = None`` must not break the
            # token): anything else is seen through its identity in the settings.
            self._handler_lists = [hl if issubclass(type(hl), list) else [] for hl in found]
            self._handler_raw = (-1, -1)  # the non-empty ones listed again from these
        if moved:
            self._settings_seen = settings
            self._generation += 1

    def _handlers_token(self) -> object:
        # Handler lists by total length and, for the non-empty ones (a handful among hundreds
        # of library loggers), the ids of their handlers; a handler moved from one logger to
        # another keeps both sums (accepted: rare).  Each handler's own attributes (level,
        # stream) by version tag.  All re-listed whenever the sums move.
        lists = self._handler_lists
        raw = (sum(map(len, lists)), sum(map(id, chain.from_iterable(self._handler_filled))))
        if raw != self._handler_raw:
            self._handler_filled = [hl for hl in lists if hl]
            raw = (raw[0], sum(map(id, chain.from_iterable(self._handler_filled))))
            self._handler_raw = raw
            # The token is the sums without pytest's handlers, which read() leaves out:
            # pytest attaches its capture handlers to the root logger around each phase, and
            # a wide-scoped fixture's checkpoint (full token) finds them there.
            own = [h for h in chain.from_iterable(lists) if not is_pytest_handler(h)]
            sig = (len(own), sum(map(id, own)))
            if sig != self._handler_sig:
                self._handler_sig = sig
                unique = {id(h): h for h in own}
                dicts = [d for d in (getattr(h, "__dict__", None) for h in unique.values())
                         if isinstance(d, dict)]
                self._handler_versions = version_reader(dicts)
        return self._handler_sig, self._handler_versions()

    def token(self) -> object:
        if self._ld_version() != self._ld_seen:
            self._rebuild()  # a logger was created (or a placeholder became one)
        tags = self._versions()
        if tags != self._tags_seen:
            self._settings_moved(tags)
        return self._generation, logging.root.manager.disable, self._handlers_token()

    def light_token(self) -> object:
        # The loggers' own attributes (levels, flags) at every checkpoint, so a wide-scoped
        # fixture's level change is attributed to it; handler lists only by the root's length.
        tags = self._versions()
        if tags != self._tags_seen:
            self._settings_moved(tags)
        root = logging.root
        return (len(root.manager.loggerDict), self._generation, root.manager.disable,
                len(root.handlers))

    def read(self) -> ProbeMap:
        if self._ld_version() != self._ld_seen:
            self._rebuild()
        out: ProbeMap = {DISABLE_KEY: logging.getLevelName(logging.root.manager.disable)}
        for name, lg in self._loggers:
            is_root = lg is logging.root
            try:
                handlers = [describe_handler(h) for h in lg.handlers
                            if not is_pytest_handler(h)]
                if lg.level != logging.NOTSET or is_root:
                    out[f"{name}:level"] = logging.getLevelName(lg.level)
                if handlers or is_root:
                    out[f"{name}:handlers"] = handlers
                if not lg.propagate:
                    out[f"{name}:propagate"] = False
                if lg.disabled:
                    out[f"{name}:disabled"] = True
            except Exception:  # a hostile level or handler: it costs its own key only
                out.update(_logger_one_by_one(name, lg, is_root))
        out["logging.loggerClass"] = _callable_name(logging.getLoggerClass())
        out["logging.recordFactory"] = _callable_name(logging.getLogRecordFactory())
        last = logging.lastResort
        out["logging.lastResort"] = describe_handler(last) if last is not None else None
        out["logging.raiseExceptions"] = bool(logging.raiseExceptions)
        return out

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key.endswith(":disabled") or key == DISABLE_KEY:
            return Severity.HIGH  # silences records that caplog assertions expect
        return self.severity

    def hint(self, key: str, change: str) -> str | None:
        logger, _, field = key.rpartition(":")
        target = "" if logger == "root" else f", logger={logger!r}"
        if key == DISABLE_KEY:
            return "undo logging.disable(...) with logging.disable(logging.NOTSET) in a fixture"
        if field == "level":
            return (f"set the level with caplog.set_level(...{target}), which puts it back, "
                    "or restore the level in a fixture")
        if field == "handlers":
            return ("remove handlers you add (logger.removeHandler in a fixture finaliser), "
                    "or read records through caplog instead")
        if field == "disabled":
            return ("pass disable_existing_loggers=False to logging.config.dictConfig/"
                    "fileConfig, or re-enable the logger in a fixture")
        if field == "propagate":
            return f"restore {logger}.propagate in a fixture finaliser"
        return f"restore {key} in a fixture (monkeypatch.setattr(logging, ...))"

    # -- restoring -------------------------------------------------------------------------
    def save(self) -> object:
        loggers = {name: (lg, lg.level, list(lg.handlers), lg.propagate, lg.disabled)
                   for name, lg in _loggers()}
        return {
            "loggers": loggers,
            "disable": logging.root.manager.disable,
            "loggerClass": logging.getLoggerClass(),
            "recordFactory": logging.getLogRecordFactory(),
            "lastResort": logging.lastResort,
            "raiseExceptions": logging.raiseExceptions,
        }

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, dict)
        done: list[str] = []
        current = dict(_loggers())
        for key in keys:
            if key == DISABLE_KEY:
                logging.disable(saved["disable"])
            elif key in GLOBAL_KEYS:
                self._restore_global(key.removeprefix("logging."), saved)
            else:
                name, _, field = key.rpartition(":")
                lg = current.get(name)
                if lg is None or field not in FIELDS:
                    continue
                # A logger created after the save goes back to what a fresh logger has.
                _, level, handlers, propagate, disabled = saved["loggers"].get(
                    name, (lg, logging.NOTSET, [], True, False))
                if field == "level":
                    lg.setLevel(level)  # through setLevel: it clears the loggers' level caches
                elif field == "handlers":
                    ours = [h for h in lg.handlers if is_pytest_handler(h)]
                    lg.handlers[:] = [h for h in handlers if not is_pytest_handler(h)] + ours
                elif field == "propagate":
                    lg.propagate = propagate
                else:
                    lg.disabled = disabled
            done.append(key)
        return done

    @staticmethod
    def _restore_global(name: str, saved: dict[str, Any]) -> None:
        if name == "loggerClass":
            logging.setLoggerClass(saved["loggerClass"])
        elif name == "recordFactory":
            logging.setLogRecordFactory(saved["recordFactory"])
        elif name == "lastResort":
            logging.lastResort = saved["lastResort"]
        else:
            logging.raiseExceptions = saved["raiseExceptions"]
