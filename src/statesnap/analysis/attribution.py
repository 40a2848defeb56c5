"""Attribution from the record alone: for each failing test, who last wrote the dirty state.

Earlier tests' net changes folded onto the baseline give the dirty keys and their last writers,
ranked (quoted in the failure first, then severity, then recency).  Pure functions; no reruns.
See docs/ARCHITECTURE.md ("From changes to suspects").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from statesnap.analysis.connection import GENERIC, connection, name_words
from statesnap.analysis.findings import (
    MAX_CANDIDATES,
    SUSPECTED,
    UNEXPLAINED,
    Candidate,
    Finding,
)
from statesnap.analysis.leaks import WIDE_SCOPES
from statesnap.analysis.victimcode import SourceReader, VictimCode
from statesnap.record.journal import Record, TestEntry
from statesnap.replay.repro import repro_command
from statesnap.state.diff import REMOVED, Change

_ABSENT = object()


@dataclass
class Write:
    """The last persistent write of one key before some test."""

    test: TestEntry
    change: Change
    baseline: Any


@dataclass
class Dirty:
    """State that differed from the baseline when a test started."""

    writes: dict[tuple[str, str], Write] = field(default_factory=dict)
    #: ``(probe, key) -> [tests that put it back]`` (cleaners seen before the victim).
    cleaners: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _shares_scope(ch: Change, writer: TestEntry, victim: TestEntry) -> bool:
    """A wide fixture's change that is still in scope for the victim is its own setup."""
    if ch.scope not in WIDE_SCOPES or ch.phase != "setup":
        return False
    if ch.scope in ("session", "package"):
        return True
    if ch.scope == "module":
        return _module_of(writer.nodeid) == _module_of(victim.nodeid)
    # class scope: same module and class prefix
    return writer.nodeid.rsplit("::", 1)[0] == victim.nodeid.rsplit("::", 1)[0]


class _Fold:
    """The running fold of one process's changes onto its baseline."""

    def __init__(self) -> None:
        self.baseline: dict[tuple[str, str], Any] = {}
        self.writes: dict[tuple[str, str], Write] = {}
        self.cleaners: dict[tuple[str, str], list[str]] = {}

    def add(self, t: TestEntry) -> None:
        restored = t.extra.get("restored") if t.extra else None
        back = set(restored) if isinstance(restored, list) else set()
        for ch in t.changes:
            ref = (ch.probe, ch.key)
            if ref not in self.baseline:
                self.baseline[ref] = ch.before
            if back and f"{ch.probe}:{ch.key}" in back:
                # Restore mode put the key back after this test: later tests saw it as it
                # was before, so this is not its leak for them (nor a cleaner's work).
                continue
            now = None if ch.change == REMOVED else ch.after
            if now == self.baseline[ref]:
                if ref in self.writes:
                    self.cleaners.setdefault(ref, []).append(t.nodeid)
                self.writes.pop(ref, None)
            else:
                self.writes[ref] = Write(t, ch, self.baseline[ref])

    def dirty_for(self, victim: TestEntry) -> Dirty:
        writes: dict[tuple[str, str], Write] = {}
        for ref, w in self.writes.items():
            if not _shares_scope(w.change, w.test, victim):
                writes[ref] = w
                continue
            # The wide setup's part is the victim's own setup; what the same test changed
            # after it (a setup_class list the test body appended to) is a write like any.
            rest = w.change.after_setup()
            if rest is not None and not _shares_scope(rest, w.test, victim):
                writes[ref] = Write(w.test, rest, rest.before)
        return Dirty(writes, {ref: list(c) for ref, c in self.cleaners.items()})


def dirty_before(tests: Sequence[TestEntry], victim: TestEntry) -> Dirty:
    """The keys that were dirty when ``victim`` started, and their last writers."""
    return dirty_at(tests, [victim])[(victim.worker, victim.index)]


