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

    _fields = ("name", "location", "top_level", "editable", "elsewhere")
    __slots__ = _fields

    def __init__(self, name: str, location: str | None, top_level: tuple[str, ...],
                 editable: bool, elsewhere: str | None = None) -> None:
        self.name: Final = name
        #: The directory the distribution is installed into (site-packages), or None.
        self.location: Final = location
        #: Top-level importable names (packages and modules) of the distribution.
        self.top_level: Final = top_level
        self.editable: Final = editable
        #: An editable install's source folder when it is not the rootdir (another checkout).
        self.elsewhere: Final = elsewhere

    def line(self) -> str | None:
        """A line for the terminal and the header; None when there is nothing to say."""
        if self.editable and self.elsewhere is not None:
            # Another checkout (a second worktree sharing the venv): the tests import its
            # code, and nothing under the rootdir is what they run.  Said, never silent.
            watched = (f"its modules ({', '.join(self.top_level)}) are watched there"
                       if self.top_level else "its modules are NOT watched")
            return (f"the project under test, {self.name}, is installed in editable mode from "
                    f"{self.elsewhere}, not from the rootdir: the tests import that copy; "
                    f"{watched} (pip install -e . here to test this checkout)")
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
                parts[0] in ("..", "__pycache__") or parts[0].startswith("__editable__"):
            continue  # setuptools' editable finder is no module of the project
        if len(parts) == 1:
            if parts[0].endswith(".py"):
                names[parts[0][:-3]] = None
        elif parts[0].isidentifier():
            names[parts[0]] = None
    return tuple(names)


def _editable(dist: importlib.metadata.Distribution) -> tuple[bool, str | None]:
    """``(editable, its source folder)`` from ``direct_url.json`` (PEP 610)."""
    text = dist.read_text("direct_url.json")
    if not text:
        return False, None
    try:
        info = json.loads(text)
    except ValueError:
        return False, None
    if not (isinstance(info, dict) and isinstance(info.get("dir_info"), dict)
            and info["dir_info"].get("editable")):
        return False, None
    url = info.get("url")
    if not isinstance(url, str) or not url.startswith("file://"):
        return True, None
    from urllib.parse import unquote, urlsplit

    return True, unquote(urlsplit(url).path) or None


def _outside(source: str | None, rootdir: Path) -> str | None:
    """``source`` when it is a folder other than ``rootdir`` and not one above or below it."""
    if source is None:
        return None
    try:
        src, root = Path(source).resolve(), rootdir.resolve()
    except OSError:
        return None
    if src == root or src in root.parents or root in src.parents:
        return None
    return str(src)


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
        editable, source = _editable(dist)
    except (OSError, UnicodeDecodeError):
        top, editable, source = (), False, None
    return ProjectDist(name, location, top, editable, _outside(source, rootdir))
