"""The ``fds`` probe against real sockets, pipes and files."""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.fds import FdsProbe
from statesnap.state.diff import diff_maps

HAS_PROC = os.path.isdir("/proc/self/fd")
MODES = ["count", "listing", "psutil"] if HAS_PROC else ["psutil"]


def _make(tmp_path: Path, mode: str | None = None) -> tuple[FdsProbe, ProbeContext]:
    ctx = ProbeContext(rootdir=tmp_path)
    p = FdsProbe(token_mode=mode)
    p.setup(ctx)
    return p, ctx


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[FdsProbe]:
    p, _ = _make(tmp_path)
    yield p
    p.close()


def _added(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {c.key: c.after for c in diff_maps("fds", before, after) if c.change == "added"}


def test_tcp_listener_shows_its_address(probe: FdsProbe) -> None:
    token, before = probe.token(), probe.read()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        assert probe.token() != token
        added = _added(before, probe.read())
        assert added == {str(srv.fileno()): f"socket tcp 127.0.0.1:{port} LISTEN"}
        assert probe.severity_of(str(srv.fileno()), None, added[str(srv.fileno())]) is Severity.HIGH
        assert "close the socket" in (probe.hint(str(srv.fileno()), "added") or "")
        with socket.create_connection(("127.0.0.1", port)) as client:
            here = client.getsockname()[1]
            fp = probe.read()[str(client.fileno())]
            assert fp == f"socket tcp 127.0.0.1:{here} -> 127.0.0.1:{port}"
    assert probe.token() == token
    assert probe.read() == before


def test_pipe_and_open_file(probe: FdsProbe, tmp_path: Path) -> None:
    before = probe.read()
    r, w = os.pipe()
    path = tmp_path / "data.txt"
    f = open(path, "w")  # noqa: SIM115 - left open on purpose
    try:
        added = _added(before, probe.read())
        assert added[str(r)].startswith("pipe:[")
        assert added[str(r)] == added[str(w)]
        assert added[str(f.fileno())] == f"{path} (w)"
        assert "pipe" in (probe.hint(str(r), "added") or "")
        assert "with open" in (probe.hint(str(f.fileno()), "added") or "")
    finally:
        os.close(r)
        os.close(w)
        f.close()


@pytest.mark.parametrize("mode", MODES)
def test_every_token_mode_sees_an_open_and_a_close(tmp_path: Path, mode: str) -> None:
    p, _ = _make(tmp_path, mode)
    try:
        assert p.mode == mode
        token, before = p.token(), p.read()
        path = tmp_path / "f.bin"
        with open(path, "wb") as f:
            fd = str(f.fileno())
            assert p.token() != token
            after = p.read()
            assert fd in after and str(path) in after[fd]
        assert p.token() == token
        assert fd not in p.read()
        assert p.read().keys() == before.keys()
    finally:
        p.close()


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc")
@pytest.mark.parametrize("mode", ["count", "listing"])
def test_statesnaps_own_descriptors_are_left_out(tmp_path: Path, mode: str) -> None:
    p, ctx = _make(tmp_path, mode)
    try:
        token, before = p.token(), p.read()
        assert not set(map(str, ctx.own_fds)) & set(before)  # the probe's own /proc/self/fd
        fd = os.open(tmp_path / "record.jsonl", os.O_WRONLY | os.O_CREAT)
        ctx.own_fds.add(fd)  # as the plugin does for its record, after setup
        try:
            assert p.token() == token
            assert str(fd) not in p.read()
        finally:
            ctx.own_fds.discard(fd)
            os.close(fd)
    finally:
        p.close()


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc")
def test_listing_leaves_out_the_descriptor_listdir_opens(tmp_path: Path) -> None:
    p, _ = _make(tmp_path, "listing")
    held = os.open(tmp_path / "held.txt", os.O_CREAT | os.O_WRONLY)
    try:
        for _ in range(3):  # the guess path and the scanning path
            listed = p.token()
            assert isinstance(listed, tuple)
            names = [int(name) for name in listed[1]]
            assert held in names  # the listing is real: an fd opened here is in it
            for fd in names:
                fcntl.fcntl(fd, fcntl.F_GETFD)  # raises if it names a closed fd
        read = [int(name) for name in p.read()]
        assert held in read
        for fd in read:
            fcntl.fcntl(fd, fcntl.F_GETFD)
    finally:
        os.close(held)
        p.close()


def test_closing_someone_elses_descriptor_is_a_removal(probe: FdsProbe, tmp_path: Path) -> None:
    fd = os.open(tmp_path / "leaked", os.O_RDONLY | os.O_CREAT)
    before = probe.read()
    os.close(fd)
    changes = diff_maps("fds", before, probe.read())
    assert [(c.key, c.change) for c in changes] == [(str(fd), "removed")]
    assert "did not open" in (probe.hint(str(fd), "removed") or "")


def test_standard_streams_are_high() -> None:
    p = FdsProbe()
    assert p.severity_of("1", "/dev/pts/0 (rw)", "/tmp/log (w)") is Severity.HIGH
    assert "dup2" in (p.hint("2", "changed") or "")


@pytest.mark.skipif(not HAS_PROC, reason="the /proc listing path")
def test_sockets_of_every_kind_are_described_and_left_as_they_were(
        probe: FdsProbe, tmp_path: Path) -> None:
    before = probe.read()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    path = tmp_path / "sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(path))
    unix.listen()
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    abstract.bind(b"\0statesnap-test-abstract")
    pair = socket.socketpair()
    try:
        flags = {s.fileno(): fcntl.fcntl(s.fileno(), fcntl.F_GETFL)
                 for s in (udp, unix, abstract, *pair)}
        added = _added(before, probe.read())
        assert added[str(udp.fileno())] == f"socket udp 127.0.0.1:{udp.getsockname()[1]}"
        assert added[str(unix.fileno())] == f"socket unix {path} LISTEN"
        assert added[str(abstract.fileno())] == "socket unix @statesnap-test-abstract"
        assert added[str(pair[0].fileno())] == "socket unix (unbound)"
        # Described through the descriptors themselves: all still open, flags untouched.
        assert flags == {s.fileno(): fcntl.fcntl(s.fileno(), fcntl.F_GETFL)
                         for s in (udp, unix, abstract, *pair)}
        pair[0].sendall(b"x")
        assert pair[1].recv(1) == b"x"
    finally:
        for s in (udp, unix, abstract, *pair):
            s.close()
    assert probe.read() == before


@pytest.mark.skipif(not HAS_PROC, reason="the /proc listing path")
def test_with_a_default_timeout_sockets_are_described_without_touching_them(
        probe: FdsProbe) -> None:
    # Wrapping a descriptor in a socket object would make it non-blocking while a default
    # timeout is set: then psutil describes it instead.
    before = probe.read()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        old = socket.getdefaulttimeout()
        socket.setdefaulttimeout(5.0)
        try:
            flags = fcntl.fcntl(srv.fileno(), fcntl.F_GETFL)
            added = _added(before, probe.read())
            assert fcntl.fcntl(srv.fileno(), fcntl.F_GETFL) == flags
        finally:
            socket.setdefaulttimeout(old)
        assert added[str(srv.fileno())] == f"socket tcp 127.0.0.1:{srv.getsockname()[1]} LISTEN"


@pytest.mark.skipif(not HAS_PROC or not socket.has_ipv6, reason="IPv6 on /proc")
def test_ipv6_listener(probe: FdsProbe) -> None:
    before = probe.read()
    try:
        srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        srv.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with srv:
        srv.listen()
        added = _added(before, probe.read())
        assert added[str(srv.fileno())] == f"socket tcp6 [::1]:{srv.getsockname()[1]} LISTEN"


@pytest.mark.skipif(not HAS_PROC or not hasattr(socket, "AF_NETLINK"), reason="Linux netlink")
def test_a_socket_of_another_family_shows_by_its_inode(probe: FdsProbe) -> None:
    before = probe.read()
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW) as nl:
        added = _added(before, probe.read())
        assert added[str(nl.fileno())].startswith("socket:[")
