"""``statesnap report``: write pollution.html from one or several records.

One lane per record (a directory stands for its ``*.jsonl``); findings from ``--findings``, else
the verdicts stored in each record, else attributed afresh as ``suspected, not replayed``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.base.argtypes import nonnegative_seconds
from statesnap.cli import CliError
from statesnap.cli.common import load, progress_printer, stop
from statesnap.record.journal import Record
from statesnap.record.reader import read_record


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="write the self-contained HTML report (pollution.html)",
        description="Write one self-contained HTML report of one or several records (xdist "
        "workers, CI shards): findings, timeline, per-test diffs, leaks by probe, plots.")
    p.add_argument("records", nargs="*", type=Path, metavar="RECORD",
                   help="run records (.jsonl) or folders of them; default: the last run's")
    p.add_argument("-o", "--output", type=Path, default=Path("pollution.html"), metavar="PATH",
                   help="where to write the report (default: pollution.html)")
    p.add_argument("--findings", type=Path, metavar="JSON",
                   help="take the findings from this --statesnap-json summary (or "
                   "`statesnap explain --json` output) instead of attributing afresh")
    p.add_argument("--verify", action="store_true",
                   help="replay the attributed findings in fresh processes first")
    p.add_argument("--budget", type=nonnegative_seconds, default=300.0, metavar="SECONDS",
                   help="time limit for --verify (default 300)")
    p.add_argument("--title", help="the report's title")
    p.set_defaults(func=run)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Record paths, with each folder replaced by the ``*.jsonl`` files in it (sorted)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise CliError(f"{path}: a folder with no records (*.jsonl) in it")
            out.extend(found)
        else:
            out.append(path)
    unique: dict[Path, None] = {}
    for path in out:
        unique.setdefault(path.resolve(), None)
    return list(unique)


def load_records(paths: Sequence[Path]) -> list[Record]:
    if not paths:
        return [load(None)]
    return [read_record(p) for p in expand(paths)]


def findings_from_file(path: Path) -> list[Finding]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    items = data.get("findings") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise CliError(f"{path}: no findings list (expected a --statesnap-json summary)")
    try:
        return [Finding.from_json(item) for item in items]
    except (TypeError, ValueError, KeyError) as exc:
        raise CliError(f"{path}: a finding is malformed ({exc})") from None


def attributed(records: Sequence[Record], verify: bool, budget: float) -> list[Finding]:
    """The verdicts each record's session stored (the others ``suspected, not replayed``);
    with ``verify``, every finding attributed and replayed afresh."""
    from statesnap.analysis.verdicts import findings_of
    from statesnap.base.cores import available_cores
    from statesnap.proof.session_end import Replays, attribute_and_prove

    findings: list[Finding] = []
    for record in records:
        if not verify:
            findings.extend(findings_of(record))
            continue
        progress = progress_printer()
        try:
            findings.extend(attribute_and_prove(
                record, Replays(budget=budget, workers=available_cores()), progress))
        finally:
            stop(progress)
    return findings


def run(args: argparse.Namespace) -> int:
    records = load_records(args.records)
    if args.findings is not None:
        findings = findings_from_file(args.findings)
    else:
        findings = attributed(records, args.verify, args.budget)
    from statesnap.output.report import write_report

    out: Path = args.output
    if out.is_dir():
        raise CliError(f"cannot write {out}: is a directory (give a file name)")
    try:
        write_report(out, records, findings, title=args.title)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    tests = sum(len(r.tests) for r in records)
    print(f"wrote {out} ({tests} tests in {len(records)} record(s), "
          f"{len(findings)} finding(s))")
    return 0
