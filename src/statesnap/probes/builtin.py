"""The built-in probes, registered through the ``statesnap.probes`` entry point like any other."""

from __future__ import annotations

import importlib

from statesnap.probes.base import Probe

#: ``(module, class)`` of each built-in probe, in the order they run and are shown.
BUILTIN: tuple[tuple[str, str], ...] = (
    ("statesnap.probes.env", "EnvProbe"),
    ("statesnap.probes.modules", "ModulesProbe"),
    ("statesnap.probes.syspath", "SysPathProbe"),
    ("statesnap.probes.cwd", "CwdProbe"),
    ("statesnap.probes.attributes.probe", "AttributesProbe"),
    ("statesnap.probes.threads", "ThreadsProbe"),
    ("statesnap.probes.fds", "FdsProbe"),
    ("statesnap.probes.children", "ChildrenProbe"),
    ("statesnap.probes.files.probe", "FilesProbe"),
    ("statesnap.probes.logging_", "LoggingProbe"),
    ("statesnap.probes.warnings_", "WarningsProbe"),
    ("statesnap.probes.process", "ProcessProbe"),
    ("statesnap.probes.random_", "RandomProbe"),
    ("statesnap.probes.torch.probe", "TorchProbe"),
    ("statesnap.probes.scistack.probe", "SciStackProbe"),
    ("statesnap.probes.nvml", "NvmlProbe"),
)

#: Built-in probes the pytest layer adds only where asked (replays, an option), never by
#: discovery: their cost is paid in the runs that need them, not in every recording run.
ON_DEMAND: tuple[tuple[str, str], ...] = (
    ("statesnap.probes.fixtures", "FixturesProbe"),
)


def builtin_probes() -> list[Probe]:
    """Fresh instances of every built-in probe (one set per pytest process)."""
    return [getattr(importlib.import_module(module_name), class_name)()
            for module_name, class_name in BUILTIN]
