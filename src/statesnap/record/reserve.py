"""Room kept on disk past the end of the record, so that a disk that fills up still lets the
record end with a note saying it was cut short.

Linux's ``fallocate(FALLOC_FL_KEEP_SIZE)`` gives a file blocks beyond its end without
changing its size (a reader sees no padding): writes into them need no new block.  The writer
keeps :data:`AHEAD` bytes reserved past its end, asking again only once fewer than
:data:`LOW` are left (one system call per ~48 KiB written, not one per test; on a disk
almost full, where only :data:`LOW` more can be had, one per line).  When the disk can no
longer give them, the writer still holds at least :data:`LOW` bytes: room for the note.
Where ``fallocate`` is missing (another OS, a filesystem without it) nothing is reserved and
the writer falls back to truncating its cut line and trying the note in what room is left.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

#: Bytes reserved past the end of the record each time it asks.
AHEAD = 64 * 1024
#: Ask again once fewer than this are left; also the room the note may use.
LOW = 16 * 1024
#: ``FALLOC_FL_KEEP_SIZE`` and ``FALLOC_FL_PUNCH_HOLE`` (linux/falloc.h).
_KEEP_SIZE = 1
_PUNCH_HOLE = 2

#: Errors that say the disk has no room (as opposed to a reserve it cannot make at all).
NO_ROOM = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})

Allocate = Callable[[int, int, int, int], None]


def _load() -> Allocate | None:
    """``fallocate(fd, mode, offset, length)``, raising OSError; None where missing."""
    try:
        import ctypes

        # The interpreter's own symbols hold libc's (find_library would run ldconfig).
        call = ctypes.CDLL(None, use_errno=True).fallocate
    except (ImportError, OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong)
    call.restype = ctypes.c_int

    def allocate(fd: int, mode: int, offset: int, length: int) -> None:
        if call(fd, mode, offset, length) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return allocate


class Reserve:
    """The room reserved past the end of one open file (see the module's docstring)."""

    __slots__ = ("_allocate", "_fd", "end", "limit")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._allocate = _load()
        #: Offset up to which blocks are reserved (0: none).
        self.end = 0
        #: A line that would end past this offset needs :meth:`room_for` first (the writer
        #: checks it inline: most lines need no call).
        self.limit = -1 if self._allocate is not None else sys.maxsize

    def room_for(self, size: int, length: int) -> bool:
        """Whether a line of ``length`` bytes written at offset ``size`` still leaves the note
        its room.  False only when the disk said it has no room; a filesystem that cannot
        reserve (or no ``fallocate`` at all) says True, and the write itself finds out."""
        if self._allocate is None or size + length + LOW <= self.end:
            return True
        return self._ask(size, length)

    def _ask(self, size: int, length: int) -> bool:
        allocate = self._allocate
        assert allocate is not None
        for ahead in (AHEAD, LOW):  # a disk almost full may still give the note's room
            try:
                allocate(self._fd, _KEEP_SIZE, size, length + ahead)
            except OSError as exc:
                if exc.errno in NO_ROOM:
                    continue
                self._allocate = None  # EOPNOTSUPP and the like: never asked again
                self.limit = sys.maxsize
                return True
            self.end = size + length + ahead
            self.limit = self.end - LOW
            return True
        return False

    def release(self, size: int) -> None:
        """Give back the blocks reserved past ``size``, the file's end (the file is done)."""
        if self._allocate is None or self.end <= size:
            return
        try:
            self._allocate(self._fd, _KEEP_SIZE | _PUNCH_HOLE, size, self.end - size)
        except OSError:
            pass  # the blocks go when the file is removed
        self.end = 0
