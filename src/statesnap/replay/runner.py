"""Replays: run an exact order of node ids in a fresh interpreter, keep every byte it prints.

The command is rebuilt from the record's header (:mod:`statesnap.replay.child`); the child's
own record gives the outcomes (:mod:`statesnap.replay.result`), and every replay's output goes
to ``<record>.logs/NNN-label.log``.  See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from statesnap.base import spawned
from statesnap.base.redact import SECRET_FD_ENV, Redactor
from statesnap.base.text import FILE_ERRORS
from statesnap.record.journal import Record
from statesnap.replay.child import child_env, replay_env
from statesnap.replay.filestage import FileStage
from statesnap.replay.gcmode import OFF, held_by_cycles, with_gc
from statesnap.replay.inherited import TRAMPOLINE, Inherited
from statesnap.replay.launch import Launch
from statesnap.replay.log import LogPump, SecretPipe
from statesnap.replay.lognames import claim_log, write_heading
from statesnap.replay.orderfile import write_order
from statesnap.replay.printed import printed_argv, printed_env, read_printed
from statesnap.replay.printedlogs import PrintedLogs
from statesnap.replay.procwait import kill_group
from statesnap.replay.result import ReplayResult, read_back
from statesnap.replay.warm import WarmParent
from statesnap.replay.warmrun import WarmReplays, run_forked
from statesnap.replay.warmsetting import WarmSetting


class BudgetSpent(Exception):
    """A time budget (a verification's, a hunt's) ran out: no replay may start any more.

    Raised by the callers of :class:`Runner`, which own the budget; one class, so that each
    layer above catches the same thing.
    """


class Runner(Launch):
    """Runs replays for one record; counts processes and test executions for the figures.

    What each child starts with (interpreter, folder, command line, environment, cache) is
    :class:`Launch`'s; this class starts, watches and kills the children."""

    def __init__(
        self,
        record: Record,
        logs_dir: Path | None = None,
        timeout: float = 300.0,
        extra_args: Sequence[str] = (),
        stage_files: bool = True,
        env: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        warm: WarmSetting | bool | None = None,
    ) -> None:
        """``env`` is the environment replays start from.  In-session it is the one the
        session started with (its own tests may have polluted ``os.environ``); from the CLI
        it defaults to the current one plus the recorded variables that matter.
        ``redactor``: the session's own, in-session (it knows every secret the run met, and
        its digests in the logs match the record's).  ``warm``: whether replays may fork from a
        warm parent (:mod:`statesnap.replay.warm`; None: ``STATESNAP_REPLAY_WARM`` of the
        environment decides, on by default).

        Safe to call :meth:`run` from several threads at once: warm replays in flight share
        one warm parent (:mod:`statesnap.replay.warmrun`)."""
        self.record = record
        self.redactor = redactor or Redactor()
        self.header = record.header
        self.env = dict(env) if env is not None else replay_env(self.header, os.environ)
        self.rootdir = Path(self.header.get("rootdir") or ".")
        self.logs_dir = logs_dir or record.path.with_suffix(".logs")
        self.timeout = timeout
        self.extra_args = list(extra_args)
        self.stage = (FileStage.from_record(record, stash_root=self.logs_dir / "stage")
                      if stage_files else None)
        #: Files set aside around each replay besides the stage (leftovers of earlier runs).
        self.aside: FileStage | None = None
        self.processes = 0
        self.executions = 0
        self._cache_dir: Path | None = None
        self.inherited = Inherited.from_record(record)
        #: State only reference cycles keep (statesnap.replay.gcmode): every replay runs
        #: with the collector off, so its answer does not rest on when the collector runs.
        self.gc_off = held_by_cycles(record.tests)
        #: Processes the tests left running that the replays run beside (statesnap signals
        #: only what it started): one description each, for the verdicts that may hinge on them.
        self.beside: list[str] = []
        #: Probes the children run (None: the recorded selection).  Verification needs only
        #: the probes of the keys it looks at: each one left out saves its setup in every
        #: replay, and a replay's outcome never depends on what its probes see.
        self.probes: list[str] | None = None
        if not isinstance(warm, WarmSetting):
            warm = (WarmSetting.resolve(None, os.environ) if warm is None
                    else WarmSetting(bool(warm), "caller"))
        self.warm = WarmReplays(warm)
        #: How many replays were forked from the warm parent, how many ran cold.
        self.warm_runs = 0
        self.cold_runs = 0
        self._count = threading.Lock()
        #: Per thread: while set (:meth:`cold`), that thread's replays run in a fresh
        #: interpreter.
        self._local = threading.local()
        #: The cold replays in flight, for :meth:`abort` (called from another thread).
        self._live: set[subprocess.Popen[bytes]] = set()
        self._live_lock = threading.Lock()
        #: The printed lines' logs, scrubbed again as replays make more secrets known.
        self.printed_logs = PrintedLogs(self.redactor, self.env)

    @property
    def warm_refused(self) -> str | None:
        """Why replays run cold (the warm parent refused, or could not start); None: not."""
        return self.warm.refused

    def _counted(self, warm: bool, processes: int, executions: int) -> None:
        with self._count:
            self.warm_runs += int(warm)
            self.cold_runs += int(not warm)
            self.processes += processes
            self.executions += executions

    def set_aside(self, paths: Sequence[Path]) -> None:
        """Move these files and directories aside around each following replay (and put them
        back after); an empty list ends it.  Their stash has a folder of its own, so that
        recovering it never touches the stage's."""
        dirs = [p for p in paths if p.is_dir() and not p.is_symlink()]
        self.aside = (FileStage(created=[p for p in paths if p not in dirs], created_dirs=dirs,
                                stash_root=self.logs_dir / "aside") if paths else None)

    def _enter_stages(self) -> None:
        if self.stage is not None:
            self.stage.enter()
        if self.aside is not None:
            try:
                self.aside.enter()
            except BaseException:
                if self.stage is not None:
                    self.stage.exit()
                raise

    def _exit_stages(self) -> None:
        # The reverse order: a path in both is the aside's to put back first.
        if self.aside is not None:
            self.aside.exit()
        if self.stage is not None:
            self.stage.exit()

    def claim(self, label: str) -> tuple[str, Path]:
        """The next free ``NNN-label`` stem and its log (:func:`claim_log`)."""
        return claim_log(self.logs_dir, label)

    def run(self, order: Sequence[str], restore: Mapping[str, Any] | None = None,
            label: str = "replay", timeout: float | None = None,
            cold: bool = False) -> ReplayResult:
        """Run ``order`` exactly, forked from the warm parent where it is allowed, else (and
        with ``cold``) in a fresh interpreter; ``timeout`` caps this one replay."""
        try:
            return self._run(order, restore, label, timeout, cold)
        finally:
            self.printed_logs.scrub()

    def _run(self, order: Sequence[str], restore: Mapping[str, Any] | None,
             label: str, timeout: float | None, cold: bool) -> ReplayResult:
        limit = self.timeout if timeout is None else max(1.0, min(self.timeout, timeout))
        stem, log_file = self.claim(label)
        order_file = self.logs_dir / f"{stem}.order.json"
        record_file = self.logs_dir / f"{stem}.jsonl"
        write_order(order_file, order)
        restore_file = None
        if self.gc_off:
            restore = with_gc(restore, OFF)
        if restore is not None:
            restore_file = self.logs_dir / f"{stem}.restore.json"
            restore_file.write_text(json.dumps(restore, ensure_ascii=False), "utf-8",
                                    FILE_ERRORS)
        cmd = self.command(order_file, record_file, order, restore_file)
        result = ReplayResult(order=list(order), log=log_file, record=record_file,
                              timeout=limit)
        t0 = time.monotonic()
        with open(log_file, "w", encoding="utf-8", errors=FILE_ERRORS) as log:
            write_heading(log, cmd, self.cwd(), order, order_file, restore)
            forked = not (cold or getattr(self._local, "cold", False)) \
                and cmd[1:3] == ["-m", "pytest"] and self._run_warm(cmd, order, log, result,
                                                                    t0 + limit, limit)
            if forked:
                result.duration = time.monotonic() - t0
                read_back(result)
                return result
            if not self._spawn(cmd, log, result, t0, limit):
                for path in (order_file, restore_file):
                    if path is not None:
                        path.unlink(missing_ok=True)
                return result
        result.duration = time.monotonic() - t0
        read_back(result)
        if result.error is not None and not result.outcomes:
            # Nothing ran: only the log (the child's whole output) is worth keeping.
            for path in (order_file, record_file, restore_file):
                if path is not None:
                    path.unlink(missing_ok=True)
        return result

    def _spawn(self, cmd: list[str], log: IO[str], result: ReplayResult, t0: float,
               limit: float, env: Mapping[str, str] | None = None,
               cwd: Path | None = None, report_secrets: bool = True) -> bool:
        """Run ``cmd`` in a fresh process (a session of its own) within the stages, its output
        pumped into ``log``; killed with its group at ``t0 + limit`` or on Ctrl-C.  False:
        it could not start (``result.error`` says why).  ``report_secrets``: the child is
        statesnap's and reports the secrets it meets (a printed line runs without it)."""
        self._enter_stages()
        secrets = SecretPipe() if report_secrets else None
        try:
            proc = self.popen(cmd, subprocess.PIPE, secrets=secrets, env=env, cwd=cwd)
        except OSError as exc:
            self._counted(False, 0, 0)
            if secrets is not None:
                secrets.close()
            self._exit_stages()
            result.error = f"cannot start {cmd[0]}: {exc.strerror}"
            log.write(f"# statesnap: {result.error}\n")
            return False
        self._counted(False, 1, len(result.order))
        with self._live_lock:
            self._live.add(proc)
        assert proc.stdout is not None
        pump = self.pump(proc.stdout.fileno(), log, secrets)
        try:
            if pump.run(proc, deadline=t0 + limit):
                result.timed_out = True
                _kill(proc)
                pump.run(proc)
                log.write(f"\n# statesnap: replay timed out after {limit:.0f}s; its "
                          "process group was killed\n")
            result.returncode = spawned.wait(proc)
        except BaseException:
            _kill(proc)  # interrupted (Ctrl-C): leave no replay running
            spawned.wait(proc)
            raise
        finally:
            with self._live_lock:
                self._live.discard(proc)
            pump.close()
            proc.stdout.close()
            self._exit_stages()
        return True

    def local_command(self, command: str) -> str:
        """A printed line as this runner runs it (a scratch copy's runner: in the copy)."""
        return command

    def run_printed(self, command: str, order: Sequence[str], label: str = "confirm",
                    timeout: float | None = None, python: str | None = None) -> ReplayResult:
        """Run the printed line ``command`` exactly as printed, in a fresh process from the
        files the replays start from (statesnap.replay.printed); ``order``: the node ids it
        names.  Outcomes and failures come from its output: it runs without statesnap."""
        limit = self.timeout if timeout is None else max(1.0, min(self.timeout, timeout))
        _stem, log_file = self.claim(label)
        self.printed_logs.add(log_file)
        result = ReplayResult(order=list(order), log=log_file, timeout=limit)
        line = self.local_command(command)
        cwd = self.printed_cwd()
        env = printed_env(child_env(self.env, keep_xdist=False), python or self.python(),
                          self.cache_dir() if self.has_cache() else None)
        t0 = time.monotonic()
        with open(log_file, "w", encoding="utf-8", errors=FILE_ERRORS) as log:
            log.write(f"$ {line}\n# cwd: {cwd}\n# run exactly as printed\n\n")
            log.flush()
            self._spawn(printed_argv(line), log, result, t0, limit, env=env, cwd=cwd,
                        report_secrets=False)
        result.duration = time.monotonic() - t0
        read_printed(result)
        return result

    @contextlib.contextmanager
    def cold(self) -> Iterator[None]:
        """Replays this thread starts inside run in a fresh interpreter: what confirms a
        printed reproduction.  Other threads' replays are not affected."""
        before = getattr(self._local, "cold", False)
        self._local.cold = True
        try:
            yield
        finally:
            self._local.cold = before

    def _spawn_warm(self, modules: Sequence[str]) -> WarmParent | str:
        return WarmParent.spawn(
            self.python(), modules, str(self.cwd()),
            {k: v for k, v in self.child_env().items() if k != SECRET_FD_ENV},
            self.inherited.umask, self.inherited.trampoline())

    def _run_warm(self, cmd: Sequence[str], order: Sequence[str], log: IO[str],
                  result: ReplayResult, deadline: float, limit: float) -> bool:
        """Fork this replay from the warm parent, if there is one ready: ``cmd`` is the cold
        command (``python -m pytest ARGS``), the child runs ``ARGS`` as that would.  False:
        it runs cold instead."""
        parent = self.warm.parent(self.header.get("preload"), self._spawn_warm)
        if parent is None:
            return False
        log.write(f"# forked from the warm parent (pid {parent.proc.pid}, "
                  f"{parent.loaded} modules preloaded)\n\n")
        log.flush()
        self._enter_stages()
        secrets = SecretPipe()
        try:
            forked = run_forked(self.warm, parent, cmd[3:], limit, deadline, log, result,
                                SECRET_FD_ENV, secrets, lambda fd: self.pump(fd, log, secrets))
        finally:
            self._exit_stages()
        self._counted(True, int(forked), len(order) if forked else 0)
        return True

    def popen(self, cmd: list[str], out: Any, interactive: bool = False,
              secrets: SecretPipe | None = None, env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``cmd`` from the umask and signal state the recorded run started with.

        A verification replay gets a session of its own (a timeout kills its whole group) and
        no stdin; an ``interactive`` one (``statesnap replay``) stays in the terminal's
        process group, so Ctrl-C and ``--pdb`` reach it.  ``secrets``: the pipe the child
        reports its secret values through (statesnap.replay.log).  ``env``, ``cwd``: other
        than a replay child's (a printed line's: statesnap.replay.printed).
        """
        spec = self.inherited.trampoline()
        if spec is not None:
            cmd = [self.python(), "-c", TRAMPOLINE, json.dumps(spec), *cmd]
        env = dict(env) if env is not None else self.child_env()
        if secrets is not None:
            env.update(secrets.child_env())
        try:
            return spawned.popen(
                cmd, cwd=cwd or self.cwd(), env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=None if interactive else subprocess.DEVNULL,
                start_new_session=not interactive,
                umask=-1 if self.inherited.umask is None else self.inherited.umask,
                pass_fds=() if secrets is None else (secrets.write_fd,),
            )
        finally:
            if secrets is not None:
                secrets.started()

    def pump(self, out_fd: int, log: IO[str], secrets: SecretPipe | None,
             tee: IO[bytes] | None = None) -> LogPump:
        """What copies a child's output into ``log``, every secret known so far scrubbed."""
        pump = LogPump(out_fd, log, self.redactor, self.printed_logs.known(), secrets, tee)
        self.printed_logs.watch(pump.values)
        return pump

    def abort(self) -> None:
        """Kill every replay of this runner in flight (their process groups), from any thread:
        a Ctrl-C reaches the main thread only, while replays side by side run in others.
        Each :meth:`run` then returns as a killed replay does, its staged files put back."""
        with self._live_lock:
            live = list(self._live)
        for proc in live:
            if proc.returncode is None:
                _kill(proc)
        # Forked replays are the warm parent's children: closing it kills every one in flight.
        self.warm.close()

    def close(self) -> None:
        """End the warm parent; remove the scratch cache folder of the children."""
        self.warm.close()
        self.close_cache()


def _kill(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the replay's process group, or the child alone when it has no group of its own.

    Only a child statesnap started and has not reaped is signalled (statesnap.base.spawned):
    never whatever pid a patched ``subprocess.Popen`` handed back."""
    if not kill_group(proc.pid):
        spawned.signal_process(proc.pid, signal.SIGKILL)
