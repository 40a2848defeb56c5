"""statesnap's own session end, shielded from what the tests left in the process.

:func:`capture` notes, before the first test, the process globals statesnap's end relies on
(with the attributes of the modules and classes it works through, :mod:`.cleanattrs`);
:func:`shielded` puts them back around the end, then puts back what the tests left.  Why:
docs/ARCHITECTURE.md ("The pytest layer").
"""

from __future__ import annotations

import builtins
import os
import signal
import socket
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

# Imported now, with the plugin: it takes the functions that start, wait for and signal
# statesnap's own processes before any test can patch them.
from statesnap.base import spawned  # noqa: F401
from statesnap.base.plain import Value
from statesnap.plugin import cleanattrs, timers

_MISSING: Any = object()
#: Signals whose disposition children inherit through exec when it is "ignore", or that the
#: end needs (SIGCHLD ignored makes the kernel reap replay children before we can wait).
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGCHLD",
                                                    "SIGPIPE", "SIGALRM") if hasattr(signal, name))


class Baseline(Value):
    """The process globals statesnap's end relies on, as they were before the tests."""

    _fields = ("platform", "executable", "environ", "builtins", "modules", "import_path", "cwd",
               "recursion_limit", "socket_timeout", "signals", "signal_mask", "umask", "tempdir",
               "attributes")
    __slots__ = _fields

    def __init__(self, platform: str, executable: str, environ: Any, builtins: dict[str, Any],
                 modules: dict[str, Any], import_path: tuple[list[Any], list[Any], list[Any]],
                 cwd: str | None, recursion_limit: int, socket_timeout: float | None,
                 signals: dict[int, Any], signal_mask: set[int | signal.Signals] | None, umask: int,
                 tempdir: str | None, attributes: cleanattrs.Saved = ()) -> None:
        self.platform = platform
        self.executable = executable
        self.environ = environ
        self.builtins = builtins
        self.modules = modules
        self.import_path = import_path
        self.cwd = cwd
        self.recursion_limit = recursion_limit
        self.socket_timeout = socket_timeout
        self.signals = signals
        self.signal_mask = signal_mask
        self.umask = umask
        self.tempdir = tempdir
        self.attributes = attributes


