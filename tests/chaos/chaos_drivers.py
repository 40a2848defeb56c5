"""What the Ctrl-C drivers run inside a pid namespace share: listing the processes there.

The drivers are scripts run by a fresh interpreter in the namespace (``DRIVER`` strings in
the chaos tests); this is the head they start with.
"""

from __future__ import annotations

#: ``replays()``: replay children alive now (a pytest run with ``--statesnap-order``);
#: ``strays()``: every process of the namespace but its first, the driver and the bystander.
PROCESS_LISTING = r'''
import json, os, signal, subprocess, sys, time


def strays():
    """Every process of the namespace but its first, this driver and the bystander: what the
    session left running (a warm parent or a forked replay has no --statesnap-order)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in (1, os.getpid()):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmd[:2] != [b"sleep", b"3600"] and cmd != [b""]:
                found.append(int(pid))
    return found


def replays():
    """The pids of replay children alive now (a pytest run with --statesnap-order)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if any(c.startswith(b"--statesnap-order=") for c in cmd):
                found.append(int(pid))
    return found


'''
