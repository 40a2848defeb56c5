"""What shielding the session end costs, against importing the end's modules before the tests.

Two ways to keep the tests' pollution out of statesnap's session end (issue 12, section 2):
note the process globals before the tests and put them back around the end
(:mod:`statesnap.plugin.cleanroom`, what statesnap does), or import everything the end may need
before the first test.  This measures both in the same run: the clean room's capture and one
shielded enter/exit in this process (with pytest and statesnap's plugin imported, so
``sys.modules`` is as large as in a session), and the extra CPU time of a fresh interpreter
importing the end's modules on top of the plugin, in alternating rounds.

``.venv/bin/python bench/bench_cleanroom.py [--rounds 7] [--out bench/results/cleanroom.md]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PLUGIN = "import pytest, statesnap.plugin.core"
END = ("import pytest, statesnap.plugin.core, statesnap.analysis.attribution, "
       "statesnap.proof.verify, "
       "statesnap.output.summary, statesnap.output.explain, statesnap.output.report.render")


def _child_cpu(code: str) -> float:
    """CPU seconds (user + sys) of a fresh interpreter running ``code``."""
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def _in_process(repeat: int) -> tuple[float, float, int]:
    import pytest  # noqa: F401 - a session's sys.modules

    import statesnap.plugin.core  # noqa: F401
    from statesnap.plugin import cleanroom

    t0 = time.process_time()
    for _ in range(repeat):
        base = cleanroom.capture()
    capture = (time.process_time() - t0) / repeat
    t0 = time.process_time()
    for _ in range(repeat):
        with cleanroom.shielded(base):
            pass
    shield = (time.process_time() - t0) / repeat
    return capture, shield, len(sys.modules)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    capture, shield, modules = _in_process(200)
    plain, eager = [], []
    for _ in range(args.rounds):
        plain.append(_child_cpu(PLUGIN))
        eager.append(_child_cpu(END))
    p, e = statistics.median(plain), statistics.median(eager)
    cleanroom_ms = (capture + 3 * shield) * 1000
    lines = [
        "# Shielding the session end: clean room vs importing early",
        "",
        f"Command: `.venv/bin/python bench/bench_cleanroom.py --rounds {args.rounds}`",
        "",
        f"In one process with pytest and the plugin imported ({modules} modules): "
        f"`cleanroom.capture()` {capture * 1e6:.0f} µs, one `shielded()` enter/exit "
        f"{shield * 1e6:.0f} µs (means of 200; a session captures once and shields its end "
        "two or three times).",
        "",
        f"Fresh interpreters, {args.rounds} alternating rounds, CPU (user + sys), medians: "
        f"`{PLUGIN}` {p * 1000:.0f} ms; adding the end's modules (attribution, verify, "
        f"summary, explain, report with Jinja2 and deepdiff) {e * 1000:.0f} ms.",
        "",
        "| way | fixed cost per session | ratio to the plugin's own import |",
        "| --- | ---: | ---: |",
        f"| clean room (what statesnap does, three shields) | {cleanroom_ms:.2f} ms | "
        f"{cleanroom_ms / (p * 1000):.4f} |",
        f"| import the end's modules before the tests | {(e - p) * 1000:.0f} ms | "
        f"{(e - p) / p:.3f} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
