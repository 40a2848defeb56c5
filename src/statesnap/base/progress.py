"""The progress callback every long-running step takes: one line of what it is doing now."""

from __future__ import annotations

from collections.abc import Callable

#: Called with one line (``"statesnap: replaying 3/8"``); the CLI shows it, the plugin prints it.
Progress = Callable[[str], None]
