"""The ``torch`` probe's work (see :mod:`statesnap.probes.torch.probe` for its keys).

Imported by :class:`statesnap.probes.torch.probe.TorchProbe` only once ``torch`` is imported (or a
change needs judging): a session without torch never pays for these readers.  Nothing here
imports torch or initialises CUDA.
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, fingerprint_repr
from statesnap.probes.torch import cuda as cuda_keys
from statesnap.probes.torch.config import ConfigWatcher, current_values, describe_change
from statesnap.probes.torch.config import loaded_configs as _loaded_configs
from statesnap.probes.torch.cuda import CudaReader
from statesnap.probes.torch.flags import FLAGS, Flag, Reader, jsonable, tolerant

_NO_TORCH = "torch not imported"  # torch_.NO_TORCH: tokens must agree
_IMPORTING = "torch being imported"
HOOKS_MODULE = "torch.nn.modules.module"
MODE_KEYS = ("modes.torch_function", "modes.torch_dispatch")
RNG_SEED = "rng.initial_seed"
RNG_STATE = "rng.cpu_state"
RNG_UNREAD = "not read while a torch mode is active"

_HINT_MODE = ("a torch {kind} mode was entered and never exited (or torch.set_default_device, "
              "which pushes one): use the mode as a `with` block")
_HINT_HOOK = ("a global nn.Module hook is still registered: keep the handle returned by "
              "torch.nn.modules.module.register_module_*_hook(...) and call handle.remove() "
              "at teardown")
_HINT_RNG = ("the test drew from or reseeded torch's global RNG: use a local torch.Generator, "
             "or wrap the test in torch.random.fork_rng()")
_HINT_CONFIG = "change {key} knobs with torch.{mod}.patch(...) as a decorator or `with` block"


def _mode_name(mode: object) -> str:
    t = type(mode)
    name = f"{t.__module__}.{t.__qualname__}"
    device = getattr(mode, "device", None)  # DeviceContext: say which device
    return f"{name}({device})" if device is not None else name


def _hook_name(hook: object) -> str:
    if callable(hook):
        module = getattr(hook, "__module__", None) or ""
        qual = getattr(hook, "__qualname__", None) or type(hook).__qualname__
        return f"{module}.{qual}" if module else str(qual)
    return fingerprint_repr(hook, limit=80)


@dataclass
class _Resolved:
    """Readers bound to one ``torch`` module object (re-resolved if torch is re-imported)."""

    torch: Any
    light: list[tuple[Flag, Reader]] = field(default_factory=list)
    heavy: list[tuple[Flag, Reader]] = field(default_factory=list)
    fn_len: Callable[[], int] | None = None
    fn_at: Any = None
    dispatch_len: Callable[[], int] | None = None
    dispatch_at: Any = None
    hooks_mod: Any = None
    hook_names: tuple[str, ...] = ()
    cuda: CudaReader | None = None
    generator: Any = None
    skipped: list[str] = field(default_factory=list)
    #: Everything the light token calls, flattened so one ``map`` runs them all.
    light_readers: tuple[Reader, ...] = ()


def _hooks_reader(mod: Any, names: tuple[str, ...]) -> Reader:
    """Lengths of the hook dicts (and the value of the one flag among them), in one call.

    ``itemgetter`` on the module's ``__dict__`` is the cheapest way to fetch ten globals; a
    name deleted or rebound to a non-dict by a test falls back to a slow, tolerant read.
    """
    namespace = vars(mod)
    dict_names = tuple(n for n in names if isinstance(namespace.get(n), dict))
    other = tuple(n for n in names if n not in dict_names)

    def slow() -> object:
        return tuple(fingerprint_repr(namespace.get(n), 40) for n in names)

    if len(dict_names) < 2 or len(other) > 1:
        return slow
    get_dicts = operator.itemgetter(*dict_names)
    get_other = operator.itemgetter(*other) if other else (lambda ns: None)

    def read() -> object:
        try:
            return tuple(map(len, get_dicts(namespace))), get_other(namespace)
        except (KeyError, TypeError):
            return slow()

    return read


def _resolve(t: Any) -> _Resolved:
    r = _Resolved(torch=t)
    for flag in FLAGS:
        for resolver in flag.readers:
            try:
                reader = resolver(t)
                if flag.raises:
                    reader = tolerant(reader)
                reader()  # a reader that exists but fails here (unknown backend) is no reader
            except Exception:
                continue
            (r.light if flag.light else r.heavy).append((flag, reader))
            break
        else:
            r.skipped.append(flag.key)
    c = t._C
    r.fn_len = getattr(c, "_len_torch_function_stack", None)
    r.fn_at = getattr(c, "_get_function_stack_at", None)
    r.dispatch_len = getattr(c, "_len_torch_dispatch_stack", None)
    r.dispatch_at = getattr(c, "_get_dispatch_stack_at", None)
    hooks = sys.modules.get(HOOKS_MODULE)
    if hooks is not None:
        r.hooks_mod = hooks
        r.hook_names = tuple(sorted(n for n in vars(hooks) if n.startswith("_global_")))
    r.cuda = CudaReader(t)
    r.generator = getattr(t, "default_generator", None)
    readers: list[Reader] = [reader for _, reader in r.light]
    readers.extend(f for f in (r.fn_len, r.dispatch_len) if f is not None)
    if hooks is not None:
        readers.append(_hooks_reader(hooks, r.hook_names))
    readers.append(r.cuda.flags)
    if r.generator is not None:
        # The seed is cheap and tells which phase reseeded; the state digest is end-of-test.
        readers.append(r.generator.initial_seed)
    r.light_readers = tuple(readers)
    return r


class TorchState(Probe):
    """Everything :class:`statesnap.probes.torch.probe.TorchProbe` does once torch is imported."""

    name = "torch"
    severity = Severity.MEDIUM
    restorable = True

    def __init__(self) -> None:
        self._r: _Resolved | None = None
        self._configs: dict[int, ConfigWatcher] = {}
        self.mode: str = "torch not imported yet: nothing read until it is"

    def setup(self, ctx: ProbeContext) -> None:
        self._current()

    # -- resolution -----------------------------------------------------------------------
    def _current(self) -> _Resolved | None:
        t = sys.modules.get("torch")
        if t is None:
            return None
        r = self._r
        if r is not None and r.torch is t:
            return r
        spec = getattr(t, "__spec__", None)
        if getattr(spec, "_initializing", False) or not hasattr(t, "_C"):
            return None  # half-imported (another thread, or a failed import): try next time
        r = self._r = _resolve(t)
        n = len(r.light) + len(r.heavy)
        version = getattr(t, "__version__", "?")
        self.mode = f"torch {version}: {n} flags" + (
            f" ({len(r.skipped)} absent in this build)" if r.skipped else ""
        )
        return r

    # -- tokens ---------------------------------------------------------------------------
    def _light(self, r: _Resolved) -> tuple[object, ...]:
        flags = tuple(map(operator.call, r.light_readers))
        configs = _loaded_configs()
        if not configs:
            return flags
        return flags, tuple(self._watcher(mod).token() for _, mod in configs)

    def light_token(self) -> object:
        r = self._current()
        if r is None:
            return _NO_TORCH
        return self._light(r)

    def token(self) -> object:
        r = self._current()
        if r is None:
            return _NO_TORCH
        heavy = tuple(reader() for _, reader in r.heavy)
        rng = self._rng_raw(r)
        memory = r.cuda.memory() if r.cuda is not None else ()
        return self._light(r), heavy, rng, memory

    def _watcher(self, mod: Any) -> ConfigWatcher:
        w = self._configs.get(id(mod))
        if w is None or w.mod is not mod:
            w = self._configs[id(mod)] = ConfigWatcher(mod)
        return w

    @staticmethod
    def _rng_raw(r: _Resolved) -> tuple[int, bytes | None] | None:
        g = r.generator
        if g is None:
            return None
        modes = (r.fn_len() if r.fn_len is not None else 0) or (
            r.dispatch_len() if r.dispatch_len is not None else 0
        )
        if modes:
            # The state is a tensor: with a mode active, even ``data_ptr()`` would run the
            # user's mode (which may raise or count it).  The mode itself is reported.
            return int(g.initial_seed()), None
        state = g.get_state()
        # The bytes of a fresh CPU uint8 tensor, copied without numpy (~2 us for 5 KB).  A
        # null pointer (a meta tensor, should a default device ever apply) must never be read.
        ptr = state.data_ptr()
        raw = ctypes.string_at(ptr, state.nbytes) if ptr else b""
        return int(g.initial_seed()), raw

    # -- the full read --------------------------------------------------------------------
    def read(self) -> ProbeMap:
        r = self._current()
        if r is None:
            return {}
        out: ProbeMap = {}
        for flag, reader in (*r.light, *r.heavy):
            out[flag.key] = jsonable(reader())
        for key, length, at in (
            (MODE_KEYS[0], r.fn_len, r.fn_at),
            (MODE_KEYS[1], r.dispatch_len, r.dispatch_at),
        ):
            if length is not None and at is not None:
                out[key] = [_mode_name(at(i)) for i in range(length())]
        mod = r.hooks_mod
        if mod is not None:
            for name in r.hook_names:
                obj = getattr(mod, name, None)
                if isinstance(obj, dict):
                    out[f"nn.module.{name}"] = [_hook_name(h) for h in obj.values()]
                else:
                    out[f"nn.module.{name}"] = jsonable(obj)
        rng = self._rng_raw(r)
        if rng is not None:
            out[RNG_SEED] = rng[0]
            raw = rng[1]
            out[RNG_STATE] = (RNG_UNREAD if raw is None
                              else hashlib.blake2b(raw, digest_size=8).hexdigest())
        if r.cuda is not None:
            out.update(r.cuda.read())
        for key, cfg in _loaded_configs():
            out[key] = self._watcher(cfg).fingerprint()
        return out

    # -- judging a change -----------------------------------------------------------------
    def _flag(self, key: str) -> Flag | None:
        for flag in FLAGS:
            if flag.key == key:
                return flag
        return None

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if cuda_keys.is_cuda_key(key):
            if key.endswith(cuda_keys.RESERVED):
                grew = isinstance(after, int) and after > (before or 0)
                return Severity.MEDIUM if grew else Severity.LOW
            if key.endswith(cuda_keys.ALLOCATED):
                grew = isinstance(after, int) and after > (before or 0)
                return Severity.HIGH if grew else Severity.LOW
            return Severity.HIGH if after else Severity.LOW  # initialised / in a bad fork
        if before is None:
            return Severity.LOW  # first sighting: torch was imported during this test
        if key.startswith("rng."):
            return Severity.LOW
        if key in MODE_KEYS or key.startswith("nn.module."):
            return Severity.HIGH
        flag = self._flag(key)
        return flag.severity if flag is not None else Severity.MEDIUM

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        if key.endswith(".config"):
            return describe_change(before, after)
        if key.startswith("cuda:") and isinstance(after, int):
            delta = after - (before if isinstance(before, int) else 0)
            return f"{delta:+,d} bytes ({delta / 2**20:+.1f} MiB)"
        return None

    def hint(self, key: str, change: str) -> str | None:
        if key == cuda_keys.INITIALIZED:
            return cuda_keys.HINT_INITIALIZED
        if key == cuda_keys.BAD_FORK:
            return cuda_keys.HINT_BAD_FORK
        if key.endswith(cuda_keys.ALLOCATED):
            return cuda_keys.HINT_ALLOCATED
        if key.endswith(cuda_keys.RESERVED):
            return cuda_keys.HINT_RESERVED
        if key in MODE_KEYS:
            return _HINT_MODE.format(kind=key.split("_", 1)[1].replace("_", " "))
        if key.startswith("nn.module."):
            return _HINT_HOOK
        if key.startswith("rng."):
            return _HINT_RNG
        if key.endswith(".config"):
            return _HINT_CONFIG.format(key=key, mod=f"_{key}")
        flag = self._flag(key)
        return flag.hint if flag is not None else None

    def gauges(self, current: ProbeMap) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, value in current.items():
            if key.startswith("cuda:") and key.endswith(cuda_keys.ALLOCATED) and isinstance(
                value, int
            ):
                out[f"torch.{key.split('.', 1)[0]}_allocated_mib"] = round(value / 2**20, 1)
        return out

    # -- restoring ------------------------------------------------------------------------
    def save(self) -> object:
        r = self._current()
        if r is None:
            return None
        flags = {flag.key: reader() for flag, reader in (*r.light, *r.heavy)}
        hooks: dict[str, tuple[object, object]] = {}
        if r.hooks_mod is not None:
            for name in r.hook_names:
                obj = getattr(r.hooks_mod, name, None)
                hooks[name] = (obj, obj.copy() if isinstance(obj, dict) else obj)
        rng = None
        if r.generator is not None:
            rng = (r.generator.initial_seed(), r.generator.get_state())
        configs = {key: (mod, current_values(mod)) for key, mod in _loaded_configs()}
        return _Saved(r.torch, flags, hooks, rng, configs)

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        if not isinstance(saved, _Saved) or sys.modules.get("torch") is not saved.torch:
            return []
        t: Any = saved.torch
        done: list[str] = []
        for key in keys:
            if key in saved.flags:
                flag = self._flag(key)
                if flag is None or flag.setter is None:
                    continue
                try:
                    flag.setter(t, saved.flags[key])
                except Exception as exc:  # e.g. a thread count that can no longer be set
                    note_internal_error(f"probe torch: restore {key}", exc)
                    continue
                done.append(key)
            elif key.startswith("nn.module.") and key[10:] in saved.hooks:
                self._restore_hook(saved, key[10:])
                done.append(key)
            elif key.startswith("rng.") and saved.rng is not None:
                seed, state = saved.rng
                # Seed first (it resets the state), then the exact state: both keys come back.
                t.default_generator.manual_seed(seed)
                t.default_generator.set_state(state)
                done.append(key)
            elif key in saved.configs:
                mod, values = saved.configs[key]
                self._watcher(mod).restore(values)
                done.append(key)
            # cuda.*, modes.*, inference_mode: no way back inside this process.
        return done

    def _restore_hook(self, saved: _Saved, name: str) -> None:
        obj, contents = saved.hooks[name]
        mod = sys.modules.get(HOOKS_MODULE)
        if mod is None:
            return
        if isinstance(obj, dict) and isinstance(contents, dict):
            obj.clear()
            obj.update(contents)
        setattr(mod, name, obj)


@dataclass
class _Saved:
    torch: Any
    flags: dict[str, object]
    hooks: dict[str, tuple[object, object]]
    rng: tuple[int, Any] | None
    configs: dict[str, tuple[Any, dict[str, Any]]]
