"""The probe contract: what every probe (built-in or third-party) implements.

A flat ``{key: fingerprint}`` map of JSON-able values from :meth:`Probe.read`, asked only when
the far cheaper :meth:`Probe.token` moved.  Probes never import what they inspect, never
initialise CUDA, never reap a child and never start a thread.
"""

from __future__ import annotations

import enum
import importlib
import os
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar

from statesnap.base.plain import Value
from statesnap.probes.ownpid import PID

#: A fingerprint: any JSON-able value.  Two fingerprints are compared with ``==``.
JSON: TypeAlias = "str | int | float | bool | list[JSON] | dict[str, JSON] | None"
ProbeMap: TypeAlias = dict[str, Any]


class Severity(enum.IntEnum):
    """How likely a change of this kind is to break a later test.  Used to rank suspects."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3


class ProbeUnavailable(Exception):
    """Raised by :meth:`Probe.setup` when the probe cannot run here (missing library, no /proc).

    The message is shown once in the header and the terminal; the probe then costs nothing.
    ``absent=True`` says that what the probe watches does not exist on this machine (no NVIDIA
    driver for ``nvml``): nothing to act on, so the terminal says it only under ``-v`` (or
    when the probe was named in ``--statesnap-probes``); the header keeps the status anyway.
    """

    def __init__(self, message: str, *, absent: bool = False) -> None:
        super().__init__(message)
        self.absent = absent


class ProbeContext(Value):
    """What a probe may need to know about the run; handed to :meth:`Probe.setup` once."""

    _fields = ("rootdir", "packages", "watch_roots", "watch_exclude", "redactor", "own_fds",
               "own_paths", "notes", "probe_options", "own_modules")
    __slots__ = _fields

    def __init__(self, rootdir: Path, packages: tuple[str, ...] = (),
                 watch_roots: tuple[Path, ...] = (), watch_exclude: tuple[str, ...] = (),
                 redactor: Any = None, own_fds: set[int] | None = None,
                 own_paths: set[Path] | None = None, notes: dict[str, str] | None = None,
                 probe_options: dict[str, str] | None = None, own_modules: set[str] | None = None
                 ) -> None:
        self.rootdir = rootdir
        #: Extra importable package names whose module attributes count as the project's own.
        self.packages = packages
        #: Roots watched by the ``files`` probe.
        self.watch_roots = watch_roots
        #: Glob-like names excluded under the watched roots.
        self.watch_exclude = watch_exclude
        #: Callable that hides secret-looking values: ``redact(name, value) -> value``.
        self.redactor = redactor
        #: File descriptors that statesnap itself holds open (the record, an inotify fd, ...).
        self.own_fds: set[int] = set() if own_fds is None else own_fds
        #: Files and directories statesnap itself writes (the record, replay logs): never watched.
        self.own_paths: set[Path] = set() if own_paths is None else own_paths
        #: Free-form notes a probe wants in the header (``{"nvml": "host pids ..."}``).
        self.notes: dict[str, str] = {} if notes is None else notes
        #: Per-probe settings from the command line or ini file (``{"nvml_every": "5"}``).
        self.probe_options: dict[str, str] = {} if probe_options is None else probe_options
        #: Modules statesnap itself imported while tests ran (:func:`import_own`): never the
        #: suite's doing, so the ``modules`` probe leaves them out.
        self.own_modules: set[str] = set() if own_modules is None else own_modules


class Probe:
    """Base class of all probes.  Subclasses set :attr:`name` and implement :meth:`read`."""

    #: The probe's name in records (``env``, ``fds``, ...); a third-party probe picks its own.
    name: ClassVar[str] = ""
    #: Default severity of a change this probe reports.
    severity: ClassVar[Severity] = Severity.MEDIUM
    #: Whether :meth:`save` / :meth:`restore` put state back (restore mode, key-level replay).
    restorable: ClassVar[bool] = False
    #: Whether :meth:`save` / :meth:`restore` put keys back in a key-level replay only; restore
    #: mode (after every test of a real run) leaves such a probe alone (files a test wrote).
    replay_restorable: ClassVar[bool] = False

    def setup(self, ctx: ProbeContext) -> None:
        """Prepare once per process.  Raise :class:`ProbeUnavailable` to opt out cleanly."""

    def token(self) -> object:
        """A cheap value that changes whenever :meth:`read` would return something else.

        ``None`` means "no cheap answer": the snapshotter then always calls :meth:`read`.
        Tokens are compared with ``==`` and never leave the process.
        """
        return None

    def light_token(self) -> object:
        """An even cheaper token for checkpoints inside a test (after setup, after call).

        Those checkpoints only tell which phase a change happened in, so a probe whose full
        token is costly (``sys.modules`` identities) may answer with less here (its length).
        A change that only the full token sees is still found at the test's end.
        """
        return self.token()

    def read(self) -> ProbeMap:
        """The full ``{key: fingerprint}`` map.  Fingerprints must be JSON-able."""
        raise NotImplementedError

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        """Severity of one change; override where some keys matter less (a plain import)."""
        return self.severity

    def is_memo(self, key: str) -> bool:
        """Whether ``key`` is a function cache (memoisation).

        Its filling is rated LOW by :meth:`severity_of`: a later call would compute the same.
        The tracker rates it MEDIUM when the test that filled it also changed, at any
        checkpoint, state some code may compute from (:meth:`feeds_memos`), put back by its
        end or not: the cached value may have been computed from the changed state.
        """
        return False

    def feeds_memos(self, key: str) -> bool:
        """Whether code may compute a value from the state under ``key`` (an environment
        variable, a module global, the cwd, a file): see :meth:`is_memo`."""
        return False

    def aliases(self, key: str) -> list[str]:
        """The other keys naming the very object that ``key`` describes, where this probe
        describes an object once however many names bind it (the ``attributes`` probe: the
        object's home); asked only for a test's changed keys, kept as the change's
        ``aliases``."""
        return []

    def gauges(self, current: ProbeMap) -> dict[str, float]:
        """Numbers to plot over the test sequence (open fds, live threads), from a map.

        Called once per test with the map after teardown; must be cheap (a ``len``).
        """
        return {}

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        """Optional human-readable detail of how a value changed, computed off the hot path."""
        return None

    def hint(self, key: str, change: str) -> str | None:
        """Optional fix hint for a polluter that changed ``key``, in this probe's terms."""
        return None

    def hint_of(self, key: str, change: str, before: Any, after: Any) -> str | None:
        """The fix hint knowing the recorded fingerprints on both sides of the change.

        A process that never read the key (the CLI, the hunt) has only the record to tell
        what the value is; a probe whose hint depends on it overrides this.
        """
        return self.hint(key, change)

    # -- restoring (only for probes with ``restorable`` or ``replay_restorable``) -------------
    def save(self) -> object:
        """Capture the real current state (objects, not fingerprints) for :meth:`restore`."""
        raise NotImplementedError

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        """Put ``keys`` back to what :meth:`save` captured; return the keys actually restored."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop watching: no snapshot follows.  Called as the session ends, well before
        :meth:`close` (pytest_unconfigure), so that work the kernel does for the release
        (inotify's grace period, ~15 ms of wall time when the instance closes with watches
        on it) overlaps the rest of the session's end instead of adding to it."""

    def close(self) -> None:
        """Release what :meth:`setup` acquired (file descriptors, library handles)."""


def light_token_call(probe: Probe) -> Callable[[], object]:
    """``probe.light_token``, or ``probe.token`` itself where the probe keeps the default
    (which only calls it): the same value, one Python frame less on every checkpoint."""
    if type(probe).light_token is Probe.light_token:
        return probe.token
    return probe.light_token


def is_statesnap_module(name: str) -> bool:
    """Whether ``name`` is ``statesnap`` or one of its modules: never the suite's state."""
    return name == "statesnap" or name.startswith("statesnap.")


def import_own(name: str, own_modules: set[str]) -> Any:
    """Import ``name`` for statesnap's own use, adding to ``own_modules`` every module the
    import brought in.

    For what a probe needs only on change (psutil for process details): imported at start,
    it would cost every session; imported in the middle of a run, it would read as a leak of
    the test in progress, unless the ``modules`` probe knows it is statesnap's.
    """
    found = sys.modules.get(name)
    if found is not None:
        return found
    before = set(sys.modules)
    module = importlib.import_module(name)
    own_modules.update(sys.modules.keys() - before)
    return module


class DeferredState(Protocol):
    """What a :class:`DeferredProbe` hands its work to once its library is imported."""

    def token(self) -> object: ...

    def read(self) -> ProbeMap: ...

    def save(self) -> object: ...

    def restore(self, saved: Any, keys: Collection[str]) -> list[str]: ...


S = TypeVar("S", bound=DeferredState)


class DeferredProbe(Probe, Generic[S]):
    """A probe of a library's state that costs one ``sys.modules`` lookup per token until the
    library (:attr:`trigger`) is imported, and from then on hands its work to a state object
    built by :meth:`build` (the ``scistack`` and ``torch`` probes).  Nothing is imported to
    find out: the state's modules are statesnap's own imports (left out of the ``modules``
    probe), made when the library first appears, possibly in the middle of a test."""

    #: The module whose presence in ``sys.modules`` starts the work.
    trigger: ClassVar[str] = ""
    #: The token while it is absent.
    idle: ClassVar[object] = None

    def __init__(self) -> None:
        self._state: S | None = None
        self._ctx: ProbeContext | None = None

    def build(self, own_modules: set[str], ctx: ProbeContext | None) -> S:
        """The state object, its modules imported with :func:`import_own`."""
        raise NotImplementedError

    def _loaded(self) -> S:
        state = self._state
        if state is None:
            ctx = self._ctx
            state = self._state = self.build(ctx.own_modules if ctx is not None else set(), ctx)
        return state

    def setup(self, ctx: ProbeContext) -> None:
        self._ctx = ctx
        if self.trigger in sys.modules:
            self._loaded()

    def token(self) -> object:
        state = self._state
        if state is None:
            if self.trigger not in sys.modules:
                return self.idle
            state = self._loaded()
        return state.token()

    def read(self) -> ProbeMap:
        if self._state is None and self.trigger not in sys.modules:
            return {}
        return self._loaded().read()

    def save(self) -> object:
        if self._state is None and self.trigger not in sys.modules:
            return None
        return self._loaded().save()

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        if saved is None:
            return []
        return self._loaded().restore(saved, keys)


def unreadable(exc: BaseException) -> str:
    """The fingerprint of a key whose value raised when read (a global whose ``__eq__``,
    ``__len__`` or ``items()`` raises): the exception's type only, so that it stays the same
    from one snapshot to the next.  The probe goes on with every other key."""
    return f"<unreadable: {type(exc).__name__}>"


def fingerprint_repr(value: object, limit: int = 200) -> str:
    """A short, stable-enough textual fingerprint of ``value``.

    ``repr`` of arbitrary objects can raise or embed addresses; both are tolerated here, and long
    reprs keep their length so the report can say how much was cut.
    """
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break the probe
        text = f"<{type(value).__qualname__} (repr failed: {type(exc).__name__})>"
    if type(text) is not str:  # a __repr__ that returns a str subclass, or lies
        text = f"<{type(value).__qualname__} (repr of type {type(text).__qualname__})>"
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text)} chars)"
    return text


