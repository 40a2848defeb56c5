"""Command-line and ini options, and their validation into :class:`Settings`.

One option group; every flag is ``--statesnap-*`` except ``--report`` (kept short: it is the
one users type most).  Bad values, and output paths that cannot be written, become
``pytest.UsageError`` (one line, exit code 4) before the run, never a traceback.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest

from statesnap.base.argtypes import nonnegative_seconds, positive_int
from statesnap.base.plain import Value
from statesnap.base.redact import DEFAULT_PATTERNS
from statesnap.plugin.outputs import unwritable
from statesnap.replay.warmsetting import WarmSetting

ATTACH_HINT = ("write the value attached (--statesnap-{name}=VALUE) or put the option after "
                "the test paths")


GROUP = "statesnap"


def addoption(parser: pytest.Parser) -> None:
    """The core's options; each feature adds its own to the same group."""
    group = parser.getgroup(GROUP, "statesnap: find the test that polluted global state")
    group.addoption(
        "--statesnap-record",
        metavar="PATH",
        help="write the run record (JSON Lines journal) here; default: the pytest cache "
        "directory, newest run in .pytest_cache/statesnap/latest",
    )
    group.addoption(
        "--statesnap-json",
        metavar="PATH",
        help="write the summary JSON (tests with their leaks, findings) here",
    )
    group.addoption(
        "--report",
        "--statesnap-report",
        dest="statesnap_report",
        metavar="PATH",
        help="write the self-contained HTML report (pollution.html) here",
    )
    group.addoption(
        "--statesnap-probes",
        metavar="LIST",
        help="probes to run: 'env,fds' runs only those, '-files,-random' drops those, "
        "'none' records only the order and outcomes (default: all; also ini "
        "statesnap_probes)",
    )
    group.addoption(
        "--statesnap-verify-budget",
        type=nonnegative_seconds,
        metavar="SECONDS",
        default=None,
        help="seconds to spend replaying failures in fresh processes at the end of the "
        "session (default 120; 0 turns verification off)",
    )
    group.addoption(
        "--statesnap-replay-warm",
        choices=("on", "off"),
        default=None,
        help="'on' (default): replays fork from a warm process that has imported the "
        "session's libraries once (cold, in a fresh interpreter, when the imports left a "
        "thread, a child, CUDA, an open socket or a changed environment or cwd); every "
        "printed reproduction is still run exactly as printed in a fresh process. 'off': every "
        "replay starts a fresh interpreter (also STATESNAP_REPLAY_WARM=off)",
    )
    group.addoption(
        "--statesnap-verify-repeat",
        type=positive_int,
        metavar="N",
        default=1,
        help="repeat each replay N times; disagreeing answers mark the failure not "
        "deterministic (default 1)",
    )
    group.addoption(
        "--statesnap-replay-workers",
        type=positive_int,
        metavar="N",
        default=None,
        help="run up to N replays side by side at the end of the session (different "
        "victims at once, each in a scratch copy of the project when tests write files; "
        "default: the cores this process may use; 1: one at a time)",
    )
    group.addoption(
        "--statesnap-find-cleaners",
        action="store_true",
        default=False,
        help="also name tests of the suite that undo each polluter's leak",
    )
    group.addoption(
        "--statesnap-watch-fixtures",
        action="store_true",
        default=False,
        help="also digest the values of session-, package-, module- and class-scoped "
        "fixtures after every test (the fixtures probe; on in every replay)",
    )
    group.addoption(
        "--statesnap-order",
        metavar="FILE",
        help="run exactly the node ids listed in FILE (one per line), in that order "
        "(used by replays; fails naming any id that no longer exists)",
    )
    group.addoption(
        "--statesnap-restore-before",
        metavar="FILE",
        help=argparse.SUPPRESS,  # replay internals: restore keys before a given test
    )
    group.addoption(
        "--statesnap-verdicts-from",
        metavar="RECORD",
        help=argparse.SUPPRESS,  # `statesnap replay`: show the verdicts this record stored
    )
    group.addoption(
        "--statesnap-isolate-child",
        metavar="FILE",
        help=argparse.SUPPRESS,  # spawn internals: the report channel of an isolated child
    )
    group.addoption(
        "--statesnap-nvml-every",
        type=positive_int,
        metavar="N",
        default=None,
        help="query NVML after every N-th test while nothing suggests GPU use (default 16; "
        "1: after every test; while the GPU may be in use, after every test). "
        "ini: statesnap_nvml_every",
    )
    parser.addini("statesnap_probes", "probes to run (same syntax as --statesnap-probes)")
    parser.addini("statesnap_nvml_every", "same as --statesnap-nvml-every")
    parser.addini(
        "statesnap_packages",
        "extra importable packages whose module attributes count as the project's own",
        type="linelist",
        default=[],
    )
    parser.addini(
        "statesnap_watch",
        "roots watched by the files probe (default: the rootdir)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "statesnap_watch_exclude",
        "names or globs excluded under the watched roots (besides .git, caches, venvs)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "statesnap_secret_patterns",
        "name fragments whose environment values are redacted (default: TOKEN, SECRET, ...)",
        type="linelist",
        default=list(DEFAULT_PATTERNS),
    )


