"""``torch``: PyTorch's process-global state, read only when ``torch`` is already imported.

Keys: the flags of :data:`statesnap.probes.torch.flags.FLAGS`, mode stacks, global module hooks,
RNG, CUDA initialisation and memory, compiler configs.  Nothing here initialises CUDA or
imports anything.  The keys and the costs: docs/PROBES.md.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, import_own

if TYPE_CHECKING:
    from statesnap.probes.torch.state import TorchState

#: The token while torch is not imported (the same as :mod:`.state`'s).
NO_TORCH = "torch not imported"
_STATE_MODULE = "statesnap.probes.torch.state"


class TorchProbe(Probe):
    """A shell that costs one ``sys.modules`` lookup per token until torch is imported; from
    then on (and to judge a change) the work is :class:`.state.TorchState`'s."""

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
