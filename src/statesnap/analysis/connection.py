"""What connects a recorded change to a failing test: the weights ranking adds for it.

A change ranks higher the more the victim's code is about it: the module whose attribute
changed is one the test uses, the logger is the one the code it calls logs to, the variable
is read by the function it calls, the test works with the same kind of state (``caplog`` for
a logger, ``st_mode`` for the umask).  Severity alone put an unrelated test's environment
variable before the logger a victim's missing log line was about.  Pure: the code is read by
:mod:`statesnap.analysis.victimcode`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from statesnap.analysis.victimcode import VictimCode

#: The victim's own code names the key (or uses the module whose attribute it is).
DIRECT = 80.0
#: The code it calls names it.
REACHED = 50.0
#: The victim's own code works with this kind of state.
KIND = 40.0
#: Only the code it calls works with this kind of state.
KIND_REACHED = 15.0
#: A bare attribute name in the code it calls, of another module.
NAME_ONLY = 20.0
#: The same top-level package as a module the victim uses.
PACKAGE = 5.0

#: Words too common to tie a key to code by themselves (``socket.timeout`` is not
#: ``config.timeout()``).
GENERIC = frozenset({
    "timeout", "prec", "rounding", "level", "path", "name", "mode", "value", "state", "flags",
    "size", "count", "enabled", "disabled", "propagate", "handlers", "filters", "cwd", "sys",
    "os", "data", "tests", "test", "src", "lib", "tmp", "build", "config", "settings",
})

#: Words that show code working with one kind of state, per probe (or ``probe:prefix``).
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "logging": ("caplog", "logging", "getLogger", "logger", "log", "records", "record_tuples",
                "handlers", "LogRecord"),
    "env": ("environ", "getenv", "setenv", "delenv"),
    "cwd": ("open", "getcwd", "chdir", "cwd", "read_text", "exists", "listdir", "glob"),
    "files": ("open", "exists", "read_text", "write_text", "listdir", "glob", "unlink",
              "mkdir", "is_file", "is_dir"),
    "modules": ("import_module", "__import__", "modules", "find_spec", "reload"),
    "syspath": ("import_module", "__import__", "find_spec", "path", "reload"),
    "threads": ("Thread", "threading", "active_count", "enumerate", "join"),
    "random": ("random", "randint", "choice", "shuffle", "seed", "sample", "uniform"),
    "warnings": ("warns", "warnings", "recwarn", "filterwarnings", "simplefilter"),
    "process:umask": ("st_mode", "chmod", "umask", "stat"),
    "process:decimal": ("Decimal", "decimal", "getcontext", "localcontext"),
    "process:signal": ("signal", "getsignal", "alarm", "SIGINT", "SIGTERM"),
    "process:socket": ("socket", "getdefaulttimeout", "create_connection", "urlopen"),
    "process:locale": ("locale", "setlocale", "strftime", "getlocale"),
    "process:sys.excepthook": ("excepthook",),
    "process:recursionlimit": ("getrecursionlimit", "recursion"),
}


def words(text: str, terms: Iterable[str]) -> bool:
    """Whether ``text`` names any of ``terms`` as a whole word (``PATH`` is not
    ``PYTHONPATH``)."""
    return any(t and t in text and re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", text)
               for t in terms)


def name_words(text: str, terms: Iterable[str]) -> bool:
    """:func:`words` for a Python name (a module, an attribute): never the part of a file
    path (``mock_functions/test_module_stuff.py`` names a file, not the module
    ``test_module_stuff`` nor an attribute of that name)."""
    return any(t and t in text and re.search(
        rf"(?<![\w/]){re.escape(t)}(?![\w/])(?!\.py\b)", text) for t in terms)


def _quoted(text: str, name: str) -> bool:
    return f'"{name}"' in text or f"'{name}'" in text


def subjects(probe: str, key: str) -> list[str]:
    """The names a key is about, as code would write them."""
    if probe == "attributes":
        module, _, attr = key.partition(":")
        parts = [p for p in attr.split(".") if p and not p.startswith("__")]
        return [module, *parts[:1]]
    if probe == "logging":
        name = key.rsplit(":", 1)[0] if ":" in key else ""
        return [name] if name and name != "logging.disable" else []
    if probe in ("env", "modules"):
        return [key]
    if probe in ("files", "syspath"):
        tail = key.rsplit(":", 1)[-1].rstrip("/")
        return [p for p in tail.split("/")[-2:] if p and p not in GENERIC]
    if probe == "process":
        parts = key.split(".")
        out = [key]
        if len(parts) > 1 and parts[0] not in GENERIC:
            out.append(parts[0])
        if parts[-1] not in GENERIC:
            out.append(parts[-1])
        return list(dict.fromkeys(out))
    tail = key.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return [tail] if len(tail) >= 3 and tail not in GENERIC else []


def kind_words(probe: str, key: str) -> tuple[str, ...]:
    """Words of code that works with the kind of state ``probe:key`` is."""
    out: tuple[str, ...] = KIND_WORDS.get(probe, ())
    for name, extra in KIND_WORDS.items():
        if name.startswith(f"{probe}:") and key.startswith(name.split(":", 1)[1]):
            out += extra
    return out


def connection(probe: str, key: str, code: VictimCode, exc_type: str | None
               ) -> tuple[float, list[str]]:
    """The weight of what connects ``probe:key`` to the victim's code, and why."""
    if not code.code:
        return 0.0, []
    score = 0.0
    reasons: list[str] = []
    kinds = kind_words(probe, key)
    kind_here = words(code.code, kinds)
    if probe == "logging" and not kind_here:
        # A logger's level matters to a test only when it looks at log output.
        return 0.0, []
    names = subjects(probe, key)
    reached = code.reached_text
    if probe == "attributes":
        module = names[0]
        attr = names[1] if len(names) > 1 else ""
        if attr in code.params:
            attr = ""  # the test's fixture of that name, not this attribute
        if code.uses_module(module):
            score += DIRECT
            reasons.append(f"the victim uses {module}")
        if attr and (name_words(code.code, [attr])
                     or name_words(code.reached.get(module, ""), [attr])
                     or f"{module.rsplit('.', 1)[-1]}.{attr}" in reached):
            # Read by the victim, by what it calls in that module, or as ``module.attr``.
            score += REACHED
            reasons.append(f"{attr} is read by the code the victim runs")
        elif attr and name_words(reached, [attr]):
            score += NAME_ONLY
            reasons.append(f"{attr} is named in the code the victim runs")
        if not reasons and code.shares_package(module):
            score += PACKAGE
    elif probe == "logging" or probe == "env" or probe == "modules":
        # Named as a string: getLogger("zooapp"), environ.get("ZOO_MODE"), "m" in sys.modules.
        # A logger named after a module the victim uses (``getLogger(__name__)``) is that
        # module's; the package's logger is not every one of its modules'.
        direct = [n for n in names if _quoted(code.code, n) or n in code.modules]
        if direct:
            score += DIRECT
            reasons.append(f"{direct[0]} is named in the victim's code")
        elif [n for n in names if _quoted(reached, n) or (probe == "env" and words(reached, [n]))]:
            score += REACHED
            reasons.append(f"{names[0]} is named in the code the victim runs")
    elif names:
        if words(code.code, names):
            score += DIRECT
            reasons.append("named in the victim's code")
        elif words(reached, names) or any(_quoted(reached, n) for n in names):
            score += REACHED
            reasons.append("named in the code the victim runs")
    if kind_here:
        score += KIND
        reasons.append(f"the victim's code works with {probe} state")
    elif words(reached, kinds):
        score += KIND_REACHED
    if probe in ("cwd", "files") and exc_type == "FileNotFoundError":
        score += KIND
        reasons.append("the failure is a missing file")
    return score, reasons
