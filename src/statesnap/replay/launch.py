"""What a replay child starts with: its interpreter, folder, command line, environment and
pytest cache, all read from the record's header.

:class:`Launch` is the half of :class:`statesnap.replay.runner.Runner` that decides these; the
runner itself starts, watches and kills the children.  A scratch copy's runner
(:mod:`statesnap.replay.scratchrunner`) sees a header whose project paths point into the copy.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.replay.args import plugin_args
from statesnap.replay.child import child_command, child_env, test_files
from statesnap.replay.repro import repro_command


class Launch:
    """How the children of one record's replays are started (see the module doc)."""

    header: Mapping[str, Any]
    env: dict[str, str]
    rootdir: Path
    extra_args: list[str]
    #: Probes the children run (None: the recorded selection).
    probes: list[str] | None
    _cache_dir: Path | None

    def select_probes(self, wanted: Sequence[str]) -> None:
        """Run only these probes (those the recorded run had working) in the children."""
        ok = [str(p.get("name")) for p in self.header.get("probes") or []
              if isinstance(p, Mapping) and p.get("status") == "ok"]
        chosen = [name for name in dict.fromkeys(wanted) if name in ok]
        # Some probe must run for the child to write its record; env is the cheapest.
        self.probes = chosen or ["env"]

    def python(self) -> str:
        recorded = (self.header.get("python") or {}).get("executable")
        if recorded and os.path.exists(recorded):
            return str(recorded)
        return sys.executable

    def cwd(self) -> Path:
        replay = self.header.get("replay") or {}
        for candidate in (replay.get("cwd"), self.header.get("invocation_dir"), self.rootdir):
            if candidate and Path(candidate).is_dir():
                return Path(candidate)
        return Path.cwd()

    def cache_dir(self) -> Path:
        # The child's pytest cache goes to a scratch folder: a replay never rewrites the
        # user's lastfailed, and nothing but logs accumulates beside the record.
        if self._cache_dir is None:
            self._cache_dir = Path(tempfile.mkdtemp(prefix="statesnap-replay-cache-"))
            # Removed by close(), or at the latest when the runner goes away.
            weakref.finalize(self, shutil.rmtree, str(self._cache_dir), True)
        return self._cache_dir

    def has_cache(self) -> bool:
        """Whether the child will have pytest's cacheprovider: the recorded run had it (older
        records: assume not; a replay that writes the user's cache is better than one pytest
        refuses) and neither the extra arguments nor ``PYTEST_ADDOPTS`` block it."""
        replay = self.header.get("replay") or {}
        if replay.get("cacheprovider") is not True:
            return False
        try:
            addopts = shlex.split(self.env.get("PYTEST_ADDOPTS", ""))
        except ValueError:
            addopts = []
        return "no:cacheprovider" not in plugin_args([*addopts, *self.extra_args])

    def command(self, order_file: Path, record_file: Path, order: Sequence[str],
                restore_file: Path | None = None, own_cache: bool = True) -> list[str]:
        """The child's command line; ``own_cache=False`` leaves pytest's cache where the
        suite keeps it (a command printed for the user to run)."""
        # The recorded interpreter (a replay from the CLI may run from another environment),
        # and a scratch cache only where the recorded run had the cacheprovider.
        return child_command(
            self.python(), self.header, order_file, record_file, test_files(order, self.rootdir),
            extra_args=self.extra_args, probes=self.probes,
            cache_dir=self.cache_dir() if own_cache and self.has_cache() else None,
            options=([f"--statesnap-restore-before={restore_file}"]
                     if restore_file is not None else []))

    def repro_command(self, order: Sequence[str]) -> str:
        return repro_command(self.header, order)

    def child_env(self) -> dict[str, str]:
        # A replay runs outside any xdist run, whatever the parent was part of.
        return child_env(self.env, keep_xdist=False, STATESNAP_REPLAY="1")

    def printed_cwd(self) -> Path:
        """Where a user runs a printed line: the folder pytest was invoked from (the line
        itself changes to the rootdir when that differs)."""
        for candidate in (self.header.get("invocation_dir"), self.rootdir):
            if candidate and Path(candidate).is_dir():
                return Path(candidate)
        return self.cwd()

    def close_cache(self) -> None:
        """Remove the children's scratch cache folder, if one was made."""
        if self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)
            self._cache_dir = None
