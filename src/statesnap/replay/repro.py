"""Reproduction commands, rebuilt from a record's header.  Pure.

A replay child runs ``header["replay"]["args"]`` (statesnap on, with the options it keeps); the
printed command runs ``header["replay"]["plain_args"]``: the same invocation with nothing of
statesnap's, so plain pytest accepts it whether statesnap is installed or not.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.base.text import needs_escape
from statesnap.replay.args import OWN_PLUGIN, OptionTable, split_words

#: Characters that ANSI-C quoting writes with a backslash: its own escape and its quote.
_ANSI_C_SPECIAL = re.compile(r"[\\']")


def _bytes_of(ch: str) -> bytes:
    """The bytes the tested process had for ``ch``: a surrogateescape character is the byte
    it stands for (a file name that was not UTF-8), anything else its UTF-8."""
    try:
        return ch.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte
        return ch.encode("utf-8", "surrogatepass")


def shell_quote(word: str) -> str:
    """``word`` as one word of a shell command line that prints as it runs.

    ``shlex.quote`` for ordinary words.  A word holding anything the terminal output escapes
    (:func:`statesnap.base.text.printable`: a control, a bidirectional control, a byte that
    was not UTF-8, as a node id of a folder so named has) would print escaped, and the escaped
    text is another word; such a word is written in ANSI-C quotes, ``$'...'`` (bash, zsh,
    ksh and POSIX.1-2024 sh; not dash), those characters as their ``\\xHH`` bytes:
    the line is then plain printable text, and the shell reads back the exact bytes."""
    if not needs_escape(word):
        return shlex.quote(word)
    out = []
    for ch in _ANSI_C_SPECIAL.sub(lambda m: "\\" + m.group(), word):
        out.append("".join(f"\\x{b:02x}" for b in _bytes_of(ch)) if needs_escape(ch) else ch)
    return "$'" + "".join(out) + "'"


def shell_join(words: Iterable[str]) -> str:
    """``shlex.join`` with :func:`shell_quote`: a command line that prints as it runs."""
    return " ".join(shell_quote(w) for w in words)


#: statesnap's options that records written before ``plain_args`` may hold, with a value.
_OLD_OWN_VALUED = ("--statesnap-probes", "--statesnap-nvml-every", "--statesnap-record",
                   "--statesnap-json", "--statesnap-report", "--report", "--statesnap-order",
                   "--statesnap-restore-before", "--statesnap-verify-budget",
                   "--statesnap-verify-repeat", "--statesnap-isolate-timeout",
                   "--statesnap-isolate-child")


def _randomly(args: list[str], header: Mapping[str, Any]) -> list[str]:
    """``args`` with pytest-randomly pinned to the recorded seed, or switched off."""
    plugins = " ".join(header.get("plugins") or [])
    seed = header.get("seed")
    if seed is not None and "pytest-randomly" in plugins:
        # Same seed (random reseeding per test), no reshuffling: the order decides.
        return [*args, f"--randomly-seed={seed}", "--randomly-dont-reorganize"]
    if "no:randomly" not in args and "-pno:randomly" not in args:
        return [*args, "-p", "no:randomly"]
    return args


#: Plugins that reorder the tests pytest is given, by distribution name: what makes the
#: command keep the order it names (their own off switch, or ``-p no:NAME``), and their
#: options that a command then drops (an option of a blocked plugin is a usage error).
REORDERERS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    # Reverses the items with --reverse; no off switch but leaving the flag out.
    "pytest-reverse": (["-p", "no:reverse"], ("--reverse",)),
    # Its own off switch, which also overrides a bucket set in addopts.
    "pytest-random-order": (["--random-order-bucket=none"],
                            ("--random-order", "--random-order-seed")),
    # Sorts by order markers whatever the command line's order.
    "pytest-order": (["-p", "no:pytest_order"], (
        "--indulgent-ordering", "--order-scope", "--order-scope-level", "--order-group-scope",
        "--sparse-ordering", "--order-dependencies", "--order-marker-prefix",
        "--error-on-failed-ordering", "--fail-all-on-failed-ordering", "--order-after-ff")),
    "pytest-ordering": (["-p", "no:pytest_ordering"], ()),
}


def _active(header: Mapping[str, Any], dist: str, args: Sequence[str]) -> bool:
    """Whether ``dist`` reordered the recorded run's tests: the header says so (records
    since ``reorders``), else (older records) its switch is among the arguments."""
    replay = header.get("replay") or {}
    if isinstance(replay.get("reorders"), list):
        return dist in replay["reorders"]
    if dist == "pytest-reverse":
        return "--reverse" in args
    if dist == "pytest-random-order":
        return any(a.split("=", 1)[0] in ("--random-order", "--random-order-bucket",
                                          "--random-order-seed") for a in args)
    return False


def _without(args: list[str], options: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    skip = False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in options:
            # A valued option written apart takes the next word, unless that is an option.
            skip = ("=" not in word and name != "--reverse" and name != "--random-order"
                    and i + 1 < len(args) and not args[i + 1].startswith("-"))
            continue
        out.append(word)
    return out


#: Plugins that sort by markers: blocked, their marker is unknown, an error under strict
#: markers; the command line's ``-o strict_markers=false`` comes after addopts and wins.
_MARKER_SORTERS = ("pytest-order", "pytest-ordering")


def _kept_on(header: Mapping[str, Any]) -> list[str]:
    """The reorderers the recorded run's ini file or ``PYTEST_ADDOPTS`` switches on
    (``ini_reorders``), which a command cannot switch off: it keeps them, and
    :func:`command_order` orders for them."""
    kept = (header.get("replay") or {}).get("ini_reorders")
    return [str(d) for d in kept] if isinstance(kept, list) else []


def command_order(header: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    """The node ids a command names so that pytest runs ``order``: reversed where the ini
    file's ``addopts`` or ``PYTEST_ADDOPTS`` holds pytest-reverse's ``--reverse`` (it
    reverses what it is given)."""
    return list(reversed(order)) if "pytest-reverse" in _kept_on(header) else list(order)


def _order_kept(args: list[str], header: Mapping[str, Any]) -> list[str]:
    """``args`` with every active plugin that reorders or spreads tests neutralised, so that
    a command runs its node ids in the order it names (pytest-randomly: :func:`_randomly`;
    one that the ini file switches on stays on: :func:`command_order`)."""
    args = _randomly(args, header)
    kept_on = _kept_on(header)
    strict = bool((header.get("replay") or {}).get("strict_markers"))
    for dist, (switch, options) in REORDERERS.items():
        if not _active(header, dist, args):
            continue
        args = _without(args, options)
        if dist in kept_on:
            if dist == "pytest-reverse":
                # Named on the command too (a flag, so twice is once): the command then
                # runs in the proven order with or without the ini file's or the
                # environment's ``--reverse`` (a log's line run in another shell).
                args = [*args, "--reverse"]
            continue
        if not any(word in args for word in switch if word != "-p"):
            args = [*args, *switch]
        if dist in _MARKER_SORTERS and strict and "strict_markers=false" not in args:
            args = [*args, "-o", "strict_markers=false"]
    if _active(header, "pytest-xdist", args) and "-n0" not in args:
        # ``-n`` in addopts would spread polluter and victim over two processes; the
        # command line's ``-n0`` (xdist's own off switch) comes after addopts and wins.
        args = [*args, "-n0"]
    return args


def replay_base_args(header: Mapping[str, Any]) -> list[str]:
    """The recorded arguments a replay keeps, with pytest-randomly pinned or switched off."""
    replay = header.get("replay") or {}
    args = list(replay.get("args") or ["-p", OWN_PLUGIN])
    if not any(w.option == "-p" and w.values == (OWN_PLUGIN,)
               for w in split_words(args, _OLD_TABLE)):
        args = ["-p", OWN_PLUGIN, *args]
    return _order_kept(args, header)


#: Enough of pytest's table to take statesnap's own words out of an older record's arguments
#: (its arguments were already split by pytest's own table: one word is one option).
_OLD_TABLE = OptionTable({"-p": None, **{name: None for name in _OLD_OWN_VALUED}})


def without_statesnap(args: Sequence[str]) -> list[str]:
    """An older record's replay arguments without ``-p statesnap`` and statesnap's options."""
    out: list[str] = []
    for word in split_words(args, _OLD_TABLE):
        option = word.option or ""
        if option == "-p" and word.values and word.values[0].strip() == OWN_PLUGIN:
            continue
        if option.startswith("--statesnap-") or option.split("=", 1)[0] in (
                "--report", *_OLD_OWN_VALUED):
            continue
        out += word.words
    return out


def plain_base_args(header: Mapping[str, Any]) -> list[str]:
    """The arguments of a printed command: the run's own, nothing of statesnap's."""
    replay = header.get("replay") or {}
    plain = replay.get("plain_args")
    args = list(plain) if isinstance(plain, list) else without_statesnap(replay.get("args") or [])
    return _order_kept(args, header)


def repro_command(header: Mapping[str, Any], order: Sequence[str]) -> str:
    """A copy-pastable one-liner that runs ``order`` exactly; statesnap is not needed.

    pytest runs node ids given on its command line in that order once every plugin that
    reorders them is off: pytest-randomly (or pinned to the recorded seed without
    reordering), pytest-reverse, pytest-random-order, pytest-order/-ordering, and
    pytest-xdist (``-n0``), see :data:`REORDERERS`.
    """
    words = ["python", "-m", "pytest", *plain_base_args(header), *command_order(header, order)]
    line = shell_join(words)
    rootdir = Path(header.get("rootdir") or ".")
    invoked = Path(header.get("invocation_dir") or rootdir)
    if invoked != rootdir:
        line = f"cd {shell_quote(str(rootdir))} && {line}"
    return line


def gc_off_command(header: Mapping[str, Any], order: Sequence[str]) -> str:
    """:func:`repro_command` with the garbage collector off for the whole run: what
    reproduces a failure that rests on state only reference cycles keep alive."""
    args = [*plain_base_args(header), *command_order(header, order)]
    # A JSON list of strings is a Python list literal, in double quotes: the shell's single
    # quotes around the code then need no escaping.
    code = f"import gc, sys, pytest; gc.disable(); sys.exit(pytest.main({json.dumps(args)}))"
    line = shell_join(["python", "-c", code])
    rootdir = Path(header.get("rootdir") or ".")
    invoked = Path(header.get("invocation_dir") or rootdir)
    if invoked != rootdir:
        line = f"cd {shell_quote(str(rootdir))} && {line}"
    return line
