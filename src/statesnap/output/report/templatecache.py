"""Compiled report templates kept where Python keeps the package's bytecode, on its terms.

Compiling the templates is most of what a report costs on a small suite (about 400 M
instructions); reading a compiled one back is a small part of that.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import jinja2
from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket


class PycacheBytecode(FileSystemBytecodeCache):
    """Jinja2's file cache, with Python's rules for ``.pyc`` files: nothing is written under
    ``PYTHONDONTWRITEBYTECODE``, and a directory that cannot be written, or an entry that
    cannot be read, costs only the time (the template is compiled from its source)."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged entry: compile from the source, as without a cache
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def pycache_for(settings_file: str) -> PycacheBytecode | None:
    """The cache of the environment made in ``settings_file``: in that module's
    ``__pycache__`` (or under ``sys.pycache_prefix``); None where the interpreter keeps no
    bytecode (no cache tag) or the file cannot be read.

    Jinja2 keys each entry by the template's name and path and checks a checksum of its
    source, but not the environment's settings: the file names carry a digest of
    ``settings_file`` (where the settings and filters are), and the Jinja2 and Python
    versions, so nothing compiled under other settings is ever read.
    """
    try:
        directory = Path(importlib.util.cache_from_source(settings_file)).parent
        digest = hashlib.sha256(Path(settings_file).read_bytes()).hexdigest()[:16]
    except (NotImplementedError, OSError):
        return None
    version = getattr(jinja2, "__version__", "unknown")
    tag = f"{digest}-jinja2-{version}.{sys.implementation.cache_tag}"
    return PycacheBytecode(str(directory), f"report-template-%s-{tag}.cache")
