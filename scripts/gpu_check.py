"""GPU check for the ``torch`` and ``nvml`` probes, on a machine with an NVIDIA GPU.

    PYTHONPATH=src python3 scripts/gpu_check.py [--out DIR]

Runs with whatever ``python3`` holds a CUDA build of torch (statesnap from ``src``, no install
needed).  Every step runs in a subprocess, so this process never initialises CUDA itself:

1. direct: the probes around a real CUDA initialisation, a 64 MiB allocation, a fork (the
   bad-fork flag, NVML initialised again in the child), and their measured costs;
2. suite: a pytest run with ``-p statesnap`` where one test initialises CUDA, one keeps a CUDA
   tensor in a module global, one turns on ``cudnn.benchmark``, and a later test fails because
   of each; statesnap must name each polluter and verify it by replay.

Prints ``PASS`` / ``FAIL`` / ``SKIP`` / ``INFO`` / ``COST`` lines.  Exit status: 0 when nothing
failed, 1 when a check failed, 2 when there is no CUDA GPU here (nothing was checked).
With ``--out DIR`` the suite's record, summary JSON and log are copied there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20

PREFLIGHT = """
import json, torch
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda,
                  "available": torch.cuda.is_available(),
                  "devices": torch.cuda.device_count() if torch.cuda.is_available() else 0}))
"""

DIRECT = r"""
import json, os, sys, timeit
from pathlib import Path
import torch
from statesnap.probes.base import ProbeContext, ProbeUnavailable, Severity
from statesnap.probes.nvml import NvmlProbe
from statesnap.probes.torch.probe import TorchProbe

MIB = 2**20
out = {"checks": [], "costs": {}, "info": {}}
def check(name, ok, detail=""):
    out["checks"].append([name, bool(ok), str(detail)])
def cost(name, fn, number=2000):
    best = min(timeit.repeat(fn, number=number, repeat=7)) / number
    out["costs"][name] = round(best * 1e6, 2)

calls = []
real_lazy_init = torch.cuda._lazy_init
def counting_lazy_init(*a, **k):
    calls.append(1)
    return real_lazy_init(*a, **k)
torch.cuda._lazy_init = counting_lazy_init

ctx = ProbeContext(rootdir=Path.cwd())
tp = TorchProbe(); tp.setup(ctx)
try:
    npr = NvmlProbe(); npr.setup(ctx)
except ProbeUnavailable as exc:
    npr = None
    out["info"]["nvml"] = f"unavailable: {exc}"
m0, t0 = tp.read(), tp.token()
n0 = npr.read() if npr else {}
cost("torch.light_token (CUDA not initialised)", tp.light_token)
cost("torch.token (CUDA not initialised)", tp.token)
cost("torch.read (CUDA not initialised)", tp.read, 200)
if npr:
    q = npr.queries
    cost("nvml.token (idle: sampled)", npr.token)
    idle = (npr.queries - q) / (2000 * 7)
    out["info"]["nvml idle queries per 1000 tokens"] = round(idle * 1000, 1)
    cost("nvml refresh (one NVML query, all devices)", npr._refresh, 200)
check("torch probe reads without initialising CUDA",
      calls == [] and not torch.cuda.is_initialized() and m0["cuda.initialized"] is False,
      f"_lazy_init calls: {len(calls)}, is_initialized: {torch.cuda.is_initialized()}")
if npr:
    out["info"]["nvml mode"] = npr.mode
    out["info"]["nvml pid namespace at start"] = npr.pid_namespace
    check("nvml probe starts without a CUDA context",
          not torch.cuda.is_initialized() and all(v == 0 for k, v in n0.items()
                                                  if k.endswith("process_count")), n0)

