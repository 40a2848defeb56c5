"""Where statesnap's fixed cost goes: instructions by phase, module and function (callgrind).

The 18-test suite of ``bench_fixed.py`` runs plain, with a record and with ``--report``, each
once under ``valgrind --tool=callgrind --dump-before=os_getppid``.  A small plugin loaded
first calls ``os.getppid()`` at every mark: around each of pytest's session hooks, around the
execution of every module imported from then on (a loader proxy), and around the functions
named in ``FUNCTIONS``.  Each dump holds the instructions since the previous mark; a segment is
charged to the innermost module or function open at the time (a module's import costs its
body, including what finding and loading its own imports took), or else to the last phase.
A deterministic ``-X importtime`` with the rest of the session beside it.

    .venv/bin/python bench/bench_fixed_breakdown.py [--out bench/results/fixed-breakdown.md]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_fixed import BASE_ARGS, child_env, generate  # noqa: E402

DEFAULT_OUT = HERE / "results" / "fixed-breakdown.md"
C = "_pytest.config"
#: ``module:qualified.name`` of the functions charged apart from their module.
FUNCTIONS = (
    f"{C}:PytestPluginManager.load_setuptools_entrypoints",
    "_pytest.fixtures:FixtureManager.pytest_plugin_registered",
    "pluggy._manager:PluginManager.register",
    "statesnap:pytest_addoption",
    "statesnap:pytest_configure",
    "statesnap.probes:discover",
    "statesnap.plugin.start:session_header",
    "statesnap.plugin.start:watch_installed_project",
    "statesnap.record.header:installed_packages",
    "statesnap.state.tracker:TestTracker.baseline",
    "statesnap.proof.session_end:read_back",
    "statesnap.output.report.views:build_view",
    "statesnap.output.report.render:render",
    "jinja2.environment:Environment.get_template",
)

PLUGIN = '''
"""Marks for callgrind (bench_fixed_breakdown.py): os.getppid() at every boundary."""
import functools
import os
import sys

import pytest

MARKS = []
_mark_call = os.getppid


def mark(name):
    MARKS.append(name)
    _mark_call()


def _wrap(module, target):
    owner = module
    *path, last = target.split(".")
    for part in path:
        owner = getattr(owner, part)
    f = owner.__dict__[last] if isinstance(owner, type) else getattr(owner, last)
    label = module.__name__ + ":" + target

    @functools.wraps(f)
    def wrapped(*a, **k):
        mark("+" + label)
        try:
            return f(*a, **k)
        finally:
            mark("-" + label)

    setattr(owner, last, wrapped)


FUNCS = {}
for spec in os.environ["BREAKDOWN_FUNCTIONS"].split(","):
    m, t = spec.split(":")
    FUNCS.setdefault(m, []).append(t)
for m, ts in FUNCS.items():
    if m in sys.modules:
        for t in ts:
            _wrap(sys.modules[m], t)


class _Loader:
    def __init__(self, loader, name):
        self._l, self._n = loader, name

    def create_module(self, spec):
        f = getattr(self._l, "create_module", None)
        return f(spec) if f else None

    def exec_module(self, module):
        mark("+" + self._n)
        try:
            self._l.exec_module(module)
        finally:
            mark("-" + self._n)
        for t in FUNCS.get(self._n, ()):
            _wrap(module, t)

    def __getattr__(self, a):
        return getattr(self._l, a)


class _Finder:
    busy = False

    def find_spec(self, name, path=None, target=None):
        if self.busy:
            return None
        self.busy = True
        try:
            for f in sys.meta_path:
                find = getattr(f, "find_spec", None) if f is not self else None
                spec = find(name, path, target) if find else None
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = _Loader(spec.loader, name)
                    return spec
            return None
        finally:
            self.busy = False


sys.meta_path.insert(0, _Finder())
mark("start")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    mark("configure")


def _phase(hook):
    def impl(**kwargs):
        mark(hook)
        result = yield
        mark("after " + hook)
        return result
    impl.__name__ = hook
    return pytest.hookimpl(wrapper=True)(impl)


pytest_sessionstart = _phase("pytest_sessionstart")
pytest_collection = _phase("pytest_collection")
pytest_runtestloop = _phase("pytest_runtestloop")
pytest_sessionfinish = _phase("pytest_sessionfinish")
pytest_terminal_summary = _phase("pytest_terminal_summary")


@pytest.hookimpl(wrapper=True)
def pytest_unconfigure(config):
    mark("pytest_unconfigure")
    result = yield
    mark("exit")
    import atexit

    atexit.register(lambda: open(os.environ["BREAKDOWN_MARKS"], "w").write("\\n".join(MARKS)))
    return result
'''


def run(root: Path, work: Path, variant: str, plugin_dir: Path) -> collections.Counter[str]:
    """Self instructions per module, function and phase of one callgrind run."""
    out = work / variant
    out.mkdir()
    argv = [sys.executable, *BASE_ARGS, "-p", "breakdown_marks"]
    if variant != "plain":
        argv += ["-p", "statesnap", f"--statesnap-record={out / 'record.jsonl'}"]
    if variant == "report":
        argv.append(f"--report={out / 'report.html'}")
    env = child_env(HERE.parent / "src")
    env["PYTHONPATH"] += os.pathsep + str(plugin_dir)
    env |= {"PYTHONHASHSEED": "0", "BREAKDOWN_FUNCTIONS": ",".join(FUNCTIONS),
            "BREAKDOWN_MARKS": str(out / "marks")}
    subprocess.run(argv, cwd=root, env=env, capture_output=True, check=False)  # bytecode
    full = ["valgrind", "--tool=callgrind", "--dump-before=os_getppid",
            f"--callgrind-out-file={out / 'cg.out'}", *argv]
    proc = subprocess.run(full, cwd=root, env=env, capture_output=True, check=False)
    marks_file = out / "marks"
    if proc.returncode != 0 or not marks_file.is_file():
        raise SystemExit(f"callgrind run failed: {shlex.join(full)}\n"
                         f"{proc.stderr.decode('utf-8', 'replace')[-2000:]}")
    marks = marks_file.read_text().split("\n")
    files = [out / f"cg.out.{i}" for i in range(1, len(marks) + 1)] + [out / "cg.out"]
    costs = [int(re.search(r"^(?:summary|totals): (\d+)", f.read_text(), re.M).group(1))
             for f in files]
    charged: collections.Counter[str] = collections.Counter()
    stack: list[str] = []
    phase = "(interpreter start)"
    # costs[i] is what ran up to marks[i], charged to what was open then; the last, to exit.
    for mark, cost in zip(marks, costs, strict=False):
        charged[stack[-1] if stack else "phase: " + phase] += cost
        if mark.startswith("+"):
            stack.append(mark[1:])
        elif mark.startswith("-"):
            stack.pop()
        else:
            phase = mark
    charged["phase: " + phase] += costs[-1]
    return charged


def group(name: str) -> str:
    """A phase, a function, or a module's package (statesnap: its layer)."""
    if name.startswith("phase: ") or ":" in name:
        return name
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "statesnap" else parts[0]


