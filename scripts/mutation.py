"""Mutation testing (cosmic-ray) of the modules whose bugs mislead a user or leak a secret.

Each module is mutated in a copy of the checkout (``build/mutation/<module>/``), never in
``src/``: cosmic-ray edits the file on disk, one mutant at a time, and runs only the tests
that cover that module.  ``PYTHONPATH`` puts the copy's ``src`` ahead of the editable
install, so the replay children and inner pytest runs the tests start import the mutant too.

Why cosmic-ray and not mutmut: mutmut 3 mutates only function bodies through trampolines
that exist in its own ``mutants/`` tree; it never mutates module-level code (the redaction
regex's flags are built in ``__init__``, but the report's Jinja templates, the tables of
options and the verdict constants live at module level) and the subprocesses statesnap
starts (replays in fresh processes, inner pytest runs) would not see its trampolines.
cosmic-ray rewrites the real file, so every process sees the mutant, and takes any shell
command as its test.

Usage: ``python scripts/mutation.py [MODULE ...]`` (default: all); writes the per-module
figures and every survivor to ``bench/results/mutation.md`` (merged with earlier runs of
other modules), then ``scripts/assemble_benchmarks.py`` puts them into BENCHMARKS.md.
``--recheck MODULE`` runs the last run's survivors again against today's tests (from its
session under ``build/mutation/``, or, where this checkout has none, from the survivors
``bench/results/mutation.json`` lists); ``--reread`` only reads the sessions again.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
RESULTS = ROOT / "bench" / "results" / "mutation.md"
STATE = ROOT / "bench" / "results" / "mutation.json"


@dataclass(frozen=True)
class Target:
    """One module to mutate and the tests that cover it (a small, fast selection)."""

    path: str
    tests: tuple[str, ...]
    #: pytest ``-k`` expression narrowing ``tests`` further, if any.
    select: str = ""
    #: Top-level functions and names of the module to mutate, where only part of it is
    #: under test (mutants elsewhere are taken out before the run, and not counted).
    only: tuple[str, ...] = ()
    #: Run the tests inside a fresh pid namespace (``unshare``, root): a mutant of the kill
    #: path that signals a wrong pid reaches only the namespace, never this machine.
    pidns: bool = False


#: The report's direct tests (view models, values, rendering, hostile keys, goldens): each
#: builds pages from records in process, in milliseconds.
_REPORT_TESTS = (
    "tests/report/test_report_views.py", "tests/report/test_report_changes.py",
    "tests/report/test_report_values.py",
    "tests/report/test_report_render.py", "tests/report/test_report_hostile.py",
    "tests/report/test_report_golden.py", "tests/report/test_report_hostile_run.py")
#: Chromium takes seconds a page: run by the suite, not for every mutant.
_NO_BROWSER = "not chromium"

#: The kill guard's tests (statesnap.base.spawned and its callers).
_KILL_GUARD_TESTS = ("tests/replay/test_kill_guard.py",)

#: The verification's tests of each replay, the polluters, the keys and the cleaners.
_VERIFY_REPLAY_TESTS = tuple(f"tests/verify/test_verify_{part}.py" for part in (
    "replays", "polluters", "keys", "cleaners"))
#: The verification's tests: every module of the procedure (verify.py and its parts).
_VERIFY_TESTS = ("tests/verify/test_verify_verdicts.py",
                 "tests/verify/test_verify_leftover_files.py", *_VERIFY_REPLAY_TESTS)

TARGETS: dict[str, Target] = {
    "replayargs": Target("src/statesnap/replay/args.py", (
        "tests/replay/test_replayargs.py",)),
    "redact": Target("src/statesnap/base/redact.py", (
        "tests/plugin/test_redact_unit.py",)),
    "record": Target("src/statesnap/record/journal.py", (
        "tests/test_record_reader.py",)),
    "record_reader": Target("src/statesnap/record/reader.py", (
        "tests/test_record_reader.py", "tests/test_record_lean_read.py")),
    "verify": Target("src/statesnap/proof/verify.py", _VERIFY_TESTS),
    "verify_replays": Target("src/statesnap/proof/replays.py", _VERIFY_TESTS),
    "verify_keys": Target("src/statesnap/proof/keys.py", _VERIFY_TESTS),
    "verify_cleaners": Target("src/statesnap/proof/cleaners.py", (
        *_VERIFY_TESTS, "tests/verify/test_verify_stored_cleaners.py")),
    "verdicts": Target("src/statesnap/analysis/verdicts.py", (
        "tests/cli/test_verdict_lines.py", "tests/test_explain_hints_unit.py")),
    "leaks": Target("src/statesnap/analysis/leaks.py", (
        *_VERIFY_REPLAY_TESTS, "tests/plugin/test_collection_and_scope.py",
        "tests/attribution/test_leak_owners.py", "tests/verify/test_verify_fixture_notes.py")),
    "close_ids": Target("src/statesnap/cli/common.py", (
        "tests/cli/test_close_ids.py", "tests/cli/test_cli_errors.py"),
        select="close or an_id_not_in", only=("_MIN_PART", "close_ids", "_not_in")),
    "hunt_suspect": Target("src/statesnap/hunt/suspect.py", (
        "tests/hunt/test_hunt_proofs.py", "tests/hunt/test_hunt_suspect.py"),
        select="differently or hunt_suspect"),
    "hunt_repro": Target("src/statesnap/hunt/repro.py", (
        "tests/hunt/test_hunt_proofs.py", "tests/hunt/test_hunt_repro.py"),
        select="long_order or hunt_repro"),
    "verify_leftovers": Target("src/statesnap/proof/leftovers.py", (
        "tests/verify/test_verify_leftover_files.py",), select="left"),
    "minimize": Target("src/statesnap/analysis/minimize.py",
                       ("tests/attribution/test_minimize.py",)),
    "strict": Target("src/statesnap/contain/strict.py", tuple(
        f"tests/contain/modes/test_strict_{part}.py" for part in ("unit", "held", "scope_end"))),
    "restore_mode": Target("src/statesnap/contain/restore.py", (
        "tests/contain/modes/test_restore_unit.py",)),
    "report_views": Target("src/statesnap/output/report/views.py", (
        *_REPORT_TESTS, "tests/report/test_report_limits.py"), _NO_BROWSER),
    "report_changes": Target("src/statesnap/output/report/changes.py", _REPORT_TESTS, _NO_BROWSER),
    "report_values": Target("src/statesnap/output/report/values.py", _REPORT_TESTS, _NO_BROWSER),
    "report_render": Target("src/statesnap/output/report/render.py", _REPORT_TESTS, _NO_BROWSER),
    "probe_env": Target("src/statesnap/probes/env.py", ("tests/probes/test_os_probes_unit.py",)),
    "probe_cwd": Target("src/statesnap/probes/cwd.py", ("tests/probes/test_os_probes_unit.py",)),
    "probe_syspath": Target("src/statesnap/probes/syspath.py", (
        "tests/probes/test_os_probes_unit.py",)),
    # The kill path (issue 27): every mutant that could signal a process statesnap did not
    # start must die.  The guard's tests record its kill()/killpg() instead of sending them,
    # so no mutant signals anything; their one real kill runs inside a pid namespace.
    # The guard itself (what may be signalled), not its waiting helpers (they signal nothing
    # and are covered by tests/contain/isolation/test_procwait.py).
    "spawned": Target("src/statesnap/base/spawned.py", _KILL_GUARD_TESTS, only=(
        "_EXITED_NOW", "_REAPED_KEPT", "is_pid", "_note", "popen", "fork", "lead_group",
        "owned", "forget", "_refuse", "_ours", "signal_process", "signal_group"), pidns=True),
    "procwait": Target("src/statesnap/replay/procwait.py", (
        *_KILL_GUARD_TESTS, "tests/contain/isolation/test_procwait.py"),
        only=("kill_group", "wait_child"), pidns=True),
    "replay_kill": Target("src/statesnap/replay/runner.py", _KILL_GUARD_TESTS, only=("_kill",),
                          pidns=True),
}

#: Survivors judged equivalent (no behaviour a user could see changes), keyed by module and
#: the mutated line as cosmic-ray's diff shows it (stripped), with the reason.
_NOT_NT = ("the same value for every os.name but 'nt' (Windows, where the probes' POSIX "
           "paths do not run): 'posix' > 'nt' and 'posix' is not 'nt'")
_CHANGES = ("a change is always one of added, removed, changed (state/diff.py): for those three "
            "the comparison gives the same answer, once the earlier branches are taken")
_SMALL_INT = "CPython caches small ints, so `is` compares these as `==` does"
_CACHED = ("with n == 2 the complements are the two chunks, already answered by ddmin's "
           "cache: no extra replay, same answer")
_FROZEN = ("nothing assigns to or hashes an OptionTable or a Word once built (mypy strict "
           "checks the frozen contract where they are used)")
_SOURCE = "the default is never used: every Word is built with its source"
_NEVER_PAST = "the index never passes the length: each step takes words that exist, so != is <"
_SAME_INT = ("the words of one argument share one int object (the same src), and words of "
             "different arguments differ in value, so `is` is `==`")
_UNKNOWN_LETTER = ("the default is read only for an unknown letter that ended a chain, which "
                   "always has an attached value, handled before nargs is looked at")
_BLANK_LAST = ("never true (split() never returns an empty list): a trailing empty string "
               "left in the list is a blank last line, skipped, and the line before it is "
               "whole either way")
_GROUP_SOURCE = "every word of a group has the same source (that is what makes it a group)"
_BELOW = ("the index stays below start + free, where no word is '--' (split_words stops at "
          "the first '--', and the words from start on were taken as values); '--' is "
          "option-like anyway, so the loop stops there either way")
_REST = ("any count of at least the words left slices the same rest of the line, and the loop "
         "ends past it")
_ALL_PASS_BUDGET = "every caller of verify_findings passes budget (the default is never used)"
_PAIRS = "every restored key is built here as a [probe, key] pair"
_ONE_CHAR = "CPython caches one-character strings, so `is` compares them as `==` does"
_FIRST_PIECE = "the first piece of split('=') is the same for any maxsplit >= 1"
EQUIVALENT: dict[tuple[str, str], str] = {
    ("replayargs", "@dataclass(frozen=False)"): _FROZEN,
    ("replayargs", "source: int = not 1"): _SOURCE,
    ("replayargs", "source: int = +1"): _SOURCE,
    ("replayargs", "source: int = 1"): _SOURCE,
    ("replayargs", "source: int = - 0"): _SOURCE,
    ("replayargs", "source: int = - 2"): _SOURCE,
    ("replayargs", "source: int = ~1"): _SOURCE,
    ("replayargs", 'while (start + free < len(args) and args[start | free] != "--"'): _BELOW,
    ("replayargs", 'while (start + free < len(args) and args[start & free] != "--"'): _BELOW,
    ("replayargs", 'while (start + free < len(args) and args[start ^ free] != "--"'): _BELOW,
    ("replayargs", 'while (start + free < len(args) and args[start >> free] != "--"'): _BELOW,
    ("replayargs", 'while (start + free != len(args) and args[start + free] != "--"'):
        _NEVER_PAST,
    ("replayargs", "return len(args) + start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", "return len(args) * start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", "return len(args) ** start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", "return len(args) << start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", "return len(args) | start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", "return len(args) ^ start  # REMAINDER / PARSER: the rest of the line"):
        _REST,
    ("replayargs", 'if "-o" in names and word.values and word.values[ -1].startswith('
                   '"cache_dir="):'):
        "-o takes exactly one value (nargs None): the first value is the last",
    ("replayargs", "while n + len(group) < len(words) and words[n + len(group)].source <= "
                   "group[0].source:"):
        "sources never decrease along the words, so <= holds only for the same source",
    ("replayargs", "while n + len(group) < len(words) and words[n + len(group)].source == "
                   "group[ -1].source:"): _GROUP_SOURCE,
    ("replayargs", "if len(group) >= 1 and kept == group:"):
        "a single kept word is its argument as written followed by its values: the same words",
    ("replayargs", "out += [expanded[group[ -1].source], *group[-1].words[1:]]"): _GROUP_SOURCE,
    ("replayargs", 'if arg == "-p" and i != len(args):'): _NEVER_PAST,
    ("replayargs", 'if not word or word[0] != "-" or word <= "-":'):
        "the word starts with '-' here, so only '-' itself sorts <= '-'",
    ("replayargs", 'if "=" in word and word.split("=", 2)[0] in table.nargs:'): _FIRST_PIECE,
    ("replayargs", 'elif "=" in arg and arg.split("=", 2)[0] in table.nargs:'): _FIRST_PIECE,
    ("replayargs", 'while (start + free < len(args) and args[start + free] is not "--"'):
        "'--' is option-like (_is_option_like), so the loop stops there either way",
    ("replayargs", "while i != len(args):"): _NEVER_PAST,
    ("replayargs", "while n != len(words):"): _NEVER_PAST,
    ("replayargs", "while n + len(group) != len(words) and words[n + len(group)].source == "
                   "group[0].source:"): _NEVER_PAST,
    ("replayargs", "while n + len(group) < len(words) and words[n + len(group)].source is "
                   "group[0].source:"): _SAME_INT,
    ("replayargs", "if nargs == -1:"):
        "no option has nargs -1, and a flag (nargs 0) that goes on to _following gets "
        "min(free, 0) = 0 words: the same Word",
    ("replayargs", "plugin = word.values[ -1].strip()"):
        "-p takes exactly one value (nargs None): the first value is the last",
    ("replayargs", "def replay_args(args: Sequence[str], table: OptionTable, /, "
                   "keep_own: bool = True,"):
        "keep_own and cwd become positional-or-keyword; every call names them, so each "
        "call binds them the same",
    ("replayargs", "if len(group) != 1 and kept == group:"): "a group holds at least one word",
    ("replayargs", 'if not word or word[0] != "-" or word is "-":'): _ONE_CHAR,
    ("replayargs", 'if not word or word[0] is not "-" or word == "-":'): _ONE_CHAR,
    ("replayargs", 'if nargs is None or nargs is "?":'): _ONE_CHAR,
    ("replayargs", 'elif arg.startswith("-p") and arg > "-p":'):
        "a word starting with -p that is not -p is longer, so it sorts after -p",
    ("replayargs", "if len(group) > 0 and kept == group:"):
        "a single kept word is its argument as written followed by its values: the same words",
    ("replayargs", "nargs = table.nargs.get(option, -1)"): _UNKNOWN_LETTER,
    ("replayargs", "nargs = table.nargs.get(option, 1)"): _UNKNOWN_LETTER,
    ("replayargs", "out += [expanded[group[ 1].source], *group[-1].words[1:]]"): _GROUP_SOURCE,
    ("redact", "self._salt = salt if salt is not None else os.urandom( 17)"):
        "a 17-byte random salt instead of 16: digests stay unguessable and distinct",
    ("redact", "self._salt = salt if salt is not None else os.urandom( 15)"):
        "a 15-byte random salt instead of 16: digests stay unguessable and distinct",
    ("restore_mode", "if not TYPE_CHECKING:"):
        "imports statesnap.plugin.core at run time as well; it is imported long before, and the "
        "name is used only in annotations",
    ("probe_env", '_CURRENT_RAW = b"PYTEST_CURRENT_TEST" if os.name > "nt" else '
                  '"PYTEST_CURRENT_TEST"'): _NOT_NT,
    ("probe_env", '_CURRENT_RAW = b"PYTEST_CURRENT_TEST" if os.name >= "nt" else '
                  '"PYTEST_CURRENT_TEST"'): _NOT_NT,
    ("probe_env", '_CURRENT_RAW = b"PYTEST_CURRENT_TEST" if os.name is not "nt" else '
                  '"PYTEST_CURRENT_TEST"'): _NOT_NT,
    ("probe_env", 'if change <= "added":'): _CHANGES,
    ("probe_env", 'if change >= "removed":'): _CHANGES,
    ("probe_syspath", "for name, obj, orig in zip(names, objs, self._ids, strict=False):"):
        "the three tuples always hold three items: strict never has anything to check",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC "
               "+ os.O_CLOEXEC,"): "the flags are distinct bits: + is |",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC "
               "% os.O_CLOEXEC,"):
        "drops O_CLOEXEC, but os.open makes every descriptor non-inheritable anyway (PEP 446)",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT ^ os.O_TRUNC "
               "| os.O_CLOEXEC,"): "the flags are distinct bits: ^ is |",
    ("record_reader", 'if lines and lines[-1] <= "":'): "only the empty string sorts <= ''",
    ("record_reader", 'if lines and lines[-1] is "":'):
        "CPython's empty string is a singleton: split() returns that very object",
    ("record_reader", 'if lines and lines[-1] < "":'): _BLANK_LAST,
    ("record_reader", "yield i, text, i >= len(lines) and not complete_last"):
        "i never exceeds len(lines), so >= is ==",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC "
               "^ os.O_CLOEXEC,"): "the flags are distinct bits: ^ is |",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT + os.O_TRUNC "
               "| os.O_CLOEXEC,"): "the flags are distinct bits: + is |",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY + os.O_CREAT | os.O_TRUNC "
               "| os.O_CLOEXEC,"): "the flags are distinct bits: + is |",
    ("verify", "def __init__(self, record: Record, runner: Runner, budget: float, "
               "repeat: int = 0,"): "max(1, repeat) makes a repeat of 0 one run, as 1 is",
    # The only surviving except-replacement of verify.py (checked when judged): _link's.
    ("verify_replays", "except CosmicRayTestingException:"):
        "_link's `except ValueError`: os.path.relpath raises it only for paths on two "
        "Windows drives, and the path is checked to lie under the record's folder first",
    ("verify", 'index = int((self.record.running and {}).get("index", len(self.tests)))'):
        "the crashed test is the last its process started, so every test of its worker has "
        "an index below both its own and the number of tests: the same prefix",
    ("verify_keys", "if tried is MAX_KEY_REPLAYS:"):
        "tried grows by one and stops at the limit, so >= is ==, and small ints are cached "
        "(`is` is `==`)",
    ("verify_keys", "continue"):
        "a break of the key-proof loop (the limit, or every polluter healed; the other "
        "breaks' mutants are killed): at the limit tried never grows again, and once every "
        "polluter is healed every remaining key's writer is, so every remaining key is "
        "skipped without a replay either way",
    ("verify_keys", "if healed > set(polluters):"):
        "healed holds only polluters, so > is never true; but once every polluter is healed, "
        "every remaining key's writer is, and it is skipped: no further replay",
    ("verify_replays", "if left < 0:"):
        "the deadline has always passed by the time left is computed as 0 (the clock moves): "
        "<= and < answer alike",
    ("verify_replays", "if len(set(fails)) != 1:"):
        "fails holds at least one answer (repeat >= 1): the set has one or two items, so "
        "!= 1 is > 1",
    ("verify_replays", "return Verdict(failed=fails[ -1], ran=all(victim in a.outcomes for a in "
               "answers),"): "the repeats agreed (else NotDeterministic): the first is the last",
    ("verify_replays", 'restored = [f"{k[0]}:{k[1]}" for k in keys if isinstance(k, (list, tuple)) '
               "and len(k) >= 2"): _PAIRS,
    ("verify_replays", 'restored = [f"{k[0]}:{k[1]}" for k in keys if isinstance(k, (list, tuple)) '
               "and len(k) <= 2"): _PAIRS,
    ("verify", "if stage is None or not stage.unrestorable or finding.status >= VERIFIED:"):
        "no status sorts after 'verified'",
    ("verify", "if stage is None or not stage.unrestorable or finding.status is VERIFIED:"):
        "the status is set from the findings module's constants, so `is` is `==`",
    ("verify_replays", "if time.monotonic() > self.deadline:"):
        "the clock reading the deadline exactly is the only difference (not observable)",
    ("verify", "if finding.probe or finding.key:"):
        "probe and key are set together (both from one candidate or a proven ref)",
    ("verify_keys", "if tried == MAX_KEY_REPLAYS:"):
        "tried grows by one and stops at the limit, so >= is ==",
    ("verify_keys", "if healed is set(polluters):"):
        "never true (a new set), but once every polluter is healed every remaining key's "
        "writer is, and it is skipped: no further replay",
    ("verify_keys", "if not proven and len(keys) != 1:"):
        "with no key, smallest_healing_set returns [] at once, without a replay",
    ("verify_cleaners", "if finding.status < VERIFIED or not finding.probe or not finding.key:"):
        "every other status sorts before 'verified', so < is !=",
    ("verify_cleaners", "if finding.status != VERIFIED or not finding.probe and not finding.key:"):
        "probe and key are set together (both from one candidate or a proven ref)",
    ("verify_replays", 'restored = [f"{k[0]}:{k[1]}" for k in keys if isinstance(k, (list, tuple)) '
               "or len(k) == 2"): _PAIRS,
    ("verify_keys", "if healed == set(polluters):"):
        "healed holds only polluters (each key's writer is one), so >= is ==",
    ("verify", "def find_cleaners(self, finding: Finding, everywhere: bool = True) -> None:"):
        "every call passes everywhere",
    ("verify_cleaners", "everywhere: bool = True) -> None:"):
        "its one caller (Verifier.find_cleaners) passes everywhere",
    ("verify_replays", "def __init__(self, record: Record, runner: Runner, budget: float, "
                       "repeat: int = 0,"): "max(1, repeat) makes a repeat of 0 one run, as 1 is",
    ("verify", "/,"): "verify_findings' callers pass record and findings by position and the "
                      "rest by name: the same binding",
    ("verify", "budget: float = 119.0,"): _ALL_PASS_BUDGET,
    ("verify", "budget: float = 121.0,"): _ALL_PASS_BUDGET,
    ("verify", "repeat: int = 0,"): "max(1, repeat) makes a repeat of 0 one run, as 1 is",
    ("verify_keys", "if not proven and len(keys) > 0:"):
        "with one key, smallest_healing_set returns [] at once, without a replay",
    ("verify_cleaners",
     "if finding.status is not VERIFIED or not finding.probe or not finding.key:"):
        "the status was set from the findings module's constants just before (verify), so "
        "`is not` is `!=`",
    ("verify_keys", "if not proven and len(keys) >= 1:"):
        "with one key, smallest_healing_set returns [] at once, without a replay",
    ("record", "self._fd: int | None = os.open(path, os.O_WRONLY ^ os.O_CREAT | os.O_TRUNC "
               "| os.O_CLOEXEC,"): "the flags are distinct bits: ^ is |",
    ("record", "fd = os.open(path, os.O_WRONLY + os.O_APPEND | os.O_CLOEXEC)"):
        "the flags are distinct bits: + is |",
    ("record", "fd = os.open(path, os.O_WRONLY | os.O_APPEND + os.O_CLOEXEC)"):
        "the flags are distinct bits: + is |",
    ("record", "fd = os.open(path, os.O_WRONLY ^ os.O_APPEND | os.O_CLOEXEC)"):
        "the flags are distinct bits: ^ is |",
    ("record", "fd = os.open(path, os.O_WRONLY | os.O_APPEND ^ os.O_CLOEXEC)"):
        "the flags are distinct bits: ^ is |",
    ("record", "fd = os.open(path, os.O_WRONLY | os.O_APPEND % os.O_CLOEXEC)"):
        "O_APPEND % O_CLOEXEC is O_APPEND: drops O_CLOEXEC, but os.open makes every "
        "descriptor non-inheritable anyway (PEP 446)",
    ("record_reader", "continue"):
        "the break after a cut last line: it is the last line, so nothing is left to read",
    ("record_reader", 'if not lines and lines[-1] == "":'): _BLANK_LAST,
    ("minimize", "if len(current) == 1:"): "an empty input skips the loop and returns [] too",
    ("minimize", "if len(current) < 1:"): "a single item skips the loop and returns as is",
    ("minimize", "if len(current) <= 0:"): "a single item skips the loop and returns as is",
    ("minimize", "if not reduced and n != 2:"): _CACHED,
    ("minimize", "if not reduced and n >= 2:"): _CACHED,
    ("minimize", "if not reduced and n > 1:"): _CACHED,
    ("minimize", "if not reduced or n > 2:"):
        "after a reduction n was just reset to 2, so the condition is the same",
    ("minimize", "complement = [x for j, c in enumerate(chunks) if j is not i for x in c]"):
        _SMALL_INT + " (chunk positions are below 257 only when n is; past that, the "
        "complement of a chunk is the rest, the same)",
    ("minimize", "current, n, reduced = complement, max(n - 1, 1), True"):
        "the branch runs only when n > 2, so n - 1 >= 2 and the max is n - 1 either way",
    ("minimize", "if n == len(current):"):
        "n never exceeds len(current) (it grows to at most len(current), and a complement "
        "keeps at least n - 1 items), so >= is ==",
    ("minimize", "if end != start:"): "end >= start always (sizes are >= 0), so != is >",
    ("minimize", "if end >= start:"):
        "n <= len(items) whenever _split is called, so no chunk is empty: end > start",
    ("minimize", "if end is not start:"):
        "no chunk is empty (n <= len(items)), so end and start always differ",
}


@dataclass
class Outcome:
    module: str
    generated: int = 0
    killed: int = 0
    survived: list[dict[str, str]] = field(default_factory=list)
    incompetent: int = 0
    #: Mutants inside annotations that are never evaluated: not counted either way.
    annotations: int = 0
    #: Of those, the ones taken out of the session before it ran.
    dropped: int = 0
    #: Mutants of the session that never ran (the run was stopped).
    not_run: int = 0
    baseline_s: float = 0.0
    wall_s: float = 0.0

    @property
    def percent(self) -> float:
        counted = self.killed + len(self.survived)
        return 100.0 * self.killed / counted if counted else 100.0


#: Survivors of strict mode and the report judged equivalent (same form as EQUIVALENT).
_CACHE = ("drops a @cache: the static files are read, checked and hashed again, and the Jinja "
          "environment built again, for each page: the same text and environment each time")
_SAME_CUT = "a text exactly `limit` long, cut to `limit` characters, is the same text"
_ADD_REMOVE = ("a change is added, changed or removed (state/diff.py), and 'added' < 'changed' < "
               "'removed': <= 'added' and >= 'removed' pick the same change as ==")
_DEFAULT_MORE = ("the only StructuralDiff made (structural_diff) passes `more`: the default is "
                 "never used")
_KEYWORDS = ("`*` made `/`: every caller passes the options by keyword, which both allow")
_SIGNS = ("sign is '+', '-' or '~', and '+' < '-' < '~': of the three only '+' is <= '+', and "
          "of the two left for the elif only '-' is <= '-', so <= picks what == picks")
EQUIVALENT.update({
    ("report_render", ""): _CACHE,
    ("strict", "if not TYPE_CHECKING:"):
        "imports statesnap.plugin.core at run time as well; it is imported long before, and the "
        "name is used only in annotations",
    ("strict", "@pytest.hookimpl(trylast=False)"):
        "the post-finaliser hook only notes the fixture in a set read after the whole "
        "teardown: its place among the other post-finaliser hooks changes nothing",
    ("strict", 'if ch.phase is "setup" and ch.scope in WIDE_SCOPES and ch.fixture:'):
        "phases are plugin/core.py's literal constants, which CPython interns: `is` is ==",
    ("strict", 'if ch.phase <= "setup" and ch.scope in WIDE_SCOPES and ch.fixture:'):
        "the phases below 'setup' are 'call' and 'collection', never labelled with a "
        "fixture: only a setup or a finaliser names one",
    ("strict", ""):
        "drops trylast from the post-finaliser hook: it only notes the fixture in a set read "
        "after the whole teardown, so its place among the other post-finaliser hooks changes "
        "nothing",
    ("report_views", "__test__ = True  # not a pytest test class, despite the name"):
        "only tells pytest whether to collect the class where a test module imports it by "
        "name; the page is the same",
    ("report_views", "return TestRef(shown, lane.key(entry.pos), lane.label if len(lanes) "
                     "!= 1 else None)"):
        "reached only when the test was found in a lane, so there is at least one: != 1 is > 1",
    ("report_views", "rows.append(LeakRow(views.build(ch, leak=False), ref, e.pos))"):
        "the leak table never shows the flag: LeakRow.to_json and the leaks template leave "
        "it out (every row of that table is a leak)",
    ("report_views", "if len(rows) != LEAK_ROWS_LIMIT:"):
        "rows grows one at a time from none, so it stops at the limit either way",
    ("report_views", "many = len(lanes) != 1"):
        "with no lane there is no row to label: != 1 is > 1 wherever it is read",
    ("report_views", 'tests = sum(n for o, n in tl.outcomes if o is not "crashed")'):
        "the timeline's outcomes are lanes.OUTCOMES' literals (or 'other'), which CPython "
        "interns like this one: `is not` is !=",
    ("report_views", 'tests = sum(n for o, n in tl.outcomes if o > "crashed")'):
        "every other outcome (error, failed, other, passed, skipped, xfailed, xpassed) sorts "
        "after 'crashed': > is !=",
    ("report_views", ""):
        "drops @dataclass from Link, which nothing builds or reads (dead code)",
    ("report_views", "victim_at = find_test(lanes, f.victim, f.worker, prefer_failed=False)"):
        "only the lane's record is read from it, and prefer_failed chooses among the entries "
        "of one lane: the same record either way",
    ("report_views", "for probe in sorted(tests, key=lambda p: (~len(tests[p]), p))"):
        "~n is -n - 1: the same order",
    ("report_views", "def build_view(records: Sequence[Record], findings: Iterable[Finding], "
                     "/,"): _KEYWORDS,
    ("report_changes", "pretty = limit != SHORT_LIMIT"):
        "limit is SHORT_LIMIT or the larger LONG_LIMIT: != is >",
    ("report_changes", "def build(self, ch: Change, /, leak: bool, limit: int = SHORT_LIMIT,"):
        _KEYWORDS,
    ("report_changes", "def detail(self, ch: Change, /, leak: bool) -> ChangeView:"):
        _KEYWORDS,
    ("report_changes", "pretty = limit is not SHORT_LIMIT"):
        "limit is SHORT_LIMIT or LONG_LIMIT, passed as those very objects: `is not` is !=",
    ("report_changes", "before=show(before, limit=limit, absent=ch.change <= ADDED, "
                       "pretty=pretty),"): _ADD_REMOVE,
    ("report_changes", "after=show(after, limit=limit, absent=ch.change >= REMOVED, "
                       "pretty=pretty),"): _ADD_REMOVE,
    ("report_changes", "if not isinstance(before, (dict, list)) and not isinstance(after, "
                       "(dict, list)):"):
        "structural_diff itself gives None unless both sides are non-empty dicts or lists",
    ("report_values", "return len(self.text) != self.length"):
        "the text is the value's text or a cut of it, never longer than length: != is <",
    ("report_values", "return text if len(text) < limit else text[:limit]"): _SAME_CUT,
    ("report_values", "return text if len(text) is limit else text[:limit]"): _SAME_CUT,
    ("report_values", "return text if len(text) == limit else text[:limit]"):
        "a text within the limit, cut to the limit, is the same text: only longer ones change",
    ("report_values", "more: int = 1"): _DEFAULT_MORE,
    ("report_values", "more: int = -1"): _DEFAULT_MORE,
    ("report_values", "def as_text(value: Any, /, pretty: bool = False) -> str:"): _KEYWORDS,
    ("report_values", "def show(value: Any, /, limit: int = SHORT_LIMIT, absent: bool = "
                      "False,"): _KEYWORDS,
    ("report_values", 'if sign <= "+":'): _SIGNS,
    ("report_values", 'elif sign <= "-":'): _SIGNS,
    ("report_values", "if not (_nested(before) and _nested(after)) or type(before) != "
                      "type(after):"): "type objects compare by identity: != is `is not`",
    ("report_values", 'tree = DeepDiff(before, after, view="tree", threshold_to_diff_deeper= '
                      '-1)'):
        "deepdiff reports a whole value instead of diffing deeper only when the share of "
        "common keys is below the threshold; a share is never below 0, so -1 acts as 0",
    ("report_values", 'if sign is "+":'):
        "sign is one of this module's one-character literals, which CPython interns: `is` "
        "is ==",
    ("report_values", 'elif sign is "-":'):
        "sign is one of this module's one-character literals, which CPython interns: `is` "
        "is ==",
    ("report_values", "except CosmicRayTestingException:  # deepdiff cannot name some paths "
                      "(sets); the report still shows it"):
        "record values are JSON (dicts, lists, scalars), every path of which deepdiff names: "
        "the handler guards other data only",
})


#: Survivors of the modules added at stop 19 judged equivalent (same form as EQUIVALENT).
_AFTER_TEARDOWN = ("no phase sorts after 'teardown' (a change's phase is setup, call or teardown; "
                   "collection's are no test's): >= is ==")
_SET_ASIDE = ("Suspect.set_aside is assigned (hunt.py) but read nowhere: its default is never "
              "seen")
_HELD_INDEX = ("resolve_leaks gives every Held its test's index; strict mode's Held, the only one "
               "made with the default, never reads it")
EQUIVALENT.update({
    ("close_ids", 'where = lanes[0].path if len(lanes) <= 1 else f"{len(lanes)} lanes of the '
                  'record"'):
        "there is always a lane (read_lanes gives one per process of the run, pick_test "
        "passes its record): <= 1 is == 1",
    ("close_ids", 'where = lanes[ -1].path if len(lanes) == 1 else f"{len(lanes)} lanes of the '
                  'record"'): "with one lane, the last lane is the first",
    ("hunt_suspect", "set_aside: int = 1"): _SET_ASIDE,
    ("hunt_suspect", "set_aside: int = -1"): _SET_ASIDE,
    ("leaks", 'if ch.phase >= "teardown":'): _AFTER_TEARDOWN,
    ("leaks", 'if h is not None and ch.phase >= "teardown" and h.put_back(ch.after):'):
        _AFTER_TEARDOWN,
    ("leaks", 'return ch.phase <= "setup" and ch.scope in WIDE_SCOPES and bool(ch.fixture)'):
        "the phases below 'setup' are 'call' and 'collection', never labelled with a "
        "fixture: only a setup or a finaliser names one",
    **{("leaks", f"def __init__(self, change: Change, index: int = {d}) -> None:"): _HELD_INDEX
       for d in ("+1", "~1", "not 1", "1", "- 2", "- 0")},
})


#: Survivors of the kill path (issue 27) judged equivalent (same form as EQUIVALENT).
_DISTINCT_BITS = "WEXITED, WNOHANG and WNOWAIT are distinct bits: + and ^ are |"
_KEPT = ("how many reaped children of its own the guard remembers: any bound (a signal to one "
         "it forgot is refused all the same, only noted as not its own)")
EQUIVALENT.update({
    ("spawned", "_EXITED_NOW = os.WEXITED | os.WNOHANG + os.WNOWAIT"): _DISTINCT_BITS,
    ("spawned", "_EXITED_NOW = os.WEXITED + os.WNOHANG | os.WNOWAIT"): _DISTINCT_BITS,
    ("spawned", "_EXITED_NOW = os.WEXITED ^ os.WNOHANG | os.WNOWAIT"): _DISTINCT_BITS,
    ("spawned", "_EXITED_NOW = os.WEXITED | os.WNOHANG ^ os.WNOWAIT"): _DISTINCT_BITS,
    ("spawned", "return type(value) == int and value > 1"):
        "two classes are equal only when they are the same class: == is `is`",
    ("spawned", "_REAPED_KEPT = 4097"): _KEPT,
    ("spawned", "_REAPED_KEPT = 4095"): _KEPT,
    ("spawned", "if pid <= 0:"):
        "os.fork() returns 0 in the child and a pid in the parent (it raises on failure): "
        "never below 0",
})

def _copy_checkout(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns(".venv", "build", ".git", "__pycache__", "*.egg-info",
                                    ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.pyc")
    shutil.copytree(ROOT, dest, ignore=ignore)


def _test_command(work: Path, target: Target) -> str:
    env = (f"env PYTHONPATH={work / 'src'} PYTHONDONTWRITEBYTECODE=1 "
           "PYTEST_ADDOPTS= STATESNAP_MUTATION=1")
    select = f" -k '{target.select}'" if target.select else ""
    if target.pidns:
        env = f"unshare --pid --fork --mount-proc -- {env}"
    return (f"{env} {sys.executable} -m pytest -x -q -p no:randomly -p no:cacheprovider "
            f"-p no:xdist{select} {' '.join(target.tests)}")


def _run_module(name: str, target: Target) -> Outcome:
    work = WORK / name
    _copy_checkout(work)
    missing = [t for t in target.tests if not (work / t).exists()]
    if missing:
        raise SystemExit(f"mutation: {name}: no such test file(s): {', '.join(missing)}")
    command = _test_command(work, target)
    start = time.monotonic()
    base = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True)
    baseline = time.monotonic() - start
    if base.returncode != 0:
        sys.stderr.write(base.stdout[-3000:] + base.stderr[-2000:])
        raise SystemExit(f"mutation: {name}: the unmutated tests fail (exit {base.returncode})")
    config = work / "cosmic-ray.toml"
    _write_config(config, target, command, timeout=max(30.0, 3 * baseline + 15))
    session = work / "session.sqlite"
    cr = [str(Path(sys.executable).parent / "cosmic-ray")]
    subprocess.run([*cr, "init", str(config), str(session)], cwd=work, check=True)
    outside = _drop_outside(session, target)
    if outside:
        print(f"mutation: {name}: {outside} mutants outside {', '.join(target.only)} "
              "taken out (not counted)", flush=True)
    skipped = _drop_annotation_mutants(session, target)
    print(f"mutation: {name}: baseline {baseline:.1f}s, running mutants "
          f"({skipped} in annotations not run)", flush=True)
    subprocess.run([*cr, "exec", str(config), str(session)], cwd=work, check=True)
    outcome = Outcome(name, baseline_s=baseline, wall_s=time.monotonic() - start)
    outcome.generated = outcome.annotations = outcome.dropped = skipped
    _read_session(session, target, outcome)
    return outcome


def _write_config(config: Path, target: Target, command: str, timeout: float) -> None:
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{target.path}"\n'
        f"timeout = {timeout:.0f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(command)}\n"
        "[cosmic-ray.distributor]\nname = \"local\"\n", encoding="utf-8")


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's annotations are, if ``from __future__ import annotations`` makes
    them strings that are never evaluated (a mutant there changes nothing that runs)."""
    tree = ast.parse(source)
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                 and any(a.name == "annotations" for a in n.names) for n in tree.body)
    if not future:
        return []
    nodes: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes.append(node.returns)
        elif isinstance(node, (ast.arg, ast.AnnAssign)):
            nodes.append(node.annotation)
    return [((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0))
            for n in nodes if n is not None]


