"""statesnap's own pytest hooks, for conftest files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from statesnap.probes.base import Probe

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_statesnap_add_probes(config: Any) -> list[Probe] | None:
    """Return extra probe instances to run in this session (a list, or None).

    Called once at session start.  A conftest that implements it should mark it
    ``@pytest.hookimpl(optionalhook=True)``, so runs without ``-p statesnap`` do not reject it
    as an unknown hook.  Probes returned here are selected and dropped by
    ``--statesnap-probes`` like the built-ins; a probe whose name is already taken is ignored.
    """
