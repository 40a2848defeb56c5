"""The ``process`` probe's items: one key each, with its fingerprint, save, restore and hint.

Every reader here only looks: modules are taken from ``sys.modules`` (``decimal``, ``locale``,
``socket``, ``tempfile``, ``threading``, ``asyncio`` only once someone imported them) and the C
accelerators (``_signal``) are used where the Python wrapper is slow (``signal.getsignal``
builds an enum per call, ~10 us).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any, Final

from statesnap.base.plain import Frozen
from statesnap.probes.attributes.kinds import qualified, tag
from statesnap.probes.base import Severity

#: The signals whose Python-level handlers are fingerprinted (those this platform has).
SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM",
                "SIGCHLD", "SIGPIPE", "SIGWINCH", "SIGXFSZ", "SIGABRT", "SIGCONT", "SIGTSTP",
                "SIGTTIN", "SIGTTOU", "SIGVTALRM", "SIGPROF", "SIGXCPU", "SIGBUS", "SIGFPE",
                "SIGILL", "SIGSEGV", "SIGTRAP", "SIGURG", "SIGIO")
DECIMAL_FIELDS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")
SYS_HOOKS = ("excepthook", "displayhook", "unraisablehook", "breakpointhook")
#: Test tools whose own bookkeeping hooks into the interpreter once per process (hypothesis
#: appends a GC timer to ``gc.callbacks`` on first use): no test of the user's made it.
TOOL_MODULES = ("hypothesis", "_hypothesis_pytestplugin", "_pytest", "pytest", "pluggy",
                "coverage", "pytest_cov", "xdist")
STREAMS = ("stdout", "stderr", "stdin")


def mod(name: str) -> Any:
    """A module if someone imported it, else None (never imports)."""
    return sys.modules.get(name)


def describe_hook(obj: object, default: object = None) -> str:
    """``default`` for the interpreter's own hook, ``none``, or ``module.qualname #tag``."""
    if obj is None:
        return "none"
    if default is not None and obj is default:
        return "default"
    return f"{qualified(obj)} {tag(obj)}"


def describe_stream(name: str, obj: object) -> str:
    """pytest's capture objects and the original stream are both ``default``.

    pytest swaps its capture objects in and out around every phase; only a stream replaced by
    something else (a test's own ``io.StringIO``, a closed wrapper) is a change.
    """
    if obj is getattr(sys, f"__{name}__", None) or type(obj).__module__ == "_pytest.capture":
        return "default"
    if obj is None:
        return "None"
    closed = getattr(obj, "closed", False) if hasattr(type(obj), "closed") else False
    return f"{qualified(type(obj))} {tag(obj)}{' (closed)' if closed is True else ''}"


def describe_signal_handler(handler: object) -> str:
    if handler == 0:
        return "default"
    if handler == 1:
        return "ignore"
    if handler is None:
        return "not set from Python"
    return describe_hook(handler)


#: The C half of :mod:`signal`, always loaded at startup (``signal`` itself may not be).
_signal: Any = sys.modules["_signal"]
_SIGNAL_NAMES_BY_NUMBER: dict[int, str] = {
    int(v): k for k, v in sorted(vars(_signal).items(), reverse=True)
    if k.startswith("SIG") and not k.startswith("SIG_") and isinstance(v, int)
}


def signal_numbers() -> list[tuple[str, int]]:
    return [(n, int(getattr(_signal, n))) for n in SIGNAL_NAMES if hasattr(_signal, n)]


def signal_name(number: int) -> str:
    return _SIGNAL_NAMES_BY_NUMBER.get(int(number), str(number))


