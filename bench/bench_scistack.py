"""Instructions per test of the ``scistack`` probe on a suite that imports numpy, pandas and
matplotlib (callgrind), with the probe on against the same checkout with it off.

The overhead benchmark's project (``bench_overhead.generate``) with a ``conftest.py`` that
imports numpy, pandas and ``matplotlib.pyplot`` (and scikit-learn with ``--sklearn``), so
every token of every test finds the libraries imported.  Three variants:

- ``none``: no conftest, nothing scientific imported: what the probe costs a suite that never
  imports numpy (its gate, one ``sys.modules`` lookup per token);
- ``quiet``: the trivial tests as they are: the token is paid, nothing moves;
- ``busy``: each test also enters ``np.errstate``, ``pd.option_context`` and
  ``matplotlib.rc_context`` (changing a setting inside each and putting it back), so the
  tokens move and the probe reads at the checkpoints: the worst case of a suite that uses the
  context managers everywhere.

Each variant at two sizes, statesnap with every probe and with ``-scistack``; the difference
between the sizes over the tests between them is the cost per test.

Usage: ``python bench/bench_scistack.py [--small 40] [--large 240] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

CONFTEST = """
import matplotlib
matplotlib.use("agg")
import matplotlib.pyplot
import numpy
import pandas
{sklearn}
"""

BUSY = """

import matplotlib as _mpl
import numpy as _np
import pandas as _pd


def _busy():
    with _np.errstate(divide="ignore"), _pd.option_context("display.max_rows", 5), \\
            _mpl.rc_context({{"lines.linewidth": 3}}):
        pass
"""


VARIANTS = ("none", "quiet", "busy")


def make_suite(root: Path, tests: int, modules: int, variant: str, sklearn: bool) -> None:
    from bench_overhead import generate

    generate(root, tests, modules)
    if variant == "none":
        return
    busy = variant == "busy"
    (root / "conftest.py").write_text(
        CONFTEST.format(sklearn="import sklearn" if sklearn else ""), encoding="utf-8")
    if not busy:
        return
    for path in sorted((root / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        # Every test calls _busy() first.
        text = text.replace("():\n    assert", "():\n    _busy()\n    assert")
        path.write_text(text + BUSY.format(), encoding="utf-8")


def count(suite: Path, probes: str | None, log: Path) -> int:
    from bench_overhead import child_env, command, instructions

    env = child_env("cached")
    env["PYTHONHASHSEED"] = "0"
    env["MPLBACKEND"] = "agg"
    env["PYTHONPATH"] = str(ROOT / "src")
    subprocess.run(command(True, None, probes), cwd=suite, env=env, capture_output=True,
                   check=False)
    return instructions(suite, True, None, probes, log, env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--large", type=int, default=240)
    parser.add_argument("--modules", type=int, default=40)
    parser.add_argument("--sklearn", action="store_true", help="also import scikit-learn")
    parser.add_argument("--out", type=Path, help="markdown output file")
    args = parser.parse_args(argv)
    invocation = shlex.join(["python", "bench/bench_scistack.py",
                             *(sys.argv[1:] if argv is None else argv)])
    sides = {"on": None, "off": "-scistack"}
    got: dict[tuple[str, str, int], int] = {}
    with tempfile.TemporaryDirectory(prefix="statesnap-sci-") as tmp:
        work = Path(tmp)
        for variant in VARIANTS:
            for size in (args.small, args.large):
                suite = work / f"{variant}{size}"
                make_suite(suite, size, args.modules, variant, args.sklearn)
                for side, probes in sides.items():
                    n = count(suite, probes, work / f"{variant}-{side}{size}.log")
                    got[variant, side, size] = n
                    print(f"{variant} {side} {size} tests: {n:,} instructions",
                          file=sys.stderr)
    span = args.large - args.small
    lines = [f"`{invocation}` (statesnap from this checkout, every probe on against "
             "`--statesnap-probes=-scistack`; callgrind, user space):", "",
             "| suite | per test, scistack on | per test, off | on / off | per test added by "
             "scistack | per session added |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for variant in VARIANTS:
        per = {side: (got[variant, side, args.large] - got[variant, side, args.small]) / span
               for side in sides}
        session = {side: got[variant, side, args.small] - per[side] * args.small
                   for side in sides}
        lines.append(f"| {variant} | {per['on']:,.0f} | {per['off']:,.0f} | "
                     f"{per['on'] / per['off']:.4f} | {per['on'] - per['off']:,.0f} | "
                     f"{session['on'] - session['off']:,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
