"""``torch``: PyTorch's process-global state, read only when ``torch`` is already imported.

Keys: the flags of :data:`statesnap.probes.torch.flags.FLAGS`, mode stacks, global module hooks,
RNG, CUDA initialisation and memory, compiler configs.  Nothing here initialises CUDA or
imports anything.  The keys and the costs: docs/PROBES.md.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from statesnap.probes.base import DeferredProbe, ProbeContext, ProbeMap, Severity, import_own

if TYPE_CHECKING:
    from statesnap.probes.torch.state import TorchState

#: The token while torch is not imported (the same as :mod:`.state`'s).
NO_TORCH = "torch not imported"
_STATE_MODULE = "statesnap.probes.torch.state"


class TorchProbe(DeferredProbe["TorchState"]):
    """A shell that costs one ``sys.modules`` lookup per token until torch is imported; from
    then on (and to judge a change) the work is :class:`.state.TorchState`'s."""

    name = "torch"
    severity = Severity.MEDIUM
    restorable = True
    trigger = "torch"
    idle = NO_TORCH

    @property
    def mode(self) -> str:
        if self._state is not None:
            return self._state.mode
        return "torch not imported yet: nothing read until it is"

    def build(self, own_modules: set[str], ctx: ProbeContext | None) -> TorchState:
        state: TorchState = import_own(_STATE_MODULE, own_modules).TorchState()
        if ctx is not None:
            state.setup(ctx)
        return state

    def light_token(self) -> object:
        state = self._state
        if state is None:
            if "torch" not in sys.modules:
                return NO_TORCH
            state = self._loaded()
        return state.light_token()

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