class ProcFile:
    """A ``/proc`` file kept open and re-read with ``pread``: an open+read costs ~10x more.

    Reopened when the process id changes, because after a fork the descriptor still points at
    the parent's ``/proc/<pid>`` entry.
    """

    def __init__(self, template: str, own_fds: set[int]) -> None:
        self._template = template
        self._own_fds = own_fds
        self._pid = -1
        self._fd = -1

    def _ensure(self) -> int:
        pid = PID[0]  # no syscall: statesnap.probes.ownpid
        if pid != self._pid:
            if self._fd >= 0 and self._pid != -1:
                # Inherited from the parent across fork: closing it here is ours to do.
                self._own_fds.discard(self._fd)
                try:
                    os.close(self._fd)
                except OSError:
                    pass
            self._fd = os.open(self._template.format(pid=pid), os.O_RDONLY | os.O_CLOEXEC)
            self._own_fds.add(self._fd)
            self._pid = pid
        return self._fd

    def read(self) -> bytes:
        fd = self._ensure()
        chunks = []
        offset = 0
        while True:
            chunk = os.pread(fd, 65536, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            if len(chunk) < 65536:
                break
        return b"".join(chunks)

    def close(self) -> None:
        if self._fd >= 0 and self._pid == PID[0]:
            self._own_fds.discard(self._fd)
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = -1
        self._pid = -1