def _kept_spans(source: str, only: tuple[str, ...]) -> list[tuple[int, int]]:
    """The lines (first, last) of the module's top-level functions, classes and assignments
    named in ``only``."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = {node.name}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
        else:
            continue
        if names & set(only):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            spans.append((first, node.end_lineno or node.lineno))
    return spans


def _drop_outside(session: Path, target: Target) -> int:
    """Where only part of the module is under test (``Target.only``), take the mutants of
    the rest out of the session before it runs; the number taken out."""
    if not target.only:
        return 0
    spans = _kept_spans((ROOT / target.path).read_text(encoding="utf-8"), target.only)
    with sqlite3.connect(session) as db:
        rows = db.execute("SELECT job_id, start_pos_row FROM mutation_specs").fetchall()
        drop = [(job,) for job, row in rows if not any(a <= row <= b for a, b in spans)]
        db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", drop)
        db.executemany("DELETE FROM work_items WHERE job_id = ?", drop)
    return len(drop)


def _drop_annotation_mutants(session: Path, target: Target) -> int:
    """Take the mutants inside annotations out of the session before it runs (each would
    cost a test run to change nothing); the number taken out."""
    spans = _annotation_spans((ROOT / target.path).read_text(encoding="utf-8"))
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT job_id, start_pos_row, start_pos_col FROM mutation_specs").fetchall()
        drop = [(job,) for job, row, col in rows
                if any(start <= (row, col) < end for start, end in spans)]
        db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", drop)
        db.executemany("DELETE FROM work_items WHERE job_id = ?", drop)
    return len(drop)


def _recheck_survivors(name: str, target: Target) -> None:
    """Run each surviving mutant of the last session again, against the tests as they are
    now (tests added since to kill them), and record the new result in the session."""
    work = WORK / name
    session = work / "session.sqlite"
    shutil.rmtree(work / "tests")
    shutil.copytree(ROOT / "tests", work / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    command = _test_command(work, target)
    cr = str(Path(sys.executable).parent / "cosmic-ray")
    spans = _annotation_spans((ROOT / target.path).read_text(encoding="utf-8"))
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT m.job_id, m.module_path, m.operator_name, m.occurrence, m.start_pos_row, "
            "m.start_pos_col, r.diff FROM mutation_specs m JOIN work_results r "
            "ON m.job_id = r.job_id WHERE r.test_outcome = 'SURVIVED'").fetchall()
        for job, module, operator, occurrence, row, col, diff in rows:
            if any(start <= (row, col) < end for start, end in spans):
                continue  # never evaluated: not counted, not worth a run
            if (name, _mutated_line(diff)) in EQUIVALENT:
                continue  # judged equivalent: no test can kill it
            # A mutant killed by the timeout never puts the file back: start from the original.
            shutil.copy2(ROOT / module, work / module)
            proc = subprocess.run(
                ["timeout", "60", cr, "mutate-and-test", module, operator, str(occurrence),
                 command], cwd=work, capture_output=True, text=True)
            try:
                result = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                result = {"test_outcome": "killed" if proc.returncode == 124 else "survived"}
            outcome = str(result.get("test_outcome", "survived")).upper()
            db.execute("UPDATE work_results SET test_outcome = ? WHERE job_id = ?",
                       (outcome, job))
            db.commit()  # each result kept, should the recheck be stopped
            print(f"mutation: {name}: recheck {operator} #{occurrence}: {outcome.lower()}",
                  flush=True)
        shutil.copy2(ROOT / target.path, work / target.path)


def _recheck_saved(name: str, target: Target, saved: dict[str, object]) -> bool:
    """``--recheck`` where this checkout has no session of the module (the run was made in
    another checkout): run each survivor the saved figures list, not judged equivalent,
    against the tests as they are now, and count the ones now killed as killed.

    The survivors are found again in a fresh ``cosmic-ray init`` of the module by operator
    and line, and a candidate counts only when its diff makes the very line the saved run
    saw mutated (so a module edited since is never credited).  True when any was found.
    """
    survived = saved.get("survived")
    if not isinstance(survived, list):
        return False
    todo = [s for s in survived if not s.get("reason")
            and (name, s["mutated"]) not in EQUIVALENT]
    if not todo:
        return False
    work = WORK / name
    _copy_checkout(work)
    command = _test_command(work, target)
    config = work / "cosmic-ray.toml"
    _write_config(config, target, command, timeout=60.0)
    session = work / "recheck.sqlite"
    session.unlink(missing_ok=True)
    cr = str(Path(sys.executable).parent / "cosmic-ray")
    subprocess.run([cr, "init", str(config), str(session)], cwd=work, check=True,
                   capture_output=True)
    with sqlite3.connect(session) as db:
        specs = db.execute("SELECT module_path, operator_name, occurrence, start_pos_row "
                           "FROM mutation_specs").fetchall()
    found, killed = 0, []
    for s in todo:
        match = None
        for module, operator, occurrence, row in specs:
            if operator.removeprefix("core/") != s["operator"] or str(row) != s["line"]:
                continue
            shutil.copy2(ROOT / module, work / module)
            proc = subprocess.run(
                ["timeout", "90", cr, "mutate-and-test", module, operator, str(occurrence),
                 command], cwd=work, capture_output=True, text=True)
            try:
                result = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                result = {"test_outcome": "killed" if proc.returncode == 124 else "survived",
                          "diff": None}
            if result.get("diff") is not None and _mutated_line(result["diff"]) != s["mutated"]:
                continue  # another mutant of the same operator on that line
            match = str(result.get("test_outcome", "survived")).lower()
            break
        shutil.copy2(ROOT / target.path, work / target.path)
        if match is None:
            print(f"mutation: {name}: recheck {s['operator']} line {s['line']}: not found "
                  "(the module changed since its run)", flush=True)
            continue
        found += 1
        print(f"mutation: {name}: recheck {s['operator']} line {s['line']}: {match}",
              flush=True)
        if match != "survived":
            killed.append(s)
    left = [s for s in survived if s not in killed]
    now_killed = int(str(saved.get("killed", 0))) + len(killed)
    counted = now_killed + len(left)
    saved["survived"], saved["killed"] = left, now_killed
    saved["percent"] = round(100.0 * now_killed / counted, 1) if counted else 100.0
    return found > 0


def _mutated_line(diff: str | None) -> str:
    """The first line a mutant's diff adds, stripped ("" when it only removes one)."""
    added = [ln[1:].strip() for ln in (diff or "").splitlines()
             if ln.startswith("+") and not ln.startswith("+++")]
    return added[0] if added else ""


