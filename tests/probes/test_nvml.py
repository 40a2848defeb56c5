"""The ``nvml`` probe: no NVML here for real, and a stand-in NVML built from C by the tests.

The stand-in (tests/nvml_stub/nvml_stub.c) is compiled with gcc into a temporary directory as
``libnvidia-ml.so.1`` and found by pynvml's normal ``CDLL("libnvidia-ml.so.1")`` through
``LD_LIBRARY_PATH``.  The dynamic loader reads that variable once at process start, so every
run with the stand-in is a subprocess.  The stand-in answers from environment variables (see
its header), which the scripts change while they run to play a process allocating GPU memory.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ci_skips import in_ci
from statesnap.probes.base import ProbeContext, ProbeUnavailable, Severity
from statesnap.probes.nvml import IDLE_EVERY, NOTE_FOREIGN, NOTE_UNSEEN, NvmlProbe

STUB_SOURCE = Path(__file__).resolve().parents[1] / "nvml_stub" / "nvml_stub.c"
REAL_NVML = ctypes.util.find_library("nvidia-ml") is not None

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux NVML")


@pytest.fixture(scope="session")
def stub_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        message = "no C compiler to build the stand-in NVML library"
        if in_ci():  # `make test` installs gcc: on CI a missing one is a broken install
            pytest.fail(f"CI=true: {message}; install gcc (`make test` does)", pytrace=False)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("nvml_stub")
    subprocess.run(
        [gcc, "-Wall", "-Werror", "-O2", "-shared", "-fPIC", "-o",
         str(out / "libnvidia-ml.so.1"), str(STUB_SOURCE)],
        check=True,
    )
    return out


def _foreign_pid() -> int:
    """A pid that cannot exist in this pid namespace (above the kernel's maximum)."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 10


PRELUDE = """
import ctypes, json, os, sys
from pathlib import Path
from statesnap.probes.base import ProbeContext
from statesnap.probes.nvml import NvmlProbe

STUB = ctypes.CDLL("libnvidia-ml.so.1")  # the same library pynvml loads: its call counters
STUB.statesnap_stub_count.restype = ctypes.c_ulong
def count(name):
    return STUB.statesnap_stub_count(name.encode())

ctx = ProbeContext(rootdir=Path.cwd())
probe = NvmlProbe()
"""


def _run(stub_dir: Path, script: str, **env: str) -> dict[str, Any]:
    """Run ``PRELUDE + script`` with the stand-in library; the script prints one JSON line."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("STATESNAP_NVML")}
    full_env["LD_LIBRARY_PATH"] = f"{stub_dir}{os.pathsep}{os.environ.get('LD_LIBRARY_PATH', '')}"
    full_env.update(env)
    code = PRELUDE + textwrap.dedent(script)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- no NVML on this machine -----------------------------------------------------------------
@pytest.mark.skipif(REAL_NVML, reason="a real NVML library is installed here")
def test_no_library_makes_the_probe_unavailable() -> None:
    probe = NvmlProbe()
    with pytest.raises(ProbeUnavailable, match=r"libnvidia-ml\.so\.1"):
        probe.setup(ProbeContext(rootdir=Path.cwd()))
    probe.close()  # nothing was initialised: nothing to shut down, no error


def test_driver_not_loaded(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        from statesnap.probes.base import ProbeUnavailable
        try:
            probe.setup(ctx)
            print(json.dumps({"reason": None}))
        except ProbeUnavailable as exc:
            print(json.dumps({"reason": str(exc), "processes": count("memory")}))
    """, STATESNAP_NVML_STUB_INIT="9")
    assert out == {"reason": "NVIDIA driver not loaded", "processes": 0}


# -- NVML answers become snapshots -----------------------------------------------------------
def test_own_memory_and_device_memory(stub_dir: Path) -> None:
    foreign = _foreign_pid()
    out = _run(stub_dir, """
        probe.setup(ctx)
        print(json.dumps({"map": probe.read(), "notes": ctx.notes, "mode": probe.mode,
                          "ns": probe.pid_namespace}))
    """, STATESNAP_NVML_STUB_DEVICES="2",
        STATESNAP_NVML_STUB_PROCS=f"0:self:1048576,0:{foreign}:5,1:{foreign}:7",
        STATESNAP_NVML_STUB_USED="0:123456789,1:987654321")
    assert out["map"] == {
        "gpu0.used": 123456789, "gpu0.process_used": 1048576, "gpu0.process_count": 1,
        "gpu1.used": 987654321, "gpu1.process_used": 0, "gpu1.process_count": 0,
    }
    assert out["notes"] == {}
    assert out["ns"] == "shared"
    assert out["mode"].startswith("2 GPU(s) (Stub GPU)")