def dirty_at(tests: Sequence[TestEntry],
             victims: Sequence[TestEntry]) -> dict[tuple[str, int], Dirty]:
    """:func:`dirty_before` for many victims in one pass: ``{(worker, index): Dirty}``.

    A 10,000-test record with dozens of failures is folded once, not once per failure.
    """
    wanted: dict[str, list[TestEntry]] = {}
    for v in victims:
        wanted.setdefault(v.worker, []).append(v)
    out: dict[tuple[str, int], Dirty] = {}
    for worker, mine in wanted.items():
        mine.sort(key=lambda v: v.index)
        fold = _Fold()
        pending = iter(mine)
        nxt = next(pending, None)
        for t in sorted((t for t in tests if t.worker == worker), key=lambda t: t.index):
            while nxt is not None and t.index >= nxt.index:
                out[(worker, nxt.index)] = fold.dirty_for(nxt)
                nxt = next(pending, None)
            if nxt is None:
                break
            fold.add(t)
        while nxt is not None:
            out[(worker, nxt.index)] = fold.dirty_for(nxt)
            nxt = next(pending, None)
    return out


#: Words a failure quotes when it trips over a probe's state though it never names the key.
_PROBE_TERMS = {"cwd": ["getcwd", "chdir", "cwd"]}
#: A deleted working directory fails exactly this way.
DELETED_CWD = "<deleted directory>"


def key_terms(probe: str, key: str) -> list[str]:
    """Words of a key that a failure message is likely to quote."""
    terms = [key, *_PROBE_TERMS.get(probe, ())]
    tail = key.rsplit(":", 1)[-1]
    parts = [tail, tail.rsplit(".", 1)[-1], tail.rstrip("/").rsplit("/", 1)[-1]]
    # A common word is no name of the key: ``socket.timeout`` is not ``config.timeout()``.
    terms += [t for t in parts if t == key or t not in GENERIC]
    return [t for t in dict.fromkeys(terms) if len(t) >= 3]


def _value_terms(value: Any) -> list[str]:
    if (isinstance(value, str) and 3 <= len(value) <= 200 and not value.startswith("<redacted")
            and value not in _FINGERPRINT_WORDS):
        return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 10:
        return [str(value)]
    return []


#: pytest's location lines: ``path.py:12: ExcType``, ``path.py:8: in func``, ``path.py:22:``.
_LOCATION = re.compile(r"^\S+:\d+:( [\w.]+| in \S+)?$")
#: Fingerprints that are words of any failure message (``directory``: "No such file or
#: directory"), not values a failure would quote.
_FINGERPRINT_WORDS = frozenset({"directory", "file", "symlink", "default", "none", "None",
                                "True", "False", "added", "removed"})


@dataclass
class FailureText:
    """A failure split the way its words count: the test's code, and what pytest said."""

    #: Source lines of the traceback (what the test did: ``assert "ZOO_MODE" not in ...``).
    code: str
    #: The message and pytest's ``E`` lines (values, assertion introspection).
    said: str

    @classmethod
    def of(cls, failure: dict[str, Any] | None) -> FailureText:
        if not failure:
            return cls("", "")
        text = str(failure.get("text") or "")
        code: list[str] = []
        said = [str(failure.get("message") or "")]
        for line in text.splitlines():
            if _LOCATION.match(line.strip()):
                # pytest's ``path:line: ExcType``: its path names the rootdir, and so every
                # ``sys.path`` entry and folder under it, which is no key the code names.
                continue
            (said if line.startswith("E ") else code).append(line)
        return cls("\n".join(code), "\n".join(said))


def _mentions(text: str, terms: Iterable[str]) -> bool:
    # Whole words only: ``PATH`` is not named by ``PYTHONPATH``.
    # The plain substring test first: most terms are nowhere in the text, and compiling a
    # pattern per term would cost more than all the rest of attribution.
    return any(t in text and re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", text)
               for t in terms)


