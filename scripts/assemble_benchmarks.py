"""Rebuild BENCHMARKS.md, the headline figures, from the results files under bench/results/.

Each benchmark writes a Markdown file of its own there, with the command that produced it and
the whole detail (every run, every stop's log).  BENCHMARKS.md shows one short section per
area: the block of its results file between ``<!-- headline YYYY-MM-DD -->`` and
``<!-- /headline -->`` (the current figures and their command, dated; several blocks are
joined), and a link to the
file.  The figures are never retyped by hand; ``tests/test_benchmarks_doc.py`` fails when
BENCHMARKS.md is not what this script writes, or grows past its size.

Usage: ``python scripts/assemble_benchmarks.py [--check]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "BENCHMARKS.md"
#: The summary's size limit, in lines: about 300 (a summary, not a log).
MAX_LINES = 320

_HEADLINE = re.compile(r"<!-- headline (\d{4}-\d\d-\d\d) -->\n(.*?)<!-- /headline -->", re.S)


@dataclass(frozen=True)
class Area:
    """One section of BENCHMARKS.md: a title, what it measures, and the file it quotes."""

    title: str
    what: str
    file: str


AREAS = (
    Area("Per-test cost (instructions)",
         "What statesnap adds to each test and to each session, by instruction counts "
         "(deterministic), against the stop's start and a same-code control.",
         "instructions28.md"),
    Area("Fixed cost of a session",
         "What a record and a report add to a small suite's session, by instructions.",
         "fixed26.md"),
    Area("Immune to what it watches: faults",
         "A full disk, a read-only cache, Ctrl-C during the replays, a timer a test left.",
         "faults.md"),
    Area("Immune to what it watches: signals and patched functions",
         "Tests that leave `Popen`, `os.kill`, `json` or the clock patched; the kill path.",
         "kill-safe.md"),
    Area("The hostile suite",
         "statesnap's session end under a process the tests polluted.",
         "hostile.md"),
    Area("Scale: a folder of many files",
         "A test that creates 100,000 files; the readers of a record of 267,000 tests.",
         "scale.md"),
    Area("Scale: reading a record of 267,000 tests",
         "`explain`, `explain --verify`, `report` and `diff` on a 177 MB record.",
         "scale2.md"),
    Area("Proofs: replays per victim",
         "How many replays it takes to prove a victim with its key: the generated suite, "
         "the demo and the real-world corpus.",
         "merged25-proofs.md"),
    Area("Proofs: forked and side by side",
         "Replays forked from a warm parent and run side by side: per replay and a whole "
         "20-victim session importing torch, on a quiet machine.",
         "proofs22.md"),
    Area("Proofs: one victim's pairs side by side",
         "A victim's candidate pairs on workers with no victim left: 1 worker against 2.",
         "pairs.md"),
    Area("Proofs: the default budget under load",
         "A generated 20-victim suite and the demo beside four busy loops.",
         "proofs21.md"),
    Area("Real order-dependent tests from public projects",
         "The real-world corpus (bench/realworld): found, proven and keyed, no false positive.",
         "corpus19.md"),
    Area("Noise on twelve public suites",
         "Tests listed as leaking above low severity, judged one by one; two runs compared.",
         "noise12.md"),
    Area("loguru and structlog: cost and the same list every run",
         "Suites whose autouse fixtures reset a global logger or configuration: CPU against "
         "plain pytest, and the tests listed in two runs.",
         "merged28.md"),
    Area("A newcomer's trial of the docs",
         "Someone new to the project, from the README and the user guide alone.",
         "newcomer.md"),
    Area("The scientific stack",
         "numpy, pandas, matplotlib and scikit-learn settings: cost and verdicts.",
         "scistack.md"),
    Area("Verdicts where CI users look",
         "The GitHub job summary, annotations and JUnit properties: their cost.",
         "ci-pages.md"),
    Area("Locating a polluter",
         "`explain --verify` against detect-test-pollution on generated suites.",
         "locate.md"),
    Area("Hunting latent victims",
         "`statesnap hunt` against `detect-test-pollution --fuzz`.",
         "hunt.md"),
    Area("Hunting on the real-world corpus",
         "`statesnap hunt`'s wall time and verdicts on public projects' latent victims.",
         "corpus23.md"),
    Area("Backfill from a CI log",
         "`statesnap backfill` on one and two workers, against detect-test-pollution.",
         "backfill.md"),
    Area("Verdicts on the demo",
         "The demo's verdicts in the session and read back by every reader.",
         "demo-verdicts.md"),
    Area("Mutation testing",
         "The share of mutants the tests kill in the modules whose mistakes mislead users.",
         "mutation.md"),
    Area("On a real GPU",
         "`make gpu-check` on a lent machine with an NVIDIA GPU.",
         "gpu-check.md"),
)

INTRO = """# Benchmarks

The headline figures, one section per area, each with its command; ratios against a baseline
measured in the same run, on a shared 2-core machine (run counts, instruction counts and
ratios are the figures to trust, not absolute times).  The file each section names under
`bench/results/` holds the detail.  Generated by `python scripts/assemble_benchmarks.py`.
"""


class HeadlineError(Exception):
    """A results file an area quotes has no well-formed headline block."""


def headline(area: Area) -> tuple[str, str]:
    """(date, block) of the area's results file."""
    path = RESULTS / area.file
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HeadlineError(f"{path}: {exc.strerror or exc}") from None
    found = _HEADLINE.findall(text)
    if not found:
        raise HeadlineError(f"{path}: no headline block (<!-- headline YYYY-MM-DD --> ... "
                            "<!-- /headline -->)")
    date = max(d for d, _ in found)
    block = "\n\n".join(b.strip() for _, b in found)
    # Headings inside a block sit under the area's own ## heading.
    block = re.sub(r"^#+ ", "### ", block.strip(), flags=re.M)
    return date, block


def render() -> str:
    parts = [INTRO.rstrip()]
    for area in AREAS:
        date, block = headline(area)
        parts.append(f"## {area.title}\n{area.what}  Figures of {date}; detail: "
                     f"[bench/results/{area.file}](bench/results/{area.file}).\n\n{block}")
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when BENCHMARKS.md differs from what would be written")
    args = parser.parse_args(argv)
    try:
        text = render()
    except HeadlineError as exc:
        print(f"assemble_benchmarks: {exc}", file=sys.stderr)
        return 2
    lines = text.count("\n")
    if lines > MAX_LINES:
        print(f"assemble_benchmarks: BENCHMARKS.md would have {lines} lines (at most "
              f"{MAX_LINES}): shorten a headline block", file=sys.stderr)
        return 2
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("assemble_benchmarks: BENCHMARKS.md is out of date: run "
                  "python scripts/assemble_benchmarks.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
