"""Healthy real suites with and without statesnap: noise (tests reported leaking) and CPU cost.

Runs the test suites of click 8.1.8, jinja2 3.1.4 and more-itertools 10.5.0 (and, by name with
``--suite``, loguru 0.7.2, structlog 24.4.0 and marshmallow 3.23.1, whose test dependencies
go into a virtual environment of their own, ``bench/.cache/venv``, with this checkout
installed there) from their PyPI sdists (downloaded with ``pip download --no-binary :all:
--no-deps`` into the git-ignored ``bench/.cache/``; a suite whose sdist cannot be had is
skipped with one line) from their source trees (``PYTHONPATH``), in alternating rounds:

    python -m pytest -q -p no:randomly -p no:cacheprovider [suite's args] TESTS     (baseline)
    ... -p statesnap --statesnap-json=S --statesnap-record=R

measuring each child's user+sys CPU time (``os.wait4``).  Reports per suite: the pytest exit
code and summary line both ways (they must match), the median CPU ratio (target <= 1.10), and
the tests the summary JSON says leaked above low severity (target: at most 1% of the suite,
each listed with its keys so that it can be checked against the test code).

With ``--instructions``, each suite also runs once plain and once with statesnap under
``valgrind --tool=callgrind`` (one hash seed): user-space instruction counts, which the load
of a shared machine does not move, and with ``--against CHECKOUT`` once more with statesnap
imported from that checkout's ``src/`` (an earlier commit, ``git worktree add``).

With ``--src CHECKOUT`` the timed rounds import statesnap from that checkout's ``src/`` (the
figures of an earlier commit, in the same environment).  The table also gives each record's
size.

    .venv/bin/python bench/bench_healthy.py [--rounds 3] [--suite NAME ...] [--out FILE]
        [--instructions [--against CHECKOUT]] [--src CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
DEFAULT_OUT = HERE / "results" / "healthy.md"
BASE_ARGS = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
TARGET_RATIO = 1.10
TARGET_NOISE = 0.01


@dataclass(frozen=True)
class Suite:
    name: str
    spec: str
    folder: str
    pythonpath: str
    args: tuple[str, ...] = ()
    #: Test dependencies: the suite runs in bench/.cache/venv (EXTRA_VENV), which has them.
    deps: tuple[str, ...] = ()
    #: Run by default (the others by name with --suite).
    default: bool = True
    #: The suite's test folder, relative to its source tree.
    tests: str = "tests"


SUITES = (
    # Under pytest 9.2 click's suite collects only with this warning ignored (with or without
    # statesnap).
    Suite("click", "click==8.1.8", "click-8.1.8", "src",
          ("-W", "ignore::pytest.PytestRemovedIn10Warning")),
    Suite("jinja2", "jinja2==3.1.4", "jinja2-3.1.4", "src"),
    Suite("more-itertools", "more-itertools==10.5.0", "more-itertools-10.5.0", "."),
    # Issue 29's suites: an autouse fixture resets loguru's logger / structlog's configuration
    # before every test.  loguru's type-hinting tests need pytest-mypy-plugins; structlog's
    # packaging tests need the package installed.
    Suite("loguru", "loguru==0.7.2", "loguru-0.7.2", ".",
          ("--ignore=tests/test_type_hinting.py",), ("freezegun==1.5.5", "colorama==0.4.6"),
          False),
    Suite("structlog", "structlog==24.4.0", "structlog-24.4.0", "src",
          ("--ignore=tests/test_packaging.py",),
          ("freezegun==1.5.5", "pretend==1.0.9", "pytest-asyncio==1.5.0", "simplejson==4.3.0"),
          False),
    Suite("marshmallow", "marshmallow==3.23.1", "marshmallow-3.23.1", "src", (),
          ("simplejson==4.3.0",), False),
    # Branch noise12: six more styles.  dateutil's property tests need hypothesis (its conftest
    # marks tests no_cover, a mark of pytest-cov's, unknown here); its code
    # imports six.  arrow (a locale registry, class-scoped fixtures setting request.cls) and
    # humanize (a memo of loaded translations) are the date and humanising libraries;
    # their ini files want pytest-cov, colour codes (the summary line is parsed) and a
    # warning filter naming coverage.
    Suite("dateutil", "python-dateutil==2.9.0.post0", "python-dateutil-2.9.0.post0", "src",
          ("--ignore=tests/property", "-p", "no:asyncio",
           "-W", "ignore::pytest.PytestUnknownMarkWarning",
           "-W", "ignore::pytest.PytestRemovedIn10Warning"), ("six==1.16.0", "freezegun==1.5.5"),
          False),
    Suite("arrow", "arrow==1.3.0", "arrow-1.3.0", ".", ("-o", "addopts="),
          ("python-dateutil==2.9.0.post0", "pytz==2024.2", "simplejson==4.3.0",
           "dateparser==1.2.0", "pytest-mock==3.14.0"), False),
    Suite("humanize", "humanize==4.11.0", "humanize-4.11.0", "src",
          ("-o", "addopts=", "-o", "filterwarnings=error", "-p", "no:asyncio"),
          ("freezegun==1.5.5",), False),
    Suite("pluggy", "pluggy==1.5.0", "pluggy-1.5.0", "src", ("--ignore=testing/benchmark.py",),
          (), False, "testing"),
    Suite("tomlkit", "tomlkit==0.13.2", "tomlkit-0.13.2", ".", (), (), False),
    # Warnings are errors in these suites (dateutil too): pytest-asyncio (structlog's, in the same
    # environment) warns when it configures, so it is left out.
    Suite("itsdangerous", "itsdangerous==2.2.0", "itsdangerous-2.2.0", "src", ("-p", "no:asyncio"),
          ("freezegun==1.5.5",), False),
)
#: The environment of the suites with test dependencies (Suite.deps).
EXTRA_VENV = CACHE / "venv"


@dataclass
class Result:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)
    lines: set[str] = field(default_factory=set)


def fetch(suite: Suite) -> Path | None:
    """The suite's source tree under bench/.cache, downloading its sdist if needed."""
    tree = CACHE / suite.folder
    if (tree / suite.tests).is_dir():
        return tree
    CACHE.mkdir(parents=True, exist_ok=True)
    archives = list(CACHE.glob(f"{suite.folder}.tar.gz"))
    if not archives:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary",
                               ":all:", "--no-deps", suite.spec, "-d", str(CACHE)],
                              capture_output=True, text=True, check=False)
        archives = list(CACHE.glob(f"{suite.folder}.tar.gz"))
        if proc.returncode != 0 or not archives:
            print(f"{suite.name}: skipped, its sdist {suite.spec} could not be downloaded",
                  file=sys.stderr)
            return None
    with tarfile.open(archives[0]) as tar:
        tar.extractall(CACHE, filter="data")
    return tree if (tree / suite.tests).is_dir() else None


