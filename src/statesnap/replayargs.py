"""Which of the recorded pytest arguments a replay keeps.

A replay runs an explicit order in one process, so it drops what selects, reorders,
parallelises or stops early, and what writes the original run's outputs.  Everything else
(``-p`` plugins, ``-c``/``-o`` config, ``-W`` filters, ``--import-mode``, plugin options that
change behaviour) is kept, so the child sees the suite configured as the recorded run did.
Pure: the caller passes the set of options that take a value (from pytest's parser).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Dropped with their value (selection, parallelism, outputs of the original run).
DROP_WITH_VALUE = frozenset({
    "-k", "-m", "-n", "--numprocesses", "--dist", "--maxprocesses", "--tx", "--maxfail",
    "--junitxml", "--junit-xml", "--junit-prefix", "--html", "--resultlog", "--report-log",
    "--report", "--statesnap-report", "--statesnap-json", "--statesnap-record",
    "--statesnap-order", "--statesnap-restore-before", "--statesnap-verify-budget",
    "--statesnap-verify-repeat", "--randomly-seed", "--deselect", "--ignore", "--ignore-glob",
    "--lfnf", "--last-failed-no-failures", "--reruns", "--reruns-delay", "--durations",
    "--statesnap-isolate-timeout", "--basetemp",
})
#: Dropped flags (no value).
DROP_FLAGS = frozenset({
    "-x", "--exitfirst", "--lf", "--last-failed", "--ff", "--failed-first", "--nf",
    "--new-first", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--pdb", "--trace",
    "--looponfail", "-f", "--statesnap-find-cleaners", "--randomly-dont-reorganize",
    "--collect-only", "--co",
})


def replay_args(args: Sequence[str], takes_value: Iterable[str]) -> list[str]:
    """The recorded ``args`` minus positional paths and the options listed above."""
    valued = set(takes_value) | DROP_WITH_VALUE
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break  # everything after is positional
        if not arg.startswith("-") or arg == "-":
            continue  # a path or node id: the order file decides what runs
        name, eq, _ = arg.partition("=")
        short_attached = not arg.startswith("--") and len(arg) > 2
        if short_attached:
            name = arg[:2]
        if name in DROP_FLAGS:
            continue
        has_value = name in valued and not eq and not short_attached
        value = args[i] if has_value and i < len(args) else None
        if has_value:
            i += 1
        if name in DROP_WITH_VALUE:
            continue
        if name == "-p" and (value or arg[2:]) in ("xdist.plugin", "xdist", "randomly"):
            continue  # a replay is one process in the recorded order
        if name == "-o" and (value or arg[2:]).lstrip("=").startswith("cache_dir="):
            continue  # a replay's own scratch cache (a record made by a replay)
        out.append(arg)
        if value is not None:
            out.append(value)
    return out
