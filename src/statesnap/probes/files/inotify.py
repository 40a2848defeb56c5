"""A minimal Linux inotify binding through ctypes: watch directories, read pending events.

Only what the ``files`` probe needs.  The descriptor is non-blocking and close-on-exec, so a
read with nothing pending costs one ``ioctl(FIONREAD)`` (~1 us) and never waits, and a child
process does not inherit the watches.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
import sys
import termios

from statesnap.base.plain import Frozen

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

#: What a watched directory reports: entries created, deleted, moved, written, re-stamped.
DIR_EVENTS = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
              | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
              | IN_EXCL_UNLINK)

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)


class Event(Frozen):
    """One inotify event: the watch it came from, what happened, and the entry's name.

    A plain slotted class: a ``NamedTuple`` costs about 1 M instructions to create, at every
    session's start (issue 13)."""

    _fields = ("wd", "mask", "cookie", "name")
    __slots__ = _fields

    def __init__(self, wd: int, mask: int, cookie: int, name: str) -> None:
        self.wd = wd
        self.mask = mask
        self.cookie = cookie
        self.name = name


def _libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    if not hasattr(lib, "inotify_init1"):
        lib = ctypes.CDLL("libc.so.6", use_errno=True)
    lib.inotify_init1.argtypes = [ctypes.c_int]
    lib.inotify_init1.restype = ctypes.c_int
    lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    lib.inotify_add_watch.restype = ctypes.c_int
    lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.inotify_rm_watch.restype = ctypes.c_int
    return lib


def parse_events(data: bytes) -> list[Event]:
    """Split a buffer read from an inotify descriptor into events."""
    out = []
    offset, end = 0, len(data)
    size = _HEADER.size
    while offset + size <= end:
        wd, mask, cookie, length = _HEADER.unpack_from(data, offset)
        raw = data[offset + size : offset + size + length].split(b"\0", 1)[0]
        out.append(Event(wd, mask, cookie, os.fsdecode(raw)))
        offset += size + length
    return out


class Inotify:
    """An inotify instance.  Raises :class:`OSError` when the kernel or libc has none."""

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            raise OSError(errno.ENOSYS, "inotify is Linux only")
        try:
            self._lib = _libc()
        except (OSError, AttributeError) as exc:
            raise OSError(errno.ENOSYS, f"no inotify in libc: {exc}") from exc
        fd = self._lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int = fd
        self._pending = bytearray(4)

    def add_watch(self, path: str, mask: int = DIR_EVENTS) -> int:
        """Watch ``path``; returns the watch descriptor.  ENOSPC means the watch limit is hit."""
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_add_watch: {os.strerror(err)}", path)
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        """Stop a watch; errors (the watch already went with its directory) are ignored."""
        self._lib.inotify_rm_watch(self.fd, wd)

    def pending(self) -> int:
        """Bytes of events waiting to be read (0: nothing happened)."""
        fcntl.ioctl(self.fd, termios.FIONREAD, self._pending)
        return int.from_bytes(self._pending, sys.byteorder)

    def read(self) -> list[Event]:
        """All pending events, without blocking (``[]`` when there are none)."""
        out: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            if not data:
                return out
            out.extend(parse_events(data))

    def close(self) -> None:
        """Close the descriptor, which drops every watch."""
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
