"""This process's id for the per-test probes, kept without a ``getpid`` syscall per token.

The ``/proc`` files and directories the probes hold open (:class:`~statesnap.probes.base.ProcFile`)
and the ``files`` probe's inotify instance belong to the process that opened them: after a fork
the child must open its own.  They used to ask ``os.getpid()`` at every token: ten syscalls a
test with no change, the most frequent syscall statesnap makes (about 0.8 us each in a VM).

A process's id changes only in a forked child.  CPython runs the ``after_in_child`` callbacks of
:func:`os.register_at_fork` in every child that goes on running Python: ``os.fork``,
``os.forkpty``, ``multiprocessing``'s fork, and a C extension's own ``fork()``, which must call
``PyOS_AfterFork_Child`` before it calls back into Python (the C API's rule).  So the id is read
once here, and again in each forked child, and :func:`pid` answers from memory: the same value
``os.getpid()`` gives.  ``os.getpid`` is taken at import, so a test that patches it does not
reach the probes.
"""

from __future__ import annotations

import os

_GETPID = os.getpid

#: The id of this process, renewed by a forked child's at-fork callbacks.  A list read as
#: ``PID[0]`` where it runs per token: a subscript costs fewer instructions than a call.
PID: list[int] = [_GETPID()]


def _renew() -> None:
    PID[0] = _GETPID()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork either
    os.register_at_fork(after_in_child=_renew)


def pid() -> int:
    """``os.getpid()``, answered from memory (see the module's docstring)."""
    return PID[0]
