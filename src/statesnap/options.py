"""Command-line and ini options, and their validation into :class:`Settings`.

One option group; every flag is ``--statesnap-*`` except ``--report`` (a DESIGN.md contract).
Bad values become ``pytest.UsageError`` (one line, exit code 4), never a traceback.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from statesnap.redact import DEFAULT_PATTERNS


def _nonnegative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("statesnap", "statesnap: find the test that polluted global state")
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
        help="probes to run: 'env,fds' runs only those, '-files,-random' drops those "
        "(default: all; also ini statesnap_probes)",
    )
    group.addoption(
        "--statesnap-verify-budget",
        type=_nonnegative_float,
        metavar="SECONDS",
        default=None,
        help="seconds to spend replaying failures in fresh processes at the end of the "
        "session (default 120; 0 turns verification off)",
    )
    group.addoption(
        "--statesnap-verify-repeat",
        type=_positive_int,
        metavar="N",
        default=1,
        help="repeat each replay N times; disagreeing answers mark the failure not "
        "deterministic (default 1)",
    )
    group.addoption(
        "--statesnap-find-cleaners",
        action="store_true",
        default=False,
        help="also name tests of the suite that undo each polluter's leak",
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
    parser.addini("statesnap_probes", "probes to run (same syntax as --statesnap-probes)")
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


@dataclass
class Settings:
    """Validated options for one session."""

    rootdir: Path
    record_path: Path | None
    json_path: Path | None
    report_path: Path | None
    probes: str | None
    packages: tuple[str, ...]
    watch_roots: tuple[Path, ...]
    watch_exclude: tuple[str, ...]
    secret_patterns: tuple[str, ...]
    verify_budget: float = 120.0
    verify_repeat: int = 1
    find_cleaners: bool = False
    order_file: Path | None = None
    restore_before: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _path(config: pytest.Config, value: str | None) -> Path | None:
    if not value:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else Path(config.invocation_params.dir) / p


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
        record_path=_path(config, opt.statesnap_record),
        json_path=_path(config, opt.statesnap_json),
        report_path=_path(config, opt.statesnap_report),
        probes=probes,
        packages=tuple(config.getini("statesnap_packages")),
        watch_roots=watch,
        watch_exclude=tuple(config.getini("statesnap_watch_exclude")),
        secret_patterns=tuple(config.getini("statesnap_secret_patterns")),
        verify_budget=120.0 if budget is None else float(budget),
        verify_repeat=int(opt.statesnap_verify_repeat),
        find_cleaners=bool(opt.statesnap_find_cleaners),
        order_file=_path(config, opt.statesnap_order),
        restore_before=_path(config, opt.statesnap_restore_before),
    )
    for label, p in (("--statesnap-json", settings.json_path),
                     ("--report", settings.report_path),
                     ("--statesnap-record", settings.record_path)):
        if p is not None and p.is_dir():
            raise pytest.UsageError(f"{label} {p}: is a directory, expected a file path")
    if settings.order_file is not None and not settings.order_file.is_file():
        raise pytest.UsageError(f"--statesnap-order {settings.order_file}: no such file")
    return settings
