"""Run a command inside a fresh mount namespace, on a filesystem made for the test.

The chaos tests need what a CI runner may meet: a small filesystem that fills up mid-session,
a ``.pytest_cache`` that is read-only.  As root, ``unshare --mount --propagation private``
gives the command a mount table of its own: a ``tmpfs`` of a few hundred KiB or a read-only
bind mount made there is seen by that command alone and goes with it.  (Root ignores
``chmod``; a read-only mount stops root too.)

:func:`run` takes the mounts to make and the argv to run; files the command leaves on a
mount that goes away are copied out first (``keep``).  Marked tests (``needs_mountns``) fail
under ``CI=true`` where no namespace can be made, rather than skip (``tests/ci_skips.py``).
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest


@functools.cache
def unavailable() -> str | None:
    """Why a mount namespace with a tmpfs cannot be made here, or None when it can."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no unshare command (util-linux)"
    with tempfile.TemporaryDirectory() as where:
        try:
            proc = subprocess.run(
                [unshare, "--mount", "--propagation", "private", "sh", "-c",
                 f"mount -t tmpfs -o size=64k chaos {shlex.quote(where)} && "
                 f"mount --bind -o ro {shlex.quote(where)} {shlex.quote(where)}"],
                capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unshare failed: {exc}"
    if proc.returncode != 0:
        return f"cannot mount in a mount namespace: {proc.stderr.strip() or proc.returncode}"
    return None


def require() -> None:
    """Skip (a failure under CI=true, by the ``needs_mountns`` marker) where no namespace
    can be made."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)


def tmpfs(path: Path, size: str) -> str:
    """The shell line that mounts a ``tmpfs`` of ``size`` (``"1m"``) on ``path``."""
    return f"mount -t tmpfs -o size={size} chaos {shlex.quote(str(path))}"


def read_only(path: Path) -> str:
    """The shell line that makes ``path`` (a folder) read-only for the command."""
    q = shlex.quote(str(path))
    return f"mount --bind -o ro {q} {q}"


def run(mounts: Sequence[str], argv: Sequence[str], *, cwd: Path, env: dict[str, str],
        keep: tuple[Path, Path] | None = None, timeout: float = 180
        ) -> subprocess.CompletedProcess[str]:
    """``argv`` in ``cwd`` after ``mounts`` (shell lines), in a mount namespace of its own.

    ``keep=(src, dst)``: what the command left in ``src`` (a mount that goes away with the
    namespace) is copied to ``dst`` once it ended, but for a file named ``ballast`` (what a
    test fills a disk with).  The command's own exit status is kept.
    """
    unshare = shutil.which("unshare")
    assert unshare is not None, "call require() first"
    script = ["set -e", *mounts, "set +e", 'cd "$0"', '"$@"', "rc=$?"]
    if keep is not None:
        src, dst = (shlex.quote(str(p)) for p in keep)
        script += [f"rm -f {src}/ballast", f"mkdir -p {dst}", f"cp -a {src}/. {dst}/"]
    script.append('exit "$rc"')
    return subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c",
                           "\n".join(script), str(cwd), *argv],
                          capture_output=True, text=True, env=env, timeout=timeout)
