"""Rebuild BENCHMARKS.md from the per-benchmark results under bench/results/.

Each `make bench*` target writes its own markdown file there (with the command that produced
it); this only concatenates them under one heading, so the figures are never retyped by hand.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("overhead", "instructions-stop15", "instructions-stop14", "instructions-stop13", "overhead-against-stop13", "instructions-now",
         "instructions-start", "overhead-nocache",
         "overhead-before-after", "overhead-probes-against", "fixed", "fixed-breakdown",
         "healthy", "locate", "report", "isolate", "hunt", "demo-verdicts", "mutation",
         "realworld", "backfill")
INTRO = """# Benchmarks

Every figure here was produced by a command in this repository, with its baseline measured in
the same run (ratios, never timed assertions in tests).  The machine: 2 cores, 24 GiB, shared
with other work while these ran, so absolute times are noisy; run counts and ratios of
alternating runs are the figures to trust.  Regenerate a section with its `make` target
(`make bench`, `make bench-locate`, `make bench-report`, `make bench-isolate`,
`make bench-hunt`, `make bench-verdicts`, `make bench-real`, `make mutation`,
`make bench-backfill`), then
`python scripts/assemble_benchmarks.py`.
"""


def main() -> int:
    results = ROOT / "bench" / "results"
    parts = [INTRO]
    names = sorted(p.stem for p in results.glob("*.md"))
    for name in sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else 99, n)):
        text = (results / f"{name}.md").read_text(encoding="utf-8").strip()
        parts.append(text.replace("\n# ", "\n## ").replace("# ", "## ", 1))
    (ROOT / "BENCHMARKS.md").write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
