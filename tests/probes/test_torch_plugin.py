"""The ``torch`` probe through the real plugin: a pytest run in a subprocess, its record read.

Each inner test changes one flag for good and writes down, through torch's public API, what
the flag was before and after; statesnap's record must name the same key with the same
before → after.  The inner conftest wraps every CUDA entry point that could initialise CUDA
and records calls made from statesnap's probes: there must be none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statesnap.record.reader import read_record

pytest.importorskip("torch")

#: ``(test name, key, code that changes the flag, public expression that reads it)``.
CASES: tuple[tuple[str, str, str, str], ...] = (
    ("dtype", "default_dtype", "torch.set_default_dtype(torch.float64)",
     "str(torch.get_default_dtype())"),
    ("grad", "grad_enabled", "torch.set_grad_enabled(False)", "torch.is_grad_enabled()"),
    ("fwd_grad", "forward_grad_enabled", "torch._C._set_fwd_grad_enabled(False)",
     "torch._C._is_fwd_grad_enabled()"),
    ("anomaly", "anomaly.enabled", "torch.autograd.set_detect_anomaly(True)",
     "torch.is_anomaly_enabled()"),
    ("anomaly_nan", "anomaly.check_nan",
     "torch.set_anomaly_enabled(torch.is_anomaly_enabled(), False)",
     "torch.is_anomaly_check_nan_enabled()"),
    ("deterministic", "deterministic.enabled", "torch.use_deterministic_algorithms(True)",
     "torch.are_deterministic_algorithms_enabled()"),
    ("warn_only", "deterministic.warn_only",
     "torch.use_deterministic_algorithms(True, warn_only=True)",
     "torch.is_deterministic_algorithms_warn_only_enabled()"),
    ("debug_mode", "deterministic.debug_mode", "torch.set_deterministic_debug_mode(0)",
     "torch.get_deterministic_debug_mode()"),
    ("fill", "deterministic.fill_uninitialized_memory",
     "torch.utils.deterministic.fill_uninitialized_memory = False",
     "torch.utils.deterministic.fill_uninitialized_memory"),
    ("threads", "threads.intra_op",
     "torch.set_num_threads(1 if torch.get_num_threads() > 1 else 2)",
     "torch.get_num_threads()"),
    ("interop", "threads.inter_op",
     "torch.set_num_interop_threads(1 if torch.get_num_interop_threads() > 1 else 2)",
     "torch.get_num_interop_threads()"),
    ("matmul_precision", "float32_matmul_precision", "torch.set_float32_matmul_precision('medium')",
     "torch.get_float32_matmul_precision()"),
    ("cudnn_enabled", "backends.cudnn.enabled", "torch.backends.cudnn.enabled = False",
     "torch.backends.cudnn.enabled"),
    ("cudnn_benchmark", "backends.cudnn.benchmark", "torch.backends.cudnn.benchmark = True",
     "torch.backends.cudnn.benchmark"),
    ("cudnn_deterministic", "backends.cudnn.deterministic",
     "torch.backends.cudnn.deterministic = True", "torch.backends.cudnn.deterministic"),
    ("cudnn_tf32", "backends.cudnn.allow_tf32", "torch.backends.cudnn.allow_tf32 = False",
     "torch.backends.cudnn.allow_tf32"),
    ("matmul_tf32", "backends.cuda.matmul.allow_tf32",
     # Toggled: set_float32_matmul_precision above may have switched it already.
     "torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32",
     "torch.backends.cuda.matmul.allow_tf32"),
    ("fp16_reduction", "backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False",
     "torch._C._get_cublas_allow_fp16_reduced_precision_reduction()"),
    ("bf16_reduction", "backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
     "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False",
     "torch._C._get_cublas_allow_bf16_reduced_precision_reduction()"),
    ("fp16_accumulation", "backends.cuda.matmul.allow_fp16_accumulation",
     "torch.backends.cuda.matmul.allow_fp16_accumulation = True",
     "torch.backends.cuda.matmul.allow_fp16_accumulation"),
    ("flash_sdp", "backends.cuda.flash_sdp_enabled", "torch.backends.cuda.enable_flash_sdp(False)",
     "torch.backends.cuda.flash_sdp_enabled()"),
    ("mem_sdp", "backends.cuda.mem_efficient_sdp_enabled",
     "torch.backends.cuda.enable_mem_efficient_sdp(False)",
     "torch.backends.cuda.mem_efficient_sdp_enabled()"),
    ("math_sdp", "backends.cuda.math_sdp_enabled", "torch.backends.cuda.enable_math_sdp(False)",
     "torch.backends.cuda.math_sdp_enabled()"),
    ("cudnn_sdp", "backends.cuda.cudnn_sdp_enabled", "torch.backends.cuda.enable_cudnn_sdp(False)",
     "torch.backends.cuda.cudnn_sdp_enabled()"),
    ("math_sdp_reduction", "backends.cuda.math_sdp_allow_fp16_bf16_reduction",
     "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)",
     "torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()"),
    ("mkldnn", "backends.mkldnn.enabled", "torch.backends.mkldnn.enabled = False",
     "torch.backends.mkldnn.enabled"),
    ("autocast_cpu", "autocast.cpu.enabled", "torch.set_autocast_enabled('cpu', True)",
     "torch.is_autocast_enabled('cpu')"),
    ("autocast_cpu_dtype", "autocast.cpu.dtype", "torch.set_autocast_dtype('cpu', torch.float16)",
     "str(torch.get_autocast_dtype('cpu'))"),
    ("autocast_cuda", "autocast.cuda.enabled", "torch.set_autocast_enabled('cuda', True)",
     "torch.is_autocast_enabled('cuda')"),
    ("autocast_cache", "autocast.cache_enabled", "torch.set_autocast_cache_enabled(False)",
     "torch.is_autocast_cache_enabled()"),
    ("hook", "nn.module._global_forward_pre_hooks",
     "torch.nn.modules.module.register_module_forward_pre_hook(_pre_hook)",
     "[f'{h.__module__}.{h.__qualname__}' for h in "
     "torch.nn.modules.module._global_forward_pre_hooks.values()]"),
    ("function_mode", "modes.torch_function", "_PassMode().__enter__()",
     "[f'{type(m).__module__}.{type(m).__qualname__}' for m in "
     "torch.overrides._get_current_function_mode_stack()]"),
    ("seed", "rng.initial_seed", "torch.manual_seed(1234)", "torch.initial_seed()"),
    ("dynamo", "dynamo.config", "torch._dynamo.config.recompile_limit = 3",
     "{k: v for k, v in torch._dynamo.config.get_config_copy().items() "
     "if v != torch._dynamo.config._config[k].default}"),
    ("inference", "inference_mode", "_held.append(torch.inference_mode()); _held[-1].__enter__()",
     "torch.is_inference_mode_enabled()"),
    ("device", "default_device", "torch.set_default_device('meta')",
     "str(torch.get_default_device())"),
    # Last: once the new fp32_precision API is used, torch refuses to read the legacy TF32 flags.
    ("fp32_precision", "fp32_precision.cuda.matmul",
     "torch.backends.cuda.matmul.fp32_precision = 'tf32'",
     "torch.backends.cuda.matmul.fp32_precision"),
)

CONFTEST = '''
import json, os, traceback
import torch

CALLS = []

def _wrap(name):
    real = getattr(torch.cuda, name)
    def counting(*args, **kwargs):
        stack = traceback.extract_stack()
        if any("statesnap" in f.filename and "probes" in f.filename for f in stack):
            CALLS.append(name)
        return real(*args, **kwargs)
    setattr(torch.cuda, name, counting)

for _name in ("_lazy_init", "init", "is_available", "device_count", "current_device",
              "memory_stats", "mem_get_info", "synchronize"):
    _wrap(_name)

def pytest_unconfigure(config):
    with open("cuda_calls.json", "w") as f:
        json.dump({"calls": CALLS, "initialized": torch.cuda.is_initialized()}, f)
'''

HEADER = '''
import json
import torch
import torch._dynamo  # imported at collection: the config key exists before the tests
from torch.overrides import TorchFunctionMode

_held = []

class _PassMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

def _pre_hook(module, args):
    return None

def _note(name, before, after):
    with open(f"observed_{name}.json", "w") as f:
        json.dump({"before": before, "after": after}, f, default=str)
'''


def _suite() -> str:
    parts = [HEADER]
    for name, _key, code, expr in CASES:
        parts.append(
            f"\ndef test_{name}():\n"
            f"    before = {expr}\n"
            f"    {code}\n"
            f"    _note({name!r}, before, {expr})\n"
        )
    return "".join(parts)


def _tests(record: Path) -> dict[str, dict[str, Any]]:
    """Each test's changes as the record's reader gives them (a chained change's ``before``
    is the key's previous ``after``, restored by the reader)."""
    out: dict[str, dict[str, Any]] = {}
    for t in read_record(record).tests:
        out[t.nodeid.split("::")[1]] = {"changes": [
            {"probe": c.probe, "key": c.key, "before": c.before, "after": c.after,
             "phase": c.phase} for c in t.changes]}
    return out


def _observed(path: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / f"observed_{name}.json").read_text())
    # JSON turns tuples into lists and dtypes into their str(), as the probe does.
    return {k: json.loads(json.dumps(v, default=str)) for k, v in data.items()}