def test_children_and_grandchildren_count_as_ours(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        import subprocess
        probe.setup(ctx)
        before = probe.read()
        shell = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"],
                                 stdout=subprocess.PIPE, text=True)
        grandchild = int(shell.stdout.readline())
        os.environ["STATESNAP_NVML_STUB_PROCS"] = (
            f"0:self:1024,0:{shell.pid}:2048,0:{grandchild}:4096,0:{os.getppid()}:8192")
        probe.token()
        after = probe.read()
        os.kill(grandchild, 15)
        shell.wait()
        print(json.dumps({"before": before, "after": after}))
    """, STATESNAP_NVML_EVERY="1")
    assert out["before"]["gpu0.process_used"] == 0
    # Our own 1024 + the shell's 2048 + its child's 4096; the parent's 8192 is not ours.
    assert out["after"]["gpu0.process_used"] == 1024 + 2048 + 4096
    assert out["after"]["gpu0.process_count"] == 3


def test_foreign_pids_are_not_reported_as_zeros(stub_dir: Path) -> None:
    foreign = _foreign_pid()
    out = _run(stub_dir, """
        probe.setup(ctx)
        print(json.dumps({"map": probe.read(), "notes": ctx.notes, "ns": probe.pid_namespace}))
    """, STATESNAP_NVML_STUB_PROCS=f"0:{foreign}:536870912,0:{foreign + 1}:1024")
    assert out["ns"] == "foreign"
    assert out["notes"] == {"nvml": NOTE_FOREIGN}
    assert set(out["map"]) == {"gpu0.used"}  # no process keys, no zeros presented as facts


def test_a_context_nvml_does_not_list_is_not_reported_as_zero(stub_dir: Path) -> None:
    pytest.importorskip("torch")
    # This CPU build of torch never holds a context: the two values torch's CUDA build would
    # answer are stood in for, in this subprocess only.  The stand-in NVML lists our parent
    # (visible, not ours) and not us, as a sandbox that hides this process would.
    out = _run(stub_dir, """
        import torch
        torch.cuda._initialized = True
        torch.cuda._cached_device_count = 1
        torch._C._cuda_hasPrimaryContext = lambda device: True
        probe.setup(ctx)
        asked = count("memory")
        probe.token()
        probe.token()
        print(json.dumps({"map": probe.read(), "notes": ctx.notes, "ns": probe.pid_namespace,
                          "asked": count("memory") - asked}))
    """, STATESNAP_NVML_STUB_PROCS="0:parent:1048576")
    assert out["ns"] == "unseen"
    assert out["notes"] == {"nvml": NOTE_UNSEEN}
    assert set(out["map"]) == {"gpu0.used"}
    assert out["asked"] == 2  # CUDA initialised in torch: NVML is asked after every test


def test_unavailable_process_memory_is_left_out(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        probe.setup(ctx)
        first = probe.read()
        os.environ["STATESNAP_NVML_STUB_PROCS"] = "0:self:na"
        probe.token()
        print(json.dumps({"first": first, "na": probe.read()}))
    """, STATESNAP_NVML_STUB_PROCS_RC="3")
    assert set(out["first"]) == {"gpu0.used"}  # process query not supported on this device
    assert set(out["na"]) == {"gpu0.used"}