def table(title: str, more: collections.Counter[str], base: collections.Counter[str],
          keys: list[str], limit: float) -> list[str]:
    rows = [(k, more[k] - base[k]) for k in keys]
    rows = sorted((r for r in rows if abs(r[1]) >= limit), key=lambda r: -r[1])
    total = sum(more.values()) - sum(base.values())
    lines = [f"{title}: {total / 1e6:+,.1f} M instructions in all", "",
             "| where | added (M) |", "|---|---:|"]
    lines += [f"| `{k}` | {v / 1e6:+,.1f} |" for k, v in rows]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown output file")
    args = parser.parse_args(argv)
    invocation = shlex.join([os.path.relpath(sys.executable), "bench/bench_fixed_breakdown.py",
                             *(sys.argv[1:] if argv is None else argv)])
    with tempfile.TemporaryDirectory(prefix="statesnap-breakdown-") as tmp:
        root, work, plugin_dir = Path(tmp) / "suite", Path(tmp) / "work", Path(tmp) / "plugin"
        generate(root)
        work.mkdir()
        plugin_dir.mkdir()
        (plugin_dir / "breakdown_marks.py").write_text(PLUGIN)
        found = {v: run(root, work, v, plugin_dir) for v in ("plain", "record", "report")}
    plain, record = found["plain"], found["record"]
    grouped: dict[str, collections.Counter[str]] = {v: collections.Counter() for v in found}
    for v, counter in found.items():
        for k, n in counter.items():
            grouped[v][group(k)] += n
    lines = ["## Where the fixed cost goes", "", f"Command: `{invocation}`", "",
             "One callgrind run each (PYTHONHASHSEED=0, bytecode cached) of the 18-test suite "
             "of `bench_fixed.py`; marks at pytest's session hooks, around every module's "
             "execution and around a few functions.  A module's row is its body (its "
             "dataclasses, regular expressions...) with the finding and loading of what it "
             "imports; a function's row is its own work apart from the modules it imports; "
             "`phase:` rows are the rest of each stretch of the session.", ""]
    keys = sorted(set(grouped["record"]) | set(grouped["plain"]))
    lines += table("What a record adds to plain pytest, by package and phase",
                   grouped["record"], grouped["plain"], keys, 1e6)
    keys = sorted(set(grouped["report"]) | set(grouped["record"]))
    lines += table("What `--report` adds to a record", grouped["report"], grouped["record"],
                   keys, 1e6)
    keys = sorted(set(record) | set(plain))
    lines += table("The record's largest single modules and functions", record, plain,
                   [k for k in keys if not k.startswith("phase: ")], 2e6)
    text = "\n".join(lines)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
