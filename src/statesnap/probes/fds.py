"""``fds``: open file descriptors and what they point to (a path, a pipe, a socket's addresses).

Keys are descriptor numbers; statesnap's own descriptors (``ProbeContext.own_fds``) are left
out.  The token (a count from ``/proc/self/fd``) and its blind spots: docs/PROBES.md.
"""

from __future__ import annotations

import fcntl
import os
import socket
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import (
    Probe,
    ProbeContext,
    ProbeMap,
    ProbeUnavailable,
    Severity,
    import_own,
)
from statesnap.probes.ownpid import PID
from statesnap.probes.procdir import ProcDir

_FD_DIR = "/proc/self/fd"
_STD_STREAMS = frozenset({"0", "1", "2"})


def _is_open(fd: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
    except OSError:
        return False
    return True


def _access(fd: int) -> str:
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        return "?"
    mode = flags & os.O_ACCMODE
    text = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}.get(mode, "?")
    return text + "a" if flags & os.O_APPEND else text


def _addr(addr: Any) -> str:
    if not addr:
        return ""
    if isinstance(addr, str):
        return addr or "(unnamed)"
    ip, port = addr[0], addr[1]
    return f"[{ip}]:{port}" if ":" in str(ip) else f"{ip}:{port}"


def describe_socket(family: int, kind: int, laddr: Any, raddr: Any, status: str) -> str:
    """The fingerprint of a socket: its kind, local address, remote address, LISTEN if so.

    Other TCP states are left out on purpose: a peer closing moves a socket to CLOSE_WAIT at a
    time no test chose, and that must not read as a change made by whichever test ran then.
    """
    if family == socket.AF_UNIX:
        proto = "unix"
    else:
        names = {int(socket.SOCK_STREAM): "tcp", int(socket.SOCK_DGRAM): "udp"}
        proto = names.get(kind, f"type{kind}")
        if family == socket.AF_INET6:
            proto += "6"
    text = f"socket {proto} {_addr(laddr) or '(unbound)'}"
    if raddr:
        text += f" -> {_addr(raddr)}"
    if status == "LISTEN":
        text += " LISTEN"
    return text


_KNOWN_FAMILIES = frozenset({int(socket.AF_INET), int(socket.AF_INET6),
                             int(getattr(socket, "AF_UNIX", -1))})


def _unix_name(name: Any) -> Any:
    """A Unix socket's address as /proc and psutil write it: an abstract one (bytes
    starting with NUL) as ``@name``."""
    if not isinstance(name, bytes):
        return name
    if name.startswith(b"\0"):
        name = b"@" + name[1:]
    return name.decode("utf-8", "backslashreplace")


#: What :func:`socket_text` says of a socket it has no words for (netlink...): it is shown
#: by its inode, and no other way of asking is tried.
UNDESCRIBED = ""


def socket_text(fd: int) -> str | None:
    """The fingerprint of the socket open at ``fd`` (:func:`describe_socket`); ``UNDESCRIBED``
    for a family other than IPv4, IPv6 and Unix; None when it could not be asked.

    Asked of the kernel for this one descriptor (``getsockname``, ``getpeername``,
    ``SO_ACCEPTCONN``) through a socket object wrapped around it and detached again, so the
    descriptor is never closed; nothing is changed on it.  CPython makes a wrapped
    descriptor non-blocking when a default socket timeout is set: then it is not asked.
    """
    if socket.getdefaulttimeout() is not None:
        return None
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        family, kind = int(sock.family), int(sock.type)
        if family not in _KNOWN_FAMILIES:
            return UNDESCRIBED
        laddr = sock.getsockname()
        try:
            raddr = sock.getpeername()
        except OSError:  # not connected
            raddr = None
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError:
        return None
    finally:
        sock.detach()  # the descriptor stays the owner's, open
    if family == getattr(socket, "AF_UNIX", None):
        laddr, raddr = _unix_name(laddr), _unix_name(raddr)
    return describe_socket(family, kind, laddr, raddr, "LISTEN" if listening else "")


