"""The option table of the checkout's pytest, for reading an invocation out of a CI artifact.

A log or a JUnit file names the arguments of the run but not what each option takes: that
depends on the plugins and conftests the run loaded.  Ask pytest in the checkout, with those
arguments (statesnap.plugin.optiondump); when it cannot say (an argument the checkout's
pytest refuses, no pytest), fall back to pytest's own options with a note.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from statesnap.replay.args import OPTION_TABLE_ENV, OptionTable

#: pytest's own options that take a value: the fallback when the checkout cannot be asked.
PYTEST_VALUED = frozenset({
    "-c", "-o", "--override-ini", "-W", "--pythonwarnings", "-p", "--rootdir", "--confcutdir",
    "--import-mode", "--tb", "-r", "--capture", "--color", "--code-highlight", "--log-level",
    "--log-format", "--log-date-format", "--log-cli-level", "--log-cli-format",
    "--log-file", "--log-file-level", "--log-file-format", "--durations-min", "--inifile",
    "--cache-dir", "--doctest-glob", "--doctest-report", "--assert", "--verbosity",
    "--timeout", "--timeout-method", "--replay-record-dir", "--replay", "--replay-base-name",
    "--dist", "--tx", "--rsyncdir", "--maxworkerrestart", "--max-worker-restart",
})
FALLBACK = OptionTable(nargs={name: None for name in PYTEST_VALUED})


def ask_checkout(root: Path, args: list[str], python: str) -> OptionTable | None:
    """The option table of ``python -m pytest ARGS`` in ``root``; None when it cannot be read."""
    with tempfile.TemporaryDirectory(prefix="statesnap-options-") as tmp:
        out = Path(tmp) / "table.json"
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
        env[OPTION_TABLE_ENV] = str(out)
        cmd = [python, "-m", "pytest", "-p", "statesnap.plugin.optiondump", *args]
        try:
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                                  timeout=300, stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0 or not out.is_file():
            return None
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
            return OptionTable(
                nargs=dict(data["nargs"]),
                aliases={k: frozenset(v) for k, v in data["aliases"].items()},
                own=frozenset(data["own"]),
                fromfile_prefix=data.get("fromfile_prefix"))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class CheckoutTables:
    """One table per distinct recorded invocation, asked once; notes say where it fell back."""

    def __init__(self, root: Path, python: str) -> None:
        self.root = root
        self.python = python
        self._tables: dict[tuple[str, ...], OptionTable] = {}
        self.notes: list[str] = []

    def table(self, args: list[str] | None) -> OptionTable:
        key = tuple(args or ())
        found = self._tables.get(key)
        if found is None:
            found = ask_checkout(self.root, list(key), self.python)
            if found is None:
                found = FALLBACK
                self.notes.append(
                    f"pytest in {self.root} could not read the recorded arguments "
                    f"{' '.join(key) or '(none)'}: they are read with pytest's own options only "
                    "(a plugin option's value may be taken for a test path)")
            self._tables[key] = found
        return found
