"""The record header: what a later replay needs, and what ``statesnap diff`` compares.

Built once per session.  Everything here is read, never changed.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.base.redact import Redactor
from statesnap.base.version import __version__
from statesnap.record.journal import FORMAT

#: Environment variables a replay passes on as they were recorded (they change test behaviour).
REPLAY_ENV_PREFIXES = ("PYTEST_", "PYTHON", "CUDA_", "OMP_", "MKL_", "TORCH", "CI")


def platform_string() -> str:
    """``platform.platform()``'s string, without the ``uname -p`` subprocess it starts.

    On Linux ``platform.platform()`` asks ``uname -p`` for the processor (a fork and exec,
    about 10 ms of a session's start) and reads the C library's version out of the Python
    binary; the processor is dropped from the string whenever it is blank, ``unknown`` or the
    machine, as on Debian, Ubuntu and Fedora.  Here it is left out always and glibc's
    version comes from ``confstr``; anywhere else (or without glibc) ``platform.platform()``.
    """
    uname = os.uname()
    if uname.sysname == "Linux":
        try:
            libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc = ""
        name, _, version = libc.partition(" ")
        if name and version:
            text = "-".join(("Linux", uname.release, uname.machine, "with", name + version))
            for char in '/\\:;"()':
                text = text.replace(char, "-")
            text = text.replace(" ", "_")
            while "--" in text:
                text = text.replace("--", "-")
            return text.rstrip("-")
    return platform.platform()


def plugin_label(dist: Any) -> str:
    """``name-version`` of a plugin's distribution (pytest's ``list_plugin_distinfo``).

    From the dist-info folder's name when it has one, as :func:`installed_packages` does:
    asking the distribution parses its METADATA (~1 ms each, in every session).
    """
    inner = getattr(dist, "_dist", dist)
    folder = getattr(getattr(inner, "_path", None), "name", "")
    stem, _, kind = str(folder).rpartition(".")
    name, sep, version = stem.partition("-")
    if kind == "dist-info" and sep and version:
        return f"{name.replace('_', '-')}-{version}"
    return f"{dist.project_name}-{dist.version}"


def installed_packages() -> dict[str, str]:
    """``{distribution name: version}`` of everything importable in this interpreter.

    Read from the ``name-version.dist-info`` folder names (the wheel spec's layout) rather than
    by parsing every METADATA file: the header is written by every session and every replay
    child, and the names alone cost a directory listing per ``sys.path`` entry.  Anything not
    named that way (eggs, odd installs) falls back to its metadata.
    """
    out: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            stem, dot, kind = folder.rpartition(".")
            if kind not in ("dist-info", "egg-info") or not dot:
                continue
            name, sep, version = stem.partition("-")
            if kind == "dist-info" and sep and version:
                out.setdefault(name.replace("_", "-"), version)
                continue
            # An egg-info (editable installs, old setuptools): its metadata names the version.
            path = Path(entry or ".") / folder
            read = _simple_metadata(path)
            if read is not None:
                out.setdefault(*read)
                continue
            try:
                dist = importlib.metadata.PathDistribution(path)
                meta_name = dist.metadata["Name"]
            except Exception as exc:  # odd metadata: the package is left out of the header
                note_internal_error(f"header: packages ({folder})", exc)
                continue
            if meta_name:
                out.setdefault(str(meta_name), str(dist.version))
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


#: A header line of a metadata file as the email parser takes it: a name, a colon, the value.
_HEADER = re.compile(r"([\x21-\x39\x3b-\x7e]+):(.*)")


def _simple_metadata(folder: Path) -> tuple[str, str] | None:
    """``(Name, Version)`` of a metadata folder whose headers are plain one-line ones, read as
    ``importlib.metadata`` reads them (its ``METADATA``, else its ``PKG-INFO``; the email
    parser's first header of each name, its value without leading blanks); None where anything
    is less plain, for ``importlib.metadata`` to read.  The email package it would import and
    the parse cost every session about 5 M instructions for the one egg-info of an editable
    install.
    """
    text = ""
    for name in ("METADATA", "PKG-INFO"):
        try:
            text = (folder / name).read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue  # importlib.metadata reads the next one too
        except (OSError, UnicodeDecodeError):
            return None
        if text:
            break
    head = text.partition("\n\n")[0]
    if not text or "\r" in head or head.startswith("From "):
        return None
    found: dict[str, str] = {}
    for line in head.split("\n"):
        if not line:
            break  # the end of the text
        match = _HEADER.fullmatch(line)
        if match is None:
            return None  # a folded value, or a line that ends the headers: not plain
        key = match.group(1).lower()
        if key in ("name", "version"):
            found.setdefault(key, match.group(2).lstrip(" \t"))
    if "name" not in found or "version" not in found or not found["name"]:
        return None
    return found["name"], found["version"]


def build_header(
    *,
    worker: str,
    args: Iterable[str],
    invocation_dir: Path,
    rootdir: Path,
    inifile: Path | None,
    plugins: list[str],
    seed: int | None,
    probes: list[dict[str, Any]],
    mtime_resolution: Mapping[str, Any],
    redactor: Redactor,
    notes: Mapping[str, str],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header line of a record (format :data:`statesnap.record.journal.FORMAT`)."""
    env = {k: redactor(k, v) for k, v in sorted(os.environ.items())}
    header: dict[str, Any] = {
        "type": "header",
        "format": FORMAT,
        "statesnap_version": __version__,
        "run_id": uuid.uuid4().hex[:12],
        "worker": worker,
        "pid": os.getpid(),
        "started": time.time(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "platform": platform_string(),
        },
        "packages": installed_packages(),
        "plugins": plugins,
        "args": list(args),
        "invocation_dir": str(invocation_dir),
        "rootdir": str(rootdir),
        "inifile": str(inifile) if inifile else None,
        "seed": seed,
        "probes": probes,
        "mtime_resolution": dict(mtime_resolution),
        "env": env,
        "notes": dict(notes),
    }
    if extra:
        header.update(extra)
    return header
