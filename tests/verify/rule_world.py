"""A world for verify's verdict logic: records written by the real writer, and a
:class:`Runner` whose replays are answered by a rule (how the victim fares after a given
order) instead of a fresh interpreter, so that every branch runs in milliseconds."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import Finding
from statesnap.proof.verify import Verifier
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import Runner

ROOT = "/src/zoo"
#: How the victim fares after an order: None passes, a failure dict fails, ABSENT never ran.
Outcome = dict[str, Any] | None
#: A rule answers an order (and the keys restored before the victim, if any) with an outcome,
#: or with a whole :class:`ReplayResult` (a replay that timed out, or could not run).
Rule = Callable[[list[str], Mapping[str, Any] | None], Outcome | ReplayResult]
ABSENT: dict[str, Any] = {"absent": True}
#: The keys restored before the victim, as a rule gets them (None: a plain replay).
Restore = Mapping[str, Any] | None
#: verify's limits, as documented (literals: a changed limit must fail the tests using them).
MAX_SINGLE_SUSPECTS, MAX_KEY_REPLAYS, MAX_SET_KEYS, MAX_CLEANER_REPLAYS = 5, 6, 24, 3


def nid(name: str) -> str:
    """A test of the zoo module by name; a name holding ``::`` is a whole node id already."""
    return name if "::" in name else f"tests/test_zoo.py::{name}"


def failure(exc: str = "AssertionError", line: int | None = 30) -> dict[str, Any]:
    where = {"where": f"tests/test_zoo.py:{line}"} if line is not None else {}
    return {"phase": "call", "exc_type": exc, "message": "boom", "text": "", **where}


def env_change(key: str, before: str | None, after: str | None) -> dict[str, Any]:
    kind = "removed" if after is None else "added" if before is None else "changed"
    return {"probe": "env", "key": key, "change": kind, "before": before, "after": after,
            "phase": "call", "severity": 3}


def record_of(path: Path, tests: Sequence[tuple[str, list[dict[str, Any]]]],
              victim: str, victim_failure: dict[str, Any],
              extras: Mapping[str, dict[str, Any]] | None = None, fmt: int = 1) -> Record:
    """A record: ``tests`` (name, changes) pass in order, then ``victim`` fails; ``extras``
    adds fields to a test's line by name; ``fmt`` 2 takes stored verdicts."""
    w = RecordWriter(path)
    w.write({"type": "header", "format": fmt, "worker": "main", "rootdir": ROOT,
             "python": {"executable": "/nonexistent/python3"}, "args": ["tests"],
             "replay": {"cwd": ROOT, "args": []}, "probes": [{"name": "env", "status": "ok"}]})
    w.write({"type": "collection", "changes": []})
    more = extras or {}
    entries = [(name, changes, "passed", None, more.get(name, {})) for name, changes in tests]
    entries.append((victim, [], "failed", victim_failure, more.get(victim, {})))
    for index, (name, changes, outcome, fail, extra) in enumerate(entries):
        w.write({"type": "start", "index": index, "nodeid": nid(name)})
        call = "failed" if outcome == "failed" else "passed"
        line: dict[str, Any] = {
            "type": "test", "index": index, "nodeid": nid(name), "worker": "main",
            "outcome": outcome, "phases": {"setup": "passed", "call": call},
            "duration": 0.001, "changes": changes, **extra}
        if fail is not None:
            line["failure"] = fail
        w.write(line)
    w.write({"type": "footer", "exitstatus": 1, "tests": len(entries)})
    w.close()
    return read_record(path)


class RuleRunner(Runner):
    """A :class:`Runner` whose replays are answered by ``rule``; it keeps every order asked."""

    def __init__(self, record: Record, rule: Rule) -> None:
        super().__init__(record, logs_dir=record.path.with_suffix(".logs"), stage_files=False)
        self.rule = rule
        self.asked: list[tuple[str, list[str]]] = []
        #: The restore spec of each replay asked, in the same order.
        self.restores: list[Mapping[str, Any] | None] = []
        #: The printed lines run (statesnap.proof.confirm), in order.
        self.printed: list[str] = []

    def run(self, order: Sequence[str], restore: Mapping[str, Any] | None = None,
            label: str = "replay", timeout: float | None = None) -> ReplayResult:
        self.asked.append((label, list(order)))
        self.restores.append(restore)
        outcome = self.rule(list(order), restore)
        if isinstance(outcome, ReplayResult):
            return outcome
        result = ReplayResult(order=list(order))
        # A real child says on the victim's test line which keys it put back; in the rule's
        # world every key asked is put back (its module is always there).
        result.restored = [f"{k[0]}:{k[1]}" for k in (restore or {}).get("keys") or []]
        victim = order[-1]
        for nodeid in order[:-1]:
            result.outcomes[nodeid] = "passed"
        if outcome is ABSENT:
            return result
        result.outcomes[victim] = "passed" if outcome is None else "failed"
        if outcome is not None:
            result.failures[victim] = outcome
        return result

    def run_printed(self, command: str, order: Sequence[str], label: str = "confirm",
                    timeout: float | None = None, python: str | None = None) -> ReplayResult:
        """The printed line of ``order``: answered by ``rule`` as a replay of it would be
        (the rule's world has no statesnap-only failures); kept in ``printed``."""
        self.printed.append(command)
        return self.run(order, None, label, timeout)


def verify(record: Record, rule: Rule, raise_errors: bool = False,
           cleaners: bool = False, repeat: int = 1) -> tuple[Finding, RuleRunner]:
    (finding,) = attribute(record)
    runner = RuleRunner(record, rule)
    verifier = Verifier(record, runner, budget=60, repeat=repeat, raise_errors=raise_errors)
    verifier.verify(finding)
    verifier.find_cleaners(finding, everywhere=cleaners)
    return finding, runner


def labels(runner: RuleRunner) -> list[str]:
    return [label for label, _ in runner.asked]


def restored_keys(restore: Restore) -> set[str]:
    return {k for _probe, k in (restore or {}).get("keys", [])}


def one_polluter(tmp_path: Path, *keys: str) -> Record:
    """``test_a`` sets ``keys``, ``test_b`` changes nothing, then the victim fails."""
    return record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change(k, None, "1") for k in keys]), ("test_b", [])],
        "test_victim", failure())


def needs_a(restore: Restore, order: list[str], key: str = "ZOO_A") -> Outcome:
    """The victim fails after test_a unless ``key`` is put back."""
    return failure() if nid("test_a") in order and key not in restored_keys(restore) else None
