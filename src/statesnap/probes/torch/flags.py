"""The table of PyTorch's global flags that the ``torch`` probe reads, and how to put each back.

Each entry: a key, readers tried in order, an optional setter, a severity and a hint.  A flag no
reader can read in this build is skipped; no reader initialises CUDA or imports anything
(hence no ``torch.get_default_device()``).  See docs/PROBES.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from statesnap.probes.base import Severity

Reader = Callable[[], object]
#: Given the ``torch`` module, a zero-argument reader; raises (AttributeError...) when missing.
Resolver = Callable[[Any], Reader]
#: ``setter(torch, value)`` puts a value captured by a reader back.
Setter = Callable[[Any, Any], None]


@dataclass(frozen=True)
class Flag:
    """One global flag: its key in the probe's map, how to read it, how to put it back."""

    key: str
    readers: Sequence[Resolver]
    setter: Setter | None = None
    hint: str = ""
    severity: Severity = Severity.MEDIUM
    #: Read at checkpoints inside a test too, which tells the phase (and the fixture) that
    #: made a change.  Only the nine ``fp32_precision`` knobs (~0.2-0.3 us each, string
    #: arguments) and a derived value are left to the end-of-test token: their changes are
    #: recorded without a phase.
    light: bool = True
    #: The reader may raise in a valid state: torch 2.9+ refuses to read the legacy TF32 flags
    #: once the new ``fp32_precision`` API was used.  The error then *is* the fingerprint.
    raises: bool = False


def c(name: str, *args: object) -> Resolver:
    """Reader of ``torch._C.<name>(*args)``."""

    def resolve(t: Any) -> Reader:
        fn = getattr(t._C, name)
        return partial(fn, *args) if args else fn

    return resolve


def fn(name: str, *args: object) -> Resolver:
    """Reader of ``torch.<name>(*args)`` (a dotted name walks attributes)."""

    def resolve(t: Any) -> Reader:
        obj = t
        for part in name.split("."):
            obj = getattr(obj, part)
        return partial(obj, *args) if args else obj

    return resolve


def modattr(module: str, attr: str) -> Resolver:
    """Reader of ``<module>.<attr>``, the module taken from ``sys.modules`` (never imported)."""

    def resolve(t: Any) -> Reader:
        mod = sys.modules[module]
        getattr(mod, attr)  # fail now, at resolution, when this build has no such flag
        return lambda: getattr(mod, attr)

    return resolve


def default_device(t: Any) -> Reader:
    """The device set by ``torch.set_default_device``, without touching that device.

    ``torch.get_default_device()`` turns an index-less device into an indexed one by making an
    empty tensor on it; here the device is read as it was set (``cuda``, ``meta``, ``cpu``).
    """
    # A threading.local: its __dict__ is this thread's.  getattr with a default would raise
    # and swallow an AttributeError on every read while no default device is set (~1.4 us).
    holder = t._GLOBAL_DEVICE_CONTEXT

    def read() -> object:
        ctx = holder.__dict__.get("device_context")
        return "cpu" if ctx is None else str(getattr(ctx, "device", ctx))

    return read


def _call_c(name: str, *pre: object) -> Setter:
    """Setter calling ``torch._C.<name>(*pre, value)``; a tuple value is spread."""

    def put(t: Any, value: Any) -> None:
        target = getattr(t._C, name)
        if isinstance(value, (tuple, list)):
            target(*pre, *value)
        else:
            target(*pre, value)

    return put


def _call(name: str) -> Setter:
    def put(t: Any, value: Any) -> None:
        getattr(t, name)(value)

    return put


def _set_default_device(t: Any, value: Any) -> None:
    t.set_default_device(None if value == "cpu" else value)


def _set_anomaly(which: int) -> Setter:
    def put(t: Any, value: Any) -> None:
        current = [t.is_anomaly_enabled(), t.is_anomaly_check_nan_enabled()]
        current[which] = bool(value)
        t.set_anomaly_enabled(*current)

    return put


