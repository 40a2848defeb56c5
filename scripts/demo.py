"""`make demo`: run the bundled polluting suite under statesnap and show what it found.

The suite's own failures are the point (pytest exits 1); anything else is a real error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tests" / "demo"
REPORT = ROOT / "pollution.html"
SUMMARY = ROOT / "statesnap-summary.json"


def main() -> int:
    # Start from a clean tree: leftovers of an earlier demo would change the story.
    shutil.rmtree(DEMO / "build", ignore_errors=True)
    shutil.rmtree(DEMO / ".pytest_cache", ignore_errors=True)
    cmd = [sys.executable, "-m", "pytest", "-p", "statesnap", "-q",
           f"--report={REPORT}", f"--statesnap-json={SUMMARY}",
           # Nine failures to prove on a 2-core CI box: more than the default 120 s.
           "--statesnap-verify-budget=900"]
    print("$ cd tests/demo && " + " ".join(["python", *cmd[1:]]), flush=True)
    rc = subprocess.call(cmd, cwd=DEMO)
    shutil.rmtree(DEMO / "build", ignore_errors=True)
    if rc not in (0, 1):
        print(f"demo: pytest exited with {rc}", file=sys.stderr)
        return rc
    try:
        summary = json.loads(SUMMARY.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"demo: no summary written ({exc})", file=sys.stderr)
        return 1
    findings = summary["findings"]
    verified = sum(1 for f in findings if f["status"] == "verified")
    leaking = sum(1 for t in summary["tests"] if t["leaks"])
    print()
    print(f"demo: {leaking} tests leaked state, {len(findings)} failures explained, "
          f"{verified} verified by replay in fresh processes")
    if REPORT.exists():
        print(f"demo: open {REPORT.relative_to(ROOT)} in a browser for the full report")
    print(f"demo: summary JSON in {SUMMARY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
