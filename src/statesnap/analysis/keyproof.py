"""Key-level proof: the smallest set of recorded changes whose restoration heals a victim.

One key at a time first; when none suffices, all restorable keys together, then delta debugging
over them.  Pure: ``heals(keys)`` runs the replay.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from statesnap.analysis.minimize import ddmin
from statesnap.probes.files.probe import FilesProbe, is_directory_key
from statesnap.record.journal import TestEntry
from statesnap.state.diff import Change

K = TypeVar("K")


def smallest_healing_set(keys: Sequence[K], heals: Callable[[Sequence[K]], bool],
                         singles: int) -> list[K]:
    """The smallest subset of ``keys`` whose restoration lets the victim pass ([] if none).

    The first ``singles`` keys (best ranked first) are tried alone; then all together, then
    delta debugging shrinks that set.
    """
    for key in keys[:singles]:
        if heals([key]):
            return [key]
    if len(keys) <= 1 or not heals(list(keys)):
        return []
    return ddmin(list(keys), heals, known_failing=True)


def narrowest(key: K, inside: Callable[[K], Sequence[K]],
              heals: Callable[[Sequence[K]], bool], limit: int) -> K:
    """``key`` (which heals alone) narrowed to the innermost key inside it that heals alone.

    Putting back a directory puts back all that is in it: the test directory the victim
    recreates heals it as well as the one folder in it the victim trips over, which is what
    the victim relies on.  ``inside(k)``: the keys within ``k``, best ranked first; at most
    ``limit`` replays.
    """
    tried = 0
    while True:
        for candidate in inside(key):
            if tried >= limit:
                return key
            tried += 1
            if heals([candidate]):
                key = candidate
                break
        else:
            return key


#: Replays that narrow one healing directory key at most.
MAX_NARROWING = 4


def narrowed_directory(ref: tuple[str, str], keys: Sequence[tuple[str, str]],
                       heals: Callable[[Sequence[tuple[str, str]]], bool],
                       stops: tuple[type[BaseException], ...] = (), failure: str = ""
                       ) -> tuple[str, str]:
    """``ref`` (which heals alone), when it is a ``files`` directory, narrowed to the
    innermost of ``keys`` in it that heals alone (:func:`narrowest`); any other key as it is.

    The hunt and the session's verification both name keys through this, so that the same
    victim gets the same key from either.  ``keys``: the restorable keys, best ranked first.
    A replay raising one of ``stops`` (no time left) ends it with the narrowest key proven so
    far: each step was proven by its own replay.  A directory whose own path the victim's
    ``failure`` quotes ("Directory …/out already exists!"), naming nothing inside it, is
    what it trips over: not narrowed, since putting back what is inside it leaves it there.
    """
    if ref[0] != FilesProbe.name or not is_directory_key(ref[1]):
        return ref
    proven = [ref]

    def inside(outer: tuple[str, str]) -> list[tuple[str, str]]:
        return [k for k in keys
                if k[0] == FilesProbe.name and k != outer and k[1].startswith(outer[1])]

    if quotes_path(failure, ref[1]) and not any(
            re.search(rf"(?<![\w.-]){re.escape(_name(k[1]))}(?![\w-]|\.\w)", failure)
            for k in inside(ref)):
        return ref  # the folder is quoted, nothing in it is: it is what the victim trips over

    def heals_noted(subset: Sequence[tuple[str, str]]) -> bool:
        if heals(subset):
            proven.append(subset[0])
            return True
        return False

    try:
        return narrowest(ref, inside, heals_noted, MAX_NARROWING)
    except stops:
        return proven[-1]


def _name(key: str) -> str:
    return key.rstrip("/").rsplit("/", 1)[-1]


def quotes_path(text: str, key: str) -> bool:
    """Whether ``text`` quotes the path ``key`` (relative, a directory's with its ``/``) as
    a whole: ``…/data/out`` or ``data/out/``, not ``data/out/x.txt`` nor ``data/outer``."""
    rel = key.rstrip("/")
    return bool(rel) and rel in text and re.search(
        rf"(?:^|[\s'\"/(\[]){re.escape(rel)}/?(?![\w/-]|\.\w)", text) is not None


def leave_one_out(keys: Sequence[K], heals: Callable[[Sequence[K]], bool]) -> list[K]:
    """``keys``, which heal the victim together, less each key whose restoration turns out
    not to be needed: one replay per key, the worst ranked left out first.

    What is left is 1-minimal (leaving out any one key of it fails the victim), as
    delta debugging's answer is; where most keys are needed -- a config dict cached from
    several environment variables -- it costs one replay per key, where delta debugging
    first tries the halves and the single keys too.
    """
    current = list(keys)
    for key in reversed(list(keys)):
        if len(current) < 2:
            break
        rest = [k for k in current if k != key]
        if heals(rest):
            current = rest
    return current


def lead_first(healing: Sequence[K], fails_as_recorded: Callable[[Sequence[K]], bool | None]
               ) -> list[K]:
    """``healing`` with the key the victim's failure is about first.

    Each key of a smallest healing set is needed, but the failure seen is about one of them:
    a config dict filled from the environment fails the victim's first assertion, and the
    variables still set fail a later one only once the dict is restored.  The lead is the
    first key (best ranked first) whose leak, with every other key of the set restored,
    fails the victim the way the proving run did: ``fails_as_recorded(others)`` says so
    (None: not known, e.g. no time left for the replay).  Without one, the order stays.
    """
    keys = list(healing)
    if len(keys) < 2:
        return keys
    for key in keys:
        if fails_as_recorded([k for k in keys if k != key]):
            return [key, *(k for k in keys if k != key)]
    return keys


def restore_spec(victim: str, keys: Sequence[tuple[str, str]],
                 baselines: Mapping[tuple[str, str], Any], imports: Sequence[str] = ()
                 ) -> dict[str, Any]:
    """The replay child's ``--statesnap-restore-before`` spec: ``keys`` put back before
    ``victim``.

    ``baselines``: each key's value before the causes changed it (None: absent).  A key that
    had a value is put back as it was when it first existed in the replay (``first_seen``):
    a class attribute a ``setup_class`` made, a module a fixture imported first -- not
    deleted because it did not exist yet when the run started.  ``imports``: modules the
    child imports before its first save, so that their state as imported is put back.
    """
    spec: dict[str, Any] = {"before": victim, "keys": [list(ref) for ref in keys]}
    first = [list(ref) for ref in keys if baselines.get(ref) is not None]
    if first:
        spec["first_seen"] = first
    if imports:
        spec["import"] = list(imports)
    return spec


def named_first(changes: Iterable[Change], failure_text: str) -> list[Change]:
    """``changes`` with those whose attribute name the failure quotes first (stable)."""
    return sorted(changes, key=lambda c: c.key.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                  not in failure_text)


def fresh_module_attributes(module: str, causes: Sequence[str],
                            recorded: Iterable[TestEntry], failure_text: str = ""
                            ) -> list[Change]:
    """What ``causes`` changed on ``module``'s attributes in the recorded run, best first.

    A polluter that imports a settings module and then changes it shows, in a replay where
    it imported the module first, one change: the module appeared (``modules:M``).  Taking
    the module out heals the victim (it imports a fresh copy), but the leak is the changed
    settings, which the recorded run (where the module was already there) did see.  Those
    named in the failure come first.
    """
    wanted = set(causes)
    found = [c for t in recorded if t.nodeid in wanted for c in t.changes
             if c.probe == "attributes" and c.key.startswith(f"{module}:")]
    return named_first(found, failure_text)