#: Probes whose keys are Python names: a file path in the text does not name them.
_NAME_PROBES = frozenset({"attributes", "modules"})
#: Words of code that looks at a file's timestamp rather than its content.
_TIMESTAMP_WORDS = ("mtime", "st_mtime", "getmtime", "mtime_ns", "st_mtime_ns", "utime",
                    "touch", "stat")


def reset_by_victim(probe: str, names: Iterable[str], code: VictimCode | None) -> bool:
    """Whether the victim's own code sets this state before it reads it (``reload(config)``,
    ``config.X = ...``): what an earlier test left there never reaches it."""
    if code is None or not code.resets:
        return False
    for name in names:
        ref = f"{probe}:{name}"
        if ref in code.resets or any(ref.startswith(r + ".") for r in code.resets):
            return True
    return False


def timestamp_only(before: Any, after: Any) -> bool:
    """A file rewritten as it was (a test that restores what it edited): the same size and
    kind, only its modification time differs.  What a test reads of it is its content."""
    if not (isinstance(before, dict) and isinstance(after, dict) and "mtime_ns" in after):
        return False
    rest = {k: v for k, v in after.items() if k != "mtime_ns"}
    return bool(rest) and rest == {k: v for k, v in before.items() if k != "mtime_ns"}


def _named(text: str, terms: Iterable[str]) -> bool:
    # A Python name, not the part of a file path the failing code opens.
    return name_words(text, terms)


def rank(victim: TestEntry, dirty: Dirty, code: VictimCode | None = None) -> list[Candidate]:
    """Suspects for ``victim``, best first.

    A key the test's own code names weighs most (the assertion line says what it relies
    on), then a key or changed value in what pytest printed (introspection can dump a whole
    mapping, naming harmless keys too, so it weighs less); then what connects the key to
    the victim's code (``code``: the module it uses, the logger the code it calls logs to,
    :mod:`statesnap.analysis.connection`); then severity; then recency.  What the victim sets
    itself before reading it, and a file only re-stamped, weigh recency alone: neither is
    what an earlier test broke.
    """
    text = FailureText.of(victim.failure)
    exc_type = (victim.failure or {}).get("exc_type")
    out: list[Candidate] = []
    for (probe, key), w in dirty.writes.items():
        score = 0.0
        reasons: list[str] = []
        # The object's other names (fold_aliases keeps one change per object): the victim's
        # code may reach it by any of them.
        names = (key, *(w.change.aliases or ()))
        recency = 5 * (w.test.index + 1) / (victim.index + 1)
        after = w.change.after if w.change.change != REMOVED else None
        if reset_by_victim(probe, names, code):
            out.append(Candidate(
                nodeid=w.test.nodeid, index=w.test.index, probe=probe, key=key,
                before=w.baseline, after=after, score=round(recency, 3),
                reasons=["the victim sets it itself before reading it"]))
            continue
        if (probe == "files" and timestamp_only(w.baseline, w.change.after)
                and not _mentions(f"{code.code if code else ''}\n{text.code}", _TIMESTAMP_WORDS)):
            out.append(Candidate(
                nodeid=w.test.nodeid, index=w.test.index, probe=probe, key=key,
                before=w.baseline, after=after, score=round(recency + 10 * w.change.severity, 3),
                reasons=["only its modification time changed (same size)"]))
            continue
        terms = [term for name in names for term in key_terms(probe, name)]
        mentions = _mentions
        if probe in _NAME_PROBES:
            mentions = _named
            # ``propagation_logger.setLevel(...)`` in a test that requests the fixture
            # ``propagation_logger`` names the fixture, not the module of that name.
            terms = [t for t in terms if code is None or t not in code.params]
        if mentions(text.code, terms):
            score += 100
            reasons.append("key named in the failing code")
        if mentions(text.said, terms):
            score += 60
            reasons.append("key named in the failure")
        if _mentions(text.said, _value_terms(w.change.after)):
            score += 50
            reasons.append("changed value appears in the failure")
        if (probe == "cwd" and w.change.after == DELETED_CWD
                and (victim.failure or {}).get("exc_type") == "FileNotFoundError"):
            score += 60
            reasons.append("the working directory was deleted and the failure is a missing file")
        if code is not None:
            linked, why = max((connection(probe, name, code, exc_type) for name in names),
                              key=lambda found: found[0])
            score += linked
            reasons += why
        score += 10 * w.change.severity
        score += recency
        out.append(Candidate(
            nodeid=w.test.nodeid, index=w.test.index, probe=probe, key=key,
            before=w.baseline, after=after, score=round(score, 3), reasons=reasons,
        ))
    out.sort(key=lambda c: (-c.score, -c.index, c.probe, c.key))
    return out


