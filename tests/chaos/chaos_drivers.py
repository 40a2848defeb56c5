"""What the Ctrl-C drivers run inside a pid namespace share: listing the processes there.

The drivers are scripts run by a fresh interpreter in the namespace (``DRIVER`` strings in
the chaos tests); this is the head they start with.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_runs import TRACEBACKS, env

import pidns

#: ``replays(label)``: replay children alive now (a pytest run with ``--statesnap-order``);
#: ``strays()``: every process of the namespace but its first, the driver and the bystander.
PROCESS_LISTING = r'''
import json, os, signal, subprocess, sys, time

# SIGINT as a terminal gives it, whatever started the test run: a shell without job control
# starts a background job (`make test &`) with SIGINT ignored, every process below inherits
# that, and Python keeps an inherited SIG_IGN, so the Ctrl-C these drivers send would reach
# no session.  A handled signal is reset to the default across exec: their children get it.
signal.signal(signal.SIGINT, signal.default_int_handler)


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


def replays(label=""):
    """The pids of replay children alive now (a pytest run with --statesnap-order); with
    ``label``, only those whose order file is ``NNN-<label>.order.json``."""
    end = f"-{label}.order.json".encode() if label else b""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if any(c.startswith(b"--statesnap-order=") and c.endswith(end) for c in cmd):
                found.append(int(pid))
    return found


'''

#: A driver: pytest started (argv, output to out_path), SIGINT sent once two replays (with
#: ``label``: two of that label) have been in flight together for ``settle`` seconds, then the
#: replay children still alive listed.  Its argument: JSON ``[argv, out_path, label, settle]``;
#: it prints JSON ``{rc, left, strays, in_flight}``.
INTERRUPT_TWO_IN_FLIGHT = PROCESS_LISTING + r'''
argv, out_path, label, settle = json.loads(sys.argv[1])
with open(out_path, "w") as out:
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    while len(replays(label)) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    most = len(replays(label))
    time.sleep(settle)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=120)
time.sleep(0.2)
print(json.dumps({"rc": rc, "left": replays(), "strays": strays(), "in_flight": most}))
'''


def interrupt_two_in_flight(project: Path, argv: list[str], tmp_path: Path, label: str,
                            settle: float, sleep: str, timeout: float) -> str:
    """Run ``argv`` in ``project`` through :data:`INTERRUPT_TWO_IN_FLIGHT` in a pid namespace
    (the inner runs' temporary directory ``tmp_path/tmp``, ``CHAOS_SLEEP=sleep``) and check
    what every such Ctrl-C must give: two replays were in flight, pytest exited as
    interrupted, no replay, warm parent or fork was left, the bystander lived, no traceback.
    Returns pytest's output."""
    log = tmp_path / "pytest.out"
    proc = subprocess.run(pidns.wrap([sys.executable, "-c", INTERRUPT_TWO_IN_FLIGHT,
                                      json.dumps([argv, str(log), label, settle])]),
                          cwd=project, env=env(tmp_path / "tmp", CHAOS_SLEEP=sleep),
                          capture_output=True, text=True, timeout=timeout)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    output = log.read_text()
    context = output[-5000:]
    assert report["in_flight"] >= 2, context  # the SIGINT came with two replays running
    assert report["rc"] == pytest.ExitCode.INTERRUPTED, context
    assert report["left"] == [], context  # every replay's process group was killed
    assert report["strays"] == [], context  # nor a warm parent or its forks
    for text in (*TRACEBACKS, "KeyboardInterrupt"):
        assert text not in output, context
    return output
