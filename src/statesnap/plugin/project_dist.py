"""The project under test when it is installed rather than imported from the rootdir.

Its installed top-level packages are watched by the ``attributes`` probe wherever they are;
how they are named: docs/PROBES.md (``attributes``).
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Final

from statesnap.base.plain import Frozen


class ProjectDist(Frozen):
    """What was found: the project's name, where it is installed, what it imports as.

    A plain slotted class (statesnap.base.plain): every session imports this module, and a
    NamedTuple class is generated with exec at import."""

    _fields = ("name", "location", "top_level", "editable")
    __slots__ = _fields

    def __init__(self, name: str, location: str | None, top_level: tuple[str, ...],
                 editable: bool) -> None:
        self.name: Final = name
        #: The directory the distribution is installed into (site-packages), or None.
        self.location: Final = location
        #: Top-level importable names (packages and modules) of the distribution.
        self.top_level: Final = top_level
        self.editable: Final = editable

    def line(self) -> str | None:
        """A line for the terminal and the header; None when there is nothing to say."""
        if self.editable:
            return None
        where = f" at {self.location}" if self.location else ""
        if self.top_level:
            return (f"the project under test, {self.name}, is installed{where}: its modules "
                    f"({', '.join(self.top_level)}) are watched there")
        return (f"the project under test, {self.name}, is installed{where} but its modules "
                "could not be named: their attributes are NOT watched (name them in the "
                "statesnap_packages ini option)")


def project_name(rootdir: Path) -> str | None:
    """The distribution name declared at ``rootdir``, if any."""
    pyproject = rootdir / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = {}
        name = data.get("project", {}).get("name") if isinstance(data, dict) else None
        if isinstance(name, str) and name:
            return name
    setup_cfg = rootdir / "setup.cfg"
    if setup_cfg.is_file():
        import configparser  # only here: most projects have none (7 M instructions a session)

        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
            found = parser.get("metadata", "name", fallback="")
        except (OSError, UnicodeDecodeError, configparser.Error):
            found = ""
        if found.strip():
            return found.strip()
    return None


def _top_level(dist: importlib.metadata.Distribution) -> tuple[str, ...]:
    text = dist.read_text("top_level.txt")
    if text:
        return tuple(dict.fromkeys(n.strip() for n in text.split() if n.strip()))
    names: dict[str, None] = {}
    for file in dist.files or ():
        parts = file.parts
        if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or \
                parts[0] in ("..", "__pycache__"):
            continue
        if len(parts) == 1:
            if parts[0].endswith(".py"):
                names[parts[0][:-3]] = None
        elif parts[0].isidentifier():
            names[parts[0]] = None
    return tuple(names)


def _editable(dist: importlib.metadata.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        info = json.loads(text)
    except ValueError:
        return False
    return bool(isinstance(info, dict) and (info.get("dir_info") or {}).get("editable"))


def find_project(rootdir: Path) -> ProjectDist | None:
    """The installed distribution of the project at ``rootdir``; None if none is installed."""
    name = project_name(rootdir)
    if name is None:
        return None
    try:
        dist = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return None
    try:
        location: str | None = str(dist.locate_file(""))
    except Exception:  # an odd finder's distribution: the names still help
        location = None
    try:
        top = tuple(n for n in _top_level(dist) if n.isidentifier())
        editable = _editable(dist)
    except (OSError, UnicodeDecodeError):
        top, editable = (), False
    return ProjectDist(name, location, top, editable)
