"""Which of the recorded pytest arguments a replay keeps, and which a printed command keeps.

Drops what selects, reorders, parallelises, stops early or writes the run's outputs; keeps the
rest.  Words are split with each option's arity from argparse's own actions, never a list of
names.  Pure, apart from :func:`option_table`.  See docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from statesnap.base.plain import Frozen

#: argparse's ``nargs``: None (one value), 0 (a flag), N, ``?``, ``*``, ``+``.
Nargs = int | str | None

#: Dropped with their values (selection, parallelism, stopping early, outputs of the run).
DROP = frozenset({
    "-k", "-m", "-n", "--numprocesses", "--dist", "--maxprocesses", "--tx", "--maxfail",
    "--junitxml", "--junit-xml", "--junit-prefix", "--html", "--resultlog", "--report-log",
    "--randomly-seed", "--deselect", "--ignore", "--ignore-glob", "--lfnf",
    "--last-failed-no-failures", "--reruns", "--reruns-delay", "--only-rerun",
    "--rerun-except", "--durations", "--basetemp", "-x", "--exitfirst", "--lf",
    "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
    "--sw-skip", "--stepwise-skip", "--sw-reset", "--stepwise-reset", "--pdb", "--trace",
    "--looponfail", "-f", "--randomly-dont-reorganize", "--collect-only", "--co",
    "--collectonly", "--reverse", "--random-order", "--random-order-seed",
})
#: statesnap's own options that a replay child keeps (what it watches); every other one of
#: statesnap's options is the run's own business (its outputs, modes, verification).
OWN_KEPT = frozenset({"--statesnap-probes", "--statesnap-nvml-every"})
#: ``-p`` values a replay never loads: it is one process running the recorded order.
DROP_PLUGINS = frozenset({"xdist.plugin", "xdist", "randomly"})
#: statesnap's own plugin name, as ``-p`` takes it.
OWN_PLUGIN = "statesnap"

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")

#: Where ``-p statesnap.plugin.optiondump`` writes a checkout's option table (backfill).
OPTION_TABLE_ENV = "STATESNAP_OPTION_TABLE_OUT"


class OptionTable(Frozen):
    """What pytest's parser knows about each option string."""

    _fields = ("nargs", "aliases", "own", "fromfile_prefix")
    __slots__ = _fields

    def __init__(self, nargs: Mapping[str, Nargs],
                 aliases: Mapping[str, frozenset[str]] | None = None,
                 own: frozenset[str] = frozenset(), fromfile_prefix: str | None = None) -> None:
        #: option string -> argparse ``nargs`` of its action.
        self.nargs: Final = nargs
        #: option string -> every option string of the same action (``-x`` -> ``--exitfirst``).
        self.aliases: Final[Mapping[str, frozenset[str]]] = {} if aliases is None else aliases
        #: option strings statesnap registered (its actions' ``dest`` starts ``statesnap_``).
        self.own: Final = own
        #: argparse's ``fromfile_prefix_chars`` (pytest 9 reads ``@FILE`` arguments).
        self.fromfile_prefix: Final = fromfile_prefix

    def names(self, option: str) -> frozenset[str]:
        return self.aliases.get(option, frozenset({option}))


def option_table(parser: argparse.ArgumentParser) -> OptionTable:
    """The table of an argparse parser, read from its action objects."""
    nargs: dict[str, Nargs] = {}
    aliases: dict[str, frozenset[str]] = {}
    own: set[str] = set()
    # argparse has no public listing of its actions; ``_actions`` is what its own help
    # formatter and argcomplete read, unchanged since Python 3.2.
    for action in parser._actions:
        strings = frozenset(action.option_strings)
        for s in strings:
            nargs[s] = action.nargs
            aliases[s] = strings
            if str(action.dest).startswith("statesnap_"):
                own.add(s)
    return OptionTable(nargs, aliases, frozenset(own), parser.fromfile_prefix_chars)


class Word(Frozen):
    """One option with its value(s), or one positional argument."""

    _fields = ("words", "option", "values", "source")
    __slots__ = _fields

    def __init__(self, words: tuple[str, ...], option: str | None = None,
                 values: tuple[str, ...] = (), source: int = -1) -> None:
        #: The words as a replay writes them (an attached value stays attached).
        self.words: Final = words
        #: The option string it matched; None for a positional argument.
        self.option: Final = option
        #: The option's values (attached or following); empty for a flag.
        self.values: Final = values
        #: Index of the argument it was read from; words of one ``-xvs`` share it.
        self.source: Final = source


def expand_fromfile(args: Sequence[str], prefix: str | None, cwd: Path) -> list[str]:
    """argparse's ``@FILE`` expansion: each line of FILE one argument, recursively.

    A file that cannot be read is left as it was (pytest would have refused the run).
    """
    if not prefix:
        return list(args)
    out: list[str] = []
    for arg in args:
        if not arg or arg[0] not in prefix:
            out.append(arg)
            continue
        try:
            text = (cwd / arg[1:]).read_text()
        except OSError:
            out.append(arg)
            continue
        out += expand_fromfile(text.splitlines(), prefix, cwd)
    return out


