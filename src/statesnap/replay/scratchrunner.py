"""The runners of replays side by side: how each worker's is built, and one that replays in a
scratch copy of the project (:mod:`statesnap.replay.scratch`) instead of the checkout.

The copy's runner sees the record with its project paths moved into the copy (its rootdir,
cwd, arguments), so the staged files, the files set aside and the children's cwd are the
copy's; the logs stay beside the record, and the commands printed for the user name the
checkout (the verifier builds them from the record it was given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.base.redact import Redactor
from statesnap.record.journal import Record
from statesnap.replay.filestage import FileStage
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import Runner
from statesnap.replay.scratch import ScratchTree, map_paths, mapped_header
from statesnap.replay.warmsetting import WarmSetting


class ScratchRunner(Runner):
    """A runner whose replays run in ``tree``, a scratch copy of the project of its own,
    reset to the checkout before every replay."""

    def __init__(self, record: Record, tree: ScratchTree, **settings: Any) -> None:
        self.tree = tree
        self.source = str(tree.source)
        self.copy = str(tree.tree)
        mapped = Record(path=record.path,
                        header=mapped_header(record.header, self.source, self.copy),
                        collection=record.collection, tests=record.tests,
                        running=record.running)
        super().__init__(mapped, stage_files=False, **settings)
        # Staged in the copy (relative keys follow the mapped rootdir), its stash in the
        # copy's folder: a stash a killed process left goes with the copy.
        self.stage = FileStage.from_record(mapped, stash_root=tree.base / "stage")

    def set_aside(self, paths: Sequence[Path]) -> None:
        super().set_aside([Path(map_paths(str(p), self.source, self.copy)) for p in paths])
        if self.aside is not None:
            self.aside.stash_root = self.tree.base / "aside"

    def shown(self, path: Path) -> str:
        """A path in the copy as the user knows it: in the checkout."""
        return str(map_paths(str(path), self.copy, self.source))

    def run(self, order: Sequence[str], restore: Mapping[str, Any] | None = None,
            label: str = "replay", timeout: float | None = None,
            cold: bool = False) -> ReplayResult:
        """:meth:`Runner.run` in the copy, reset first."""
        self.tree.reset()  # what an earlier replay of this worker wrote is gone
        return super().run(order, restore=restore, label=label, timeout=timeout, cold=cold)

    def local_command(self, command: str) -> str:
        """A printed line (it names the checkout) as it runs in the copy."""
        return command.replace(self.source, self.copy)

    def run_printed(self, command: str, order: Sequence[str], label: str = "confirm",
                    timeout: float | None = None, python: str | None = None) -> ReplayResult:
        """:meth:`Runner.run_printed` in the copy, reset first."""
        self.tree.reset()
        return super().run_printed(command, order, label=label, timeout=timeout, python=python)


class RunnerKit:
    """The settings every worker's runner gets: a session's or a CLI command's."""

    __slots__ = ("beside", "env", "extra_args", "logs_dir", "redactor", "timeout", "warm")

    def __init__(self, timeout: float = 300.0, env: Mapping[str, str] | None = None,
                 redactor: Redactor | None = None, beside: Sequence[str] = (),
                 warm: WarmSetting | None = None, logs_dir: Path | None = None,
                 extra_args: Sequence[str] = ()) -> None:
        self.timeout = timeout
        #: Where the replays' logs go (None: beside the record) and the pytest arguments each
        #: replay gets besides the record's: a hunt's own folder and its ``-- ARGS``.
        self.logs_dir = logs_dir
        self.extra_args = list(extra_args)
        #: Whether replays may fork from a warm parent (None: ``STATESNAP_REPLAY_WARM``
        #: decides); each worker's runner has a warm parent of its own.
        self.warm = warm
        self.env = env
        self.redactor = redactor
        #: Child processes the tests left running, which the replays run beside.
        self.beside = list(beside)

    def build(self, record: Record, tree: ScratchTree | None = None) -> Runner:
        """A runner for ``record``; in ``tree`` (a scratch copy) when given."""
        settings: dict[str, Any] = {"timeout": self.timeout, "env": self.env,
                                    "redactor": self.redactor, "warm": self.warm,
                                    "logs_dir": self.logs_dir, "extra_args": self.extra_args}
        runner = (Runner(record, **settings) if tree is None
                  else ScratchRunner(record, tree, **settings))
        runner.beside = list(self.beside)
        return runner