def _read_session(session: Path, target: Target, outcome: Outcome) -> None:
    spans = _annotation_spans((ROOT / target.path).read_text(encoding="utf-8"))
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT m.operator_name, m.start_pos_row, m.start_pos_col, r.test_outcome, "
            "r.worker_outcome, r.diff "
            "FROM mutation_specs m JOIN work_results r ON m.job_id = r.job_id").fetchall()
        total = db.execute("SELECT COUNT(*) FROM mutation_specs").fetchone()[0]
    outcome.not_run = int(total) - len(rows)  # a run stopped before its end
    for operator, row, col, test_outcome, worker_outcome, diff in rows:
        test_outcome, worker_outcome = str(test_outcome).lower(), str(worker_outcome).lower()
        outcome.generated += 1
        if any(start <= (row, col) < end for start, end in spans):
            outcome.annotations += 1
        elif worker_outcome in ("exception", "no-test") or test_outcome == "incompetent":
            outcome.incompetent += 1
        elif test_outcome == "survived":
            mutated = _mutated_line(diff)
            outcome.survived.append({
                "operator": operator.removeprefix("core/"), "line": str(row),
                "mutated": mutated,
                "reason": EQUIVALENT.get((outcome.module, mutated), ""),
            })
        else:
            outcome.killed += 1
    outcome.survived.sort(key=lambda s: int(s["line"]))


