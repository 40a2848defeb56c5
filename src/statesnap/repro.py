"""Reproduction commands, rebuilt from a record's header.  Pure."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def replay_base_args(header: Mapping[str, Any]) -> list[str]:
    """The recorded arguments a replay keeps, with pytest-randomly pinned or switched off."""
    replay = header.get("replay") or {}
    args = list(replay.get("args") or ["-p", "statesnap"])
    if "statesnap" not in " ".join(args):
        args = ["-p", "statesnap", *args]
    plugins = " ".join(header.get("plugins") or [])
    seed = header.get("seed")
    if seed is not None and "pytest-randomly" in plugins:
        # Same seed (random reseeding per test), no reshuffling: the order decides.
        args += [f"--randomly-seed={seed}", "--randomly-dont-reorganize"]
    elif "no:randomly" not in args and "-pno:randomly" not in args:
        args += ["-p", "no:randomly"]
    return args


def without_statesnap(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "-p" and i + 1 < len(args) and args[i + 1] == "statesnap":
            i += 2
            continue
        if args[i] == "-pstatesnap":
            i += 1
            continue
        out.append(args[i])
        i += 1
    return out


def repro_command(header: Mapping[str, Any], order: Sequence[str]) -> str:
    """A copy-pastable one-liner that runs ``order`` exactly; statesnap is not needed.

    pytest runs node ids given on its command line in that order once pytest-randomly, which
    would shuffle them, is off (or pinned to the recorded seed without reordering).
    """
    words = ["python", "-m", "pytest", *without_statesnap(replay_base_args(header)), *order]
    line = shlex.join(words)
    rootdir = Path(header.get("rootdir") or ".")
    invoked = Path(header.get("invocation_dir") or rootdir)
    if invoked != rootdir:
        line = f"cd {shlex.quote(str(rootdir))} && {line}"
    return line
