"""The attributes of the modules and classes statesnap's end works with, put back around it.

A test that ran ``mock.patch("subprocess.Popen").start()``, froze ``time.monotonic``, or
replaced ``os.scandir``, ``json.dumps`` or ``json.JSONEncoder.encode`` and never put them back
leaves them so for the rest of the process.  statesnap's session end spawns, waits, kills, reads
pipes, walks directories and reads and writes JSON through these modules (its own code and the
standard library's under it), so :func:`capture` copies their namespaces before the first test
and :func:`restored` puts every captured attribute back around the end, then the tests' values
afterwards (as the clean room does for the builtins).  A class's attribute a test added since
(a method patched on a subclass that inherited it) is hidden for the end too.  Why:
docs/ARCHITECTURE.md ("The clean room").
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: The modules, by name, whose attributes the end uses (``posixpath`` is ``os.path``;
#: ``socket``: the warm parent's socket pair, which pytest-socket's ``socket.socket``
#: refuses).  Those not imported when the plugin loads are skipped: nothing captured,
#: nothing put back.
MODULES = ("os", "posixpath", "genericpath", "stat", "subprocess", "select", "selectors",
           "signal", "time", "json", "json.encoder", "json.decoder", "json.scanner", "shutil",
           "tempfile", "pathlib", "io", "fcntl", "errno", "codecs", "socket")
#: The classes (module, name) whose methods the end calls, or the standard library calls for it.
CLASSES = (("subprocess", "Popen"), ("json", "JSONEncoder"), ("json", "JSONDecoder"),
           ("pathlib", "PurePath"), ("pathlib", "Path"), ("pathlib", "PurePosixPath"),
           ("pathlib", "PosixPath"), ("selectors", "PollSelector"),
           ("selectors", "EpollSelector"), ("selectors", "DefaultSelector"),
           ("socket", "socket"))

#: Left to the clean room (statesnap.plugin.cleanroom), which puts them back for the end only:
#: an isolated test's child gets the session's environment as the tests left it.
_NOT_OURS = frozenset({"environ", "environb", "tempdir"})

_MISSING: Any = object()
# Taken when this module is imported (with the plugin): a test may patch the builtins too.
_setattr = setattr
_delattr = delattr
_vars = vars
_dict = dict
_list = list

def _nothing() -> None:
    pass


#: (the object, its attributes when captured, whether it is a class).
Saved = tuple[tuple[Any, dict[str, Any], bool], ...]


def capture() -> Saved:
    """The namespaces of :data:`MODULES` and :data:`CLASSES` now (before the first test)."""
    saved: list[tuple[Any, dict[str, Any], bool]] = []
    for name in MODULES:
        module = sys.modules.get(name)
        if module is not None:
            saved.append((module, _dict(_vars(module)), False))
    for module_name, class_name in CLASSES:
        cls = _vars(sys.modules[module_name]).get(class_name) if module_name in sys.modules \
            else None
        if isinstance(cls, type):
            saved.append((cls, _dict(_vars(cls)), True))
    return tuple(saved)


def _swap(obj: Any, saved: dict[str, Any], is_class: bool) -> Callable[[], None]:
    """Put ``saved`` back on ``obj`` (hiding a class's attributes added since); the undo."""
    current = _vars(obj)
    try:
        # Nothing patched (the usual case): one comparison in C, identity first for each name.
        if current == saved:
            return _nothing
    except Exception:  # a value whose __eq__ raises: walk the names
        pass
    undo: dict[str, Any] = {}
    for name, value in saved.items():
        now = current.get(name, _MISSING)
        if now is not value and name not in _NOT_OURS:
            undo[name] = now
    if is_class:
        for name in current:
            if name not in saved:
                undo[name] = current[name]
    if not undo:
        return _nothing

    def put(name: str, value: Any) -> None:
        if is_class:
            if value is _MISSING:
                if name in _vars(obj):
                    _delattr(obj, name)
            else:
                _setattr(obj, name, value)
        elif value is _MISSING:
            current.pop(name, None)
        else:
            current[name] = value

    for name in undo:
        put(name, saved.get(name, _MISSING))

    def put_back() -> None:
        for name, value in undo.items():
            put(name, value)
    return put_back


@contextmanager
def restored(saved: Saved) -> Iterator[None]:
    """The captured attributes for the body; afterwards, what the tests had left."""
    undos: list[Callable[[], None]] = []
    try:
        for obj, attributes, is_class in saved:
            try:
                undos.append(_swap(obj, attributes, is_class))
            except (AttributeError, TypeError):  # an attribute that refuses to be set
                continue
        yield
    finally:
        for undo in reversed(undos):
            try:
                undo()
            except (AttributeError, TypeError):
                continue