def python_for(suite: Suite) -> str:
    """This interpreter, or for a suite with test dependencies the one of EXTRA_VENV (made
    and filled on first use: pytest as here, the dependencies, this checkout editable)."""
    if not suite.deps:
        return sys.executable
    python = EXTRA_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(EXTRA_VENV)], check=True)
    import pytest

    need = [f"pytest=={pytest.__version__}", *suite.deps]
    check = ("import sys, importlib.metadata as m\n"
             "def ok(spec):\n"
             "    name, _, version = spec.partition('==')\n"
             "    try:\n"
             "        return m.version(name) == version\n"
             "    except m.PackageNotFoundError:\n"
             "        return False\n"
             "import statesnap\n"
             "sys.exit(not all(map(ok, sys.argv[1:])))")
    if subprocess.run([str(python), "-c", check, *need], capture_output=True,
                      check=False).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *need, "-e",
                        str(HERE.parent)], check=True)
    return str(python)


def child_env(tree: Path, suite: Suite, statesnap_src: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONDONTWRITEBYTECODE")}
    paths = [str(tree / suite.pythonpath)]
    if statesnap_src is not None:
        paths.insert(0, str(statesnap_src))  # ahead of this checkout's editable install
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def argv_for(suite: Suite, extra: list[str]) -> list[str]:
    # --rootdir: the sdists sit inside this repository, whose pyproject.toml would otherwise
    # be the suite's ini file (and its rootdir the files probe's root).
    return [python_for(suite), *BASE_ARGS, "--rootdir=.", *suite.args, *extra, suite.tests]


def instructions(tree: Path, suite: Suite, extra: list[str], log: Path,
                 statesnap_src: Path | None = None) -> int:
    """User-space instructions of one run under callgrind, after a run that writes the
    bytecode caches (as the timed rounds find them)."""
    env = child_env(tree, suite, statesnap_src)
    env["PYTHONHASHSEED"] = "0"  # set and dict orders, and so the counts, the same each run
    argv = argv_for(suite, extra)
    subprocess.run(argv, cwd=tree, env=env, capture_output=True, check=False)
    with open(log, "wb") as out:
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               *argv], cwd=tree, env=env, stdout=out, stderr=subprocess.PIPE,
                              check=False)
    err = proc.stderr.decode("utf-8", "replace")
    found = [ln for ln in err.splitlines() if "Collected :" in ln]
    if not found:
        raise SystemExit(f"callgrind run failed ({proc.returncode}): {shlex.join(argv)}\n"
                         f"{err[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].strip())


_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error).*?)(?: in [\d.]+s.*)?\s*=*$")


