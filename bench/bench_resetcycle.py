"""Instructions of one autouse reset cycle of the ``attributes`` probe, per statesnap source.

structlog's fixture gives ``_CONFIG`` a fresh copy of its processor list before every test;
loguru's gives the logger a new core.  Each cycle is that reset, then what a test's
checkpoints ask of the probe: a light token, a read, a full token, a light token and a full
token.  The probe watches the suite's package (and, for structlog, its test modules that import
outside pytest), as in the suite.  Under ``valgrind --tool=callgrind`` (user-space
instructions, ``PYTHONHASHSEED=0``), 0 and N cycles after 20 warm ones: the difference over N.

The suites' source trees and their environment come from ``bench_healthy.py --suite structlog
--suite loguru`` (``bench/.cache``).

    .venv/bin/python bench/bench_resetcycle.py SRC [SRC ...] [--cycles 400]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
PYTHON = CACHE / "venv" / "bin" / "python"

PROGRAM = r'''
import importlib, os, pathlib, sys
suite = os.environ["SUITE"]
if suite == "structlog":
    sys.path.insert(0, "tests")
    import structlog
    for f in sorted(pathlib.Path("tests").glob("test_*.py")):
        try:
            importlib.import_module(f.stem)
        except BaseException:
            pass
    reset = structlog.reset_defaults
else:
    import loguru, loguru._logger
    def reset():
        loguru.logger.remove()
        loguru.logger.__init__(loguru._logger.Core(), None, 0, False, False, False, False,
                               True, [], {})
        loguru._logger.context.set({})
from statesnap.base.redact import Redactor
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext
p = AttributesProbe()
p.setup(ProbeContext(rootdir=pathlib.Path(".").resolve(), redactor=Redactor()))
p.token(); p.read()
def cycle():
    reset()
    p.light_token(); p.read(); p.token(); p.light_token(); p.token()
for _ in range(20 + int(os.environ["CYCLES"])):
    cycle()
'''

SUITES = {"structlog": ("structlog-24.4.0", "src"), "loguru": ("loguru-0.7.2", ".")}


def instructions(suite: str, src: Path, cycles: int) -> int:
    folder, pythonpath = SUITES[suite]
    tree = CACHE / folder
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONHASHSEED="0", SUITE=suite, CYCLES=str(cycles),
               PYTHONPATH=os.pathsep.join([str(src / "src"), str(tree / pythonpath)]))
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           str(PYTHON), "-c", PROGRAM], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    found = [ln for ln in proc.stderr.splitlines() if "Collected :" in ln]
    if proc.returncode != 0 or not found:
        raise SystemExit(f"bench_resetcycle: the {suite} run failed: {proc.stderr[-1500:]}")
    return int(found[-1].rsplit(":", 1)[1].replace(",", "").strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path,
                        help="checkouts (or exports) whose src/ statesnap is imported from")
    parser.add_argument("--cycles", type=int, default=400)
    args = parser.parse_args()
    for suite, (folder, _) in SUITES.items():
        if not (CACHE / folder).is_dir() or not PYTHON.exists():
            print(f"bench_resetcycle: {CACHE / folder} missing: run bench_healthy.py "
                  f"--suite {suite} first", file=sys.stderr)
            return 2
    print("| source | structlog reset cycle | loguru reset cycle |\n|---|---:|---:|")
    for src in args.sources:
        per = [(instructions(s, src, args.cycles) - instructions(s, src, 0)) // args.cycles
               for s in SUITES]
        print(f"| `{src}` | {per[0]:,} | {per[1]:,} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