def victims(record: Record) -> list[TestEntry]:
    """Tests that failed in setup or call (teardown errors are the test's own problem)."""
    out = [t for t in record.tests if t.failed]
    if record.running is not None:
        # The test that was running when the interpreter died is a victim too.
        out.append(TestEntry(index=int(record.running["index"]),
                             nodeid=str(record.running["nodeid"]), outcome="crashed",
                             worker=record.worker, phases={"call": "failed"},
                             failure={"exc_type": "crash", "message": "the interpreter died"}))
    return out


def polluters_of(candidates: Iterable[Candidate]) -> list[str]:
    """Distinct suspect tests in rank order."""
    return list(dict.fromkeys(c.nodeid for c in candidates))


#: Classmates of a victim (:func:`classmates`) replayed as pairs before delta debugging.
MAX_CLASSMATES = 2


def classmates(prefix: Sequence[str], victim: str, tried: Iterable[str],
               limit: int = MAX_CLASSMATES) -> list[str]:
    """The tests of the victim's own class that ran before it (``prefix``, in run order),
    nearest first, less those already ``tried``; none for a victim outside a class.

    A class's tests share what its ``setup_class`` made: a directory made there lies outside
    every probe, and a test that leaves a file in it records no change, so it is no suspect.
    Its pair with the victim runs the set-up once for both, as the run did; a classmate just
    before the victim is the likeliest, and two pairs cost less than delta debugging.
    """
    parent, sep, _ = victim.rpartition("::")
    if not sep or "::" not in parent:
        return []  # a module-level test: its file is no class
    skip = set(tried)
    near = [n for n in reversed(prefix) if n.rpartition("::")[0] == parent and n not in skip]
    return near[:limit]


def source_reader(record: Record) -> SourceReader:
    """The reader of victims' code under the record's rootdir."""
    return SourceReader(record.header.get("rootdir"))


def attribute(record: Record, reader: SourceReader | None = None) -> list[Finding]:
    """One ``suspected`` (or ``unexplained``) finding per victim, from the record only."""
    findings: list[Finding] = []
    found = victims(record)
    dirty_of = dirty_at(record.tests, found)
    reader = reader or source_reader(record)
    for victim in found:
        dirty = dirty_of[(victim.worker, victim.index)]
        cands = rank(victim, dirty, reader.of(victim.nodeid))
        failure = victim.failure or {}
        f = Finding(
            victim=victim.nodeid,
            polluters=[],
            probe=None,
            key=None,
            status=UNEXPLAINED,
            worker=victim.worker,
            exc_type=failure.get("exc_type"),
            message=failure.get("message"),
            where=failure.get("where"),
            candidates=cands[:MAX_CANDIDATES],
        )
        if cands:
            top = cands[0]
            f.polluters = [top.nodeid]
            f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
            f.status = SUSPECTED
            # No fix hint either: it is given once a replay proved the polluter (verify);
            # here the top suspect may be an innocent test that changed the same state.
            # No cleaner is named here: only a replay of [polluter, cleaner, victim] that
            # passes names one (statesnap.proof.verify).
            f.repro = repro_command(record.header, [top.nodeid, victim.nodeid])
        else:
            f.note = "no state differed from the baseline when it ran"
            f.repro = repro_command(record.header, [victim.nodeid])
        findings.append(f)
    return findings