def run(tree: Path, suite: Suite, extra: list[str], log: Path,
        statesnap_src: Path | None = None) -> tuple[float, float, int, str]:
    argv = argv_for(suite, extra)
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=tree, stdout=out, stderr=subprocess.STDOUT,
                                env=child_env(tree, suite, statesnap_src))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    line = next((m.group(1) for ln in reversed(text) if (m := _SUMMARY.match(ln.strip()))), "?")
    return usage.ru_utime + usage.ru_stime, wall, code, line


def noise(summary_path: Path) -> tuple[int, list[str], list[str]]:
    """Tests in the suite, one line per test that leaked above low severity, and the same
    with every key (what two runs must agree on: the same tests, the same keys)."""
    data = json.loads(summary_path.read_text(encoding="utf-8"))
    tests = data["tests"]
    out, full = [], []
    for t in tests:
        if t.get("leaked"):
            keys = [f"{x['probe']}:{x['key']} ({x['severity']})"
                    for x in t["leaks"] if x.get("severity") != "low"]
            out.append(f"{t['nodeid']}: {', '.join(keys[:4])}")
            full.append(f"{t['nodeid']}: {', '.join(sorted(keys))}")
    return len(tests), out, full


def identical(lists: list[list[str]]) -> str:
    """Whether every round's statesnap run listed the same tests with the same keys."""
    if len(lists) < 2:
        return "one round"
    return "yes" if all(x == lists[0] for x in lists[1:]) else "**no**"


def count_row(tree: Path, suite: Suite, work: Path, against: Path | None) -> str:
    """One table row of instruction counts: plain, with statesnap, with ``against``'s."""
    snap = ["-p", "statesnap", f"--statesnap-record={work / 'i.jsonl'}"]
    plain = instructions(tree, suite, [], work / "i-plain.log")
    mine = instructions(tree, suite, snap, work / "i-snap.log")
    row = f"| {suite.name} | {plain:,} | {mine:,} | {mine / plain:.3f} |"
    if against is not None:
        other = instructions(tree, suite, snap, work / "i-other.log", against)
        row += f" {other:,} | {other / plain:.3f} |"
    print(row, file=sys.stderr)
    return row