@pytest.mark.slow
def test_each_flag_changed_by_a_test_is_recorded(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_flags=_suite())
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-probes", "torch",
        "--statesnap-record", "run.jsonl", "--statesnap-verify-budget", "0",
    )
    result.assert_outcomes(passed=len(CASES))
    tests = _tests(pytester.path / "run.jsonl")
    for name, key, _code, _expr in CASES:
        observed = _observed(pytester.path, name)
        changes = {c["key"]: c for c in tests[f"test_{name}"]["changes"] if c["probe"] == "torch"}
        assert key in changes, f"test_{name}: {key} not recorded (got {sorted(changes)})"
        change = changes[key]
        if key == "dynamo.config":
            assert change["after"]["recompile_limit"] == 3
            assert (change["before"], change["after"]) == (observed["before"], observed["after"])
        elif key == "default_device":
            # get_default_device() indexes the device; the probe reads it as it was set.
            assert (change["before"], change["after"]) == ("cpu", "meta")
        else:
            assert (change["before"], change["after"]) == (observed["before"], observed["after"])
        if not key.startswith("fp32_precision."):  # read at the test's end only: no phase
            assert change.get("phase") == "call", (name, change)
    # Side effects torch itself couples to the flag, seen as such.
    device = {c["key"] for c in tests["test_device"]["changes"]}
    assert "modes.torch_function" in device
    fp32 = {c["key"]: c for c in tests["test_fp32_precision"]["changes"]}
    assert str(fp32["backends.cuda.matmul.allow_tf32"]["after"]).startswith("error: RuntimeError")
    cuda = json.loads((pytester.path / "cuda_calls.json").read_text())
    assert cuda == {"calls": [], "initialized": False}


@pytest.mark.slow
def test_dtype_polluter_is_named_and_verified(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_victim="""
        import torch

        def test_sets_float64():
            torch.set_default_dtype(torch.float64)

        def test_quiet():
            pass

        def test_expects_float32():
            assert torch.ones(1).dtype == torch.float32
    """)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-probes", "torch",
        "--statesnap-json", "out.json",
    )
    result.assert_outcomes(passed=2, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    (finding,) = summary["findings"]
    assert finding["victim"] == "test_victim.py::test_expects_float32"
    assert finding["polluters"] == ["test_victim.py::test_sets_float64"]
    assert (finding["probe"], finding["key"], finding["status"]) == (
        "torch", "default_dtype", "verified"
    )
