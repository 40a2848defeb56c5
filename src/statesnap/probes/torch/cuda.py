"""The CUDA part of the ``torch`` probe: initialised or not, the bad-fork flag, allocator memory.

Nothing here may initialise CUDA: plain flag reads, memory only once CUDA is initialised, and
never ``torch.cuda.device_count()``.  See docs/PROBES.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

INITIALIZED = "cuda.initialized"
BAD_FORK = "cuda.bad_fork"
ALLOCATED = "memory_allocated"
RESERVED = "memory_reserved"

HINT_INITIALIZED = (
    "this test initialised CUDA in the pytest process: from now on a forked child "
    "(multiprocessing 'fork', DataLoader workers, pytest-forked) cannot use CUDA, and later "
    "tests no longer start from a fresh device. Run GPU tests in a subprocess or a separate "
    "pytest-xdist worker, use the 'spawn' start method for children, or order the GPU tests last"
)
HINT_BAD_FORK = (
    "this process was forked from one that had initialised CUDA: CUDA cannot be used here. "
    "Start children with multiprocessing.get_context('spawn'), or keep CUDA out of the parent"
)
HINT_ALLOCATED = (
    "GPU memory is still allocated after the test: a CUDA tensor stays referenced (a module "
    "global, a cache, a fixture of wider scope, an exception traceback). Delete the reference "
    "at teardown; note that cuBLAS/cuDNN workspaces made by a first GPU op also stay"
)
HINT_RESERVED = (
    "the caching allocator keeps more GPU memory reserved after the test: call "
    "torch.cuda.empty_cache() at teardown if later tests or other processes need it"
)


def memory_key(device: int, what: str) -> str:
    """``cuda:0.memory_allocated``: the per-device keys."""
    return f"cuda:{device}.{what}"


def is_cuda_key(key: str) -> bool:
    """Whether a key is one of the CUDA-state keys (a leak of its own kind)."""
    return key.startswith("cuda.") or key.startswith("cuda:")


class CudaReader:
    """Reads CUDA state of one ``torch`` module object; resolved once per torch import."""

    def __init__(self, t: Any) -> None:
        self._cuda = sys.modules.get("torch.cuda") or getattr(t, "cuda", None)
        cuda = self._cuda
        bad_fork = getattr(cuda, "_is_in_bad_fork", None)
        if bad_fork is None:
            bad_fork = getattr(t._C, "_cuda_isInBadFork", None)
        self._bad_fork = bad_fork if callable(bad_fork) else None
        # Present only in CUDA builds; without it there is no GPU memory to report.
        self._stats = getattr(t._C, "_cuda_memoryStats", None)
        self._count_fn = getattr(t._C, "_cuda_getDeviceCount", None)
        self.flags = self._make_flags()

    def _make_flags(self) -> Callable[[], tuple[bool, bool]]:
        """``flags() -> (initialized, bad_fork)`` as one closure: it runs at every checkpoint."""
        cuda, bad_fork = self._cuda, self._bad_fork
        if cuda is None or not isinstance(getattr(cuda, "_initialized", None), bool):
            return lambda: (self.initialized(), self.bad_fork())
        if bad_fork is None:
            return lambda: (cuda._initialized, False)
        return lambda: (cuda._initialized, bool(bad_fork()))

    @property
    def available(self) -> bool:
        return self._cuda is not None

    def initialized(self) -> bool:
        """``torch.cuda._initialized``, the module global.

        A child forked from an initialised parent inherits True here while ``is_initialized()``
        says False; :meth:`bad_fork` tells the two apart, so both are reported.
        """
        cuda = self._cuda
        if cuda is None:
            return False
        flag = getattr(cuda, "_initialized", None)
        if isinstance(flag, bool):
            return flag
        return bool(cuda.is_initialized())

    def bad_fork(self) -> bool:
        return bool(self._bad_fork()) if self._bad_fork is not None else False

    def device_count(self) -> int:
        """Devices torch initialised (0 while CUDA is not initialised)."""
        if not self.initialized() or self.bad_fork():
            return 0
        cached = getattr(self._cuda, "_cached_device_count", None)
        if isinstance(cached, int):
            return cached
        # Older releases have no cached count; after initialisation asking costs no context.
        return int(self._count_fn()) if self._count_fn is not None else 0

    def memory(self) -> tuple[tuple[int, int], ...]:
        """``((allocated, reserved), ...)`` per device; empty unless CUDA is initialised."""
        stats_fn = self._stats
        if stats_fn is None:
            return ()
        out = []
        for device in range(self.device_count()):
            stats = stats_fn(device)
            out.append((
                int(stats["allocated_bytes"]["all"]["current"]),
                int(stats["reserved_bytes"]["all"]["current"]),
            ))
        return tuple(out)

    def read(self) -> dict[str, Any]:
        initialized, bad_fork = self.flags()
        out: dict[str, Any] = {INITIALIZED: initialized, BAD_FORK: bad_fork}
        for device, (allocated, reserved) in enumerate(self.memory()):
            out[memory_key(device, ALLOCATED)] = allocated
            out[memory_key(device, RESERVED)] = reserved
        return out


#: What :func:`gpu_leak_kind` answers, for summaries and findings to group by.
CUDA_INITIALIZED_KIND = "cuda-initialized"
CUDA_BAD_FORK_KIND = "cuda-bad-fork"
GPU_MEMORY_KIND = "gpu-memory"


def gpu_leak_kind(probe: str, key: str, before: object, after: object) -> str | None:
    """Whether a change leaves the process unclean for GPU work, and how; ``None`` if not.

    A leak of its own kind: after it, tests that fork (or need a fresh device) are affected
    whatever state they read, so summaries and findings can list it apart from flag changes.
    Covers this probe's ``cuda.*`` / ``cuda:N.memory_*`` keys and the ``nvml`` probe's
    per-process keys; device-wide memory (other processes move it) is not such a leak.
    """
    grew = isinstance(after, int) and after > (before if isinstance(before, int) else 0)
    if probe == "torch":
        if key == INITIALIZED and after is True and before is not True:
            return CUDA_INITIALIZED_KIND
        if key == BAD_FORK and after is True and before is not True:
            return CUDA_BAD_FORK_KIND
        if key.startswith("cuda:") and key.endswith(ALLOCATED) and grew:
            return GPU_MEMORY_KIND
    if probe == "nvml" and (key.endswith(".process_used") or key.endswith(".process_count")):
        return GPU_MEMORY_KIND if grew else None
    return None
