"""``torch``: PyTorch's process-global state, read only when ``torch`` is already imported.

Keys (a flag this torch build lacks is skipped):

- the flags of :data:`statesnap.probes.torch_flags.FLAGS` (default dtype and device, grad /
  inference / forward-grad modes, anomaly mode, deterministic algorithms, thread counts, matmul
  precision, cuDNN / cuBLAS / SDP / mkldnn switches, linalg library, autocast per device);
- ``modes.torch_function`` / ``modes.torch_dispatch``: the mode stacks (a mode entered and never
  exited changes every later torch call);
- ``nn.module._global_*``: the global ``nn.Module`` hooks;
- ``rng.initial_seed`` and ``rng.cpu_state`` (a digest of the CPU generator's state), low severity;
- ``cuda.initialized``, ``cuda.bad_fork`` and, once CUDA is initialised, per-device
  ``cuda:N.memory_allocated`` / ``cuda:N.memory_reserved`` — a leak of its own kind: the process
  is no longer clean for tests that fork or need a fresh device;
- ``dynamo.config`` / ``inductor.config`` / ``functorch.config``, once those are imported: the
  knobs that differ from their defaults.

Cost: the light token (checkpoints inside a test, where it names the phase and fixture of a
change) is one ``map`` over ~50 C-level reads, plus the config modules' cached hashes once they
are imported; the full token (once per test) adds the CPU RNG state, the ``fp32_precision``
knobs and, when CUDA is initialised, the allocator's memory.  Nothing here initialises CUDA
or imports anything.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, import_own

if TYPE_CHECKING:
    from statesnap.probes.torch_state import TorchState

#: The token while torch is not imported (the same as :mod:`.torch_state`'s).
NO_TORCH = "torch not imported"
_STATE_MODULE = "statesnap.probes.torch_state"


class TorchProbe(Probe):
    """A shell that costs one ``sys.modules`` lookup per token until torch is imported; from
    then on (and to judge a change) the work is :class:`.torch_state.TorchState`'s."""

    name = "torch"
    severity = Severity.MEDIUM
    restorable = True

    def __init__(self) -> None:
        self._state: TorchState | None = None
        self._ctx: ProbeContext | None = None

    @property
    def mode(self) -> str:
        if self._state is not None:
            return self._state.mode
        return "torch not imported yet: nothing read until it is"

    def _loaded(self) -> TorchState:
        if self._state is None:
            # statesnap's own import (left out of the modules probe), made when torch first
            # appears, possibly in the middle of a test.
            own = self._ctx.own_modules if self._ctx is not None else set()
            module = import_own(_STATE_MODULE, own)
            state: TorchState = module.TorchState()
            if self._ctx is not None:
                state.setup(self._ctx)
            self._state = state
        return self._state

    def setup(self, ctx: ProbeContext) -> None:
        self._ctx = ctx
        if "torch" in sys.modules:
            self._loaded()

    def token(self) -> object:
        if self._state is None and "torch" not in sys.modules:
            return NO_TORCH
        return self._loaded().token()

    def light_token(self) -> object:
        if self._state is None and "torch" not in sys.modules:
            return NO_TORCH
        return self._loaded().light_token()

    def read(self) -> ProbeMap:
        if self._state is None and "torch" not in sys.modules:
            return {}
        return self._loaded().read()

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        return self._loaded().severity_of(key, before, after)

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        return self._loaded().detail(key, before, after)

    def hint(self, key: str, change: str) -> str | None:
        return self._loaded().hint(key, change)

    def gauges(self, current: ProbeMap) -> dict[str, float]:
        if self._state is None and not current:
            return {}
        return self._loaded().gauges(current)

    def save(self) -> object:
        if self._state is None and "torch" not in sys.modules:
            return None
        return self._loaded().save()

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        if saved is None:
            return []
        return self._loaded().restore(saved, keys)
