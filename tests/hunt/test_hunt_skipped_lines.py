"""Orders the budget left unrun are said in a few lines, however many groups there are.

python-dateutil 4.0.0 has 2321 groups of leaking tests: at the end of a 300 s budget the hunt
printed one "not run (budget spent)" line per unrun order, 4,600 of them. A run of numbered
orders of one kind is one line now; the summary JSON still lists each.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hunt_helpers import Suite

pytestmark = pytest.mark.slow

GROUPS = 6

# Each test sets the same variable to its own value: tests that change one key go into
# groups of their own, so this suite has GROUPS leaking groups.
SUITE = {
    "test_many.py": "import os\n\n" + "\n".join(
        f"def test_sets_level_{i}():\n    os.environ['SKIPLINES_LEVEL'] = '{i}'\n"
        for i in range(GROUPS)),
}


def test_unrun_numbered_orders_are_one_line_per_kind(suite: Suite) -> None:
    suite.write(SUITE)
    record = suite.record()
    out_json = suite.out / "hunt.json"
    proc = subprocess.run(
        [sys.executable, "-m", "statesnap", "hunt", str(record), "--budget", "0.000001",
         "--json", str(out_json)],
        cwd=suite.root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"in {GROUPS} group(s)" in proc.stdout, proc.stdout
    unrun = [line.strip() for line in proc.stdout.splitlines() if "not run (budget spent)" in line]
    assert (f"not run (budget spent): {GROUPS} leakers-first orders, leakers-first-1 to "
            f"-{GROUPS} ({GROUPS} tests)") in unrun, proc.stdout
    assert not [line for line in unrun if line.endswith(f"leakers-first-2 ({GROUPS} tests)")]
    assert len(unrun) < GROUPS, proc.stdout
    # The JSON keeps every order that did not run.
    skipped = json.loads(out_json.read_text(encoding="utf-8"))["hunt"]["skipped"]
    assert f"leakers-first-2 ({GROUPS} tests)" in skipped, skipped
