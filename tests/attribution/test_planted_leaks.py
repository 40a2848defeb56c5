"""Planted real leaks inside real libraries stay listed above LOW and are proven with their key.

Issue 29's accuracy check: the rules that quiet a suite's noise (analysis/resets.py, the
attributes probe's memo, singleton and cache rules) must not hide a change a maintainer would
act on.  Each suite copies the installed library into the project, as the library's own source
tree is when it runs its own suite, so the ``attributes`` probe watches it; a test plants the
leak, a later test fails on it, and the session's replays prove the polluter and the key:

- loguru: a handler added to the global logger after the autouse fixture's fresh core;
- structlog: the configuration edited after the autouse ``reset_defaults()``;
- arrow: a locale registered in ``arrow.locales._locale_map`` by subclassing ``Locale``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_autouse_resets import LOGURU, STRUCTLOG, _with_library

from suite_runs import run_suite, write_suite

ARROW = {
    "a_unit/__init__.py": "",
    "a_unit/conftest.py": """
        import arrow
        import pytest


        @pytest.fixture(scope="class")
        def time_2013_01_01(request):
            # arrow's own class fixtures set the class's attributes (tests/conftest.py).
            request.cls.now = arrow.Arrow.utcnow()
            request.cls.arrow = arrow.Arrow(2013, 1, 1)
        """,
    "a_unit/test_locales.py": """
        import arrow
        import pytest
        from arrow import locales


        @pytest.mark.usefixtures("time_2013_01_01")
        class TestHumanize:
            def test_english(self):
                assert self.arrow.shift(days=-1).humanize(self.arrow) == "a day ago"

            def test_french(self):
                assert "jour" in self.arrow.shift(days=-1).humanize(self.arrow, locale="fr")


        def test_adds_a_locale():
            class KlingonLocale(locales.EnglishLocale):
                names = ["tlh"]

            assert locales.get_locale("tlh").names == ["tlh"]


        def test_reads_locales():
            assert locales.get_locale("en_us")
        """,
    "z_other/__init__.py": "",
    "z_other/test_unknown.py": """
        import pytest
        from arrow import locales


        def test_unknown_locale_rejected():
            with pytest.raises(ValueError):
                locales.get_locale("tlh")
        """,
}


def _listed(json_path: Path) -> dict[str, list[str]]:
    """Per test listed above LOW (last part of its id): its keys above LOW."""
    data: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    return {t["nodeid"].rsplit("::", 1)[1]: [x["key"] for x in t["leaks"]
                                              if x["severity"] != "low"]
            for t in data["tests"] if t["leaked"]}


@pytest.mark.parametrize(("library", "files", "polluter", "victim", "key"), [
    ("loguru", LOGURU, "test_adds_the_last_sink", "test_no_trace_handler", "loguru:logger"),
    ("structlog", STRUCTLOG, "test_configures_last", "test_unconfigured",
     "structlog._config:_CONFIG"),
    ("arrow", ARROW, "test_adds_a_locale", "test_unknown_locale_rejected",
     "arrow.locales:_locale_map"),
])
def test_planted_leak_listed_and_proven_with_its_key(
        tmp_path: Path, library: str, files: dict[str, str], polluter: str, victim: str,
        key: str) -> None:
    root = write_suite(tmp_path / "suite", files)
    _with_library(root, library)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    listed = _listed(run.json_path)
    # Only the planted leak: the resets, the class fixture setting request.cls, are quiet.
    assert list(listed) == [polluter], (listed, run.output[-3000:])
    assert key in listed[polluter], listed
    finding = run.finding(victim)
    assert finding["status"] == "verified", (finding, run.output[-3000:])
    assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == [polluter]
    # The key-level proof: restoring this key alone heals the victim.
    assert finding["key"] == key, finding
    assert f"attributes:{key}" in finding["proven_keys"], finding
    assert "[VERIFIED]" in run.output and key in run.output, run.output[-3000:]
