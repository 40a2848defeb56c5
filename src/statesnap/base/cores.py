"""How many cores this process may run on: the default number of replays side by side."""

from __future__ import annotations

import os


def available_cores() -> int:
    """The cores of this process's affinity mask (what a container or ``taskset`` grants),
    not the machine's count; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)
