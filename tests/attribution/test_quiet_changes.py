"""Changes no later test can act on are listed at LOW (analysis/quiet.py); a registry that
keeps a test's class stays listed.  Real pytest runs of a small project whose module holds the
shapes humanize, jinja2 and dateutil have: a memo of translation catalogues loaded per locale,
a set of code objects, a lazily made singleton kept in a list, a thread-local reset to None,
and marshmallow's: a defaultdict of hooks gaining empty lists when looked up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from suite_runs import run_suite, write_suite

LIBRARY = '''
    import collections
    import gettext
    import re
    import threading

    _TRANSLATIONS = {None: gettext.NullTranslations()}
    _PATTERNS = {}
    internal_code = set()
    _CLASS_ZONE_INSTANCE = []
    _CURRENT = threading.local()
    REGISTRY = {}
    _hooks = collections.defaultdict(list)


    class Zones:
        pass


    def activate(locale):
        if locale not in _TRANSLATIONS:
            _TRANSLATIONS[locale] = gettext.GNUTranslations()
        _CURRENT.locale = locale


    def deactivate():
        _CURRENT.locale = None


    def pattern(text):
        if text not in _PATTERNS:
            _PATTERNS[text] = re.compile(text)
        return _PATTERNS[text]


    def internalcode(f):
        internal_code.add(f.__code__)
        return f


    def zones():
        if not _CLASS_ZONE_INSTANCE:
            _CLASS_ZONE_INSTANCE.append(Zones())
        return _CLASS_ZONE_INSTANCE[0]


    def register(cls):
        REGISTRY[cls.__name__] = cls
        return cls
'''

TESTS = '''
    import lib


    def test_translations():
        lib.activate("fr_FR")
        lib.deactivate()


    def test_more_translations():
        lib.activate("de_DE")
        lib.deactivate()


    def test_patterns():
        assert lib.pattern("a+").match("aa")


    def test_compiles_a_stub():
        exec("def stub():\\n    pass\\nlib.internalcode(stub)", {"lib": lib})


    def test_zones():
        assert lib.zones() is lib.zones()


    def test_looks_hooks_up():
        assert lib._hooks["pre_load"] == []


    def test_registers_a_class():
        @lib.register
        class Mine:
            pass
'''


def _listed(json_path: Path) -> dict[str, list[str]]:
    data: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    return {t["nodeid"].rsplit("::", 1)[1]: [x["key"] for x in t["leaks"]
                                              if x["severity"] != "low"]
            for t in data["tests"] if t["leaked"]}


def _recorded(json_path: Path) -> dict[str, list[str]]:
    data: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    return {t["nodeid"].rsplit("::", 1)[1]: [x["key"] for x in t["leaks"]]
            for t in data["tests"] if t["leaks"]}


def test_memos_registries_of_code_and_lazy_singletons_are_not_listed(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"lib.py": LIBRARY, "test_lib.py": TESTS})
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 0, run.output[-3000:]
    # Only the registry that keeps a test's class is a change a maintainer acts on.
    assert _listed(run.json_path) == {"test_registers_a_class": ["lib:REGISTRY"]}, \
        run.output[-3000:]
    # The others are still leaks, at LOW: listed in the summary, kept for attribution.
    recorded = _recorded(run.json_path)
    assert "lib:_TRANSLATIONS" in recorded["test_translations"], recorded
    assert "lib:_CURRENT" in recorded["test_translations"], recorded
    assert "lib:_TRANSLATIONS" in recorded["test_more_translations"], recorded
    assert "lib:_PATTERNS" in recorded["test_patterns"], recorded
    assert "lib:internal_code" in recorded["test_compiles_a_stub"], recorded
    assert "lib:_CLASS_ZONE_INSTANCE" in recorded["test_zones"], recorded
    assert "lib:_hooks" in recorded["test_looks_hooks_up"], recorded


def test_the_github_summary_counts_what_is_listed(tmp_path: Path) -> None:
    """The job summary's leak count is the listed one: the registry only, not the memos."""
    root = write_suite(tmp_path / "suite", {"lib.py": LIBRARY, "test_lib.py": TESTS})
    page = tmp_path / "step_summary.md"
    run = run_suite(root, tmp_path / "out", "-q",
                    env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(page)})
    assert run.proc.returncode == 0, run.output[-3000:]
    assert "**Leaks:** 1 test(s) leaked state (`attributes` 1)." in \
        page.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")


def test_a_stale_memo_value_still_makes_its_test_the_suspect(tmp_path: Path) -> None:
    """Listed at LOW, never hidden from attribution: a victim that fails on a memo entry an
    earlier test left is still traced to that test and proven."""
    tests = TESTS + '''

    def test_no_french_loaded():
        assert "fr_FR" not in lib._TRANSLATIONS
'''
    root = write_suite(tmp_path / "suite", {"lib.py": LIBRARY, "test_lib.py": tests})
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    finding = run.finding("test_no_french_loaded")
    assert finding["status"] == "verified", (finding, run.output[-3000:])
    assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == ["test_translations"]