def _is_option_like(word: str, table: OptionTable) -> bool:
    """argparse's ``_parse_optional``: is ``word`` an option ('O') rather than a value."""
    if not word or word[0] != "-" or word == "-":
        return False
    if word in table.nargs:
        return True
    if "=" in word and word.split("=", 1)[0] in table.nargs:
        return True
    if not word.startswith("--") and word[:2] in table.nargs:
        return True
    has_negative_options = any(_NEGATIVE_NUMBER.match(s) for s in table.nargs)
    if _NEGATIVE_NUMBER.match(word) and not has_negative_options:
        return False
    return " " not in word


def _following(args: Sequence[str], start: int, nargs: Nargs, table: OptionTable) -> int:
    """How many words after an option without an attached value argparse gives it."""
    free = 0
    while (start + free < len(args) and args[start + free] != "--"
           and not _is_option_like(args[start + free], table)):
        free += 1
    if nargs is None or nargs == "?":
        return min(free, 1)
    if isinstance(nargs, int):
        return min(free, nargs)
    if nargs in ("*", "+"):
        return free
    return len(args) - start  # REMAINDER / PARSER: the rest of the line


def split_words(args: Sequence[str], table: OptionTable) -> list[Word]:
    """``args`` as argparse reads them: options with their values, positional arguments.

    A group of short flags (``-xvs``, ``-qq``, ``-vkEXPR``) becomes one word per option, all
    with the same ``source``.  Everything after ``--`` is positional.
    """
    out: list[Word] = []
    i = 0
    while i < len(args):
        arg, src = args[i], i
        i += 1
        if arg == "--":
            out += [Word((a,), source=n) for n, a in enumerate(args[i:], i)]
            break
        if not _is_option_like(arg, table):
            out.append(Word((arg,), source=src))
            continue
        if arg in table.nargs:
            option, attached = arg, None
        elif "=" in arg and arg.split("=", 1)[0] in table.nargs:
            option, attached = arg.split("=", 1)
        elif not arg.startswith("--") and arg[:2] in table.nargs:
            option, attached = arg[:2], arg[2:]
        else:
            out.append(Word((arg,), arg, source=src))  # unknown to the table: a flag
            continue
        # A chain of short flags: each flag, then maybe an option that takes the rest.
        while attached is not None and table.nargs[option] == 0 and not option.startswith("--"):
            out.append(Word((option,), option, source=src))
            option, rest = "-" + attached[0], attached[1:] or None
            if option not in table.nargs:
                break  # argparse refuses this; pytest would not have run
            attached = rest
        nargs = table.nargs.get(option, 0)
        if attached is not None:
            glue = "=" if option.startswith("--") or arg.startswith(option + "=") else ""
            out.append(Word((f"{option}{glue}{attached}",), option, (attached,), src))
            continue
        if nargs == 0:
            out.append(Word((option,), option, source=src))
            continue
        n = _following(args, i, nargs, table)
        values = tuple(args[i:i + n])
        i += n
        out.append(Word((option, *values), option, values, src))
    return out


def _dropped(word: Word, table: OptionTable, keep_own: bool) -> bool:
    assert word.option is not None
    names = table.names(word.option)
    if names & DROP:
        return True
    if "-p" in names and word.values:
        plugin = word.values[0].strip()
        return plugin in DROP_PLUGINS or (not keep_own and plugin == OWN_PLUGIN)
    if "-o" in names and word.values and word.values[0].startswith("cache_dir="):
        # Only a replay sets it (its scratch cache): a record made by a replay.
        return True
    if names & table.own or any(n.startswith("--statesnap-") for n in names):
        return not (keep_own and names & OWN_KEPT)
    return False


def replay_args(args: Sequence[str], table: OptionTable, *, keep_own: bool = True,
                cwd: Path | None = None) -> list[str]:
    """The recorded ``args`` minus positional arguments and the options dropped above.

    ``keep_own``: keep ``-p statesnap`` and the statesnap options of :data:`OWN_KEPT` (a
    replay child); without it, nothing of statesnap's is left (a command for plain pytest).
    ``cwd``: the invocation directory, for ``@FILE`` arguments.
    """
    expanded = expand_fromfile(args, table.fromfile_prefix, cwd or Path.cwd())
    words = split_words(expanded, table)
    out: list[str] = []
    n = 0
    while n < len(words):
        # The words read from one argument: all kept, the argument stays as it was written
        # (``-qq``, ``-vs``); otherwise the kept ones, one argument each.
        group = [words[n]]
        while n + len(group) < len(words) and words[n + len(group)].source == group[0].source:
            group.append(words[n + len(group)])
        n += len(group)
        kept = [w for w in group if w.option is not None and not _dropped(w, table, keep_own)]
        if len(group) > 1 and kept == group:
            out += [expanded[group[0].source], *group[-1].words[1:]]
        else:
            for word in kept:
                out += word.words
    return out


def plugin_args(args: Sequence[str]) -> list[str]:
    """The ``-p`` values of ``args``, found the way pytest itself finds them before parsing
    (``PytestPluginManager.consider_preparse``: ``-p NAME`` and ``-pNAME``, anywhere)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-p" and i < len(args):
            out.append(args[i].strip())
            i += 1
        elif arg.startswith("-p") and arg != "-p":
            out.append(arg[2:].strip())
    return out
