"""Replays: run an exact order of node ids in a fresh interpreter, keep every byte it prints.

The command is rebuilt from the record's header (interpreter, working directory, the recorded
arguments a replay keeps), so a replay sees the suite configured as the recorded run did.  The
child writes its own record, which is how outcomes are read back: no parsing of terminal text.
Every replay's full output goes to a log beside the record.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.filestage import FileStage
from statesnap.record import Record, RecordError, read_record
from statesnap.repro import replay_base_args, repro_command

#: Variables that describe the parent pytest process, never a child's.
_PARENT_ONLY_ENV = ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                    "PYTEST_XDIST_TESTRUNUID")


@dataclass
class ReplayResult:
    """What one replay did."""

    order: list[str]
    outcomes: dict[str, str] = field(default_factory=dict)
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    returncode: int | None = None
    log: Path | None = None
    record: Path | None = None
    timed_out: bool = False
    duration: float = 0.0
    #: Why the replay could not run at all (usage error, missing ids, no interpreter).
    error: str | None = None
    restored: list[str] = field(default_factory=list)

    def failed(self, nodeid: str) -> bool:
        return self.outcomes.get(nodeid) in ("failed", "error")

    def passed(self, nodeid: str) -> bool:
        return self.outcomes.get(nodeid) == "passed"

    def exc_type(self, nodeid: str) -> str | None:
        f = self.failures.get(nodeid)
        return None if f is None else f.get("exc_type")


def test_files(order: Sequence[str], rootdir: Path) -> list[str]:
    """The distinct files of ``order``'s node ids, so the child collects only those."""
    seen: dict[str, None] = {}
    for nodeid in order:
        seen.setdefault(str(rootdir / nodeid.split("::", 1)[0]), None)
    return list(seen)


class Runner:
    """Runs replays for one record; counts processes and test executions for the figures."""

    def __init__(
        self,
        record: Record,
        logs_dir: Path | None = None,
        timeout: float = 300.0,
        extra_args: Sequence[str] = (),
        stage_files: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        #: The environment replays start from: the one the recorded session started with
        #: when verifying in-session (the session's own tests may have polluted os.environ).
        self.env = dict(os.environ if env is None else env)
        self.record = record
        self.header = record.header
        self.rootdir = Path(self.header.get("rootdir") or ".")
        self.logs_dir = logs_dir or record.path.with_suffix(".logs")
        self.timeout = timeout
        self.extra_args = list(extra_args)
        self.stage = FileStage.from_record(record) if stage_files else None
        self.processes = 0
        self.executions = 0
        self._counter = 0

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

    def base_args(self) -> list[str]:
        return replay_base_args(self.header)

    def command(self, order_file: Path, record_file: Path, order: Sequence[str],
                restore_file: Path | None = None) -> list[str]:
        cmd = [self.python(), "-m", "pytest", *self.base_args(), *self.extra_args,
               f"--statesnap-order={order_file}", f"--statesnap-record={record_file}",
               "--statesnap-verify-budget=0", "-rfE",
               # The child's cache goes aside so a replay never rewrites the user's lastfailed.
               "-o", f"cache_dir={self.logs_dir / 'cache'}"]
        if restore_file is not None:
            cmd.append(f"--statesnap-restore-before={restore_file}")
        cmd += test_files(order, self.rootdir)
        return cmd

    def repro_command(self, order: Sequence[str]) -> str:
        return repro_command(self.header, order)

    def run(self, order: Sequence[str], restore: Mapping[str, Any] | None = None,
            label: str = "replay") -> ReplayResult:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self._counter += 1
        stem = f"{self._counter:03d}-{label}"
        order_file = self.logs_dir / f"{stem}.order.json"
        record_file = self.logs_dir / f"{stem}.jsonl"
        log_file = self.logs_dir / f"{stem}.log"
        order_file.write_text(json.dumps(list(order), ensure_ascii=False) + "\n", "utf-8")
        restore_file = None
        if restore is not None:
            restore_file = self.logs_dir / f"{stem}.restore.json"
            restore_file.write_text(json.dumps(restore, ensure_ascii=False), "utf-8")
        cmd = self.command(order_file, record_file, order, restore_file)
        env = {k: v for k, v in self.env.items() if k not in _PARENT_ONLY_ENV}
        env["STATESNAP_REPLAY"] = "1"
        result = ReplayResult(order=list(order), log=log_file, record=record_file)
        t0 = time.monotonic()
        self.processes += 1
        self.executions += len(order)
        with open(log_file, "w", encoding="utf-8") as log:
            log.write("$ " + shlex.join(cmd) + "\n")
            log.write(f"# cwd: {self.cwd()}\n\n")
            log.flush()
            try:
                if self.stage is not None:
                    self.stage.enter()
                proc = subprocess.Popen(
                    cmd, cwd=self.cwd(), env=env, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )
            except OSError as exc:
                if self.stage is not None:
                    self.stage.exit()
                result.error = f"cannot start {cmd[0]}: {exc.strerror}"
                return result
            try:
                result.returncode = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                result.timed_out = True
                _kill_group(proc)
                result.returncode = proc.wait()
                log.write(f"\n# statesnap: replay timed out after {self.timeout:.0f}s; killed\n")
            finally:
                if self.stage is not None:
                    self.stage.exit()
        result.duration = time.monotonic() - t0
        self._read_back(result)
        return result

    @staticmethod
    def _read_back(result: ReplayResult) -> None:
        assert result.record is not None and result.log is not None
        try:
            child = read_record(result.record)
        except RecordError:
            tail = result.log.read_text("utf-8", "replace").strip().splitlines()[-3:]
            result.error = " / ".join(line.strip() for line in tail) or "no output"
            return
        for t in child.tests:
            result.outcomes[t.nodeid] = "failed" if t.failed else t.outcome
            if t.failure is not None:
                result.failures[t.nodeid] = t.failure
            result.restored += list(t.extra.get("restored") or [])
        if child.running is not None:
            result.outcomes[str(child.running["nodeid"])] = "crashed"
        if result.returncode == 4 and not child.tests:
            tail = result.log.read_text("utf-8", "replace").strip().splitlines()[-2:]
            result.error = " / ".join(line.strip() for line in tail)


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