# -- cost: when NVML is asked at all ---------------------------------------------------------
def test_queries_are_sampled_until_the_gpu_is_in_use(stub_dir: Path) -> None:
    out = _run(stub_dir, f"""
        probe.setup(ctx)
        start = count("memory")
        for _ in range({2 * IDLE_EVERY}):
            probe.token()
            probe.light_token()
        idle = count("memory") - start
        os.environ["STATESNAP_NVML_STUB_PROCS"] = "0:self:268435456"
        seen_after = None
        for i in range({IDLE_EVERY}):
            probe.token()
            if probe.read().get("gpu0.process_used"):
                seen_after = i + 1
                break
        start = count("memory")
        for _ in range(5):
            probe.token()
        busy = count("memory") - start
        os.environ["STATESNAP_NVML_STUB_PROCS"] = ""
        probe.token()
        released = probe.read()["gpu0.process_used"]
        start = count("memory")
        for _ in range({IDLE_EVERY - 1}):
            probe.token()
        print(json.dumps({{"idle": idle, "seen_after": seen_after, "busy": busy,
                          "released": released, "idle_again": count("memory") - start,
                          "inits": count("init")}}))
    """)
    assert out["idle"] == 2  # one query per IDLE_EVERY tokens; light tokens never ask
    assert out["seen_after"] is not None and out["seen_after"] <= IDLE_EVERY
    assert out["busy"] == 5  # holding GPU memory: every test is asked
    assert out["released"] == 0
    assert out["idle_again"] <= 1
    assert out["inits"] == 1  # nvmlInit once per process, never per test


def test_every_test_with_the_environment_knob(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        probe.setup(ctx)
        start = count("memory")
        for _ in range(7):
            probe.token()
        print(json.dumps({"asked": count("memory") - start, "mode": probe.mode}))
    """, STATESNAP_NVML_EVERY="1")
    assert out["asked"] == 7
    assert "queried after every test" in out["mode"] and "otherwise" not in out["mode"]


def test_the_option_wins_over_the_environment_knob(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        ctx.probe_options["nvml_every"] = "1"
        probe.setup(ctx)
        start = count("memory")
        for _ in range(5):
            probe.token()
        print(json.dumps({"asked": count("memory") - start, "every": probe.every}))
    """, STATESNAP_NVML_EVERY="40")
    assert out == {"asked": 5, "every": 1}


def test_bad_ini_value_is_one_line(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        from statesnap.probes.base import ProbeUnavailable
        ctx.probe_options["nvml_every"] = "0"
        try:
            probe.setup(ctx)
            print(json.dumps({"reason": None}))
        except ProbeUnavailable as exc:
            print(json.dumps({"reason": str(exc)}))
    """)
    assert out["reason"] == "statesnap_nvml_every must be a whole number of tests >= 1, not '0'"


def test_bad_environment_knob_is_one_line(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        from statesnap.probes.base import ProbeUnavailable
        try:
            probe.setup(ctx)
            print(json.dumps({"reason": None}))
        except ProbeUnavailable as exc:
            print(json.dumps({"reason": str(exc)}))
    """, STATESNAP_NVML_EVERY="often")
    assert out["reason"] == "STATESNAP_NVML_EVERY must be a whole number of tests >= 1, not 'often'"


def test_init_again_after_fork(stub_dir: Path) -> None:
    out = _run(stub_dir, """
        probe.setup(ctx)
        for _ in range(3):
            probe.token()
        parent_inits = count("init")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.environ["STATESNAP_NVML_STUB_PROCS"] = "0:self:4096"
            probe.token()
            probe.token()
            info = {"inits": count("init"), "map": probe.read()}
            os.write(w, json.dumps(info).encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            child = json.loads(f.read())
        os.waitpid(pid, 0)
        probe.close()
        print(json.dumps({"parent_inits": parent_inits, "child": child,
                          "shutdowns": count("shutdown")}))
    """)
    assert out["parent_inits"] == 1
    assert out["child"]["inits"] == 2  # the child initialised once more, then never again
    assert out["child"]["map"]["gpu0.process_used"] == 4096  # its own pid, not the parent's
    assert out["shutdowns"] == 1


# -- judging changes (pure) ------------------------------------------------------------------
def test_severity_hints_and_gauges() -> None:
    probe = NvmlProbe()
    assert probe.severity_of("gpu0.process_used", 0, 2**20) == Severity.HIGH
    assert probe.severity_of("gpu0.process_used", 2**20, 0) == Severity.LOW
    assert probe.severity_of("gpu0.process_count", 0, 1) == Severity.HIGH
    assert probe.severity_of("gpu0.used", 0, 2**30) == Severity.LOW
    hint = probe.hint("gpu0.process_used", "changed")
    assert hint is not None and "subprocess" in hint
    assert probe.detail("gpu0.process_used", 0, 3 * 2**20) == "+3.0 MiB"
    assert probe.gauges({"gpu0.used": 2**30, "gpu0.process_used": 2**29,
                         "gpu0.process_count": 1}) == {
        "nvml.gpu0.used_mib": 1024.0, "nvml.gpu0.process_used_mib": 512.0,
    }


