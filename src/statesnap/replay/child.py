"""The child pytest process statesnap starts: its command line and its environment.

Replays (:mod:`statesnap.replay.runner`) and spawned isolation
(:mod:`statesnap.contain.isolate.spawn`) both start ``python -m pytest`` with the recorded
arguments a replay keeps (:func:`statesnap.replay.repro.replay_base_args`), told to run an
exact order (``--statesnap-order``), to write a record of its own and never to verify (no
recursion).  Each caller passes what differs, and says why.  A replay started from the CLI
also gets the recorded variables that change test behaviour (:func:`replay_env`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from statesnap.base.redact import PREFIX as REDACTED
from statesnap.base.redact import SECRET_FD_ENV
from statesnap.record.header import REPLAY_ENV_PREFIXES
from statesnap.replay.repro import replay_base_args

#: Variables that describe the parent pytest process itself, never a child: the test it is
#: running, the secret pipe it was handed.
PARENT_ONLY_ENV = ("PYTEST_CURRENT_TEST", SECRET_FD_ENV)
#: The parent's place in an xdist run.  A replay runs outside any xdist run; an isolated test
#: runs as part of its worker and sees them as it would in the worker's own process.
XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def child_env(base: Mapping[str, str], *, keep_xdist: bool, **marks: str) -> dict[str, str]:
    """``base`` without what describes the parent process (and its xdist run unless
    ``keep_xdist``), plus ``marks`` (``STATESNAP_REPLAY=1``, ``STATESNAP_ISOLATED=spawn``)."""
    drop = PARENT_ONLY_ENV if keep_xdist else PARENT_ONLY_ENV + XDIST_ENV
    env = {k: v for k, v in base.items() if k not in drop}
    env.update(marks)
    return env


def child_command(python: str, header: Mapping[str, Any], order_file: Path, record_file: Path,
                  files: Sequence[str], *, extra_args: Sequence[str] = (),
                  probes: Sequence[str] | None = None, cache_dir: Path | None = None,
                  options: Sequence[str] = ()) -> list[str]:
    """``python -m pytest`` with the recorded arguments, running ``order_file``'s node ids.

    ``probes``: the probes the child runs (None: the recorded selection); ``cache_dir``: a
    scratch pytest cache (None: the suite's own); ``options``: more statesnap options of the
    caller's; ``files``: the test files to collect.
    """
    cmd = [python, "-m", "pytest", *replay_base_args(header), *extra_args,
           f"--statesnap-order={order_file}", f"--statesnap-record={record_file}",
           "--statesnap-verify-budget=0"]
    if probes is not None:
        cmd.append(f"--statesnap-probes={','.join(probes)}")
    if cache_dir is not None:
        cmd += ["-o", f"cache_dir={cache_dir}"]
    return [*cmd, *options, *files]


def test_files(order: Sequence[str], rootdir: Path) -> list[str]:
    """The distinct files of ``order``'s node ids, so the child collects only those."""
    seen: dict[str, None] = {}
    for nodeid in order:
        seen.setdefault(str(rootdir / nodeid.split("::", 1)[0]), None)
    return list(seen)


def replay_env(header: Mapping[str, Any], base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus the recorded variables that change test behaviour (PYTEST_*, PYTHON*...).

    Redacted values are never passed on (the record only holds their digest).
    """
    env = dict(base)
    recorded = header.get("env") or {}
    if isinstance(recorded, Mapping):
        for name, value in recorded.items():
            if (isinstance(value, str) and name.startswith(REPLAY_ENV_PREFIXES)
                    and not value.startswith(REDACTED)
                    and name not in (*PARENT_ONLY_ENV, *XDIST_ENV)):
                env[name] = value
    return env