class FdsProbe(Probe):
    """Open file descriptors of this process, statesnap's own left out."""

    name = "fds"
    severity = Severity.MEDIUM

    def __init__(self, token_mode: str | None = None) -> None:
        """``token_mode`` forces ``"count"``, ``"listing"`` or ``"psutil"`` (tests, debugging)."""
        self._want = token_mode
        #: How the token is computed: ``count``, ``listing`` or ``psutil``.
        self.mode = ""
        self._own: set[int] = set()
        self._own_names: frozenset[str] = frozenset()
        self._own_seen: frozenset[int] = frozenset()
        self._dir: ProcDir | None = None
        self._transient = -1
        #: Socket fingerprints by ``socket:[inode]``: each socket is described once.
        self._sockets: dict[str, str] = {}
        self._last: ProbeMap = {}
        self._own_modules: set[str] = set()
        self._process: Any = None

    def setup(self, ctx: ProbeContext) -> None:
        self._own = ctx.own_fds  # the live set, not a copy: the plugin adds to it later
        self._own_modules = ctx.own_modules
        want = self._want
        if want != "psutil" and os.path.isdir(_FD_DIR):
            self._dir = ProcDir("/proc/{pid}/fd", self._own)
            counts = self._dir.fstat().st_size > 0  # 0 before Linux 6.2
            self.mode = "count" if counts and want in (None, "count") else "listing"
            if want == "count" and not counts:
                raise ProbeUnavailable("fstat of /proc/self/fd gives no count on this kernel")
            return
        try:
            self._process = import_own("psutil", ctx.own_modules).Process()
            self._process.num_fds()
        except Exception as exc:
            raise ProbeUnavailable(f"no /proc/self/fd and no psutil fd count: {exc}") from exc
        self.mode = "psutil"

    # -- cheap ------------------------------------------------------------------------------
    def _own_strings(self) -> frozenset[str]:
        own = self._own
        if own != self._own_seen:  # rebuilt only when statesnap opened or closed one of its own
            self._own_seen = frozenset(own)
            self._own_names = frozenset(map(str, own))
        return self._own_names

    def _listing(self) -> list[str]:
        names = os.listdir(_FD_DIR)
        # os.listdir opened the lowest free descriptor and closed it again before returning;
        # it is the one listed entry that is not open now.  Try last time's number first.
        guess = str(self._transient)
        if guess in names and not _is_open(self._transient):
            names.remove(guess)
            return names
        for name in names:
            if not _is_open(int(name)):
                self._transient = int(name)
                names.remove(name)
                break
        return names

    def token(self) -> object:
        if self.mode == "count":
            assert self._dir is not None
            # Our own directory descriptor is in the count and in own_fds alike.
            return PID[0], self._dir.fstat().st_size - len(self._own)
        if self.mode == "listing":
            own = self._own_strings()
            return PID[0], tuple(n for n in self._listing() if n not in own)
        return PID[0], self._process.num_fds() - len(self._own)

    # -- detail -----------------------------------------------------------------------------
    def gauges(self, current: ProbeMap) -> dict[str, float]:
        return {"fds": float(len(current))}

    def read(self) -> ProbeMap:
        out = self._read_psutil() if self.mode == "psutil" else self._read_proc()
        self._last = out
        return out

    def _read_proc(self) -> ProbeMap:
        own = self._own_strings()
        out: ProbeMap = {}
        live: set[str] = set()
        unknown: dict[str, str] = {}
        for name in os.listdir(_FD_DIR):
            if name in own:
                continue
            try:
                target = os.readlink(f"{_FD_DIR}/{name}")
            except OSError:
                continue  # the listing's own descriptor, or closed meanwhile
            if target.startswith("socket:"):
                live.add(target)
                text = self._sockets.get(target)
                if text is None:
                    text = socket_text(int(name))
                    if text is None:
                        unknown[name] = target  # asked of psutil below
                        text = target
                    else:
                        text = self._sockets[target] = text or target
                out[name] = text
            elif target.startswith("/"):
                out[name] = f"{target} ({_access(int(name))})"
            else:
                out[name] = target
        if unknown:
            self._describe_with_psutil(unknown, out)
        if len(self._sockets) > len(live):
            self._sockets = {k: v for k, v in self._sockets.items() if k in live}
        return out

    def _describe_with_psutil(self, unknown: dict[str, str], out: ProbeMap) -> None:
        """Sockets :func:`socket_text` could not ask about, from psutil's scan of the
        system's connection tables (~10 ms); each is remembered, described or not, so that
        it costs no second scan."""
        try:
            psutil = import_own("psutil", self._own_modules)
            conns = psutil.Process().net_connections(kind="all")
        except Exception:
            conns = []  # addresses are detail: without them the socket still shows by inode
        by_fd = {str(c.fd): c for c in conns if c.fd is not None and c.fd >= 0}
        for name, target in unknown.items():
            conn = by_fd.get(name)
            text = target if conn is None else describe_socket(
                int(conn.family), int(conn.type), conn.laddr, conn.raddr, conn.status)
            self._sockets[target] = out[name] = text

    def _read_psutil(self) -> ProbeMap:
        out: ProbeMap = {}
        proc = self._process
        own = self._own
        try:
            for f in proc.open_files():
                if f.fd >= 0 and f.fd not in own:
                    out[str(f.fd)] = f"{f.path} ({getattr(f, 'mode', '?')})"
            for c in proc.net_connections(kind="all"):
                if c.fd is not None and c.fd >= 0 and c.fd not in own:
                    out[str(c.fd)] = describe_socket(
                        int(c.family), int(c.type), c.laddr, c.raddr, c.status
                    )
        except Exception as exc:  # access denied on some platforms: what we have still shows
            note_internal_error("probe fds: psutil's open files and sockets", exc)
        return out

    # -- reporting --------------------------------------------------------------------------
    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key in _STD_STREAMS:
            return Severity.HIGH  # a standard stream closed or redirected at the fd level
        if isinstance(after, str) and after.endswith(" LISTEN"):
            return Severity.HIGH  # holds a port a later test may want to bind
        return Severity.MEDIUM

    def hint(self, key: str, change: str) -> str | None:
        if key in _STD_STREAMS:
            return ("restore the standard stream: save it with os.dup() and put it back with "
                    "os.dup2() in a finaliser, or use the capfd fixture")
        if change == "removed":
            return (f"this test closed descriptor {key}, which it did not open; close only "
                    "what the test or its fixture opened")
        target = self._last.get(key)
        if isinstance(target, str) and target.startswith("socket"):
            return ("close the socket: use `with socket.socket(...) as s:` or close it in a "
                    "fixture finaliser (server.close(), then join its thread)")
        if isinstance(target, str) and target.startswith("pipe:"):
            return "close both ends of the pipe (os.close(r); os.close(w)) in a finaliser"
        return ("close the file: open it with `with open(...)`, or in a fixture that closes "
                "it after yield")

    def close(self) -> None:
        if self._dir is not None:
            self._dir.close()
            self._dir = None
