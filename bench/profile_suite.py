"""Where statesnap's CPU goes on a real suite: a sampling profile around ``pytest.main``.

A ``SIGPROF`` handler (``setitimer(ITIMER_PROF)``, 1 ms asked; the kernel's tick decides) keeps
each sample's stack; at the end each sample is put down to one statesnap activity (the
``attributes`` read, tokens, the test line...), and statesnap functions are listed by
inclusive samples.  Shares, not times: the handler's own cost is charged to whatever ran.

Run in a suite's tree with statesnap and the suite importable, e.g. structlog's
(``bench_healthy.py --suite structlog`` sets it up under ``bench/.cache``)::

    cd bench/.cache/structlog-24.4.0
    PYTHONPATH=../../../src:src ../venv/bin/python ../../profile_suite.py -q -p no:randomly \\
        -p no:cacheprovider --rootdir=. --ignore=tests/test_packaging.py -p statesnap tests

The report goes to stderr after pytest's output; ``--top N`` (first argument) lists more.
"""

from __future__ import annotations

import collections
import signal
import sys
import time
from types import FrameType

import pytest

Stack = list[tuple[str, str]]

_samples: list[Stack] = []


def _sample(signum: int, frame: FrameType | None) -> None:
    stack: Stack = []
    while frame is not None:
        code = frame.f_code
        stack.append((code.co_filename, code.co_name))
        frame = frame.f_back
    _samples.append(stack)


def _ours(stack: Stack) -> Stack:
    return [(f.split("/statesnap/", 1)[1], n) for f, n in stack if "/statesnap/" in f]


#: Activity by the statesnap function found on the stack, most specific first.
_ACTIVITIES = (
    (("probes/attributes/probe.py", "read"), "attributes read"),
    (("state/snapshot.py", "_settle"), "other probes' reads, the other token after a read"),
    (("state/tracker.py", "_net"), "net diff at the end (severities, aliases)"),
    (("state/tracker.py", "_note"), "checkpoint diff"),
    (("state/snapshot.py", "take"), "tokens and snapshot bookkeeping"),
    (("plugin/testline.py", "write"), "the test line"),
)


def _activity(ours: Stack) -> str:
    names = set(ours)
    for key, label in _ACTIVITIES:
        if key in names:
            return label
    if any(n in ("<module>", "pytest_addoption", "pytest_configure", "pytest_sessionstart")
           for _, n in ours):
        return "session start (imports, registration)"
    return f"other: {ours[-1][1]}"


def main(argv: list[str]) -> int:
    top = 40
    if argv[:1] == ["--top"]:
        top, argv = int(argv[1]), argv[2:]
    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    start = time.process_time()
    try:
        code = pytest.main(argv)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
    cpu = time.process_time() - start
    activities: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[tuple[str, str]] = collections.Counter()
    for stack in _samples:
        ours = _ours(stack)
        if not ours:
            continue
        activities[_activity(ours)] += 1
        inclusive.update(set(ours))
    total, mine = len(_samples), sum(activities.values())
    out = sys.stderr
    print(f"\nCPU {cpu:.2f} s, {total} samples, statesnap in {mine} "
          f"({mine / max(total, 1):.0%})", file=out)
    print("statesnap's samples by activity:", file=out)
    for label, n in activities.most_common():
        print(f"  {n:6d} {n / max(mine, 1):6.1%}  {label}", file=out)
    print(f"statesnap functions, inclusive (top {top}):", file=out)
    for (path, name), n in inclusive.most_common(top):
        print(f"  {n:6d} {n / max(mine, 1):6.1%}  {path}:{name}", file=out)
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
