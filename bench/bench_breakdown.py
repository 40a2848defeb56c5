"""Where statesnap's added instructions on a real suite go, by layer (callgrind, one run each).

Runs one of ``bench_healthy.py``'s suites under ``valgrind --tool=callgrind``:

- plain pytest;
- plain pytest with as many empty modules imported as statesnap has loaded by the first test
  (what the bare number of modules in ``sys.modules`` costs the suite's own code:
  ``inspect.stack()`` walks ``sys.modules`` for each frame whose file is not a module's, and
  freezegun scans every module at each freeze);
- statesnap recording only the order and outcomes (``--statesnap-probes=none``);
- statesnap without the ``attributes`` probe;
- statesnap with every probe.

Each row gives the instructions added over plain and the ratio.  Usage::

    python bench/bench_breakdown.py --suite structlog [--src CHECKOUT] [--out FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

if TYPE_CHECKING:
    from bench_healthy import Suite

#: What a module of the empty set holds: a few imports, a constant, a function and a class.
_MODULE = ("from __future__ import annotations\nimport os, sys\n"
           "from collections.abc import Callable\nX = 1\n"
           "def f(a: int) -> int:\n    return a\nclass C:\n    pass\n")

_COUNT_PLUGIN = """
import sys
def pytest_runtest_setup(item):
    if not getattr(sys, "_statesnap_bench_counted", False):
        sys._statesnap_bench_counted = True
        with open({path!r}, "w") as out:
            out.write(str(sum(1 for m in list(sys.modules) if m.split(".")[0] == "statesnap")))
"""


def own_modules(tree: Path, suite: Suite, work: Path, src: Path | None) -> int:
    """How many statesnap modules are loaded when the suite's first test starts."""
    from bench_healthy import argv_for, child_env

    (work / "ss_count_plugin.py").write_text(
        _COUNT_PLUGIN.format(path=str(work / "count.txt")))
    env = child_env(tree, suite, src)
    env["PYTHONPATH"] = f"{work}:{env['PYTHONPATH']}"
    subprocess.run(argv_for(suite, ["-p", "statesnap", "-p", "ss_count_plugin", "-x"]),
                   cwd=tree, env=env, capture_output=True, check=False)
    return int((work / "count.txt").read_text())


def empty_modules(work: Path, n: int) -> None:
    """A package of ``n`` empty modules and a plugin that imports them all."""
    pkg = work / "ss_empty"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(n):
        (pkg / f"m{i}.py").write_text(_MODULE)
    (work / "ss_empty_plugin.py").write_text(
        "import importlib\n"
        f"for i in range({n}):\n"
        "    importlib.import_module(f'ss_empty.m{i}')\n")


def main(argv: list[str] | None = None) -> int:
    from bench_healthy import SUITES, fetch, instructions

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="structlog", help="a bench_healthy.py suite")
    parser.add_argument("--src", type=Path, default=None,
                        help="statesnap's source folder (default: this checkout's install)")
    parser.add_argument("--out", type=Path, default=None, help="markdown output file")
    args = parser.parse_args(argv)
    suite = next((s for s in SUITES if s.name == args.suite), None)
    if suite is None:
        print(f"bench_breakdown: no suite {args.suite!r}", file=sys.stderr)
        return 2
    tree = fetch(suite)
    if tree is None:
        return 1
    src = args.src.resolve() if args.src else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        n = own_modules(tree, suite, work, src)
        empty_modules(work, n)
        log = work / "log"
        rows: list[tuple[str, int]] = [("plain", instructions(tree, suite, [], log))]
        # The empty modules: found through PYTHONPATH, as statesnap's are.
        import bench_healthy

        base_env = bench_healthy.child_env

        def with_work(tree: Path, suite: Suite, statesnap_src: Path | None = None
                      ) -> dict[str, str]:
            env = base_env(tree, suite, statesnap_src)
            env["PYTHONPATH"] = f"{work}:{env['PYTHONPATH']}"
            return env

        bench_healthy.child_env = with_work
        try:
            rows.append((f"plain + {n} empty modules",
                         instructions(tree, suite, ["-p", "ss_empty_plugin"], log)))
        finally:
            bench_healthy.child_env = base_env
        for label, extra in (("statesnap, probes none", ["--statesnap-probes=none"]),
                             ("statesnap, all but attributes", ["--statesnap-probes=-attributes"]),
                             ("statesnap, all probes", [])):
            rows.append((label, instructions(
                tree, suite, ["-p", "statesnap", f"--statesnap-record={work / 'r.jsonl'}",
                              *extra], log, src)))
    plain = rows[0][1]
    lines = [f"Command: `python bench/bench_breakdown.py --suite {args.suite}"
             + (" --src <checkout>" if src else "") + "`",
             "", f"statesnap modules loaded at the first test: {n}", "",
             "| run | instructions | added over plain | ratio |", "| --- | ---: | ---: | ---: |"]
    for label, count in rows:
        added = "" if count == plain else f"{(count - plain) / 1e6:,.0f} M"
        lines.append(f"| {label} | {count / 1e6:,.0f} M | {added} | {count / plain:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
