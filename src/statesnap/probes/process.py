"""``process``: interpreter- and process-wide settings a test can leave changed.

One key per item of :mod:`._processitems` (umask, recursion limit, decimal context, locale,
signals, sys hooks, std streams, builtins, gc, ...); modules not imported yet have no keys.
The keys and their costs: docs/PROBES.md.
"""

from __future__ import annotations

import builtins
import gc
import os
import sys
import time
from collections.abc import Collection
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.probes._dictwatch import Reader, version_reader
from statesnap.probes._processitems import (
    STREAMS,
    Item,
    build_items,
    in_main_thread,
    loop_state,
    signal_numbers,
)
from statesnap.probes.attributes.kinds import tag
from statesnap.probes.attributes.preview import short
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, ProcFile, Severity, unreadable
from statesnap.probes.procdir import ProcDir

BUILTINS_PREFIX = "builtins:"
#: ``_`` is rebound by sys.displayhook on every displayed value (doctests): never a leak.
BUILTINS_IGNORED = frozenset({"_"})
#: At most this many stream triples are remembered as pytest's own (see ``_usual_streams``).
_USUAL_STREAMS_KEPT = 16


#: The C module behind ``signal`` (its functions skip the enum wrapping: faster per test).
_csignal: Any = sys.modules["_signal"]

_HAS_SIGMASK = hasattr(_csignal, "pthread_sigmask")  # not on Windows
_HAS_ITIMER = hasattr(_csignal, "getitimer")


def _timer_armed() -> tuple[bool, float]:
    # The remaining delay runs down by itself: only armed-or-not and the interval count.
    delay, interval = _csignal.getitimer(_csignal.ITIMER_REAL)
    return delay > 0, interval


class _FileHead(ProcFile):
    """A :class:`ProcFile` read up to ``size`` bytes only.

    ``ProcFile.read`` asks for 64 KiB per ``pread``, and allocating that buffer costs more than
    the read here (23 us against 10 us); ``Umask:`` is on the second line.
    """

    def __init__(self, template: str, own_fds: set[int], size: int) -> None:
        super().__init__(template, own_fds)
        self._size = size

    def read(self) -> bytes:
        return os.pread(self._ensure(), self._size, 0)


def _umask_by_setting(guess: int = 0o022) -> int:
    """Read the umask by setting it to ``guess`` and, unless that was the value, back.

    When the guess is right (the last value read: the usual case) the umask never differs
    from what it was, even for a moment; when it is wrong, another thread could create a file
    with the guessed mask during the two syscalls.
    """
    old = _os_umask(guess)
    if old != guess:
        _os_umask(old)
    return old


#: Taken at import: a test that patches ``os.umask`` (and leaves it patched) must not have its
#: stand-in called by the probe.
_os_umask = os.umask