# -- through the plugin ----------------------------------------------------------------------
SUITE = """
import os

def test_allocates_and_keeps():
    # The stand-in's way of saying: this process now holds 256 MiB on GPU 0.
    os.environ["STATESNAP_NVML_STUB_PROCS"] = "0:self:268435456"

def test_quiet():
    pass

def test_frees():
    os.environ["STATESNAP_NVML_STUB_PROCS"] = ""
"""


def test_gpu_memory_leak_through_the_plugin(pytester: pytest.Pytester, stub_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", str(stub_dir))
    monkeypatch.setenv("STATESNAP_NVML_STUB_USED", "0:1073741824")
    monkeypatch.delenv("STATESNAP_NVML_STUB_PROCS", raising=False)
    # Nothing here looks like GPU use to the cheap signals (no CUDA in torch, no GPU library),
    # so without the option the probe would sample NVML only every IDLE_EVERY tests.
    monkeypatch.delenv("STATESNAP_NVML_EVERY", raising=False)
    pytester.makepyfile(test_gpu=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-probes", "nvml",
        "--statesnap-record", "run.jsonl", "--statesnap-verify-budget", "0",
        "--statesnap-nvml-every=1",
    )
    result.assert_outcomes(passed=3)
    lines = [json.loads(x) for x in (pytester.path / "run.jsonl").read_text().splitlines()]
    (header,) = [x for x in lines if x["type"] == "header"]
    (status,) = [p for p in header["probes"] if p["name"] == "nvml"]
    assert status["status"] == "ok" and "Stub GPU" in status["detail"]
    tests = {x["nodeid"].split("::")[1]: x for x in lines if x["type"] == "test"}
    leak = {c["key"]: c for c in tests["test_allocates_and_keeps"]["changes"]}
    assert (leak["gpu0.process_used"]["before"], leak["gpu0.process_used"]["after"]) == (
        0, 268435456
    )
    assert leak["gpu0.process_count"]["after"] == 1
    assert leak["gpu0.process_used"]["severity"] == int(Severity.HIGH)
    assert tests["test_quiet"]["changes"] == []
    freed = {c["key"]: c for c in tests["test_frees"]["changes"]}
    assert freed["gpu0.process_used"]["after"] == 0
    assert tests["test_allocates_and_keeps"]["gauges"]["nvml.gpu0.process_used_mib"] == 256.0


@pytest.mark.skipif(REAL_NVML, reason="a real NVML library is installed here")
def test_unavailable_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-probes", "nvml",
        "--statesnap-record", "run.jsonl",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*probe nvml unavailable: NVML library (libnvidia-ml.so.1)*"])
    lines = [json.loads(x) for x in (pytester.path / "run.jsonl").read_text().splitlines()]
    (header,) = [x for x in lines if x["type"] == "header"]
    (status,) = [p for p in header["probes"] if p["name"] == "nvml"]
    assert status["status"] == "unavailable" and status["absent"] is True
    (test,) = [x for x in lines if x["type"] == "test"]
    assert test["changes"] == []


@pytest.mark.skipif(REAL_NVML, reason="a real NVML library is installed here")
@pytest.mark.parametrize("verbose", [False, True])
def test_no_driver_is_quiet_unless_verbose(pytester: pytest.Pytester, verbose: bool) -> None:
    """No NVIDIA driver on this machine: nothing to act on, so the default run says nothing
    about NVML; ``-v`` shows the probe's status, and the header keeps it either way."""
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-record", "run.jsonl",
        *(["-v"] if verbose else []),
    )
    result.assert_outcomes(passed=1)
    said = [line for line in result.stdout.lines if "nvml" in line.lower()]
    if verbose:
        assert said == ["probe nvml unavailable: NVML library (libnvidia-ml.so.1) not found: "
                        "no NVIDIA driver on this machine"]
    else:
        assert said == []
        assert "record: " in result.stdout.str()  # the section itself was written
    lines = [json.loads(x) for x in (pytester.path / "run.jsonl").read_text().splitlines()]
    (header,) = [x for x in lines if x["type"] == "header"]
    (status,) = [p for p in header["probes"] if p["name"] == "nvml"]
    assert status["status"] == "unavailable" and "libnvidia-ml.so.1" in status["detail"]
