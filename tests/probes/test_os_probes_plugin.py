"""The OS probes through the real plugin: a pytest run in a subprocess, its summary JSON read.

A subprocess, because the inner tests really leave a thread, a socket and a child behind.
"""

from __future__ import annotations

import json
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")

SUITE = """
import pathlib, socket, subprocess, threading

HERE = pathlib.Path(__file__).parent
_held = []

def test_leaves_a_marker():
    (HERE / "marker.txt").write_text("set")

def test_no_marker_expected():
    assert not (HERE / "marker.txt").exists()

def test_leaves_thread_socket_child():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="leaky-thread", daemon=True)
    t.start()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    p = subprocess.Popen(["sleep", "30"])
    _held.append((stop, t, s, p))
    (HERE / "port.txt").write_text(str(s.getsockname()[1]))

def test_quiet():
    with open(__file__) as f:
        f.read()

def test_zz_cleanup():
    for stop, t, s, p in _held:
        stop.set(); t.join(); s.close(); p.kill(); p.wait()
"""


def test_leaks_and_a_verified_file_polluter(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_os=SUITE)
    # runpytest_subprocess writes the inner run's output to files in the watched root.
    pytester.makeini("[pytest]\nstatesnap_watch_exclude =\n    stdout\n    stderr\n")
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json"
    )
    result.assert_outcomes(passed=4, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {
        t["nodeid"].split("::")[1]: {(x["probe"], x["key"], x["change"]) for x in t["leaks"]}
        for t in summary["tests"]
    }
    port = (pytester.path / "port.txt").read_text()
    assert leaks["test_leaves_a_marker"] == {("files", "marker.txt", "added")}
    made = leaks["test_leaves_thread_socket_child"]
    assert ("threads", "leaky-thread", "added") in made
    assert ("children", "sleep 30", "added") in made
    assert ("files", "port.txt", "added") in made
    # Describing the child imported psutil for statesnap's own use: never the test's import.
    assert {key for probe, key, _ in made if probe == "modules"} == set()
    (socket_leak,) = [
        x for t in summary["tests"] for x in t["leaks"]
        if t["nodeid"].endswith("socket_child") and x["probe"] == "fds"
    ]
    assert socket_leak["after"] == f"socket tcp 127.0.0.1:{port} LISTEN"
    assert leaks["test_quiet"] == set()  # a file opened and closed leaves nothing
    # Ending what an earlier test left is not the ender's leak: the resource's life is the
    # test's that started it (analysis/leaks.resolve_leaks), however it ends.
    assert not {("threads", "leaky-thread", "removed"), ("children", "sleep 30", "removed")} & (
        leaks["test_zz_cleanup"]
    )
    (finding,) = summary["findings"]
    assert finding["victim"].endswith("test_no_marker_expected")
    assert finding["polluters"] == ["test_os.py::test_leaves_a_marker"]
    assert (finding["probe"], finding["key"], finding["status"]) == (
        "files", "marker.txt", "verified",
    )
