"""Compiled report templates kept where Python keeps the package's bytecode, on its terms.

Compiling the templates is most of what a report costs on a small suite (about 400 M
instructions); reading a compiled one back is a small part of that.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import os
import pickle
import sys
from pathlib import Path

import jinja2
from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket, bc_magic


class PycacheBytecode(FileSystemBytecodeCache):
    """Jinja2's file cache, with Python's rules for ``.pyc`` files: nothing is written under
    ``PYTHONDONTWRITEBYTECODE``, and a directory that cannot be written, or an entry that
    cannot be read, costs only the time (the template is compiled from its source)."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            with open(self._get_cache_filename(bucket), "rb") as f:
                data = f.read()
        except OSError:  # none yet, or unreadable: compile from the source
            return
        try:
            _read_entry(bucket, data)
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


def _read_entry(bucket: Bucket, data: bytes) -> None:
    """``Bucket.load_bytecode`` on an entry read whole: the same checks (Jinja2's magic, the
    source's checksum), but the code is unmarshalled from bytes.  ``marshal.load`` on a file
    asks the file for every object it reads (a Python call each): about 1.5 M instructions a
    template, 10 M for the report's seven, where ``marshal.loads`` takes 0.2 M."""
    if not data.startswith(bc_magic):
        bucket.reset()
        return
    head = io.BytesIO(data)
    head.seek(len(bc_magic))
    if pickle.load(head) != bucket.checksum:
        bucket.reset()
        return
    bucket.code = marshal.loads(memoryview(data)[head.tell():])


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
