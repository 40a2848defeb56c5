"""The gate replays side by side pass through: shared for most, alone for the few that must be.

Replays of different victims run at the same time (:mod:`statesnap.proof.sidebyside`, and the
hunt's proofs, :mod:`statesnap.hunt.sidebyside`), each through :meth:`Gate.shared`.  A replay
whose answer could hinge on what ran beside it (a fixed port another replay held, files set
aside in the one tree they share) runs through :meth:`Gate.alone` instead: it waits until no
other replay is in flight and keeps the others out until it is done, so its answer is the one a
replay on its own gives.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Overlap:
    """Whether another replay was in flight at some moment of this one."""

    __slots__ = ("beside",)

    def __init__(self) -> None:
        self.beside = False


class Gate:
    """A shared/exclusive lock over the replays in flight; one waiting to run alone goes next
    (new shared replays wait behind it, so it is never starved)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active: list[Overlap] = []
        self._alone = False
        self._waiting_alone = 0

    @contextmanager
    def shared(self) -> Iterator[Overlap]:
        mine = Overlap()
        with self._cond:
            while self._alone or self._waiting_alone:
                self._cond.wait()
            if self._active:
                mine.beside = True
                for other in self._active:
                    other.beside = True
            self._active.append(mine)
        try:
            yield mine
        finally:
            with self._cond:
                self._active.remove(mine)
                self._cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[Overlap]:
        mine = Overlap()
        with self._cond:
            self._waiting_alone += 1
            try:
                while self._alone or self._active:
                    self._cond.wait()
            finally:
                self._waiting_alone -= 1
            self._alone = True
        try:
            yield mine
        finally:
            with self._cond:
                self._alone = False
                self._cond.notify_all()
