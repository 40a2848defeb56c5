"""Fixed cost of statesnap on a small suite: what ``-p statesnap`` adds to an 18-test session.

Generates 18 trivial passing tests in three modules and runs, in alternating rounds,

    python -m pytest -q -p no:randomly -p no:cacheprovider                         (baseline)
    ... -p statesnap --statesnap-record=R                                           (record only)
    ... -p statesnap --statesnap-record=R --report=pollution.html                   (with report)

(and with ``--against CHECKOUT`` the same two statesnap runs from an earlier source tree),
measuring each child's user+sys CPU time with ``os.wait4`` and its wall time.  With
``--instructions`` each variant also runs once under ``valgrind --tool=callgrind``: user-space
instruction counts are the same on every run, where CPU time on a shared machine is not.
Targets (issue 13): at most 60 ms added with no failure and no report, 150 ms with the report.

    .venv/bin/python bench/bench_fixed.py [--pairs 9] [--instructions] [--against DIR]
                                          [--out bench/results/fixed.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "fixed.md"
BASE_ARGS = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
TARGETS = {"record": 0.060, "report": 0.150}


def generate(root: Path) -> None:
    root.mkdir(parents=True)
    for m in range(3):
        lines = [f'"""Generated module {m} (statesnap fixed-cost benchmark)."""', ""]
        for i in range(6):
            lines += [f"def test_{m}_{i}():", f"    assert {i} + {m} == {i + m}", ""]
        (root / f"test_small_{m}.py").write_text("\n".join(lines))


def child_env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_CURRENT_TEST",
                 "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def command(variant: str, out: Path, i: str) -> list[str]:
    """``plain``, ``record``, ``report``, or ``record-PROBE`` (a record without that probe)."""
    argv = [sys.executable, *BASE_ARGS]
    if variant != "plain":
        argv += ["-p", "statesnap", f"--statesnap-record={out / f'{variant}-{i}.jsonl'}"]
    if variant == "report":
        argv.append(f"--report={out / f'{variant}-{i}.html'}")
    if variant.startswith("record-"):
        argv.append(f"--statesnap-probes=-{variant.removeprefix('record-')}")
    return argv


def paired(values: list[float], base: list[float]) -> tuple[float, float, float]:
    """Median, lower and upper quartile of ``values[i] - base[i]``: each difference is taken
    within one round, so a drift of the machine between rounds (another tenant, a clock
    change) moves both sides of it and cancels out."""
    diffs = sorted(v - b for v, b in zip(values, base, strict=True))
    quartiles = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [diffs[0]] * 3
    return statistics.median(diffs), quartiles[0], quartiles[2]


def measure(root: Path, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark run failed: {shlex.join(argv)}")
    return usage.ru_utime + usage.ru_stime, wall


def instructions(root: Path, argv: list[str], env: dict[str, str]) -> int:
    full = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    proc = subprocess.run(full, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=env, check=False)
    err = proc.stderr.decode("utf-8", "replace")
    found = [ln for ln in err.splitlines() if "Collected :" in ln]
    if proc.returncode != 0 or not found:
        raise SystemExit(f"callgrind run failed: {shlex.join(full)}\n{err[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].strip())


def against_src(checkout: Path) -> Path:
    """The source folder of ``--against``: CHECKOUT/src, or CHECKOUT itself when it is one.

    A folder without the package would leave PYTHONPATH pointing nowhere, and the runs would
    silently measure this checkout (its editable install) as the other one.
    """
    for src in (checkout.resolve() / "src", checkout.resolve()):
        if (src / "statesnap" / "__init__.py").is_file():
            return src
    raise SystemExit(f"--against {checkout}: no statesnap package in it or in its src/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=9, help="alternating rounds")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions once per variant under callgrind")
    parser.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                        help="also run statesnap from this source tree in the same rounds")
    parser.add_argument("--without", action="append", default=[], metavar="PROBE",
                        help="also a record without this probe (--statesnap-probes=-PROBE), "
                        "in the same rounds; repeatable (nvml on a GPU machine)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown output file")
    args = parser.parse_args(argv)
    invocation = shlex.join([os.path.relpath(sys.executable), "bench/bench_fixed.py",
                             *(sys.argv[1:] if argv is None else argv)])
    here_src = HERE.parent / "src"
    variants = {"plain": here_src, "record": here_src, "report": here_src}
    variants |= {f"record-{probe}": here_src for probe in args.without}
    if args.against is not None:
        other = against_src(args.against)
        variants |= {"record@against": other, "report@against": other}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    wall: dict[str, list[float]] = {v: [] for v in variants}
    counted: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="statesnap-fixed-") as tmp:
        root, out = Path(tmp) / "suite", Path(tmp) / "out"
        generate(root)
        out.mkdir()
        names = list(variants)
        for name in names:  # warm-up: bytecode written, imports warm
            measure(root, command(name.split("@")[0], out, "warm"), child_env(variants[name]))
        load = os.getloadavg()[0]
        for i in range(args.pairs):
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                c, w = measure(root, command(name.split("@")[0], out, str(i)),
                               child_env(variants[name]))
                cpu[name].append(c)
                wall[name].append(w)
        if args.instructions:
            for name in names:
                counted[name] = instructions(root, command(name.split("@")[0], out, "cg"),
                                             child_env(variants[name]))
    med = {k: statistics.median(v) for k, v in cpu.items()}
    medw = {k: statistics.median(v) for k, v in wall.items()}
    lines = [
        "## statesnap fixed cost on a small suite", "",
        f"Command: `{invocation}`", "",
        "Suite: 18 trivial passing tests in 3 modules; `python -m pytest -q -p no:randomly "
        "-p no:cacheprovider` without statesnap, with `-p statesnap` and a record, and with "
        f"`--report` too, in {args.pairs} alternating rounds (bytecode cached).  CPU = user + "
        "sys of the child (`os.wait4`).", "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {load:.2f} at the start (shared: expect noise).",
        "CPU and wall times move with the machine's load; the instruction counts below do "
        "not, and are the figures to compare.",
        "",
        "Added = the median of the differences to plain pytest within each round (the "
        "quartiles of those differences in brackets).",
        "",
        "| variant | median CPU | added CPU | median wall | added wall | target |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        target = TARGETS.get(name.split("@")[0])
        added, low, high = paired(cpu[name], cpu["plain"])
        added_w, low_w, high_w = paired(wall[name], wall["plain"])
        lines.append(
            f"| {name} | {med[name] * 1000:,.0f} ms | "
            f"{added * 1000:+,.0f} ms [{low * 1000:+,.0f}, {high * 1000:+,.0f}] | "
            f"{medw[name] * 1000:,.0f} ms | "
            f"{added_w * 1000:+,.0f} ms [{low_w * 1000:+,.0f}, {high_w * 1000:+,.0f}] | "
            f"{'' if target is None else f'<= {target * 1000:.0f} ms'} |")
    if counted:
        base = counted["plain"]
        # Instructions turned into quiet-machine milliseconds at the plain run's own rate.
        per_ms = base / (med["plain"] * 1000)
        lines += ["", "Instructions (one callgrind run each, deterministic; ms at the plain "
                  f"run's rate of {per_ms / 1e6:,.2f} M instructions per CPU ms):", "",
                  "| variant | instructions | added | as ms |", "|---|---:|---:|---:|"]
        for name in names:
            extra = counted[name] - base
            lines.append(f"| {name} | {counted[name]:,} | {extra:+,} | {extra / per_ms:+,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
