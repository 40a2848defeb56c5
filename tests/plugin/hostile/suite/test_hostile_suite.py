"""A suite that pollutes what statesnap itself relies on at the end of a session.

``HOSTILE_POLLUTION`` names the one pollution of a run (a ``pollute_*`` function below).  The
first two tests are an ordinary order-dependent pair, so that the session end attributes and
replays a failure while the process is polluted; the last test then leaves the pollution
behind for the rest of the session.  Run by ``tests/plugin/hostile/test_hostile.py``; by hand:
``HOSTILE_POLLUTION=platform pytest -p statesnap tests/plugin/hostile/suite``.
"""

import builtins
import io
import logging
import os
import signal
import socket
import sys
import tempfile
import types
import warnings


def test_leaks_flag():
    os.environ["HOSTILE_FLAG"] = "on"


def test_victim_needs_no_flag():
    assert os.environ.get("HOSTILE_FLAG") is None


def pollute_platform():
    sys.platform = "win32"


def pollute_environ():
    os.environ = {"HOSTILE": "a plain dict"}  # noqa: B003 - the pollution itself


def _stub(name):
    sys.modules[name] = types.ModuleType(name)


def pollute_stub_json():
    _stub("json")


def pollute_stub_jinja2():
    _stub("jinja2")


def pollute_stub_deepdiff():
    _stub("deepdiff")


def _no_open(*args, **kwargs):
    raise PermissionError("open() was patched by a test")


def pollute_open():
    builtins.open = _no_open


def pollute_cwd():
    gone = tempfile.mkdtemp()
    os.chdir(gone)
    os.rmdir(gone)


def pollute_logging():
    logging.disable(logging.CRITICAL)


def pollute_warnings():
    warnings.simplefilter("error")


def pollute_stdout():
    sys.stdout = io.StringIO()


def pollute_socket_timeout():
    socket.setdefaulttimeout(0.001)


def pollute_recursion_limit():
    sys.setrecursionlimit(50)


def pollute_sigterm():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _refuse(name):
    def refused(*args, **kwargs):
        raise RuntimeError(f"{name}: left patched by a hostile test")
    refused.__name__ = name.rsplit(".", 1)[-1]
    return refused


# Patched and never put back, as a test that called ``mock.patch(...).start()`` and forgot
# ``stop()`` leaves them: statesnap's session end must not use any of them.

def pollute_popen_mock():
    from unittest import mock
    mock.patch("subprocess.Popen").start()  # its pid is a MagicMock, which int() makes 1


def pollute_os_kill():
    os.kill = _refuse("os.kill")


def pollute_os_killpg():
    os.killpg = _refuse("os.killpg")


def pollute_os_waitpid():
    os.waitpid = _refuse("os.waitpid")


def pollute_select():
    import select
    select.select = _refuse("select.select")


def pollute_scandir():
    os.scandir = _refuse("os.scandir")


def pollute_listdir():
    os.listdir = _refuse("os.listdir")


def pollute_stat():
    os.stat = _refuse("os.stat")


def pollute_json_dumps():
    import json
    json.dumps = _refuse("json.dumps")


def pollute_json_loads():
    import json
    json.loads = _refuse("json.loads")


def pollute_json_encode():
    import json
    json.JSONEncoder.encode = _refuse("json.JSONEncoder.encode")


class _BlockedSocket(socket.socket):
    # What pytest-socket's --disable-socket leaves as socket.socket for the whole session.
    def __init__(self, *args, **kwargs):
        raise RuntimeError("socket.socket: blocked by a hostile test")


def pollute_socket_class():
    socket.socket = _BlockedSocket


def pollute_socketpair():
    socket.socketpair = _refuse("socket.socketpair")
    socket.send_fds = _refuse("socket.send_fds")


def pollute_frozen_time():
    import time
    time.time = lambda: 1_000_000.0
    time.monotonic = lambda: 1_000.0


def pollute_signal_signal():
    signal.signal = _refuse("signal.signal")


def pollute_many_fds():
    # About 2,000 descriptors left open: statesnap's own pipes then get numbers past 1024,
    # which select() refuses ("filedescriptor out of range").
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    globals()["_left_open"] = [os.pipe() for _ in range(1000)]


def test_zz_pollutes():
    globals()["pollute_" + os.environ["HOSTILE_POLLUTION"]]()