def capture() -> Baseline:
    """Note the globals now (at configure time, before any test)."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    mask = os.umask(0o022)
    os.umask(mask)
    signals: dict[int, Any] = {}
    for sig in _SIGNALS:
        try:
            signals[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
    try:
        blocked: set[int | signal.Signals] | None = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    except (AttributeError, OSError, ValueError):
        blocked = None
    return Baseline(
        platform=sys.platform,
        executable=sys.executable,
        environ=os.environ,
        builtins=dict(vars(builtins)),
        modules=dict(sys.modules),
        import_path=(list(sys.path), list(sys.meta_path), list(sys.path_hooks)),
        cwd=cwd,
        recursion_limit=sys.getrecursionlimit(),
        socket_timeout=socket.getdefaulttimeout(),
        signals=signals,
        signal_mask=blocked,
        umask=mask,
        tempdir=tempfile.tempdir,
        attributes=cleanattrs.capture(),
    )


def _looks_stubbed(module: Any) -> bool:
    """A module object no import made (``types.ModuleType(name)``, a mock): no spec."""
    try:
        return getattr(module, "__spec__", None) is None
    except Exception:
        return True


def _swap_mapping(target: dict[str, Any], saved: dict[str, Any],
                  extra_hidden: Callable[[str, Any], bool]) -> Callable[[], None]:
    """Put ``saved``'s entries back into ``target`` (and hide the new ones ``extra_hidden``
    picks); returns the function that undoes exactly that."""
    undo: dict[str, Any] = {}
    for name, value in saved.items():
        current = target.get(name, _MISSING)
        if current is not value:
            undo[name] = current
            target[name] = value
    for name, value in list(target.items()):
        if name not in saved and extra_hidden(name, value):
            undo[name] = value
            del target[name]

    def put_back() -> None:
        for name, value in undo.items():
            if value is _MISSING:
                target.pop(name, None)
            else:
                target[name] = value
    return put_back


@contextmanager
def _attribute(obj: Any, name: str, value: Any) -> Iterator[None]:
    current = getattr(obj, name)
    if current is value:
        yield
        return
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, current)


@contextmanager
def _cwd(path: str | None) -> Iterator[None]:
    try:
        here: str | None = os.getcwd()
    except OSError:
        here = None  # deleted under us
    if path is None or here == path:
        yield
        return
    try:
        # An open descriptor finds the way back even into a deleted directory.
        back = os.open(".", os.O_RDONLY)
    except OSError:
        back = -1
    try:
        os.chdir(path)
    except OSError:
        if back >= 0:
            os.close(back)
        yield
        return
    try:
        yield
    finally:
        if back >= 0:
            try:
                os.fchdir(back)
            finally:
                os.close(back)


@contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    current = sys.getrecursionlimit()
    if current >= limit:
        yield
        return
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        try:
            sys.setrecursionlimit(current)
        except RecursionError:
            pass  # too low for the depth we are at: leave the higher limit


@contextmanager
def _signals(base: Baseline) -> Iterator[None]:
    changed: dict[int, Any] = {}
    for sig, handler in base.signals.items():
        try:
            current = signal.getsignal(sig)
            if current is not handler and current != handler and handler is not None:
                signal.signal(sig, handler)
                changed[sig] = current
        except (OSError, ValueError, TypeError):  # not the main thread
            continue
    mask: set[int | signal.Signals] | None = None
    if base.signal_mask is not None:
        try:
            mask = signal.pthread_sigmask(signal.SIG_SETMASK, base.signal_mask)
        except (OSError, ValueError):
            mask = None
    try:
        yield
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in changed.items():
            try:
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            except (OSError, ValueError, TypeError):
                continue


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    current = os.umask(mask)
    try:
        yield
    finally:
        os.umask(current)


@contextmanager
def _socket_timeout(timeout: float | None) -> Iterator[None]:
    current = socket.getdefaulttimeout()
    if current == timeout:
        yield
        return
    socket.setdefaulttimeout(timeout)
    try:
        yield
    finally:
        socket.setdefaulttimeout(current)


@contextmanager
def _import_state(base: Baseline) -> Iterator[None]:
    # Modules that were there before the tests come back; stubs the tests added since are
    # hidden, so that an import at the end finds the real module.
    put_back_modules = _swap_mapping(sys.modules, base.modules,
                                     lambda _name, module: _looks_stubbed(module))
    put_back_builtins = _swap_mapping(vars(builtins), base.builtins, lambda _n, _v: False)
    lists: tuple[list[Any], ...] = (sys.path, sys.meta_path, sys.path_hooks)
    current = [list(items) for items in lists]
    for items, saved in zip(lists, base.import_path, strict=True):
        items[:] = saved
    try:
        yield
    finally:
        for items, saved in zip(lists, current, strict=True):
            items[:] = saved
        put_back_builtins()
        put_back_modules()


@contextmanager
def shielded(base: Baseline | None) -> Iterator[None]:
    """Run statesnap's end work with the globals of ``base``; put the tests' state back after.

    Warnings raised by that work are dropped: under the tests' ``simplefilter('error')`` an
    import's DeprecationWarning would otherwise become an exception, and statesnap's own
    warnings have no place in the user's warnings summary.
    """
    if base is None:
        yield
        return
    with ExitStack() as stack:
        # Outermost: a timer a test left running would fire while SIGALRM's handler below is
        # the default one, which ends the process; it runs again once the tests' are back.
        stack.enter_context(timers.held())
        # First in, last out: everything below (and the end) calls these modules' functions.
        stack.enter_context(cleanattrs.restored(base.attributes))
        stack.enter_context(_attribute(sys, "platform", base.platform))
        stack.enter_context(_attribute(sys, "executable", base.executable))
        stack.enter_context(_attribute(os, "environ", base.environ))
        stack.enter_context(_attribute(tempfile, "tempdir", base.tempdir))
        stack.enter_context(_import_state(base))
        stack.enter_context(_cwd(base.cwd))
        stack.enter_context(_recursion_limit(base.recursion_limit))
        stack.enter_context(_socket_timeout(base.socket_timeout))
        stack.enter_context(_signals(base))
        stack.enter_context(_umask(base.umask))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        yield
