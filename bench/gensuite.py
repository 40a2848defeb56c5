"""A generated order-dependent suite: 50 tests, 20 victims over 20 kinds of state, 1 real bug.

Every polluter sits in ``tests/test_a_setup.py`` and runs before every victim, so each victim
sees twenty dirty keys when it runs, most of them not its own: the case where ranking by
severity alone replays unrelated environment changes first.  The victims are spread over
three files and reach the state through the project's package ``zooapp`` as real code would
(a logger named after the package, a module-level dict cache filled in place, a setting read
from the environment...), not by naming the key in the assertion.

    from gensuite import write_suite; write_suite(Path("suite"))

Used by ``bench/bench_proofs.py`` and by ``tests/verify/test_ranking_runs.py``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Kind:
    """One kind of state: the polluter's body, the victim's body, the key it should name."""

    name: str
    polluter: str
    victim: str
    #: The victim's file: ``b`` (behaviour), ``c`` (config), ``d`` (data).
    file: str
    #: ``probe:key`` the key-level proof should name (a prefix is enough for file keys).
    key: str


KINDS: tuple[Kind, ...] = (
    Kind("logger_level", 'logging.getLogger("zooapp").setLevel(logging.ERROR)',
         'with caplog.at_level(logging.INFO):\n    zoo.visit("lion")\n'
         'assert "visit lion" in caplog.text', "b", "logging:zooapp:level"),
    Kind("cache_fill", 'cache.price("lion")\ncache._PRICES["lion"] = 0',
         'assert cache.price("lion") == 30', "d", "attributes:zooapp.cache:_PRICES"),
    Kind("env_mode", 'os.environ["ZOO_MODE"] = "fast"',
         'assert config.mode() == "safe"', "c", "env:ZOO_MODE"),
    Kind("env_removed", 'os.environ.pop("ZOO_REGION", None)\n'
         'os.environ["ZOO_TIMEOUT"] = "1"',
         'assert config.timeout() == 30', "c", "env:ZOO_TIMEOUT"),
    Kind("cwd", 'os.chdir(tempfile.mkdtemp())',
         'assert data.read_animals() == ["lion", "zebra"]', "d", "cwd:cwd"),
    Kind("setting_rebound", 'settings.DEBUG = True',
         'assert zoo.banner() == "Zoo"', "b", "attributes:zooapp.settings:DEBUG"),
    Kind("list_append", 'registry.PLUGINS.append("stale")',
         'assert registry.plugin_names() == []', "b", "attributes:zooapp.registry:PLUGINS"),
    Kind("set_add", 'registry.SEEN.add("lion")',
         'assert registry.first_visit("lion") is True', "b",
         "attributes:zooapp.registry:SEEN"),
    Kind("class_attr", 'models.Animal.sound = "moo"',
         'assert models.Animal().speak() == "..."', "b",
         "attributes:zooapp.models:Animal.sound"),
    Kind("counter", 'counter.COUNT += 5',
         'assert counter.next_id() == 1', "d", "attributes:zooapp.counter:COUNT"),
    Kind("logger_propagate", 'logging.getLogger("zoo_audit").propagate = False',
         'seen = []\nroot = logging.getLogger()\nh = logging.Handler()\nh.emit = seen.append\n'
         'root.addHandler(h)\ntry:\n    audit.record("feed")\nfinally:\n    root.removeHandler(h)\n'
         'assert [r.getMessage() for r in seen] == ["audit feed"]', "c",
         "logging:zoo_audit:propagate"),
    Kind("logging_disable", 'logging.disable(logging.ERROR)',
         'seen = []\nh = logging.Handler()\nh.emit = seen.append\nzoo.log.addHandler(h)\n'
         'try:\n    zoo.warn_closing()\nfinally:\n    zoo.log.removeHandler(h)\n'
         'assert [r.getMessage() for r in seen] == ["closing soon"]', "d",
         "logging:logging.disable"),
    Kind("umask", 'os.umask(0o077)',
         'p = tmp_path / "out.txt"\ndata.write_report(p)\n'
         'assert p.stat().st_mode & 0o777 == 0o644', "d", "process:umask"),
    Kind("decimal", 'decimal.getcontext().prec = 3',
         'assert str(pricing.split_bill(100, 3)) == "33.33333333333333333333333333"', "c",
         "process:decimal.prec"),
    Kind("signal", 'signal.signal(signal.SIGUSR1, lambda *a: None)',
         'assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL', "c",
         "process:signal.SIGUSR1"),
    Kind("socket_timeout", 'socket.setdefaulttimeout(0.5)',
         'assert net.connect_timeout() is None', "c", "process:socket.timeout"),
    Kind("syspath", 'sys.path.insert(0, str(Path(__file__).parent / "vendor"))',
         'assert plugins.optional_backend() == "builtin"', "b", "syspath:"),
    Kind("sysmodules", 'sys.modules["zoo_fastjson"] = types.ModuleType("zoo_fastjson")',
         'assert formats.json_backend() == "json"', "d", "modules:zoo_fastjson"),
    Kind("file_left", '(ROOT / "build").mkdir(exist_ok=True)\n'
         '(ROOT / "build" / "lock").write_text("x")',
         'assert data.lock_free()', "b", "files:build"),
    Kind("excepthook", 'sys.excepthook = lambda *a: None',
         'assert hooks.hook_installed() is False', "c", "process:sys.excepthook"),
)

PACKAGE = {
    "__init__.py": '"""The zoo app."""\n',
    "zoo.py": '''
        import logging

        from zooapp import settings

        log = logging.getLogger("zooapp")


        def visit(animal):
            log.info("visit %s", animal)


        def warn_closing():
            log.error("closing soon")


        def banner():
            return "Zoo (debug)" if settings.DEBUG else "Zoo"
        ''',
    "cache.py": '''
        _PRICES = {}


        def price(animal):
            if animal not in _PRICES:
                _PRICES[animal] = 10 * len(animal) - 10
            return _PRICES[animal]
        ''',
    "config.py": '''
        import os


        def mode():
            return os.environ.get("ZOO_MODE", "safe")


        def timeout():
            return int(os.environ.get("ZOO_TIMEOUT", "30"))
        ''',
    "data.py": '''
        import os
        from pathlib import Path

        ROOT = Path(__file__).resolve().parent.parent


        def read_animals():
            with open("data/animals.txt") as f:
                return f.read().split()


        def write_report(path):
            path.write_text("report")


        def lock_free():
            return not (ROOT / "build" / "lock").exists()
        ''',
    "settings.py": 'DEBUG = False\n',
    "registry.py": '''
        PLUGINS = []
        SEEN = set()


        def plugin_names():
            return list(PLUGINS)


        def first_visit(animal):
            new = animal not in SEEN
            SEEN.add(animal)
            return new
        ''',
    "models.py": '''
        class Animal:
            sound = "..."

            def speak(self):
                return self.sound
        ''',
    "counter.py": '''
        COUNT = 0


        def next_id():
            return COUNT + 1
        ''',
    "audit.py": '''
        import logging

        log = logging.getLogger("zoo_audit")


        def record(event):
            log.warning("audit %s", event)
        ''',
    "pricing.py": '''
        import decimal


        def split_bill(total, people):
            return decimal.Decimal(total) / decimal.Decimal(people)
        ''',
    "net.py": '''
        import socket


        def connect_timeout():
            return socket.getdefaulttimeout()
        ''',
    "plugins.py": '''
        import importlib.util


        def optional_backend():
            return "vendored" if importlib.util.find_spec("zoo_vendored") else "builtin"
        ''',
    "formats.py": '''
        import sys


        def json_backend():
            return "fastjson" if "zoo_fastjson" in sys.modules else "json"
        ''',
    "hooks.py": '''
        import sys


        def hook_installed():
            return sys.excepthook is not sys.__excepthook__
        ''',
}

HEAD = '''\
import decimal
import logging
import os
import signal
import socket
import sys
import tempfile
import types
from pathlib import Path

from zooapp import (audit, cache, config, counter, data, formats, hooks, models, net,
                    plugins, pricing, registry, settings, zoo)

ROOT = Path(__file__).resolve().parent.parent
'''

CLEAN = ("assert 1 + 1 == 2", "assert sorted([3, 1]) == [1, 3]", "assert 'zoo'.upper() == 'ZOO'",
         "assert len('lion') == 4", "assert max(2, 5) == 5", "assert abs(-3) == 3",
         "assert 'a,b'.split(',') == ['a', 'b']", "assert round(2.5) == 2",
         "assert bool([]) is False")


def _body(code: str) -> str:
    return textwrap.indent(code, "    ")


def write_suite(root: Path, kinds: tuple[Kind, ...] = KINDS) -> Path:
    """Write the suite under ``root`` (created); returns ``root``.  ``kinds``: a part of
    :data:`KINDS` for a smaller suite (every polluter of them still runs before every victim).
    """
    pkg = root / "zooapp"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in PACKAGE.items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "animals.txt").write_text("lion zebra\n", encoding="utf-8")
    tests = root / "tests"
    (tests / "vendor").mkdir(parents=True, exist_ok=True)
    (tests / "vendor" / "zoo_vendored.py").write_text("VERSION = 1\n", encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\npythonpath = .\n"
                                     "addopts = -p no:randomly -p no:cacheprovider\n",
                                     encoding="utf-8")
    (root / "conftest.py").write_text("", encoding="utf-8")
    polluters = [HEAD]
    for i, kind in enumerate(kinds):
        polluters.append(f"\n\ndef test_setup_{i:02d}_{kind.name}():\n{_body(kind.polluter)}\n")
        if i < len(CLEAN):
            polluters.append(f"\n\ndef test_plain_{i:02d}():\n{_body(CLEAN[i])}\n")
    (tests / "test_a_setup.py").write_text("".join(polluters), encoding="utf-8")
    by_file: dict[str, list[str]] = {"b": [HEAD], "c": [HEAD], "d": [HEAD]}
    for kind in kinds:
        args = ", ".join(a for a in ("caplog", "tmp_path") if a in kind.victim)
        by_file[kind.file].append(f"\n\ndef test_{kind.name}({args}):\n"
                                  f"{_body(kind.victim)}\n")
    # The genuine bug: fails alone as in the suite.
    by_file["d"].append('\n\ndef test_genuine_bug():\n    assert cache.price("ox") == 30\n')
    for f, parts in by_file.items():
        (tests / f"test_{f}_victims.py").write_text("".join(parts), encoding="utf-8")
    return root


#: Victim node id -> the key the proof should name (a prefix for files and sys.path).
def expected_keys() -> dict[str, str]:
    return {f"tests/test_{k.file}_victims.py::test_{k.name}": k.key for k in KINDS}


GENUINE = "tests/test_d_victims.py::test_genuine_bug"


if __name__ == "__main__":
    import sys as _sys

    print(write_suite(Path(_sys.argv[1])))
