"""statesnap's start in a replay child forked from a warm parent: what ``-p statesnap`` adds
to a forked pytest session when its modules are already loaded (issue 28, "statesnap's own
start", the warm child).

A parent process imports what a replay's warm parent preloads (the libraries, pytest's own
modules and statesnap's, as ``statesnap.replay.warmpick.current`` lists them at the end of a
record session of the same suite), freezes the collector (as the warm parent does) and forks
one child per variant, each running ``python -m pytest`` the way the warm parent's children
do (``runpy``), on the 18-test suite of ``bench_fixed.py``:

    none      nothing: exits at once (under callgrind, the count a child starts from)
    plain     pytest -q -p no:randomly -p no:cacheprovider
    record    ... -p statesnap --statesnap-record=R

Each child's user+sys CPU comes from ``os.wait4``; with ``--instructions`` the parent also runs
once under ``valgrind --tool=callgrind`` (which follows the forks: one output file a child,
which starts from the parent's count at the fork) and each child's own instructions are its
file's count less the ``none`` child's.  They are converted to ms at the plain *fresh*
process's rate given with ``--rate`` (bench_fixed.py's, same load): a forked child's CPU also
holds the kernel's copy-on-write work, which no user-space count sees.
``--against CHECKOUT`` runs the same
parent and children with that tree's ``src`` (its own preload list), in the same rounds.  The
forked children here skip the warm program's socket protocol and log pump, which cost the same
with and without statesnap.

    .venv/bin/python bench/bench_warmstart.py [--rounds 5] [--instructions] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_fixed import BASE_ARGS, child_env, generate  # noqa: E402

#: Run in the parent: argv[1] the suite, argv[2] a JSON file of the preload list, argv[3] the
#: record folder, argv[4] the rounds; prints one JSON line of each variant's CPU times.
PARENT = r'''
import gc, json, os, runpy, sys
root, names, out, rounds = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
base = %(base)r
for name in names:
    try:
        __import__(name)
    except BaseException:
        pass
gc.collect()
gc.freeze()
os.chdir(root)
cpu = {"none": [], "plain": [], "record": []}
for i in range(rounds):
    for variant in ("none", "plain", "record"):
        argv = ["pytest", *base]
        if variant == "record":
            argv += ["-p", "statesnap", "--statesnap-record=%%s/r%%d.jsonl" %% (out, i)]
        sys.stdout.flush(); sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            if variant == "none":
                os._exit(0)  # what a child inherits of the parent's count, under callgrind
            code = 0
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                sys.argv = argv
                runpy.run_module("pytest", run_name="__main__", alter_sys=True)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                code = 3
            finally:
                sys.stdout.flush(); sys.stderr.flush()
                os._exit(code)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("child %%s failed: %%s" %% (variant, status))
        cpu[variant].append((pid, usage.ru_utime + usage.ru_stime))
print(json.dumps(cpu))
'''

#: Run once in a fresh process: the warm preload list at the end of a record session.
PRELOAD = r'''
import json, sys
from pathlib import Path
import pytest
pytest.main([*%(base)r, "-p", "statesnap", "--statesnap-record=" + sys.argv[2]])
from statesnap.replay.warmpick import current
json.dump([n for n in current(Path(sys.argv[1])) if n != "__main__"], open(sys.argv[3], "w"))
'''


def run_side(label: str, src: Path, root: Path, work: Path, rounds: int,
             instructions: bool) -> dict[str, object]:
    env = child_env(src)
    base = BASE_ARGS[2:]  # without "-m pytest"
    names = work / f"{label}-preload.json"
    subprocess.run([sys.executable, "-c", PRELOAD % {"base": base}, str(root),
                    str(work / f"{label}-pre.jsonl"), str(names)],
                   cwd=root, env=env, check=True, capture_output=True)
    out = work / label
    out.mkdir()
    program = PARENT % {"base": base}
    argv = [sys.executable, "-c", program, str(root), str(names), str(out), str(rounds)]
    proc = subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True, text=True)
    cpu = json.loads(proc.stdout.strip().splitlines()[-1])
    found: dict[str, object] = {
        "preloaded": len(json.loads(names.read_text())),
        "cpu": {v: statistics.median(t for _, t in runs) for v, runs in cpu.items()}}
    if instructions:
        cg = work / f"{label}-cg"
        cg.mkdir()
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}/cg.%p",
              *argv[:-1], "1"]
        proc = subprocess.run(vg, cwd=root, env=env, check=True, capture_output=True, text=True)
        pids = json.loads(proc.stdout.strip().splitlines()[-1])
        counts = {}
        for variant, runs in pids.items():
            text = (cg / f"cg.{runs[0][0]}").read_text()
            counts[variant] = int(re.search(r"^(?:summary|totals): (\d+)", text, re.M).group(1))
        found["instructions"] = counts
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--rate", type=float, default=None,
                        help="M instructions per CPU ms of a fresh plain run (bench_fixed.py)")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    sides = {"this": HERE.parent / "src"}
    if args.against is not None:
        sides["against"] = args.against.resolve() / "src"
    with tempfile.TemporaryDirectory(prefix="statesnap-warmstart-") as tmp:
        root, work = Path(tmp) / "suite", Path(tmp) / "work"
        generate(root)
        work.mkdir()
        results = {label: run_side(label, src, root, work, args.rounds, args.instructions)
                   for label, src in sides.items()}
    for label, r in results.items():
        cpu = r["cpu"]
        assert isinstance(cpu, dict)
        cpu.pop("none", None)
        added = cpu["record"] - cpu["plain"]
        line = (f"{label}: {r['preloaded']} modules preloaded; forked child CPU (median of "
                f"{args.rounds}): plain {cpu['plain'] * 1e3:.0f} ms, record "
                f"{cpu['record'] * 1e3:.0f} ms, added {added * 1e3:+.0f} ms")
        ins = r.get("instructions")
        if isinstance(ins, dict):
            plain, record = ins["plain"] - ins["none"], ins["record"] - ins["none"]
            more = record - plain
            line += (f"; own instructions plain {plain:,}, record {record:,}, "
                     f"added {more:+,}")
            if args.rate:
                line += f" (about {more / args.rate / 1e6:+.0f} ms at {args.rate} M/ms)"
        print(line)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
