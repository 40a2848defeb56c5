"""Whether replays fork from a warm parent: the option's value, carried down to the runner.

A module of its own, light to import: the plugin reads the option at every session's start,
and the warm parent's machinery (:mod:`statesnap.replay.warm`) is only needed once a replay
runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from statesnap.base.plain import Frozen

#: ``STATESNAP_REPLAY_WARM=off`` (or ``--statesnap-replay-warm=off``) replays cold only.
WARM_ENV = "STATESNAP_REPLAY_WARM"


class WarmSetting(Frozen):
    """Whether replays may fork from a warm parent, and what decided it.

    Made once where the options are read (the session's ``--statesnap-replay-warm``, else
    ``STATESNAP_REPLAY_WARM`` of the environment, else on) and handed down to each
    :class:`~statesnap.replay.runner.Runner`.  A plain slotted class, not a data class,
    whose creation would cost at every session's start (issue 13)."""

    _fields = ("on", "source")
    __slots__ = _fields

    def __init__(self, on: bool = True, source: str = "default") -> None:
        self.on: Final = on
        #: What decided: "default", the option, the environment variable, or "caller".
        self.source: Final = source

    @classmethod
    def resolve(cls, option: str | None, environ: Mapping[str, str]) -> WarmSetting:
        """``option``: "on", "off" or None (not given: the environment decides)."""
        if option is not None:
            return cls(option == "on", "--statesnap-replay-warm")
        value = environ.get(WARM_ENV)
        if value is None:
            return cls()
        return cls(value.strip().lower() not in ("off", "0", "no", "false"), WARM_ENV)
