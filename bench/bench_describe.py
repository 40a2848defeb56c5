"""Instructions of one description of a changed value by the ``attributes`` probe (callgrind),
this checkout against an earlier one.

The token (read three times a test) does not describe anything; a value is described again
only when the token saw it move, so this is the cost a test pays per value it changes.  Each
shape is described ``--repeat`` times in a child under ``valgrind --tool=callgrind``, and once
more with none but the first (imports and self-checks done once): the difference over the
repeats is the cost of one.  The shapes are
those the attributes probe meets on real suites: a settings dict of scalars, a registry of
small records, an object with a cache table (a resolver), and sqlparse's lexer (a list of
``(pattern.match, token)`` tuples and a list of keyword dicts).

Usage: ``python bench/bench_describe.py --against CHECKOUT [--this CHECKOUT] [--repeat 200]``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHAPES = ("settings", "registry", "resolver", "lexer")

#: The child: builds the shapes, then describes the one named ``repeat`` times.
CHILD = textwrap.dedent('''
    import gc
    import re
    import sys

    from statesnap.probes.attributes.describe import describe

    shape, repeat = sys.argv[1], int(sys.argv[2])
    PROJECT = frozenset({"__main__"})


    class Resolver:
        def __init__(self):
            self.default = "v1"
            self._cache = {f"pkg{i}": f"v{i}" for i in range(200)}
            self._cache_log = [f"pkg{i}" for i in range(200)]


    class Lexer:
        def __init__(self):
            words = [{f"W{j}_{i}": i for i in range(100)} for j in range(9)]
            self._SQL_REGEX = [(re.compile(f"a{i}").match, i) for i in range(52)]
            self._keywords = words


    SHAPES = {
        "settings": {f"key_{k}": k for k in range(20)},
        "registry": [{"name": f"h{i}", "tags": ["a", "b"]} for i in range(20)],
        "resolver": Resolver(),
        "lexer": Lexer(),
    }
    value = SHAPES[shape]
    describe(value, PROJECT, name="VALUE")  # one-time costs (imports, self-checks) here
    gc.collect()
    gc.freeze()  # what the shapes hold is no garbage collection's work in the loop
    for _ in range(repeat):
        describe(value, PROJECT, name="VALUE")
''')


def count(src: Path, shape: str, repeat: int, work: Path) -> int:
    """User-space instructions of the child with statesnap from ``src``."""
    script = work / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            str(script), shape, str(repeat)]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False)
    found = [ln for ln in proc.stderr.splitlines() if "Collected :" in ln]
    if proc.returncode != 0 or not found:
        raise SystemExit(f"callgrind run failed: {shlex.join(argv)}\n{proc.stderr[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="an earlier checkout")
    parser.add_argument("--this", type=Path, default=ROOT, help="the checkout measured")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--shape", action="append", choices=SHAPES,
                        help="only these shapes (default: all)")
    args = parser.parse_args(argv)
    shapes = args.shape or SHAPES
    sides = {"this": args.this.resolve() / "src", "against": args.against.resolve() / "src"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="statesnap-describe-") as tmp:
        for shape in shapes:
            per = {}
            for side, src in sides.items():
                base = count(src, shape, 0, Path(tmp))
                full = count(src, shape, args.repeat, Path(tmp))
                per[side] = (full - base) / args.repeat
                print(f"{shape} {side}: {per[side]:,.0f} instructions", file=sys.stderr)
            rows.append(f"| {shape} | {per['this']:,.0f} | {per['against']:,.0f} | "
                        f"{per['this'] / per['against']:.2f} |")
    invocation = shlex.join(["python", "bench/bench_describe.py",
                             *(sys.argv[1:] if argv is None else argv)])
    print(f"Command: `{invocation}`\n")
    print("| shape | this | against | this / against |\n|---|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