def _set_deterministic(which: int) -> Setter:
    def put(t: Any, value: Any) -> None:
        current = [
            t.are_deterministic_algorithms_enabled(),
            t.is_deterministic_algorithms_warn_only_enabled(),
        ]
        current[which] = bool(value)
        t.use_deterministic_algorithms(current[0], warn_only=current[1])

    return put


def _set_autocast(device: str, what: str) -> Setter:
    def put(t: Any, value: Any) -> None:
        if what == "enabled":
            t.set_autocast_enabled(device, bool(value))
        else:
            t.set_autocast_dtype(device, value)

    return put


_MP = "monkeypatch"
_DET = ("torch.use_deterministic_algorithms(...) in a fixture that puts the previous mode back "
        "after the test")
_CUDNN = ("use the context manager torch.backends.cudnn.flags(...) or a fixture that saves and "
          "restores torch.backends.cudnn.{name}")
_MATMUL = ("set torch.backends.cuda.matmul.{name} in a fixture that restores it, or "
           f"{_MP}.setattr(torch.backends.cuda.matmul, '{{name}}', ...)")
_SDP = ("use the context manager torch.nn.attention.sdpa_kernel(...) instead of "
        "torch.backends.cuda.enable_{name}_sdp(...)")
_FP32 = ("set fp32_precision in a fixture that puts the previous value back; it also changes "
         "the matching allow_tf32 flag")


def _autocast(device: str) -> list[Flag]:
    hint = (f"use `with torch.autocast('{device}'):` instead of torch.set_autocast_enabled"
            "; an autocast context entered without exiting leaks too")
    legacy_enabled = "is_autocast_cpu_enabled" if device == "cpu" else "is_autocast_enabled"
    legacy_dtype = "get_autocast_cpu_dtype" if device == "cpu" else "get_autocast_gpu_dtype"
    return [
        Flag(f"autocast.{device}.enabled", (fn("is_autocast_enabled", device), fn(legacy_enabled)),
             _set_autocast(device, "enabled"), hint, Severity.HIGH),
        Flag(f"autocast.{device}.dtype", (fn("get_autocast_dtype", device), fn(legacy_dtype)),
             _set_autocast(device, "dtype"), hint),
    ]


#: The ``fp32_precision`` knobs of torch 2.9+ (``torch.backends.<backend>.<op>.fp32_precision``).
_FP32_OPS = (
    ("generic", "all"),
    ("cuda", "all"), ("cuda", "matmul"), ("cuda", "conv"), ("cuda", "rnn"),
    ("mkldnn", "all"), ("mkldnn", "matmul"), ("mkldnn", "conv"), ("mkldnn", "rnn"),
)


def _fp32(backend: str, op: str) -> Flag:
    return Flag(f"fp32_precision.{backend}.{op}",
                (c("_get_fp32_precision_getter", backend, op),),
                _call_c("_set_fp32_precision_setter", backend, op), _FP32, light=False)


