"""Real pytest runs of small suites, for the verification and CLI tests.

A suite is a folder of files (``{"test_a.py": source}``); :func:`run_suite` runs pytest on it
in a subprocess with statesnap on, its record and summary written outside the suite (so the
``files`` probe never sees them), and returns what came back.  :func:`statesnap_cli` runs the
``statesnap`` command line in a subprocess the same way a user would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record
from statesnap.record.reader import read_record

#: Every inner run: no pytest-randomly (the order is the point).
BASE_ARGS = ("-p", "no:randomly")

#: pytest's final summary line, ``=== 1 failed, 2 passed in 0.12s ===`` or, under ``-q``, bare.
_SUMMARY = re.compile(r"=* ?(\d+ \w+.*?|no tests ran)(?: in [0-9.]+s(?: \([0-9:.]+\))?)?(?: =*)?")


def summary_line(output: str) -> str | None:
    """pytest's final summary line without its duration and rules (``1 failed, 2 passed``),
    with or without ``-q``; None where the run printed none.  One for every test that compares
    a run with statesnap to plain pytest's."""
    for line in reversed(output.splitlines()):
        m = _SUMMARY.fullmatch(line.strip())
        if m:
            return m.group(1)
    return None


def write_suite(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (dedented) under ``root``; a ``pytest.ini`` pins the rootdir there."""
    root.mkdir(parents=True, exist_ok=True)
    if "pytest.ini" not in files:
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return root


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST", "STATESNAP_")) and k != "PYTEST_CURRENT_TEST"}
    env["PYTEST_ADDOPTS"] = "-p no:randomly"
    env.update(extra or {})
    return env


@dataclass
class SuiteRun:
    """One recorded run: its process result, record and summary."""

    proc: subprocess.CompletedProcess[str]
    record_path: Path
    json_path: Path

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr

    def record(self) -> Record:
        return read_record(self.record_path)

    def findings(self) -> list[dict[str, Any]]:
        data: dict[str, Any] = json.loads(self.json_path.read_text(encoding="utf-8"))
        found: list[dict[str, Any]] = data["findings"]
        return found

    def leak_severities(self) -> dict[str, list[tuple[str, str]]]:
        """Per test that leaked (its name, the last part of its id): each leak's key and
        severity, as the summary JSON lists them."""
        data: dict[str, Any] = json.loads(self.json_path.read_text(encoding="utf-8"))
        return {t["nodeid"].rsplit("::", 1)[1]: [(x["key"], x["severity"]) for x in t["leaks"]]
                for t in data["tests"] if t["leaks"]}

    def finding(self, victim_part: str) -> dict[str, Any]:
        """The one finding whose victim's id contains ``victim_part``."""
        found = [f for f in self.findings() if victim_part in f["victim"]]
        assert len(found) == 1, (victim_part, [f["victim"] for f in self.findings()],
                                 self.output[-3000:])
        return found[0]


def run_suite(root: Path, outdir: Path, *args: str, budget: float = 120,
              env: Mapping[str, str] | None = None, timeout: float = 300,
              name: str = "run") -> SuiteRun:
    """``pytest -p statesnap`` on ``root`` (cwd), record and summary under ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    record = outdir / f"{name}.jsonl"
    summary = outdir / f"{name}.json"
    cmd = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
           f"--statesnap-record={record}", f"--statesnap-json={summary}",
           f"--statesnap-verify-budget={budget}", *args]
    proc = subprocess.run(cmd, cwd=root, env=child_env(env), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    return SuiteRun(proc, record, summary)


def statesnap_cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m statesnap ARGS`` in ``cwd``, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "statesnap", *args], cwd=cwd,
                          env=child_env(env), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def run_shell(command: str, cwd: Path, env: Mapping[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A printed reproduction command, pasted into a shell whose ``python`` is this one."""
    shell_env = child_env(env)
    shell_env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                         shell_env.get("PATH", "")])
    return subprocess.run(command, shell=True, cwd=cwd, env=shell_env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def outcomes_of(record_path: Path) -> dict[str, str]:
    """``{nodeid: outcome}`` of a record."""
    return {t.nodeid: ("failed" if t.failed else t.outcome)
            for t in read_record(record_path).tests}


def only(items: Sequence[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]