class Settings(Value):
    """Validated options for one session."""

    _fields = ("rootdir", "record_path", "json_path", "report_path", "probes", "packages",
               "watch_roots", "watch_exclude", "secret_patterns", "verify_budget", "verify_repeat",
               "find_cleaners", "watch_fixtures", "order_file", "restore_before", "verdicts_from",
               "nvml_every", "isolate_child", "replay_warm", "replay_workers")
    __slots__ = _fields

    def __init__(self, rootdir: Path, record_path: Path | None, json_path: Path | None,
                 report_path: Path | None, probes: str | None, packages: tuple[str, ...],
                 watch_roots: tuple[Path, ...], watch_exclude: tuple[str, ...],
                 secret_patterns: tuple[str, ...], verify_budget: float = 120.0,
                 verify_repeat: int = 1, find_cleaners: bool = False,
                 watch_fixtures: bool = False, order_file: Path | None = None,
                 restore_before: Path | None = None,
                 verdicts_from: Path | None = None, nvml_every: str | None = None,
                 isolate_child: Path | None = None,
                 replay_warm: WarmSetting | None = None,
                 replay_workers: int | None = None) -> None:
        self.rootdir = rootdir
        self.record_path = record_path
        self.json_path = json_path
        self.report_path = report_path
        self.probes = probes
        self.packages = packages
        self.watch_roots = watch_roots
        self.watch_exclude = watch_exclude
        self.secret_patterns = secret_patterns
        self.verify_budget = verify_budget
        self.verify_repeat = verify_repeat
        self.find_cleaners = find_cleaners
        #: The ``fixtures`` probe runs: ``--statesnap-watch-fixtures``, or a replay (the hunt's
        #: runs, key-level proofs), whose parent marks it with ``STATESNAP_REPLAY=1``.
        self.watch_fixtures = watch_fixtures
        self.order_file = order_file
        self.restore_before = restore_before
        self.verdicts_from = verdicts_from
        #: ``--statesnap-nvml-every`` (or its ini option), as given; None: the probe's default.
        self.nvml_every = nvml_every
        #: Set in a spawned isolation child (it runs one test, writes no outputs): where it
        #: sends its reports.
        self.isolate_child = isolate_child
        #: Whether the session's replays may fork from a warm parent (statesnap.replay.warm).
        self.replay_warm = replay_warm or WarmSetting()
        #: ``--statesnap-replay-workers``; None: as many as the cores this process may use.
        self.replay_workers = replay_workers


def option_path(config: pytest.Config, value: str | None) -> Path | None:
    if not value:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else Path(config.invocation_params.dir) / p