x = torch.empty(64 * MIB, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
m1 = tp.read()
alloc = m1.get("cuda:0.memory_allocated")
check("cuda.initialized False -> True after the first CUDA tensor",
      m0["cuda.initialized"] is False and m1["cuda.initialized"] is True)
check("token moved with CUDA initialisation", tp.token() != t0)
check("cuda:0.memory_allocated matches torch.cuda.memory_allocated(0) and holds 64 MiB",
      alloc == torch.cuda.memory_allocated(0) and alloc >= 64 * MIB, alloc)
check("cuda:0.memory_reserved matches torch.cuda.memory_reserved(0), >= allocated",
      m1.get("cuda:0.memory_reserved") == torch.cuda.memory_reserved(0)
      and m1.get("cuda:0.memory_reserved", 0) >= (alloc or 0), m1.get("cuda:0.memory_reserved"))
devices = sum(1 for k in m1 if k.endswith(".memory_allocated"))
check("one memory key pair per device torch initialised",
      devices == torch.cuda.device_count(), f"{devices} of {torch.cuda.device_count()}")
check("cuda.initialized is HIGH with a fork hint",
      tp.severity_of("cuda.initialized", False, True) == Severity.HIGH
      and "fork" in (tp.hint("cuda.initialized", "changed") or ""))
stats = torch._C._cuda_memoryStats
cost("torch._C._cuda_memoryStats(0) alone", lambda: stats(0))
cost("torch.light_token (CUDA initialised)", tp.light_token)
cost("torch.token (CUDA initialised)", tp.token)
cost("torch.read (CUDA initialised)", tp.read, 200)

if npr:
    q = npr.queries
    npr.token()
    n1 = npr.read()
    check("nvml asks after every test once CUDA is initialised", npr.queries == q + 1)
    out["info"]["nvml map with 64 MiB allocated"] = n1
    out["info"]["nvml pid namespace"] = npr.pid_namespace
    if npr.pid_namespace in ("foreign", "unseen"):
        # A container or sandbox (gVisor...) that hides our pid from the driver: no process
        # keys, and the header note says why.  That is the probe working, not failing.
        out["info"]["nvml note"] = ctx.notes.get("nvml", "")
        check("nvml says why it cannot attribute memory here", "nvml" in ctx.notes
              and not any(k.endswith(".process_used") for k in n1))
    else:
        mine = sum(v for k, v in n1.items() if k.endswith(".process_used"))
        check("nvml: this process holds its context + 64 MiB", mine >= 64 * MIB,
              f"{mine / MIB:.0f} MiB")
        check("nvml: process_count counts this process",
              sum(v for k, v in n1.items() if k.endswith(".process_count")) >= 1)
    cost("nvml.token (active: CUDA initialised)", npr.token, 200)

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    child = {}
    try:
        mc = tp.read()
        child["bad_fork"] = mc.get("cuda.bad_fork")
        child["memory_keys"] = sorted(k for k in mc if k.startswith("cuda:"))
        if npr:
            npr.token()
            child["nvml"] = npr.read()
            child["nvml_ns"] = npr.pid_namespace
    except BaseException as exc:
        child["error"] = f"{type(exc).__name__}: {exc}"
    os.write(w, json.dumps(child).encode())
    os._exit(0)
os.close(w)
with os.fdopen(r) as f:
    child = json.loads(f.read() or "{}")
os.waitpid(pid, 0)
check("cuda.bad_fork True in a child forked after CUDA init", child.get("bad_fork") is True, child)
check("no CUDA memory asked for in the bad fork", child.get("memory_keys") == [], child)
if npr:
    check("nvml initialised again in the forked child", "nvml" in child, child.get("error", ""))
    if child.get("nvml_ns") == "shared":
        mine = sum(v for k, v in child["nvml"].items() if k.endswith(".process_used"))
        check("nvml: the child, holding no context, uses no GPU memory", mine == 0, mine)

del x
torch.cuda.empty_cache()
m2 = tp.read()
check("memory_allocated back down after del + empty_cache",
      m2.get("cuda:0.memory_allocated", 0) < (alloc or 0), m2.get("cuda:0.memory_allocated"))
print(json.dumps(out))
"""

SUITE = '''
import multiprocessing
import torch

_cache = []


def _child_uses_cuda():
    try:
        torch.zeros(1, device="cuda")
        return "ok"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def test_a_initialises_cuda():
    assert torch.zeros(4, device="cuda").sum().item() == 0


def test_b_forked_worker_uses_cuda():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_child_uses_cuda) == "ok"


def test_c_caches_a_cuda_tensor():
    _cache.append(torch.ones(16 * 2**20, device="cuda"))  # 64 MiB kept in a module global


def test_d_starts_with_no_gpu_memory():
    assert torch.cuda.memory_allocated() == 0


def test_e_turns_on_benchmark_mode():
    torch.backends.cudnn.benchmark = True


def test_f_needs_reproducible_conv_selection():
    assert not torch.backends.cudnn.benchmark, "cudnn.benchmark picks algorithms by timing"
'''

_NVML_CONTEXT = {"nvml:gpu0.process_used", "nvml:gpu0.process_count"}
#: victim -> (expected polluter, the probe:key refs statesnap may name for it)
EXPECTED: dict[str, tuple[str, set[str]]] = {
    "test_b_forked_worker_uses_cuda": (
        "test_a_initialises_cuda", {"torch:cuda.initialized", *_NVML_CONTEXT}),
    "test_d_starts_with_no_gpu_memory": (
        "test_c_caches_a_cuda_tensor",
        {"torch:cuda:0.memory_allocated", "torch:cuda:0.memory_reserved", *_NVML_CONTEXT}),
    "test_f_needs_reproducible_conv_selection": (
        "test_e_turns_on_benchmark_mode", {"torch:backends.cudnn.benchmark"}),
}


class Report:
    def __init__(self) -> None:
        self.failed = 0

    def line(self, status: str, name: str, detail: object = "") -> None:
        if status == "FAIL":
            self.failed += 1
        text = f"{status} {name}"
        if detail not in ("", None):
            text += f" -- {detail}"
        print(text, flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH"))
                                        if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _python(code: str, timeout: int = 300) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-3000:] or f"exit {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_direct(rep: Report) -> None:
    try:
        out = _python(DIRECT)
    except Exception as exc:
        rep.line("FAIL", "direct probe checks ran", exc)
        return
    for name, ok, detail in out["checks"]:
        rep.line("PASS" if ok else "FAIL", name, detail if not ok else "")
    for name, value in out["info"].items():
        rep.line("INFO", name, value)
    for name, us in out["costs"].items():
        print(f"COST {name}: {us} us", flush=True)


def _changes_line(test: dict[str, Any]) -> str:
    parts = []
    for c in test.get("changes", []):
        if c["probe"] in ("torch", "nvml"):
            parts.append(f"{c['probe']}:{c['key']} {c['before']!r} -> {c['after']!r}"
                         f" [{c.get('phase', '?')}]")
    return "; ".join(parts) or "no torch/nvml changes"


def run_suite(rep: Report, out_dir: Path | None, budget: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="statesnap-gpu-"))
    (work / "pytest.ini").write_text("[pytest]\n")
    (work / "test_gpu_suite.py").write_text(textwrap.dedent(SUITE))
    cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
           "-p", "no:cacheprovider", "--statesnap-probes", "torch,nvml",
           "--statesnap-record", "run.jsonl", "--statesnap-json", "summary.json",
           "--statesnap-verify-budget", str(budget), "-q", "test_gpu_suite.py"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=work,
                          timeout=budget + 240)
    (work / "pytest.log").write_text(proc.stdout + proc.stderr)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in ("run.jsonl", "summary.json", "pytest.log"):
            if (work / name).exists():
                shutil.copy(work / name, out_dir / f"gpu_suite_{name}")
    if not (work / "run.jsonl").exists() or not (work / "summary.json").exists():
        rep.line("FAIL", "suite ran under statesnap", (proc.stdout + proc.stderr)[-3000:])
        return
    lines = [json.loads(x) for x in (work / "run.jsonl").read_text().splitlines()]
    header = next(x for x in lines if x["type"] == "header")
    for status in header.get("probes", []):
        rep.line("INFO", f"probe {status['name']}", f"{status['status']}: {status.get('detail')}")
    for key, note in (header.get("notes") or {}).items():
        rep.line("INFO", f"header note {key}", note)
    tests = {x["nodeid"].split("::")[-1]: x for x in lines if x["type"] == "test"}
    for name, test in tests.items():
        print(f"RECORD {name} [{test['outcome']}]: {_changes_line(test)}", flush=True)
    expected_outcomes = {n: ("failed" if n in EXPECTED else "passed") for n in tests}
    outcomes = {n: t["outcome"] for n, t in tests.items()}
    rep.line("PASS" if outcomes == expected_outcomes else "FAIL",
             "suite outcomes: each victim fails, every other test passes", outcomes)
    init = {c["key"]: c for c in tests["test_a_initialises_cuda"]["changes"]}
    rep.line("PASS" if init.get("cuda.initialized", {}).get("after") is True else "FAIL",
             "record: test_a initialised CUDA (torch:cuda.initialized)")
    nv = [c for c in init.values() if c["probe"] == "nvml" and c["key"].endswith("process_used")]
    if nv:
        rep.line("PASS" if nv[0]["after"] > nv[0]["before"] else "FAIL",
                 "record: test_a's CUDA context shows in nvml process memory",
                 f"{nv[0]['before']} -> {nv[0]['after']}")
    else:
        rep.line("SKIP", "record: nvml process memory for test_a",
                 "no nvml process keys (see the nvml notes above)")
    summary = json.loads((work / "summary.json").read_text())
    findings = {f["victim"].split("::")[-1]: f for f in summary.get("findings", [])}
    for victim, (polluter, refs) in EXPECTED.items():
        f = findings.get(victim)
        if f is None:
            rep.line("FAIL", f"finding for {victim}", "none")
            continue
        names = [p.split("::")[-1] for p in f["polluters"]]
        got = f"{f['probe']}:{f['key']}"
        print(f"FINDING {victim}: polluters={names} key={got} status={f['status']}", flush=True)
        rep.line("PASS" if polluter in names else "FAIL", f"{victim}: polluter {polluter} named",
                 names)
        rep.line("PASS" if got in refs else "FAIL", f"{victim}: key one of {sorted(refs)}", got)
        rep.line("PASS" if f["status"] == "verified" else "FAIL", f"{victim}: verified by replay",
                 f["status"])
    footer: dict[str, Any] = next((x for x in lines if x["type"] == "footer"), {})
    for probe in ("torch", "nvml"):
        c = (footer.get("costs") or {}).get(probe)
        if c:
            print(f"COST {probe} per test in the suite: {c['per_test_us']} us "
                  f"({c['tokens']} tokens, {c['reads']} reads)", flush=True)
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="copy the suite's record, summary and log here")
    parser.add_argument("--verify-budget", type=int, default=240,
                        help="seconds statesnap may spend verifying the suite's findings")
    args = parser.parse_args(argv)
    rep = Report()
    try:
        pre = _python(PREFLIGHT, timeout=180)
    except Exception as exc:
        print(f"SKIP everything -- torch could not be imported: {exc}")
        return 2
    print(f"INFO torch {pre['torch']} (CUDA {pre['cuda']}), {pre['devices']} device(s)")
    if not pre["available"]:
        print("SKIP everything -- no CUDA GPU visible to torch here")
        return 2
    run_direct(rep)
    run_suite(rep, args.out, args.verify_budget)
    print(f"{'FAIL' if rep.failed else 'PASS'} gpu check: {rep.failed} failed check(s)")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