def _other_python_threads() -> bool:
    """Whether ``threading`` knows of another thread (a cheap early "not alone" only: a stale
    entry can only say so wrongly, which sends the umask read to /proc)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    active = getattr(threading, "_active", None)
    if isinstance(active, dict):
        return len(active) > 1  # one C call; active_count() takes a lock and a frame
    return bool(threading.active_count() > 1)


#: The C half of :mod:`locale` (the wrapper adds a Python frame per token); None where this
#: build has none.
_clocale: Any = sys.modules.get("_locale")


class ProcessProbe(Probe):
    """umask, recursion limit, decimal context, locale, signals, sys hooks, streams, builtins."""

    name = "process"
    severity = Severity.HIGH
    restorable = True

    def __init__(self) -> None:
        self._status: _FileHead | None = None
        #: ``/proc/self/task``, whose link count tells whether any other thread exists.
        self._task: ProcDir | None = None
        self._items: list[Item] = []
        self._by_key: dict[str, Item] = {}
        self._builtins0: dict[str, Any] = {}
        self._builtins_version: Reader = tuple
        self._signals: list[int] = []
        self._last_umask: int | None = None
        #: ``(id(stdout), id(stderr), id(stdin))`` of stream triples read as all ``default``,
        #: with the objects (held, so their ids are not reused): pytest swaps its capture
        #: objects and the real streams in and out around phases and subtests, and the token
        #: must not move for what the map shows as the same.
        self._usual_streams: dict[tuple[int, int, int], tuple[object, ...]] = {}

    def setup(self, ctx: ProbeContext) -> None:
        try:
            self._status = _FileHead("/proc/{pid}/status", ctx.own_fds, 512)
            self._task = ProcDir("/proc/{pid}/task", ctx.own_fds)
            if self._task.fstat().st_nlink < 3:  # not 2 + threads: never alone, then
                self._task.close()
                self._task = None
            self._umask()
        except OSError:
            self.close()
            self._status = self._task = None
            ctx.notes["process"] = ("no /proc: umask read by setting it to its last value "
                                    "(and back, if that was not it)")
        self._items = build_items(self._umask_text, self._umask, os.umask)
        self._by_key = {i.key: i for i in self._items}
        self._builtins0 = dict(vars(builtins))
        self._builtins_version = version_reader([vars(builtins)])
        self._signals = [num for _, num in signal_numbers()]

    def close(self) -> None:
        for f in (self._status, self._task):
            if f is not None:
                f.close()

    def _alone(self) -> bool:
        """Whether this process has no other thread, Python's or native (a C library's)."""
        if self._task is None or _other_python_threads():
            return False
        # 2 + the number of threads (checked at setup): the kernel's count is the answer.
        # With this the one thread, no other can start while the umask is set and set back.
        return self._task.fstat().st_nlink <= 3

    def _umask(self) -> int:
        # /proc/self/status costs ~2 µs a read with hot caches and ~10 µs between tests (the
        # kernel formats the whole file); setting the umask to its last value and reading what
        # it was costs 0.3 µs and never changes it in the usual case.  That is only done while
        # this is the process's one thread: with another one alive, a wrong guess (a test did
        # change the umask) could hand it the old mask for two syscalls, so /proc is read.
        if self._status is not None and (self._last_umask is None or not self._alone()):
            data = self._status.read()
            at = data.find(b"Umask:")
            if at >= 0:
                self._last_umask = int(data[at + 6: data.index(b"\n", at)].strip(), 8)
                return self._last_umask
        self._last_umask = _umask_by_setting(
            0o022 if self._last_umask is None else self._last_umask)
        return self._last_umask

    def _umask_text(self) -> str:
        return f"{self._umask():04o}"

    # -- tokens ----------------------------------------------------------------------------
    def light_token(self) -> object:
        s = sys
        mods = s.modules
        decimal = mods.get("decimal")
        dec: object = None
        if decimal is not None:
            c = decimal.getcontext()
            dec = (c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp)
        socket = mods.get("socket")
        tempfile = mods.get("tempfile")
        threading = mods.get("threading")
        streams = id(s.stdout), id(s.stderr), id(s.stdin)
        return (
            s.getrecursionlimit(), id(s.excepthook), id(s.displayhook), id(s.unraisablehook),
            id(s.breakpointhook), id(s.gettrace()), id(s.getprofile()),
            0 if streams in self._usual_streams else streams,
            gc.isenabled(), gc.get_threshold(), gc.get_debug(), len(gc.callbacks),
            dec,
            socket.getdefaulttimeout() if socket is not None else None,
            tempfile.tempdir if tempfile is not None else None,
            id(threading.excepthook) if threading is not None else None,
        )

    def token(self) -> object:
        mods = sys.modules
        decimal = mods.get("decimal")
        locale = mods.get("locale")
        threading = mods.get("threading")
        asyncio = mods.get("asyncio")
        return (
            self.light_token(),
            self._umask(),
            tuple(map(_csignal.getsignal, self._signals)),
            _csignal.pthread_sigmask(_csignal.SIG_BLOCK, ()) if _HAS_SIGMASK else None,
            _timer_armed() if _HAS_ITIMER else None,
            self._builtins_version(),
            sum(map(id, gc.callbacks)),
            decimal.getcontext().traps.copy() if decimal is not None else None,
            (None if locale is None else _clocale.setlocale(_clocale.LC_ALL) if _clocale
             else locale.setlocale(locale.LC_ALL, None)),
            (id(threading.gettrace()), id(threading.getprofile())) if threading else None,
            (id(asyncio.events._event_loop_policy), loop_state(asyncio)) if asyncio else None,
            mods["faulthandler"].is_enabled() if "faulthandler" in mods else None,
            sys.getswitchinterval(), sys.get_int_max_str_digits(),
            # time.tzset() rebinds these; a TZ put back without another tzset leaves them
            time.tzname, time.timezone, time.altzone,
        )

    # -- reading ---------------------------------------------------------------------------
    def read(self) -> ProbeMap:
        mods = sys.modules
        out: ProbeMap = {}
        for item in self._items:
            if item.needs is not None and item.needs not in mods:
                continue
            try:
                out[item.key] = item.show()
            except Exception as exc:  # one odd setting must not hide the others
                out[item.key] = unreadable(exc)
        out.update(self._builtins_changes())
        self._learn_streams(out)
        return out

    def _learn_streams(self, shown: ProbeMap) -> None:
        if all(shown.get(f"sys.{name}") == "default" for name in STREAMS):
            objs = sys.stdout, sys.stderr, sys.stdin
            known = self._usual_streams
            if len(known) >= _USUAL_STREAMS_KEPT:
                known.clear()  # capsys makes new objects per test: keep the recent ones
            known[(id(objs[0]), id(objs[1]), id(objs[2]))] = objs

    def _builtins_changes(self) -> ProbeMap:
        now = vars(builtins)
        base = self._builtins0
        out: ProbeMap = {}
        for name, value in list(now.items()):
            if name in BUILTINS_IGNORED:
                continue
            old = base.get(name, _ABSENT)
            if old is _ABSENT:
                out[BUILTINS_PREFIX + name] = f"added: {short(value)} {tag(value)}"
            elif old is not value:
                out[BUILTINS_PREFIX + name] = f"replaced by {short(value)} {tag(value)}"
        for name in base.keys() - now.keys() - BUILTINS_IGNORED:
            out[BUILTINS_PREFIX + name] = "deleted"
        return out

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        item = self._by_key.get(key)
        if item is None:
            return self.severity
        if before is None and item.pristine is not None and after == item.pristine:
            return Severity.LOW  # its module was imported: the key came with its default
        if item.rate is not None:
            rated = item.rate(before, after)
            if rated is not None:
                return rated
        return item.severity

    def hint(self, key: str, change: str) -> str | None:
        if key.startswith(BUILTINS_PREFIX):
            name = key.removeprefix(BUILTINS_PREFIX)
            return (f"patch builtins.{name} with monkeypatch.setattr(builtins, {name!r}, ..."
                    f"{', raising=False' if change == 'added' else ''}) so it is put back")
        item = self._by_key.get(key)
        return item.hint if item is not None else None

    # -- restoring -------------------------------------------------------------------------
    def save(self) -> object:
        mods = sys.modules
        values: dict[str, Any] = {}
        for item in self._items:
            if item.get is None or (item.needs is not None and item.needs not in mods):
                continue
            try:
                values[item.key] = item.get()
            except Exception as exc:  # not saved: not put back either
                note_internal_error(f"probe process: save {item.key}", exc)
                continue
        return {"items": values, "builtins": dict(vars(builtins))}

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, dict)
        done: list[str] = []
        for key in keys:
            if key.startswith(BUILTINS_PREFIX):
                name = key.removeprefix(BUILTINS_PREFIX)
                if name in saved["builtins"]:
                    setattr(builtins, name, saved["builtins"][name])
                else:
                    vars(builtins).pop(name, None)
                done.append(key)
                continue
            item = self._by_key.get(key)
            if item is None or item.put is None or key not in saved["items"]:
                continue
            if item.main_only and not in_main_thread():
                continue
            try:
                item.put(saved["items"][key])
            except (ValueError, TypeError, OSError, RecursionError):
                continue  # e.g. a recursion limit below the current depth: not restorable now
            done.append(key)
        return done


_ABSENT = object()
