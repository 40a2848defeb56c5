"""``nvml``: GPU memory held by this process and its children, and device-wide, through NVML.

Keys per device: ``gpu<i>.process_used``, ``gpu<i>.process_count``, ``gpu<i>.used``.  NVML is
asked after every test only while something suggests GPU use, otherwise every
:data:`IDLE_EVERY`-th test; unavailable without the library or driver.  See docs/PROBES.md.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, ProbeUnavailable, Severity

#: Tests between two NVML queries while nothing suggests GPU use; --statesnap-nvml-every (or
#: the older ``STATESNAP_NVML_EVERY``) overrides it (1: query after every test).
IDLE_EVERY = 16
EVERY_ENV = "STATESNAP_NVML_EVERY"
#: Modules whose presence means this process may be using a GPU (besides torch with CUDA).
GPU_MODULES = ("cupy", "numba.cuda", "pycuda.driver", "cuda.bindings", "jax", "tensorflow",
               "paddle", "mxnet", "tensorrt")
#: Walking up from a listed pid to ours: deeper trees than this are not followed.
MAX_DEPTH = 32

NOTE_FOREIGN = (
    "NVML lists GPU processes whose pids do not exist here (a container's pid namespace?): "
    "GPU memory is not attributed to this process; only device-wide used memory is recorded"
)
NOTE_UNSEEN = (
    "NVML lists no process of this one although it holds a CUDA context (a container or "
    "sandbox that hides or renames pids?): GPU memory is not attributed to this process; only "
    "device-wide used memory is recorded"
)
HINT_PROCESS = (
    "GPU memory held by this process or its children grew during the test and stayed: a "
    "tensor outlived it (module global, cache, wide fixture), the caching allocator kept it "
    "(torch.cuda.empty_cache()), or a CUDA context was created (several hundred MiB, for the "
    "rest of the process). Run GPU tests in a subprocess or a separate worker to keep others clean"
)
HINT_COUNT = (
    "a process of this test's tree (this process or a child left running) now holds a CUDA "
    "context: later tests that fork, or need the device to themselves, are affected"
)
HINT_DEVICE = (
    "device-wide used memory includes every process on the GPU (other pytest-xdist workers, "
    "other jobs): context for the process keys, rarely a cause by itself"
)
#: Why the probe is off on a machine with no NVIDIA driver: said only under ``-v``.
NO_LIBRARY = "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver on this machine"


def _library_loads() -> bool:
    """Whether the dynamic loader finds NVML (the same lookup pynvml's init does)."""
    try:
        import ctypes

        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def _reason(nv: Any, exc: BaseException) -> str:
    """One line saying why NVML cannot be used here."""
    kinds = (
        ("NVMLError_LibraryNotFound", NO_LIBRARY),
        ("NVMLError_DriverNotLoaded", "NVIDIA driver not loaded"),
        ("NVMLError_NoPermission", "no permission to use NVML"),
        ("NVMLError_LibRmVersionMismatch", "NVML library and kernel driver versions differ"),
    )
    for name, text in kinds:
        cls = getattr(nv, name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return text
    return f"NVML initialisation failed: {type(exc).__name__}: {exc}"


def _torch_holds_context() -> bool:
    """Whether torch, already imported and with CUDA initialised, holds a device context.

    ``_cuda_hasPrimaryContext`` asks the driver about an existing context without creating
    one; it is only called once torch initialised CUDA (before that it could initialise the
    driver itself) and never in a forked child, where CUDA must not be touched.
    """
    cuda = sys.modules.get("torch.cuda")
    torch = sys.modules.get("torch")
    if cuda is None or torch is None or getattr(cuda, "_initialized", False) is not True:
        return False
    c = getattr(torch, "_C", None)
    has_context = getattr(c, "_cuda_hasPrimaryContext", None)
    bad_fork = getattr(c, "_cuda_isInBadFork", None)
    if has_context is None or (bad_fork is not None and bad_fork()):
        return False
    count = getattr(cuda, "_cached_device_count", None)
    if not isinstance(count, int):
        count_fn = getattr(c, "_cuda_getDeviceCount", None)
        count = int(count_fn()) if count_fn is not None else 0
    return any(has_context(i) for i in range(count))


def _parent_of(pid: int) -> int | None:
    """The parent pid from ``/proc/<pid>/stat``; ``None`` if the process is not visible."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last.
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else None


class NvmlProbe(Probe):
    name = "nvml"
    severity = Severity.HIGH

    def __init__(self) -> None:
        self._nv: Any = None
        self._pid = -1
        self._handles: list[Any] = []
        self._notes: dict[str, str] = {}
        self._map: ProbeMap | None = None
        self._generation = 0
        self._tokens = 0
        self._holding = False
        #: "unknown" until a listed pid is seen; then "shared" (NVML's pids are ours),
        #: "foreign" (its pids do not exist here) or "unseen" (we hold a context it does not list).
        self.pid_namespace = "unknown"
        self._not_ours: set[int] = set()
        self.queries = 0
        self.every = IDLE_EVERY
        self.mode = ""

    # -- once per process -----------------------------------------------------------------
    def setup(self, ctx: ProbeContext) -> None:
        if importlib.util.find_spec("pynvml") is None:
            raise ProbeUnavailable("nvidia-ml-py (pynvml) is not installed", absent=True)
        if sys.platform.startswith("linux") and not _library_loads():
            # pynvml would load the same file by the same name; asking the loader first saves
            # importing pynvml (~10 ms of every session) on every machine without a GPU.
            raise ProbeUnavailable(NO_LIBRARY, absent=True)
        import pynvml
        self._nv = pynvml
        self._notes = ctx.notes
        self.every = self._every(ctx.probe_options.get("nvml_every"))
        self._ensure_init()
        names = []
        for h in self._handles[:1]:
            try:
                names.append(str(pynvml.nvmlDeviceGetName(h)))
            except pynvml.NVMLError:
                pass
        what = f"{len(self._handles)} GPU(s)" + (f" ({names[0]})" if names else "")
        self.mode = f"{what}; queried after every test" + (
            "" if self.every == 1 else
            f" while the GPU is in use here, otherwise every {self.every} tests"
        )
        try:
            self._refresh()  # also learns whether NVML's pids are ours (the header note)
        except pynvml.NVMLError as exc:
            raise ProbeUnavailable(f"NVML query failed: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _every(option: str | None = None) -> int:
        """``--statesnap-nvml-every`` / ini ``statesnap_nvml_every``, else the environment
        variable (kept: replay children and older setups use it), else the default."""
        source, text = ("statesnap_nvml_every", option.strip()) if option else (
            EVERY_ENV, os.environ.get(EVERY_ENV, "").strip())
        if not text:
            return IDLE_EVERY
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ProbeUnavailable(f"{source} must be a whole number of tests >= 1, "
                                   f"not {text!r}")
        return value

    def _ensure_init(self) -> None:
        pid = os.getpid()
        if pid == self._pid:
            return
        nv = self._nv
        try:
            nv.nvmlInit()
            count = nv.nvmlDeviceGetCount()
            self._handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except nv.NVMLError as exc:
            missing = getattr(nv, "NVMLError_LibraryNotFound", None)
            absent = isinstance(missing, type) and isinstance(exc, missing)
            raise ProbeUnavailable(_reason(nv, exc), absent=absent) from None
        self._pid = pid
        self._not_ours.clear()  # "ours" is relative to the process that asks

    def close(self) -> None:
        if self._nv is not None and self._pid == os.getpid():
            try:
                self._nv.nvmlShutdown()
            except self._nv.NVMLError:
                pass
            self._pid = -1

    # -- per test -------------------------------------------------------------------------
    def _gpu_in_use(self) -> bool:
        """The cheap signals that make a per-test NVML query worth its cost."""
        mods = sys.modules
        cuda = mods.get("torch.cuda")
        if cuda is not None and getattr(cuda, "_initialized", False) is True:
            return True
        return self._holding or any(name in mods for name in GPU_MODULES)

    def token(self) -> object:
        self._tokens += 1
        if (self._map is None or os.getpid() != self._pid or self._gpu_in_use()
                or self._tokens % self.every == 0):
            self._refresh()
        return self._generation

    def light_token(self) -> object:
        # Checkpoints inside a test never pay for NVML; the end-of-test token does.
        return self._generation

    def read(self) -> ProbeMap:
        if self._map is None:
            self._refresh()
        assert self._map is not None
        return self._map

    def _is_ours(self, pid: int, own: int) -> bool | None:
        """True for this process or a descendant, False for another, None if not visible."""
        if pid == own:
            return True
        if pid in self._not_ours:
            return False
        step, depth = pid, 0
        while depth < MAX_DEPTH:
            parent = _parent_of(step)
            if parent is None:
                return None if step == pid else False
            if parent == own:
                return True
            if parent <= 1:
                break
            step, depth = parent, depth + 1
        # A pid that is not ours now never becomes ours (short of pid reuse): remember it.
        self._not_ours.add(pid)
        return False

    def _refresh(self) -> None:
        self._ensure_init()
        nv = self._nv
        own = os.getpid()
        self.queries += 1
        devices: list[tuple[int, int, int, bool]] = []
        listed_visible = listed_foreign = 0
        for handle in self._handles:
            used = int(nv.nvmlDeviceGetMemoryInfo(handle).used)
            try:
                procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
            except (nv.NVMLError_NotSupported, nv.NVMLError_NoPermission):
                procs = None  # MIG parents, vGPU, restricted containers: device-wide only
            mine = count = 0
            known = procs is not None
            for proc in procs or ():
                ours = self._is_ours(int(proc.pid), own)
                if ours is None:
                    listed_foreign += 1
                    continue
                listed_visible += 1
                if ours:
                    count += 1
                    if proc.usedGpuMemory is None:
                        known = False  # NVML_VALUE_NOT_AVAILABLE: no number to report
                    else:
                        mine += int(proc.usedGpuMemory)
            devices.append((used, mine, count, known))
        matched = any(count for _, _, count, _ in devices)
        self._judge_namespace(matched, listed_visible, listed_foreign)
        attributable = self.pid_namespace not in ("foreign", "unseen")
        out: ProbeMap = {}
        holding = False
        for i, (used, mine, count, known) in enumerate(devices):
            out[f"gpu{i}.used"] = used
            if attributable and known:
                out[f"gpu{i}.process_used"] = mine
                out[f"gpu{i}.process_count"] = count
                holding = holding or count > 0
        self._holding = holding
        if out != self._map:
            self._map = out
            self._generation += 1

    def _judge_namespace(self, matched: bool, visible: int, foreign: int) -> None:
        """Can NVML's pids be matched to ours?  Decides whether process keys are facts."""
        if matched:
            self.pid_namespace = "shared"
            self._notes.pop("nvml", None)
        elif _torch_holds_context():
            # We know we hold a context, and NVML lists no process of ours: it cannot see us.
            self.pid_namespace = "unseen"
            self._notes["nvml"] = NOTE_UNSEEN
        elif self.pid_namespace in ("foreign", "unseen"):
            return  # once zeros are known to be meaningless they stay so
        elif visible:
            self.pid_namespace = "shared"
        elif foreign:
            self.pid_namespace = "foreign"
            self._notes["nvml"] = NOTE_FOREIGN

    # -- judging a change -----------------------------------------------------------------
    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key.endswith(".used"):
            return Severity.LOW
        grew = isinstance(after, int) and after > (before if isinstance(before, int) else 0)
        return Severity.HIGH if grew else Severity.LOW

    def hint(self, key: str, change: str) -> str | None:
        if key.endswith(".process_used"):
            return HINT_PROCESS
        if key.endswith(".process_count"):
            return HINT_COUNT
        return HINT_DEVICE

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        if key.endswith("_count") or not isinstance(after, int):
            return None
        delta = after - (before if isinstance(before, int) else 0)
        return f"{delta / 2**20:+.1f} MiB"

    def gauges(self, current: ProbeMap) -> dict[str, float]:
        return {
            f"nvml.{key}_mib": round(value / 2**20, 1)
            for key, value in current.items()
            if isinstance(value, int) and not key.endswith("_count")
        }
