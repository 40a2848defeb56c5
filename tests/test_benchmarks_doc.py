"""BENCHMARKS.md is the summary ``scripts/assemble_benchmarks.py`` writes from bench/results/.

The figures there are quoted from the marked blocks of the results files, never retyped; a
results file regenerated without its headline block, or a summary edited by hand, fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_benchmarks_md_is_the_assembled_summary() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "assemble_benchmarks.py"),
                           "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_every_section_links_a_results_file_that_exists() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    links = [line.split("](", 1)[1].split(")", 1)[0] for line in text.splitlines()
             if "detail: [bench/results/" in line]
    assert links, "no section names its results file"
    for link in links:
        assert (ROOT / link).is_file(), link
