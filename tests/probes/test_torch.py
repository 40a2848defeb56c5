"""The ``torch`` probe on the real CPU build of torch.

In-process tests change real flags and put them back (with the probe's own save/restore, and a
second safety net); the end-to-end test runs a real pytest suite in a subprocess where each test
changes one flag for good, and reads what statesnap recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from statesnap.probes.base import ProbeContext, Severity  # noqa: E402
from statesnap.probes.torch.flags import FLAGS  # noqa: E402
from statesnap.probes.torch.probe import TorchProbe  # noqa: E402
from statesnap.state.diff import diff_maps  # noqa: E402


def _probe() -> TorchProbe:
    p = TorchProbe()
    p.setup(ProbeContext(rootdir=Path.cwd()))
    return p


@pytest.fixture
def probe() -> Iterator[TorchProbe]:
    """A probe whose save/restore also puts back whatever the test changed."""
    p = _probe()
    saved = p.save()
    before = p.read()
    yield p
    changed = [c.key for c in diff_maps("torch", before, p.read())]
    p.restore(saved, changed)
    # Some torch calls import torch._dynamo (use_deterministic_algorithms does): a config key
    # that appears is an import, not a change to undo.
    left = [
        c.key for c in diff_maps("torch", before, p.read())
        if not c.key.startswith("rng.") and not (c.change == "added" and c.key.endswith("config"))
    ]
    assert left == [], f"test left torch state behind: {left}"


# -- reading ---------------------------------------------------------------------------------
def test_reads_every_flag_this_build_has(probe: TorchProbe) -> None:
    snapshot = probe.read()
    assert snapshot["default_dtype"] == str(torch.get_default_dtype())
    assert snapshot["grad_enabled"] is torch.is_grad_enabled()
    assert snapshot["backends.cudnn.benchmark"] is torch.backends.cudnn.benchmark
    assert snapshot["threads.intra_op"] == torch.get_num_threads()
    assert snapshot["cuda.initialized"] is torch.cuda.is_initialized()
    assert snapshot["rng.initial_seed"] == torch.initial_seed()
    assert snapshot["modes.torch_function"] == []
    # Every value is JSON-able, and every flag is either read or named as absent.
    json.dumps(snapshot)
    assert probe._state is not None and probe._state._r is not None
    known = {f.key for f in FLAGS}
    assert known == ({k for k in snapshot if k in known} | set(probe._state._r.skipped))
    assert "flags" in probe.mode


def test_changed_flags_show_in_token_and_diff(probe: TorchProbe) -> None:
    before_map, light, full = probe.read(), probe.light_token(), probe.token()
    torch.set_default_dtype(torch.float64)
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(max(1, torch.get_num_threads() - 1) if torch.get_num_threads() > 1 else 2)
    assert probe.light_token() != light
    assert probe.token() != full
    changes = {c.key: c for c in diff_maps("torch", before_map, probe.read())}
    assert changes["default_dtype"].before == "torch.float32"
    assert changes["default_dtype"].after == "torch.float64"
    assert changes["backends.cudnn.benchmark"].after is torch.backends.cudnn.benchmark
    assert changes["deterministic.enabled"].after is True
    assert changes["deterministic.warn_only"].after is True
    assert changes["threads.intra_op"].after == torch.get_num_threads()
    assert probe.severity_of("default_dtype", "torch.float32", "torch.float64") == Severity.HIGH
    hint = probe.hint("default_dtype", "changed")
    assert hint is not None and "set_default_dtype" in hint


def test_rng_changes_reach_the_full_token_only(probe: TorchProbe) -> None:
    light, full, seed = probe.light_token(), probe.token(), probe.read()["rng.initial_seed"]
    torch.rand(3)  # draws move the state, not the seed
    assert probe.light_token() == light
    assert probe.token() != full
    after = probe.read()
    assert after["rng.initial_seed"] == seed
    torch.manual_seed(seed + 1)
    reseeded = probe.read()
    assert reseeded["rng.initial_seed"] == seed + 1
    assert reseeded["rng.cpu_state"] != after["rng.cpu_state"]
    assert probe.severity_of("rng.cpu_state", "a", "b") == Severity.LOW


def test_leaked_modes_and_global_hooks(probe: TorchProbe) -> None:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class LeakyFunctionMode(TorchFunctionMode):
        pass

    class LeakyDispatchMode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
            return func(*args, **(kwargs or {}))

    def global_hook(module: Any, args: Any, output: Any) -> None:
        return None

    before = probe.read()
    fmode, dmode = LeakyFunctionMode(), LeakyDispatchMode()
    fmode.__enter__()
    dmode.__enter__()
    handle = torch.nn.modules.module.register_module_forward_hook(global_hook)
    try:
        changes = {c.key: c for c in diff_maps("torch", before, probe.read())}
    finally:
        handle.remove()
        dmode.__exit__(None, None, None)
        fmode.__exit__(None, None, None)
    assert changes["modes.torch_function"].after == [
        f"{__name__}.test_leaked_modes_and_global_hooks.<locals>.LeakyFunctionMode"
    ]
    assert changes["modes.torch_dispatch"].after[0].endswith("LeakyDispatchMode")
    assert changes["nn.module._global_forward_hooks"].after == [
        f"{__name__}.test_leaked_modes_and_global_hooks.<locals>.global_hook"
    ]
    assert probe.severity_of("modes.torch_function", [], ["x"]) == Severity.HIGH
    assert probe.read() == before


def test_default_device_is_read_without_indexing_it(probe: TorchProbe) -> None:
    before = probe.read()
    torch.set_default_device("meta")
    try:
        after = probe.read()
        light = probe.light_token()
    finally:
        torch.set_default_device(None)
    assert (before["default_device"], after["default_device"]) == ("cpu", "meta")
    # set_default_device pushes a DeviceContext mode: the stack shows which device.
    assert after["modes.torch_function"] == ["torch.utils._device.DeviceContext(meta)"]
    assert light != probe.light_token()


# -- CUDA stays untouched --------------------------------------------------------------------
def test_never_initialises_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for name in ("_lazy_init", "init", "is_available", "device_count", "current_device",
                 "synchronize", "mem_get_info", "memory_stats"):
        real = getattr(torch.cuda, name)

        def counting(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(torch.cuda, name, counting)
    was = torch.cuda.is_initialized()
    p = _probe()
    p.light_token()
    p.token()
    snapshot = p.read()
    p.restore(p.save(), list(snapshot))
    assert calls == []
    assert torch.cuda.is_initialized() is was
    assert snapshot["cuda.initialized"] is was


def test_cuda_memory_keys_once_initialised(monkeypatch: pytest.MonkeyPatch) -> None:
    # This CPU build has no allocator: torch's own stats call of a CUDA build is stood in for,
    # and CUDA is declared initialised, to check how the answers become keys.  The real thing
    # runs in scripts/gpu_check.py on a GPU machine.
    allocated = {0: 0, 1: 4096}

    def memory_stats(device: int) -> dict[str, Any]:
        return {"allocated_bytes": {"all": {"current": allocated[device]}},
                "reserved_bytes": {"all": {"current": 2 * 2**20}}}

    monkeypatch.setattr(torch._C, "_cuda_memoryStats", memory_stats, raising=False)
    monkeypatch.setattr(torch.cuda, "_cached_device_count", 2, raising=False)
    p = _probe()
    before = p.read()
    assert "cuda:0.memory_allocated" not in before  # not initialised: memory never asked
    monkeypatch.setattr(torch.cuda, "_initialized", True)
    mid = p.read()
    allocated[0] = 3 * 2**20
    after = p.read()
    assert p.token() != p.light_token()
    first = {c.key: c for c in diff_maps("torch", before, mid)}
    assert first["cuda.initialized"].after is True
    assert first["cuda:1.memory_allocated"].after == 4096
    assert p.severity_of("cuda.initialized", False, True) == Severity.HIGH
    hint = p.hint("cuda.initialized", "changed")
    assert hint is not None and "fork" in hint
    (grew,) = diff_maps("torch", mid, after)
    assert (grew.key, grew.before, grew.after) == ("cuda:0.memory_allocated", 0, 3 * 2**20)
    assert p.severity_of(grew.key, grew.before, grew.after) == Severity.HIGH
    assert p.severity_of(grew.key, grew.after, grew.before) == Severity.LOW
    assert p.detail(grew.key, grew.before, grew.after) == "+3,145,728 bytes (+3.0 MiB)"
    assert p.gauges(after)["torch.cuda:0_allocated_mib"] == 3.0
    assert "cuda.initialized" not in p.restore(p.save(), ["cuda.initialized"])


# -- restoring -------------------------------------------------------------------------------
def test_restore_puts_flags_back() -> None:
    p = _probe()
    saved, before = p.save(), p.read()
    torch.set_default_dtype(torch.float64)
    torch.backends.cudnn.deterministic = not torch.backends.cudnn.deterministic
    torch.backends.cuda.enable_flash_sdp(not torch.backends.cuda.flash_sdp_enabled())
    torch.set_autocast_enabled("cpu", True)
    torch.autograd.set_detect_anomaly(True, check_nan=False)
    torch.manual_seed(7)
    changed = [c.key for c in diff_maps("torch", before, p.read())]
    try:
        done = p.restore(saved, changed)
    finally:  # the safety net, should restore() be wrong
        torch.set_default_dtype(torch.float32)
    assert set(done) == set(changed)
    assert diff_maps("torch", before, p.read()) == []


def test_without_torch_imported_nothing_is_read_or_imported() -> None:
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from statesnap.probes.base import ProbeContext
        from statesnap.probes.torch.probe import TorchProbe
        p = TorchProbe()
        ctx = ProbeContext(rootdir=Path.cwd())
        p.setup(ctx)
        out = {"read": p.read(), "same": p.token() == p.token(), "mode": p.mode,
               "imported": "torch" in sys.modules,
               "readers": sorted(m for m in sys.modules if m.startswith("statesnap.probes.torch"))}
        import torch  # the suite imports torch: from now on the probe reads it
        out["now"] = len(p.read()) > 10
        out["own"] = sorted(m for m in ctx.own_modules if m.startswith("statesnap."))
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    out = json.loads(proc.stdout)
    assert out["read"] == {}
    assert out["same"] is True
    assert out["imported"] is False
    assert "not imported" in out["mode"]
    # The readers are imported only once torch is, as statesnap's own modules.
    assert out["readers"] == ["statesnap.probes.torch", "statesnap.probes.torch.probe"]
    assert out["now"] is True
    assert "statesnap.probes.torch.state" in out["own"]


def test_gpu_leaks_are_a_kind_of_their_own() -> None:
    from statesnap.probes.torch.cuda import gpu_leak_kind

    assert gpu_leak_kind("torch", "cuda.initialized", False, True) == "cuda-initialized"
    assert gpu_leak_kind("torch", "cuda.initialized", None, True) == "cuda-initialized"
    assert gpu_leak_kind("torch", "cuda.bad_fork", False, True) == "cuda-bad-fork"
    assert gpu_leak_kind("torch", "cuda:1.memory_allocated", 0, 512) == "gpu-memory"
    assert gpu_leak_kind("torch", "cuda:1.memory_allocated", 512, 0) is None
    assert gpu_leak_kind("torch", "cuda:0.memory_reserved", 0, 512) is None  # a cache
    assert gpu_leak_kind("nvml", "gpu0.process_used", 0, 2**29) == "gpu-memory"
    assert gpu_leak_kind("nvml", "gpu0.used", 0, 2**29) is None  # device-wide
    assert gpu_leak_kind("torch", "default_dtype", "torch.float32", "torch.float64") is None