def _statesnap_src(given: Path | None, flag: str) -> Path | None:
    """The folder holding the ``statesnap`` package of a checkout (or of its ``src/``)."""
    if given is None:
        return None
    where = given.resolve()
    where = where / "src" if (where / "src" / "statesnap").is_dir() else where
    if not (where / "statesnap" / "__init__.py").is_file():
        raise ValueError(f"{flag} {given}: no statesnap package there")
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per suite")
    parser.add_argument("--suite", action="append", default=None,
                        choices=[s.name for s in SUITES],
                        help="only these suites (default: those not needing test dependencies)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown output file")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions under callgrind, plain and with")
    parser.add_argument("--against", type=Path, default=None,
                        help="with --instructions: a checkout whose statesnap is counted too")
    parser.add_argument("--src", type=Path, default=None,
                        help="timed rounds import statesnap from this checkout's src/")
    parser.add_argument("--base", type=Path, default=None,
                        help="timed rounds also run statesnap from this checkout (an earlier "
                             "commit), in the same rounds: its CPU ratio and record size too")
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy each round's summary JSON here (SUITE-ROUND.json)")
    args = parser.parse_args(argv)
    try:
        src, against, base = (_statesnap_src(getattr(args, name), f"--{name}")
                              for name in ("src", "against", "base"))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    invocation = shlex.join([os.path.relpath(sys.executable), "bench/bench_healthy.py",
                             *(sys.argv[1:] if argv is None else argv)])
    lines = [
        "## Healthy suites: noise and cost", "",
        f"Command: `{invocation}`", "",
        "Each suite from its PyPI sdist, run from its source tree with `python -m pytest -q "
        "-p no:randomly -p no:cacheprovider` without and with `-p statesnap` (all probes), in "
        f"{args.rounds} alternating rounds; CPU = user + sys of the child (`os.wait4`), "
        "bytecode cached.  Noise: tests the summary JSON marks `leaked` (above low severity); "
        f"targets: CPU ratio <= {TARGET_RATIO}, noise <= {TARGET_NOISE:.0%}.", "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at the start (shared: "
        "expect noise in CPU times).", "",
        f"statesnap from: `{args.src or 'this checkout'}`.", "",
        "| suite | tests | exit code / summary, plain | with statesnap | CPU plain | CPU with "
        "| ratio | leaking above low | rounds' lists identical | record |",
        "|---|---:|---|---|---:|---:|---:|---:|---|---:|",
    ]
    base_rows: list[str] = []
    details: list[str] = []
    counted: list[str] = []
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="statesnap-healthy-") as tmp:
        work = Path(tmp)
        for suite in SUITES:
            if (suite.name not in args.suite) if args.suite else not suite.default:
                continue
            tree = fetch(suite)
            if tree is None:
                lines.append(f"| {suite.name} | skipped: sdist not available | | | | | | | | |")
                continue
            if args.instructions:
                counted.append(count_row(tree, suite, work, against))
            if args.rounds < 1:
                continue
            plain, snap, old = Result(), Result(), Result()
            tests, size = 0, 0
            leakers: list[str] = []
            lists: list[list[str]] = []
            old_tests, old_size = 0, 0
            old_leakers: list[str] = []
            for i in range(args.rounds):
                order = [("plain", plain), ("snap", snap)]
                if base is not None:
                    order.append(("base", old))
                for kind, res in (order if i % 2 == 0 else order[::-1]):
                    record = work / f"r-{kind}-{suite.name}-{i}.jsonl"
                    extra = ([] if kind == "plain" else
                             ["-p", "statesnap", f"--statesnap-json={work / 's.json'}",
                              f"--statesnap-record={record}"])
                    cpu, wall, code, line = run(
                        tree, suite, extra, work / f"{kind}.log",
                        {"plain": None, "snap": src, "base": base}[kind])
                    res.cpu.append(cpu)
                    res.wall.append(wall)
                    res.codes.add(code)
                    res.lines.add(line)
                    if kind == "snap":
                        tests, leakers, full = noise(work / "s.json")
                        lists.append(full)
                        if args.keep is not None:
                            args.keep.mkdir(parents=True, exist_ok=True)
                            (args.keep / f"{suite.name}-{i}.json").write_bytes(
                                (work / "s.json").read_bytes())
                        size = record.stat().st_size
                    elif kind == "base":
                        old_tests, old_leakers, _ = noise(work / "s.json")
                        old_size = record.stat().st_size
                print(f"{suite.name} round {i + 1}/{args.rounds}: {plain.cpu[-1]:.1f} s without,"
                      f" {snap.cpu[-1]:.1f} s with", file=sys.stderr)
            ratio = statistics.median(snap.cpu) / statistics.median(plain.cpu)
            worst = max(worst, ratio)
            same = plain.codes == snap.codes and plain.lines == snap.lines
            lines.append(
                f"| {suite.name} | {tests} | {sorted(plain.codes)} {'; '.join(plain.lines)} | "
                f"{sorted(snap.codes)} {'; '.join(snap.lines)}{'' if same else ' (DIFFERS)'} | "
                f"{statistics.median(plain.cpu):.1f} s | {statistics.median(snap.cpu):.1f} s | "
                f"{ratio:.3f} | {len(leakers)} ({len(leakers) / max(tests, 1):.1%}) | "
                f"{identical(lists)} | {size / 1e6:.2f} MB |")
            if base is not None:
                old_ratio = statistics.median(old.cpu) / statistics.median(plain.cpu)
                base_rows.append(
                    f"| {suite.name} | {statistics.median(plain.cpu):.1f} s | "
                    f"{statistics.median(snap.cpu):.1f} s | {ratio:.3f} | "
                    f"{statistics.median(old.cpu):.1f} s | {old_ratio:.3f} | "
                    f"{sorted(old.codes)} {'; '.join(old.lines)} | "
                    f"{len(old_leakers)} ({len(old_leakers) / max(old_tests, 1):.1%}) | "
                    f"{size / 1e6:.2f} MB | {old_size / 1e6:.2f} MB |")
            if leakers:
                details += [f"{suite.name}, tests reported leaking (last round):", "",
                            *(f"- `{x}`" for x in leakers[:30]), ""]
    if args.rounds < 1:
        lines = lines[:-2]  # no timed rounds: no CPU table
    if base_rows:
        lines += ["", f"The same rounds with statesnap from `{args.base}` (base) too:", "",
                  "| suite | CPU plain | CPU with | ratio | CPU with base | base ratio "
                  "| base exit code / summary | base leaking above low | record | base record |",
                  "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|", *base_rows]
    if counted:
        lines += ["", "Instructions (callgrind, user space, one run each, `PYTHONHASHSEED=0`, "
                  "bytecode cached): statesnap against plain pytest"
                  + (f", and statesnap from `{args.against}`" if against else "") + ".", "",
                  "| suite | plain | with statesnap | ratio |"
                  + (" with the other checkout | its ratio |" if against else ""),
                  "|---|---:|---:|---:|" + ("---:|---:|" if against else ""), *counted]
    text = "\n".join(lines + (["", *details] if details else [])) + "\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    return 0  # figures, not a gate: the table says whether each target is met


if __name__ == "__main__":
    sys.exit(main())
