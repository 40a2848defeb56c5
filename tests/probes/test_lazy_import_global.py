"""A module global set aside as ``None`` and bound by a lazy import on first use is LOW.

Met in python-dateutil: ``dateutil.rrule`` starts with ``easter = None`` and ``parser =
None`` and imports them on first use (``global easter; from dateutil import easter``), so
the first test to use them was listed as leaking at HIGH (``None → module dateutil.easter``).
A stub module (not the one ``sys.modules`` holds) or a module bound under another name keeps
its severity: a later test would meet something else than a fresh import gives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE = {
    "calendarlib/__init__.py": "",
    "calendarlib/holidays.py": "EASTER = 'April'\n",
    "calendarlib/rules.py": '''
holidays = None
formatter = None


def easter_month():
    global holidays
    if holidays is None:
        from calendarlib import holidays
    return holidays.EASTER
''',
}

TESTS = '''
import json
import types

from calendarlib import rules


def test_a_imports_lazily():
    assert rules.easter_month() == "April"


def test_b_binds_a_stub():
    rules.formatter = types.ModuleType("formatter")


def test_c_binds_another_module():
    rules.formatter = json
'''


def test_a_lazy_import_into_a_none_global_is_low(tmp_path: Path) -> None:
    for name, text in {**PACKAGE, "test_rules.py": TESTS}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"]
    plain = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    proc = subprocess.run([*cmd, "-p", "statesnap", "--statesnap-json=out.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == plain.returncode == 0, out
    assert plain.stdout.splitlines()[-1].split(" in ")[0] in out  # the same summary line
    data = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    tests = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    lazy = {x["key"]: x["severity"] for x in tests["test_a_imports_lazily"]["leaks"]}
    assert lazy.get("calendarlib.rules:holidays") == "low", lazy
    assert not tests["test_a_imports_lazily"]["leaked"]
    for name in ("test_b_binds_a_stub", "test_c_binds_another_module"):
        leaks = {x["key"]: x["severity"] for x in tests[name]["leaks"]}
        assert leaks.get("calendarlib.rules:formatter") == "high", (name, leaks)
        assert tests[name]["leaked"]