def probe_selection(value: str | None, name: str) -> str | None:
    """A feature's probe selection (strict, restore); names are checked at session start."""
    if value is None:
        return None
    text = value.strip()
    if not text or any(ch in text for ch in "/\\.:[]"):
        # Almost surely a test path that argparse took as the option's value.
        raise pytest.UsageError(
            f"--statesnap-{name}: {value!r} is not a list of probes; "
            + ATTACH_HINT.format(name=name)
        )
    return text


def settings_from(config: pytest.Config) -> Settings:
    """Read and validate the options; raise ``pytest.UsageError`` on bad values."""
    opt = config.option
    rootdir = Path(config.rootpath)
    probes = opt.statesnap_probes or config.getini("statesnap_probes") or None
    watch = tuple(
        (Path(p) if Path(p).is_absolute() else rootdir / p)
        for p in config.getini("statesnap_watch")
    ) or (rootdir,)
    for root in watch:
        if not root.is_dir():
            raise pytest.UsageError(f"statesnap_watch: {root} is not a directory")
    budget = opt.statesnap_verify_budget
    settings = Settings(
        rootdir=rootdir,
        record_path=option_path(config, opt.statesnap_record),
        json_path=option_path(config, opt.statesnap_json),
        report_path=option_path(config, opt.statesnap_report),
        probes=probes,
        packages=tuple(config.getini("statesnap_packages")),
        watch_roots=watch,
        watch_exclude=tuple(config.getini("statesnap_watch_exclude")),
        secret_patterns=tuple(config.getini("statesnap_secret_patterns")),
        verify_budget=120.0 if budget is None else float(budget),
        verify_repeat=int(opt.statesnap_verify_repeat),
        replay_warm=WarmSetting.resolve(getattr(opt, "statesnap_replay_warm", None), os.environ),
        find_cleaners=bool(opt.statesnap_find_cleaners),
        watch_fixtures=(bool(opt.statesnap_watch_fixtures)
                        or os.environ.get("STATESNAP_REPLAY") == "1"),
        order_file=option_path(config, opt.statesnap_order),
        restore_before=option_path(config, opt.statesnap_restore_before),
        verdicts_from=option_path(config, opt.statesnap_verdicts_from),
        isolate_child=option_path(config, opt.statesnap_isolate_child),
        replay_workers=opt.statesnap_replay_workers,
        nvml_every=(str(opt.statesnap_nvml_every) if opt.statesnap_nvml_every is not None
                    else (str(config.getini("statesnap_nvml_every")).strip() or None)),
    )
    for label, p in (("--statesnap-json", settings.json_path),
                     ("--report", settings.report_path),
                     ("--statesnap-record", settings.record_path)):
        reason = None if p is None else unwritable(p)
        if reason is not None:
            raise pytest.UsageError(f"{label} {p}: {reason}")
    if settings.order_file is not None and not settings.order_file.is_file():
        raise pytest.UsageError(f"--statesnap-order {settings.order_file}: no such file")
    return settings


#: Options whose value is a path: given as a separate word, pytest counts an existing one
#: among the test paths when it picks the rootdir (before it knows statesnap's options).
PATH_OPTIONS = ("--statesnap-record", "--statesnap-json", "--report", "--statesnap-report",
                "--statesnap-order", "--statesnap-restore-before", "--statesnap-verdicts-from")


def rootdir_pitfalls(args: Sequence[str], invocation_dir: Path, rootdir: Path) -> list[str]:
    """One line per path option whose separate, existing value outside the invocation
    directory may have moved pytest's rootdir (and lost the ini file)."""
    out = []
    for opt, value in pairwise(args):
        if opt not in PATH_OPTIONS or value.startswith("-"):
            continue
        path = Path(value) if Path(value).is_absolute() else invocation_dir / value
        try:
            inside = path.resolve().is_relative_to(invocation_dir.resolve())
        except OSError:
            continue
        if path.exists() and not inside:
            out.append(f"statesnap: {opt} {value}: given as two words, pytest took this "
                       f"existing path for a test path when it chose the rootdir ({rootdir}); "
                       f"write {opt}={value}")
    return out
