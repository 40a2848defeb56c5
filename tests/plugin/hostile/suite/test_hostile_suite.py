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


def test_zz_pollutes():
    globals()["pollute_" + os.environ["HOSTILE_POLLUTION"]]()
