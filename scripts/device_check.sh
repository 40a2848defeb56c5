#!/usr/bin/env bash
# On a lent machine with a GPU and quiet CPUs (nothing else running), with the machine's own
# Python and no network: the GPU check, then the timings a shared machine cannot give (the
# fixed cost of a small session, the healthy suites' CPU ratio), each against plain pytest in
# the same rounds.  statesnap runs from src (a .pth file in the interpreter's site-packages,
# removed at the end, so that the benchmarks' child processes import it too), and pytest loads
# no plugin the machine's image installed (theirs would dominate a small session's cost: one
# image's hypothesis, numpy and jaxtyping plugins took 2.6 s of CPU for one empty test).
# Results go under $1 (default ./device-out).
#
#   bash scripts/device_check.sh OUTDIR     (bench/.cache must hold the healthy sdists;
#                                            SKIP_GPU=1 leaves the GPU check out)
set -u
out="${1:-device-out}"
mkdir -p "$out"
py="${PYTHON:-python3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
mkdir -p "$site" && echo "$root/src" > "$site/statesnap-src.pth"
"$py" - <<'PY' | tee "$out/environment.txt"
import importlib, platform, sys
print("python", sys.version.split()[0], platform.platform())
for name in ("pytest", "psutil", "pynvml", "torch", "jinja2", "markupsafe", "rich", "deepdiff",
             "statesnap"):
    try:
        mod = importlib.import_module(name)
        print(name, getattr(mod, "__version__", "?"))
    except Exception as exc:
        print(name, "MISSING", type(exc).__name__)
PY
nproc | sed 's/^/cpus /' | tee -a "$out/environment.txt"
uptime | tee -a "$out/environment.txt"
status=0
run() {  # name, timeout, command...
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" | tee -a "$out/log.txt"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$out/log.txt"
    tail -25 "$out/$name.txt"
    [ "$rc" = 0 ] || status=1
}
[ -n "${SKIP_GPU:-}" ] || run gpu-check 240 "$py" scripts/gpu_check.py --out "$out/gpu" --verify-budget 200
run fixed 150 "$py" bench/bench_fixed.py --pairs 31 --without nvml --out "$out/fixed.md"
run healthy 330 "$py" bench/bench_healthy.py --rounds 5 --out "$out/healthy.md"
rm -f "$site/statesnap-src.pth"
exit $status