def in_main_thread() -> bool:
    threading = mod("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def loop_state(asyncio: Any) -> str:
    """``none``, ``open``, ``running`` or ``closed``: the loop set for this thread, if any.

    Only the state, not the identity: pytest-asyncio makes a fresh loop per test, which is no
    leak; a *closed* loop left set is ("Event loop is closed" in a later test).
    """
    policy = getattr(getattr(asyncio, "events", None), "_event_loop_policy", None)
    local = getattr(policy, "_local", None)
    loop = getattr(local, "_loop", None)
    if loop is None:
        return "none"
    try:
        if loop.is_closed():
            return "closed"
        return "running" if loop.is_running() else "open"
    except Exception:
        return type(loop).__qualname__


class Item(Frozen):
    """One key of the ``process`` map."""

    _fields = ("key", "show", "hint", "get", "put", "needs", "severity", "main_only",
               "pristine", "rate")
    __slots__ = _fields

    def __init__(self, key: str, show: Callable[[], Any], hint: str,
                 get: Callable[[], Any] | None = None, put: Callable[[Any], None] | None = None,
                 needs: str | None = None, severity: Severity = Severity.HIGH,
                 main_only: bool = False, pristine: str | None = None,
                 rate: Callable[[Any, Any], Severity | None] | None = None) -> None:
        self.key: Final = key
        self.show: Final = show
        self.hint: Final = hint
        #: The real value to save, and how to put it back (None: report only).
        self.get: Final = get
        self.put: Final = put
        #: A module that must already be imported for the key to exist.
        self.needs: Final = needs
        self.severity: Final = severity
        #: Restoring needs the main thread (signal handlers).
        self.main_only: Final = main_only
        #: What the key shows right after ``needs`` is first imported: appearing with it is
        #: the import, not a setting a later test could see differ (LOW, like the import).
        self.pristine: Final = pristine
        #: A change's severity from its shown values, where the key's own is too coarse
        #: (None: the key's severity).
        self.rate: Final = rate


def _setattr(target: Callable[[], Any], name: str) -> Callable[[Any], None]:
    return lambda value: setattr(target(), name, value)


def _getattr(target: Callable[[], Any], name: str) -> Callable[[], Any]:
    return lambda: getattr(target(), name)


def _decimal_items() -> list[Item]:
    def ctx() -> Any:
        return mod("decimal").getcontext()

    items = [
        Item(f"decimal.{f}", _getattr(ctx, f),
             "change the decimal context inside `with decimal.localcontext():`",
             get=_getattr(ctx, f), put=_setattr(ctx, f), needs="decimal")
        for f in DECIMAL_FIELDS
    ]

    def traps_on() -> list[str]:
        return sorted(sig.__name__ for sig, on in ctx().traps.items() if on)

    def put_traps(saved: dict[Any, bool]) -> None:
        traps = ctx().traps
        for sig, on in saved.items():
            traps[sig] = on

    items.append(Item("decimal.traps", traps_on,
                      "change decimal traps inside `with decimal.localcontext():`",
                      get=lambda: dict(ctx().traps), put=put_traps, needs="decimal"))
    return items


def _hook_items() -> list[Item]:
    def show_hook(h: str) -> Callable[[], str]:
        return lambda: describe_hook(getattr(sys, h), getattr(sys, f"__{h}__", None))

    def show_stream(s: str) -> Callable[[], str]:
        return lambda: describe_stream(s, getattr(sys, s))

    items = [
        Item(f"sys.{h}", show_hook(h),
             f"patch sys.{h} with monkeypatch.setattr(sys, {h!r}, ...) so it is put back",
             get=_getattr(lambda: sys, h), put=_setattr(lambda: sys, h))
        for h in SYS_HOOKS
    ]
    items += [
        Item("sys.trace", lambda: describe_hook(sys.gettrace()),
             "undo sys.settrace(...) with sys.settrace(None) (or the old tracer) in a finaliser",
             get=sys.gettrace, put=sys.settrace),
        Item("sys.profile", lambda: describe_hook(sys.getprofile()),
             "undo sys.setprofile(...) in a finaliser", get=sys.getprofile, put=sys.setprofile),
        Item("threading.excepthook",
             lambda: describe_hook(mod("threading").excepthook,
                                   getattr(mod("threading"), "__excepthook__", None)),
             "patch threading.excepthook with monkeypatch.setattr(threading, 'excepthook', ...)",
             get=lambda: mod("threading").excepthook,
             put=_setattr(lambda: mod("threading"), "excepthook"), needs="threading"),
        Item("threading.trace", lambda: describe_hook(mod("threading").gettrace()),
             "undo threading.settrace(...) in a finaliser",
             get=lambda: mod("threading").gettrace(),
             put=lambda v: mod("threading").settrace(v), needs="threading"),
        Item("threading.profile", lambda: describe_hook(mod("threading").getprofile()),
             "undo threading.setprofile(...) in a finaliser",
             get=lambda: mod("threading").getprofile(),
             put=lambda v: mod("threading").setprofile(v), needs="threading"),
    ]
    items += [
        Item(f"sys.{s}", show_stream(s),
             f"replace sys.{s} with capsys/capfd or monkeypatch.setattr(sys, {s!r}, ...)",
             get=_getattr(lambda: sys, s), put=_setattr(lambda: sys, s))
        for s in STREAMS
    ]
    return items


def _from_tool(shown: object) -> bool:
    """Whether a hook shown as ``module.qualname #tag`` is a test tool's own."""
    if not isinstance(shown, str):
        return False
    module = shown.split(" ", 1)[0]
    return any(module.startswith(f"{t}.") for t in TOOL_MODULES)


def tools_only(before: Any, after: Any) -> Severity | None:
    """LOW for hooks only added, every one a test tool's (:data:`TOOL_MODULES`); otherwise
    None (the key's severity): a user's hook, or one removed, is the test's change."""
    if not isinstance(after, list) or not isinstance(before, (list, type(None))):
        return None
    old = before or []
    added = [h for h in after if h not in old]
    if not added or any(h not in after for h in old):
        return None
    return Severity.LOW if all(map(_from_tool, added)) else None


def _gc_items() -> list[Item]:
    def put_enabled(on: bool) -> None:
        gc.enable() if on else gc.disable()

    def put_callbacks(saved: list[Any]) -> None:
        gc.callbacks[:] = saved

    return [
        Item("gc.enabled", gc.isenabled, "re-enable the collector (gc.enable()) in a finaliser",
             get=gc.isenabled, put=put_enabled, severity=Severity.MEDIUM),
        Item("gc.threshold", lambda: list(gc.get_threshold()),
             "restore gc.set_threshold(...) in a finaliser",
             get=gc.get_threshold, put=lambda v: gc.set_threshold(*v), severity=Severity.MEDIUM),
        Item("gc.debug", gc.get_debug, "restore gc.set_debug(0) in a finaliser",
             get=gc.get_debug, put=gc.set_debug, severity=Severity.MEDIUM),
        Item("gc.callbacks", lambda: [describe_hook(c) for c in gc.callbacks],
             "remove callbacks you append to gc.callbacks in a finaliser",
             get=lambda: list(gc.callbacks), put=put_callbacks, severity=Severity.MEDIUM,
             rate=tools_only),
    ]


def _signal_items() -> list[Item]:
    def show(n: int) -> Callable[[], str]:
        return lambda: describe_signal_handler(_signal.getsignal(n))

    def get(n: int) -> Callable[[], Any]:
        return lambda: _signal.getsignal(n)

    def put(n: int) -> Callable[[Any], None]:
        return lambda v: None if v is None else _signal.signal(n, v)

    items = [
        Item(f"signal.{name}", show(num),
             f"restore the {name} handler in a finaliser (keep signal.signal()'s return value)",
             get=get(num), put=put(num), main_only=True)
        for name, num in signal_numbers()
    ]
    if hasattr(_signal, "pthread_sigmask"):
        items.append(Item(
            "signal.blocked",
            lambda: sorted(map(signal_name, _signal.pthread_sigmask(_signal.SIG_BLOCK, ()))),
            "unblock signals you block (signal.pthread_sigmask(SIG_SETMASK, old)) in a finaliser",
            get=lambda: _signal.pthread_sigmask(_signal.SIG_BLOCK, ()),
            put=lambda v: _signal.pthread_sigmask(_signal.SIG_SETMASK, v)))
    if hasattr(_signal, "getitimer"):
        def timer() -> str:
            delay, interval = _signal.getitimer(_signal.ITIMER_REAL)
            return "off" if delay == 0 else f"armed, interval {interval:g}s"

        items.append(Item(
            "signal.ITIMER_REAL", timer, "cancel alarms you set (signal.setitimer(ITIMER_REAL, "
            "0) or signal.alarm(0)) in a finaliser",
            get=lambda: _signal.getitimer(_signal.ITIMER_REAL),
            put=lambda v: _signal.setitimer(_signal.ITIMER_REAL, *v)))
    return items


def _misc_items() -> list[Item]:
    return [
        Item("recursionlimit", sys.getrecursionlimit,
             "restore sys.setrecursionlimit(...) in a finaliser",
             get=sys.getrecursionlimit, put=sys.setrecursionlimit),
        Item("sys.switchinterval", sys.getswitchinterval,
             "restore sys.setswitchinterval(...) in a finaliser",
             get=sys.getswitchinterval, put=sys.setswitchinterval, severity=Severity.LOW),
        Item("sys.int_max_str_digits", sys.get_int_max_str_digits,
             "restore sys.set_int_max_str_digits(...) in a finaliser",
             get=sys.get_int_max_str_digits, put=sys.set_int_max_str_digits),
        Item("socket.timeout", lambda: mod("socket").getdefaulttimeout(),
             "pass timeouts per socket, or restore socket.setdefaulttimeout(...) in a finaliser",
             get=lambda: mod("socket").getdefaulttimeout(),
             put=lambda v: mod("socket").setdefaulttimeout(v), needs="socket"),
        Item("locale", lambda: mod("locale").setlocale(mod("locale").LC_ALL, None),
             "restore the locale (locale.setlocale(LC_ALL, old)) in a finaliser",
             get=lambda: mod("locale").setlocale(mod("locale").LC_ALL, None),
             put=lambda v: mod("locale").setlocale(mod("locale").LC_ALL, v), needs="locale"),
        Item("time.zone", describe_time_zone,
             "call time.tzset() again once TZ is put back (a fixture that sets TZ, calls "
             "tzset, and after the test restores TZ and calls tzset)",
             get=_time_zone_saved,
             put=_put_time_zone if hasattr(time, "tzset") else None),  # tzset: Unix only
        Item("tempfile.tempdir", lambda: mod("tempfile").tempdir,
             "patch tempfile.tempdir with monkeypatch.setattr(tempfile, 'tempdir', ...)",
             get=lambda: mod("tempfile").tempdir,
             put=_setattr(lambda: mod("tempfile"), "tempdir"), needs="tempfile"),
        Item("faulthandler.enabled", lambda: mod("faulthandler").is_enabled(),
             "do not disable faulthandler in tests (pytest enables it for crash tracebacks)",
             needs="faulthandler", severity=Severity.LOW),
        Item("asyncio.policy",
             lambda: describe_policy(mod("asyncio")),
             "set event loop policies in a fixture that puts the old one back",
             get=lambda: mod("asyncio").events._event_loop_policy,
             put=lambda v: mod("asyncio").set_event_loop_policy(v), needs="asyncio",
             pristine="default"),
        Item("asyncio.event_loop", lambda: loop_state(mod("asyncio")),
             "close the loop *and* unset it (asyncio.set_event_loop(None)), or use "
             "asyncio.run / pytest-asyncio, which do both", needs="asyncio",
             pristine="none"),
    ]


def describe_time_zone() -> str:
    """The C library's local time zone as :func:`time.tzset` last set it: names and offset.

    It is process state of its own: ``monkeypatch.setenv("TZ", ...)`` puts the variable back
    after a test that called ``time.tzset()``, but nothing sets the zone back from it, so
    ``time.localtime`` (and what reads ``time.timezone``: ``datetime.astimezone``, dateutil's
    ``tzlocal``) keeps the test's zone while the ``env`` probe sees nothing left.
    """
    offset = -time.timezone
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{time.tzname[0]}/{time.tzname[1]} (UTC{sign}{hours:02d}:{minutes:02d})"


def _time_zone_saved() -> tuple[str | None, str]:
    """What to put back: the ``TZ`` variable now and the zone it is meant to give."""
    return os.environ.get("TZ"), describe_time_zone()


def _put_time_zone(saved: tuple[str | None, str]) -> None:
    """Set the zone back by running ``tzset`` under the saved ``TZ``, then leave ``TZ`` as it
    is now (the ``env`` probe's key, restored on its own or not)."""
    tz, shown = saved
    now = os.environ.get("TZ")
    _set_tz_variable(tz)
    try:
        time.tzset()
    finally:
        _set_tz_variable(now)
    if describe_time_zone() != shown:  # TZ had changed without a tzset before the save
        raise ValueError(f"time zone {describe_time_zone()!r}, not {shown!r}, after tzset")


def _set_tz_variable(value: str | None) -> None:
    if value is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = value


def describe_policy(asyncio: Any) -> str:
    policy = getattr(getattr(asyncio, "events", None), "_event_loop_policy", None)
    # By type: the default policy, created on first use, is no change; a uvloop policy left
    # installed is.
    if policy is None or type(policy) is getattr(asyncio, "DefaultEventLoopPolicy", None):
        return "default"
    return qualified(type(policy))


def build_items(umask_show: Callable[[], Any], umask_get: Callable[[], int],
                umask_put: Callable[[int], Any]) -> list[Item]:
    """Every item, in map order."""
    items = [Item("umask", umask_show,
                  "restore the umask in a finaliser (old = os.umask(new); ... os.umask(old))",
                  get=umask_get, put=umask_put)]
    items += _misc_items()
    items += _decimal_items()
    items += _hook_items()
    items += _gc_items()
    items += _signal_items()
    return items