#: Every flag, in the order shown.  Cheap reads only: the whole table costs a few microseconds.
FLAGS: tuple[Flag, ...] = (
    Flag("default_dtype", (fn("get_default_dtype"),), _call("set_default_dtype"),
         "set the default dtype inside a fixture that calls torch.set_default_dtype(previous) "
         "afterwards", Severity.HIGH),
    Flag("default_device", (default_device,), _set_default_device,
         "use `with torch.device(...):` instead of torch.set_default_device(...), or reset it "
         "with torch.set_default_device(None) after the test", Severity.HIGH),
    Flag("grad_enabled", (c("is_grad_enabled"), fn("is_grad_enabled")),
         _call_c("_set_grad_enabled"),
         "use `with torch.no_grad():` instead of torch.set_grad_enabled(False) at module or "
         "test level", Severity.HIGH),
    Flag("inference_mode", (c("_is_inference_mode_enabled"), fn("is_inference_mode_enabled")),
         None, "an inference_mode() context was entered and never exited: use it as a `with` "
         "block", Severity.HIGH),
    Flag("forward_grad_enabled", (c("_is_fwd_grad_enabled"),), _call_c("_set_fwd_grad_enabled"),
         "forward-mode AD was switched off globally: use a `with` block"),
    Flag("anomaly.enabled", (fn("is_anomaly_enabled"),), _set_anomaly(0),
         "use `with torch.autograd.detect_anomaly():` instead of "
         "torch.autograd.set_detect_anomaly(True)"),
    Flag("anomaly.check_nan", (fn("is_anomaly_check_nan_enabled"),), _set_anomaly(1),
         "use `with torch.autograd.detect_anomaly(check_nan=...):` so it is put back"),
    Flag("deterministic.enabled",
         (c("_get_deterministic_algorithms"), fn("are_deterministic_algorithms_enabled")),
         _set_deterministic(0), f"call {_DET}", Severity.HIGH),
    Flag("deterministic.warn_only",
         (c("_get_deterministic_algorithms_warn_only"),
          fn("is_deterministic_algorithms_warn_only_enabled")),
         _set_deterministic(1), f"call {_DET}"),
    Flag("deterministic.debug_mode", (fn("get_deterministic_debug_mode"),),
         _call("set_deterministic_debug_mode"),
         "call torch.set_deterministic_debug_mode(...) in a fixture that restores it",
         light=False),  # derived from the two flags above, which the light token reads
    Flag("deterministic.fill_uninitialized_memory",
         (c("_get_deterministic_fill_uninitialized_memory"),
          modattr("torch.utils.deterministic", "fill_uninitialized_memory")),
         _call_c("_set_deterministic_fill_uninitialized_memory"),
         "set torch.utils.deterministic.fill_uninitialized_memory in a fixture that restores it"),
    Flag("threads.intra_op", (fn("get_num_threads"),), _call("set_num_threads"),
         "call torch.set_num_threads(...) in a fixture that puts torch.get_num_threads() back",
         Severity.LOW),
    Flag("threads.inter_op", (fn("get_num_interop_threads"),), None,
         "torch.set_num_interop_threads can be called once per process: set it in conftest "
         "before any test, or run the test in a subprocess", Severity.LOW),
    Flag("float32_matmul_precision",
         (c("_get_float32_matmul_precision"), fn("get_float32_matmul_precision")),
         _call("set_float32_matmul_precision"),
         "call torch.set_float32_matmul_precision(...) in a fixture that restores the previous "
         "value", raises=True),
    *(_fp32(backend, op) for backend, op in _FP32_OPS),
    Flag("backends.cudnn.enabled",
         (c("_get_cudnn_enabled"), modattr("torch.backends.cudnn", "enabled")),
         _call_c("_set_cudnn_enabled"), _CUDNN.format(name="enabled")),
    Flag("backends.cudnn.benchmark",
         (c("_get_cudnn_benchmark"), modattr("torch.backends.cudnn", "benchmark")),
         _call_c("_set_cudnn_benchmark"), _CUDNN.format(name="benchmark")),
    Flag("backends.cudnn.deterministic",
         (c("_get_cudnn_deterministic"), modattr("torch.backends.cudnn", "deterministic")),
         _call_c("_set_cudnn_deterministic"), _CUDNN.format(name="deterministic"),
         Severity.HIGH),
    Flag("backends.cudnn.allow_tf32",
         (c("_get_cudnn_allow_tf32"), modattr("torch.backends.cudnn", "allow_tf32")),
         _call_c("_set_cudnn_allow_tf32"), _CUDNN.format(name="allow_tf32"), raises=True),
    Flag("backends.cuda.matmul.allow_tf32", (c("_get_cublas_allow_tf32"),),
         _call_c("_set_cublas_allow_tf32"), _MATMUL.format(name="allow_tf32"), raises=True),
    Flag("backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
         (c("_get_cublas_allow_fp16_reduced_precision_reduction"),),
         _call_c("_set_cublas_allow_fp16_reduced_precision_reduction"),
         _MATMUL.format(name="allow_fp16_reduced_precision_reduction")),
    Flag("backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
         (c("_get_cublas_allow_bf16_reduced_precision_reduction"),),
         _call_c("_set_cublas_allow_bf16_reduced_precision_reduction"),
         _MATMUL.format(name="allow_bf16_reduced_precision_reduction")),
    Flag("backends.cuda.matmul.allow_fp16_accumulation",
         (c("_get_cublas_allow_fp16_accumulation"),),
         _call_c("_set_cublas_allow_fp16_accumulation"),
         _MATMUL.format(name="allow_fp16_accumulation")),
    Flag("backends.cuda.flash_sdp_enabled",
         (c("_get_flash_sdp_enabled"), fn("backends.cuda.flash_sdp_enabled")),
         _call_c("_set_sdp_use_flash"), _SDP.format(name="flash")),
    Flag("backends.cuda.mem_efficient_sdp_enabled",
         (c("_get_mem_efficient_sdp_enabled"), fn("backends.cuda.mem_efficient_sdp_enabled")),
         _call_c("_set_sdp_use_mem_efficient"), _SDP.format(name="mem_efficient")),
    Flag("backends.cuda.math_sdp_enabled",
         (c("_get_math_sdp_enabled"), fn("backends.cuda.math_sdp_enabled")),
         _call_c("_set_sdp_use_math"), _SDP.format(name="math")),
    Flag("backends.cuda.cudnn_sdp_enabled",
         (c("_get_cudnn_sdp_enabled"), fn("backends.cuda.cudnn_sdp_enabled")),
         _call_c("_set_sdp_use_cudnn"), _SDP.format(name="cudnn")),
    Flag("backends.cuda.overrideable_sdp_enabled", (c("_get_overrideable_sdp_enabled"),),
         _call_c("_set_sdp_use_overrideable"), _SDP.format(name="overrideable")),
    Flag("backends.cuda.math_sdp_allow_fp16_bf16_reduction",
         (c("_get_math_sdp_allow_fp16_bf16_reduction"),),
         _call_c("_set_math_sdp_allow_fp16_bf16_reduction"),
         "call torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(...) in a fixture that "
         "restores it"),
    Flag("backends.mkldnn.enabled",
         (c("_get_mkldnn_enabled"), modattr("torch.backends.mkldnn", "enabled")),
         _call_c("_set_mkldnn_enabled"),
         "use `with torch.backends.mkldnn.flags(enabled=...):` so it is put back"),
    Flag("backends.cuda.preferred_linalg_library", (c("_get_linalg_preferred_backend"),),
         _call_c("_set_linalg_preferred_backend"),
         "call torch.backends.cuda.preferred_linalg_library(...) in a fixture that restores "
         "the previous backend"),
    *_autocast("cpu"),
    *_autocast("cuda"),
    Flag("autocast.cache_enabled", (fn("is_autocast_cache_enabled"),),
         _call("set_autocast_cache_enabled"),
         "use torch.autocast(..., cache_enabled=...) as a `with` block"),
)


def tolerant(reader: Reader) -> Reader:
    """A reader that answers ``"error: <Type>: <message>"`` instead of raising."""

    def read() -> object:
        try:
            return reader()
        except Exception as exc:
            text = str(exc).strip().splitlines()
            first = text[0][:100] if text else ""
            return f"error: {type(exc).__name__}: {first}"

    return read


def jsonable(value: object) -> object:
    """A flag value as a JSON-able fingerprint: dtypes and enums by name, tuples as lists."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__name__.startswith("_"):
        return name  # pybind11 enums such as _LinalgBackend.Default
    return str(value)
