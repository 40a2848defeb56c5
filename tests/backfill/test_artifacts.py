"""Artifacts of one real ``pytest -n 2 -v`` run become the orders its statesnap record holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from backfill_suite import VICTIMS, CiRun

from statesnap.backfill.artifacts import load
from statesnap.backfill.consolelog import parse_log
from statesnap.backfill.junit import parse_junit
from statesnap.backfill.orderrecord import write_order_record
from statesnap.backfill.pytestreplay import parse_replay
from statesnap.backfill.shard import BadArtifact
from statesnap.record.lanes import read_lanes
from statesnap.record.reader import read_record


def recorded(ci: Path) -> dict[str, list[str]]:
    """Each xdist worker's order, from statesnap's own record of the run."""
    lanes = read_lanes(ci / "record.jsonl")
    return {lane.worker: [t.nodeid for t in sorted(lane.tests, key=lambda t: t.index)]
            for lane in lanes}


def outcomes(ci: Path) -> dict[str, str]:
    return {t.nodeid: "failed" if t.failed else t.outcome
            for lane in read_lanes(ci / "record.jsonl") for t in lane.tests}


def test_verbose_xdist_log_gives_each_workers_order(ci_run: CiRun) -> None:
    log = ci_run.ci / "console.log"
    shards = parse_log(log, log.read_text())
    assert {s.worker: s.order for s in shards} == recorded(ci_run.ci)
    got = {n: o for s in shards for n, o in s.outcomes.items()}
    assert got == outcomes(ci_run.ci)
    failures = {n: f for s in shards for n, f in s.failures.items()}
    assert set(failures) >= set(VICTIMS)
    assert all(failures[v]["exc_type"] == "AssertionError" for v in VICTIMS)


def decorate(text: str) -> str:
    """The log as a CI service shows it: a timestamp per line and ANSI colours."""
    out = []
    for i, line in enumerate(text.splitlines()):
        line = re.sub(r"\b(PASSED|FAILED)\b", lambda m: f"\x1b[32m{m.group(1)}\x1b[0m", line)
        out.append(f"2026-05-01T12:00:{i % 60:02d}.1234567Z {line}")
    return "\n".join(out) + "\n"


def test_colours_and_ci_timestamps_are_stripped(ci_run: CiRun, tmp_path: Path) -> None:
    log = tmp_path / "gha.log"
    log.write_text(decorate((ci_run.ci / "console.log").read_text()))
    shards = parse_log(log, log.read_text())
    assert {s.worker: s.order for s in shards} == recorded(ci_run.ci)


def test_pytest_replay_files_give_each_workers_order(ci_run: CiRun) -> None:
    got = {}
    for path in sorted(ci_run.ci.glob(".pytest-replay-*.txt")):
        (shard,) = parse_replay(path, path.read_text())
        got[shard.worker] = shard.order
        assert all(shard.outcomes[n] == outcomes(ci_run.ci)[n] for n in shard.order)
    assert got == recorded(ci_run.ci)


def test_junit_maps_back_to_node_ids_in_arrival_order(ci_run: CiRun) -> None:
    xml = ci_run.ci / "junit.xml"
    collected = {n for order in recorded(ci_run.ci).values() for n in order}
    (shard,) = parse_junit(xml, xml.read_text(), collected)
    assert set(shard.order) == collected
    for order in recorded(ci_run.ci).values():
        # JUnit names no worker: each worker's order is the JUnit order restricted to it.
        assert [n for n in shard.order if n in order] == order
    assert shard.outcomes == outcomes(ci_run.ci)
    assert shard.failures[next(iter(VICTIMS))]["exc_type"] == "AssertionError"
    assert "names no xdist worker" in shard.notes[0]


def test_all_artifacts_together_give_one_shard_per_worker(ci_run: CiRun) -> None:
    loaded = load([ci_run.ci], ci_run.root, sys.executable)  # a downloaded artifact folder
    assert loaded.bad == []
    assert sorted((s.worker, tuple(s.order)) for s in loaded.shards) == sorted(
        (w, tuple(o)) for w, o in recorded(ci_run.ci).items())
    assert {s.kind for s in loaded.shards} == {"statesnap"}  # the richest artifact wins


def test_non_verbose_ra_log_interleaves_back_to_the_order(ci_run: CiRun,
                                                           tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-p", "statesnap", f"--statesnap-record={record}", "--statesnap-verify-budget=0"],
        cwd=ci_run.root, capture_output=True, text=True, check=False)
    log = tmp_path / "ra.log"
    log.write_text(proc.stdout)
    (shard,) = parse_log(log, proc.stdout)
    assert shard.order == read_record(record).order()
    assert shard.worker == "main"


@pytest.mark.parametrize("text, says", [
    ("hello\nworld\n", "no test outcome found"),
    ("PASSED tests/a.py::test_x\n", "no -v lines"),
])
def test_logs_without_an_order_are_refused(tmp_path: Path, text: str, says: str) -> None:
    log = tmp_path / "x.log"
    log.write_text(text)
    with pytest.raises(BadArtifact, match=says):
        parse_log(log, text)


def test_order_only_record_is_a_record_the_cli_replays(ci_run: CiRun, tmp_path: Path) -> None:
    log = ci_run.ci / "console.log"
    shard = next(s for s in parse_log(log, log.read_text()) if s.worker == "gw0")
    path = write_order_record(shard, ci_run.root, tmp_path / "gw0.jsonl")
    record = read_record(path)
    assert record.header["order_only"] is True
    assert record.order() == shard.order
    assert all(t.changes == [] for t in record.tests)
    victim = next(v for v in VICTIMS if v in shard.order)
    assert record.test_by_id(victim) is not None and record.test_by_id(victim).failed
    statesnap = [sys.executable, "-m", "statesnap"]
    dry = subprocess.run([*statesnap, "replay", str(path), "--dry-run"], capture_output=True,
                         text=True, check=False, cwd=ci_run.root)
    assert dry.returncode == 0, dry.stderr
    assert f"{len(shard.order)} test(s) in the recorded order" in dry.stderr
    bisect = subprocess.run([*statesnap, "bisect", str(path), "--test", victim],
                            capture_output=True, text=True, check=False, cwd=ci_run.root)
    assert bisect.returncode == 0, bisect.stdout + bisect.stderr
    assert f"  {VICTIMS[victim][0]}\n" in bisect.stdout
    hunt = subprocess.run([*statesnap, "hunt", str(path), "--json", "-q", "--budget", "60"],
                          capture_output=True, text=True, check=False, cwd=ci_run.root)
    assert hunt.returncode in (0, 1), hunt.stderr
    assert json.loads(hunt.stdout)["records"]


def test_log_and_record_name_the_same_plugins_ci_loaded(ci_run: CiRun, tmp_path: Path) -> None:
    """The ``plugins:`` header line (under CI timestamps too) and the record's header give
    the same set, the one installed here but pytest-randomly (which replays handle
    themselves): a backfill on this machine blocks nothing."""
    from statesnap.backfill.artifacts import read_artifact
    from statesnap.backfill.plugins import installed, plan

    log = tmp_path / "gha.log"
    log.write_text(decorate((ci_run.ci / "console.log").read_text()))
    from_log = {s.plugins and tuple(sorted(s.plugins.items())) for s in parse_log(
        log, log.read_text())}
    from_record = {s.plugins and tuple(sorted(s.plugins.items()))
                   for s in read_artifact(ci_run.ci / "record.jsonl", lambda: None)}
    assert from_log == from_record and len(from_log) == 1
    ci = dict(from_log.pop() or ())
    here = installed()
    # The CI run had -p no:randomly; statesnap switches randomly off in replays anyway.
    assert ci == {name: p.version for name, p in here.items() if name != "randomly"}
    assert "xdist" in ci and "replay" in ci
    p = plan(ci, "console log", here)
    assert (p.blocked, p.missing, p.other_version, p.difference()) == ([], [], [], None)
    # pytest-replay files name no plugins: unknown, said so.
    replay = next(ci_run.ci.glob(".pytest-replay-*.txt"))
    assert parse_replay(replay, replay.read_text())[0].plugins is None
