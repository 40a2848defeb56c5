"""A ``/proc`` directory kept open so that ``fstat`` answers counts without a listing.

On Linux, ``fstat`` of ``/proc/<pid>/task`` reports ``2 + threads`` as its link count, and
(since Linux 6.2) ``fstat`` of ``/proc/<pid>/fd`` reports the number of open descriptors as
its size.  Either costs about 2 us, against about 15 us for ``os.listdir`` of the same
directory, which also opens (and so briefly adds) a descriptor of its own.
"""

from __future__ import annotations

import os

from statesnap.probes.base import ProcFile


class ProcDir(ProcFile):
    """A ``/proc`` directory held open (and reopened after a fork, like :class:`ProcFile`)."""

    def fstat(self) -> os.stat_result:
        """``fstat`` of the directory: the cheap counters live in ``st_nlink`` / ``st_size``."""
        return os.fstat(self._ensure())
