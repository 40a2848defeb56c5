"""A failure that rests on garbage-collection timing, said in words: the note and the fix.

State that only reference cycles keep alive (a subclass a test defined, still listed by its
base's ``__subclasses__()``) is there until the collector runs, and when that is depends on
what the process allocated: under plain pytest the victim fails or passes with bytecode
written or not.  A finding proven with the collector off, whose victim passes once a
collection runs just before it, says so, names the objects the cycle keeps alive, and its
fix breaks the cycle.  Pure.
"""

from __future__ import annotations

import re
from typing import Any

from statesnap.analysis.findings import Finding

_NAMES = re.compile(r"([\w.<>]+) #")


def held(after: Any, before: Any = None) -> list[str]:
    """The objects a ``__subclasses__`` fingerprint lists after the change and not before."""
    was = set(_NAMES.findall(str(before or "")))
    return [n for n in dict.fromkeys(_NAMES.findall(str(after or ""))) if n not in was]


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def mark_gc_timing(finding: Finding, command: str) -> None:
    """Say that ``finding`` rests on garbage-collection timing; ``command``: the
    reproduction with the collector off."""
    names = held(finding.after, finding.before) or ["the subclass"]
    holder = ", ".join(names)
    base = (finding.key or "").rsplit(":", 1)[-1].removesuffix(".__subclasses__")
    note = (f"the failure depends on garbage-collection timing: a reference cycle keeps "
            f"{holder} alive, and with it in {base}.__subclasses__(), until the collector "
            "runs (a replay with gc.collect() before the victim passes); under plain pytest "
            "it fails or not depending on when the collector runs, so the reproduction "
            "runs with the collector off")
    finding.note = f"{finding.note}; {note}" if finding.note else note
    cls = _short(names[0])
    finding.hint = (f"break the reference cycle that keeps {cls} alive: at the end of the "
                    f"test drop what points back at it (an instance or method stored on "
                    f"{cls} itself, e.g. `del {cls}.<attribute>`), or call gc.collect() in the "
                    f"test's teardown; or have {base} ignore subclasses defined in tests")
    finding.repro = command
