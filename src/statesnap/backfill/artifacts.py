"""Read every artifact into shards; one line for each artifact that cannot be used.

The kind is told from the content, not the name; a folder stands for the artifacts in it.
Shards naming a test the checkout lacks are refused; two artifacts of one worker are merged.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from statesnap.backfill.consolelog import parse_log
from statesnap.backfill.junit import parse_junit
from statesnap.backfill.optiontable import FALLBACK, CheckoutTables
from statesnap.backfill.orderrecord import replay_invocation
from statesnap.backfill.plugins import parse_labels
from statesnap.backfill.pytestreplay import is_replay_file, parse_replay
from statesnap.backfill.shard import KIND_RANK, BadArtifact, Shard
from statesnap.record.lanes import read_lanes
from statesnap.record.reader import RecordError
from statesnap.replay.args import OptionTable
from statesnap.replay.repro import without_statesnap

_VERBOSITY = re.compile(r"^(?:-[vq]+|--verbose|--quiet|--verbosity=.*)$")
_IN_FOLDERS = (".jsonl", ".xml", ".log", ".txt", ".out")


@dataclass
class Loaded:
    shards: list[Shard] = field(default_factory=list)
    #: One line per artifact (or shard) that could not be used.
    bad: list[str] = field(default_factory=list)
    #: The checkout's option table per recorded invocation (None: not asked yet).
    tables: CheckoutTables | None = None


def expand(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    bad: list[str] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file()
                           and (p.suffix in _IN_FOLDERS or is_replay_file(p)))
            if not found:
                bad.append(f"{path}: a folder with no artifact in it")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            bad.append(f"{path}: no such file")
    # JUnit last: its ids are found by collecting the checkout with an invocation another
    # artifact (a log, a record) may name.
    unique = list(dict.fromkeys(files))
    return sorted(unique, key=lambda p: p.suffix == ".xml"), bad


def read_artifact(path: Path, collected: Callable[[], set[str] | None]) -> list[Shard]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BadArtifact(f"{path}: cannot read ({exc.strerror})") from None
    head = text.lstrip()[:200]
    if head.startswith('{"type"') or head.startswith('{"type'):
        return _statesnap(path)
    if head.startswith("<"):
        return parse_junit(path, text, collected())
    if is_replay_file(path):
        return parse_replay(path, text)
    return parse_log(path, text)


def _statesnap(path: Path) -> list[Shard]:
    try:
        lanes = read_lanes(path)
    except RecordError as exc:
        raise BadArtifact(str(exc)) from None
    shards: list[Shard] = []
    for lane in lanes:
        tests = sorted(lane.tests, key=lambda t: t.index)
        order = [t.nodeid for t in tests]
        outcomes = {t.nodeid: "failed" if t.failed else t.outcome for t in tests}
        failures = {t.nodeid: {"exc_type": t.failure.get("exc_type"),
                               "message": t.failure.get("message")}
                    for t in tests if t.failure}
        if lane.running is not None:
            order.append(str(lane.running["nodeid"]))
            outcomes[order[-1]] = "crashed"
            failures[order[-1]] = {"exc_type": "crash", "message": "the interpreter died"}
        if not order:
            continue
        has_state = bool(lane.header.get("probes")) and not lane.header.get("order_only")
        shards.append(Shard(source=path, kind="statesnap", worker=lane.worker, order=order,
                            outcomes=outcomes, failures=failures,
                            args=list(lane.header.get("args") or []),
                            record=lane if has_state else None,
                            plugins=parse_labels(map(str, lane.header.get("plugins") or []))))
    if not shards:
        raise BadArtifact(f"{path}: a statesnap record with no test")
    return shards


def collect_ids(root: Path, args: list[str] | None, python: str,
                table: OptionTable = FALLBACK) -> set[str] | None:
    """The node ids the checkout has (``pytest --collect-only -q``), None when it fails."""
    # The recorded -v/-q would change what --collect-only prints: one id a line needs -q.
    kept = [a for a in without_statesnap(replay_invocation(args, table, root))
            if not _VERBOSITY.match(a)]
    cmd = [python, "-m", "pytest", *kept, "--collect-only", "-q", "-p", "no:cacheprovider"]
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode not in (0, 5):
        return None
    return {line.strip() for line in proc.stdout.splitlines() if "::" in line}


def load(paths: Sequence[Path], root: Path, python: str) -> Loaded:
    files, bad = expand(paths)
    tables = CheckoutTables(root, python)
    loaded = Loaded(bad=bad, tables=tables)
    cache: list[set[str] | None] = []
    first_args: list[list[str] | None] = [None]

    def collected() -> set[str] | None:
        if not cache:
            cache.append(collect_ids(root, first_args[0], python,
                                     tables.table(first_args[0])))
        return cache[0]

    raw: list[Shard] = []
    for path in files:
        try:
            shards = read_artifact(path, collected)
        except BadArtifact as exc:
            loaded.bad.append(str(exc))
            continue
        if first_args[0] is None:
            first_args[0] = next((s.args for s in shards if s.args), None)
        raw += shards
    ids = collected() if raw else None
    for shard in raw:
        missing = [n for n in shard.order if ids is not None and n not in ids]
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                              if len(missing) > 3 else "")
            loaded.bad.append(f"{shard.source} ({shard.worker}): {len(missing)} test id(s) "
                              f"not in the checkout at {root}: {shown}")
            continue
        loaded.shards.append(shard)
    loaded.shards = dedupe(loaded.shards)
    return loaded


def dedupe(shards: list[Shard]) -> list[Shard]:
    """One shard per distinct order (the richest artifact's); JUnit lanes whose tests other
    shards cover only lend their failure messages."""
    by_order: dict[tuple[str, ...], Shard] = {}
    for shard in sorted(shards, key=lambda s: KIND_RANK.get(s.kind, 9)):
        kept = by_order.setdefault(tuple(shard.order), shard)
        if kept is not shard:
            _fill(kept, shard)
    out = list(by_order.values())
    covered = {n for s in out if s.kind != "junit" for n in s.order}
    result: list[Shard] = []
    for shard in out:
        if shard.kind == "junit" and covered and set(shard.order) <= covered:
            for other in out:
                if other.kind != "junit":
                    _fill(other, shard)
            continue
        result.append(shard)
    return result


def _fill(kept: Shard, other: Shard) -> None:
    for nodeid in kept.order:
        if nodeid in other.failures and nodeid not in kept.failures:
            kept.failures[nodeid] = other.failures[nodeid]
        if nodeid not in kept.outcomes and nodeid in other.outcomes:
            kept.outcomes[nodeid] = other.outcomes[nodeid]
    if kept.args is None and other.args is not None:
        kept.args = other.args
    if kept.plugins is None and other.plugins is not None:
        kept.plugins = dict(other.plugins)