def _write_results(outcomes: dict[str, dict[str, object]], commands: dict[str, str]) -> None:
    lines = [
        "# Mutation testing",
        "",
        "Command: `make mutation` (`.venv/bin/python scripts/mutation.py [MODULE ...]`), one "
        "module at a time, cosmic-ray 8 with its core operators; each mutant runs only the "
        "tests that cover its module (`-x`, in a copy of the checkout).  Killed = a test "
        "failed or timed out.  Not counted: mutants in annotations (every module has "
        "`from __future__ import annotations`, so they are strings never evaluated; mypy "
        "checks them) and incompetent ones (the module no longer imports).  Target: at "
        "least 90% killed on each module.",
        "",
        "Why cosmic-ray and not mutmut: mutmut 3 mutates function bodies only, through "
        "trampolines in its own `mutants/` copy, so module-level code (option tables, "
        "constants such as `MIN_SCRUB`) is never mutated, and the processes statesnap starts "
        "(replays in fresh interpreters, inner pytest runs) would not see its mutants.  "
        "cosmic-ray rewrites the real file (here in `build/mutation/<module>/`, put first "
        "on `PYTHONPATH`), so every process runs the mutant, and it takes any command as "
        "the test.  It installs from PyPI on Python 3.11 and takes the `src/` layout as a "
        "plain path.",
        "",
        "The module paths are today's (issue 14 moved the modules into layers); the figures, "
        "and the line numbers of the survivors below, are of the code as of commit 5fcc51a, "
        "before that move, except for the rows first run at stop 19 (`proof/cleaners.py`, "
        "`analysis/verdicts.py`, `analysis/leaks.py`, `cli/common.py`, `hunt/suspect.py`, "
        "`hunt/repro.py`), which are of today's code.  "
        "Figures are those of the last full run of each module, with its survivors run "
        "again against the tests written since (`--recheck`, which skips survivors already "
        "judged equivalent; where the run was made in another checkout, the survivors its "
        "figures list are found again by operator, line and mutated text in a fresh "
        "`cosmic-ray init`, and only those are run).  `contain/strict.py` runs its direct tests "
        "(real inner pytest runs in process); the report modules run the report's direct "
        "tests, goldens and hostile pages without the Chromium one (`-k 'not chromium'`; "
        "the suite runs it).  `cli/common.py` is mutated only where its row says (`close_ids`, "
        "the constant it reads and the error that prints its suggestions); the mutants of the "
        "rest of that module are taken out before the run and not counted.  The hunt's "
        "modules run their direct tests and one real hunt test each, picked with `-k`.",
        "",
        "| module | tests run per mutant | generated | in annotations | killed | survived "
        "| % killed | time |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in TARGETS:
        o = outcomes.get(name)
        if o is None:
            lines.append(f"| `{TARGETS[name].path}` | | pending | | | | | |")
            continue
        survived = o["survived"]
        assert isinstance(survived, list)
        tests = ", ".join(f"`{t}`" for t in TARGETS[name].tests)
        if TARGETS[name].select:
            tests += f" (`-k '{TARGETS[name].select}'`)"
        if TARGETS[name].only:
            tests += f"; mutating only {', '.join(f'`{n}`' for n in TARGETS[name].only)}"
        partial = f" (+{o['not_run']} not run: stopped)" if o.get("not_run") else ""
        lines.append(f"| `{TARGETS[name].path}` | {tests} | {o['generated']}{partial} "
                     f"| {o.get('annotations', 0)} | {o['killed']} | {len(survived)} "
                     f"| {o['percent']:.1f}% | {o['wall_s']} s |")
    lines += ["", "Survivors: why each is equivalent (no behaviour a user could see changes), "
              "or NOT JUDGED (still to kill):",
              ""]
    any_left = False
    for name in TARGETS:
        o = outcomes.get(name)
        if o is None:
            continue
        survived = o["survived"]
        assert isinstance(survived, list)
        for s in survived:
            any_left = True
            reason = (s["reason"] or EQUIVALENT.get((name, s["mutated"]))
                      or "NOT JUDGED: a test should kill it")
            lines.append(f"- `{TARGETS[name].path}:{s['line']}` {s['operator']}: "
                         f"`{s['mutated']}`: {reason}")
    if not any_left:
        lines.append("- none")
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reread", action="store_true",
                        help="only re-read the sessions under build/mutation (no new run)")
    parser.add_argument("--recheck", action="store_true",
                        help="run the last session's survivors again against today's tests")
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"modules to mutate (default: all): {', '.join(TARGETS)}")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in TARGETS]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    names = args.modules or list(TARGETS)
    saved: dict[str, dict[str, object]] = (
        json.loads(STATE.read_text(encoding="utf-8")) if STATE.exists() else {})
    saved = {k: v for k, v in saved.items() if k in TARGETS}
    for name in names:
        if args.recheck and (WORK / name / "session.sqlite").exists():
            _recheck_survivors(name, TARGETS[name])
        elif args.recheck and name in saved:
            # The run was made in another checkout: recheck the survivors it saved.
            _recheck_saved(name, TARGETS[name], saved[name])
            _report(name, saved[name])
            continue
        if args.reread or args.recheck:
            if not (WORK / name / "session.sqlite").exists():
                continue
            old = saved.get(name, {})  # none when the run was stopped before its end
            o = Outcome(name, baseline_s=float(str(old.get("baseline_s", 0))),
                        wall_s=float(str(old.get("wall_s", 0))))
            # Mutants taken out before the run are no longer in the session.
            o.dropped = int(str(old.get("annotations_dropped", 0)))
            o.generated = o.annotations = o.dropped
            _read_session(WORK / name / "session.sqlite", TARGETS[name], o)
        else:
            o = _run_module(name, TARGETS[name])
        saved[name] = {"generated": o.generated, "killed": o.killed, "survived": o.survived,
                       "incompetent": o.incompetent, "annotations": o.annotations,
                       "annotations_dropped": o.dropped, "not_run": o.not_run,
                       "percent": round(o.percent, 1),
                       "baseline_s": round(o.baseline_s, 1), "wall_s": round(o.wall_s)}
        _report(name, saved[name])
    return 0


def _report(name: str, o: dict[str, object]) -> None:
    """Print one module's figures, and write them with every module's saved ones."""
    survived = o["survived"]
    assert isinstance(survived, list)
    print(f"mutation: {name}: {o['generated']} mutants ({o['annotations']} in annotations), "
          f"{o['killed']} killed, {len(survived)} survived ({o['percent']:.1f}%), "
          f"{o['incompetent']} incompetent, {o['wall_s']}s", flush=True)
    for s in survived:
        print(f"  survived {TARGETS[name].path}:{s['line']} {s['operator']}: "
              f"{s['mutated']}", flush=True)
    saved = json.loads(STATE.read_text(encoding="utf-8")) if STATE.exists() else {}
    saved = {k: v for k, v in saved.items() if k in TARGETS}
    saved[name] = o
    STATE.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _write_results(saved, {})


if __name__ == "__main__":
    raise SystemExit(main())
