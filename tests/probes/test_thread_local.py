"""A module-level ``threading.local()`` holds state like any module attribute (humanize keeps
its active locale in ``i18n._CURRENT``): a test that sets an attribute on it and never undoes
it leaks, and the victim's verdict names that key, proven by restoring it.

Before, the ``attributes`` probe saw no ``__dict__`` on a thread-local object: no leak was
recorded, and the verdict fell on whatever else the polluter changed (humanize: its
translations cache, which heals one victim by accident and not the others).  Real pytest
runs; the printed reproduction is run under plain pytest.
"""

from __future__ import annotations

import json
from pathlib import Path

from suite_runs import run_shell, run_suite, write_suite

SUITE = {
    "i18n.py": '''
        import threading

        _CURRENT = threading.local()
        _LOADED = {None: "en"}

        def activate(locale):
            _LOADED.setdefault(locale, locale)
            _CURRENT.locale = locale

        def language():
            return _LOADED.get(getattr(_CURRENT, "locale", None), "en")
        ''',
    "test_i18n.py": '''
        import i18n

        def test_french():
            i18n.activate("fr")
            assert i18n.language() == "fr"

        def test_default_is_english():
            assert i18n.language() == "en"
        ''',
}


def test_a_thread_local_attribute_is_a_leak_and_the_proven_key(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    out = run.proc.stdout
    assert ("test_i18n.py::test_french: i18n:_CURRENT: <_local {}>" in out
            and "→ <_local {'locale': 'fr'}>" in out), out[-3000:]

    finding = run.finding("test_default_is_english")
    assert finding["status"] == "verified", finding
    assert finding["polluters"] == ["test_i18n.py::test_french"]
    assert finding["key"] == "i18n:_CURRENT", finding
    assert finding["proven_keys"] == ["attributes:i18n:_CURRENT"], finding
    assert "state: attributes:i18n:_CURRENT:" in out
    assert "(restoring it makes the victim pass)" in out
    # The hint names the object as a test module can reach it, not by its bare name.
    assert "fix: change i18n._CURRENT only through monkeypatch (monkeypatch.setattr(" \
        "i18n._CURRENT, 'name', ...))" in out, out[-3000:]

    repro = run_shell(finding["repro"], cwd=root)
    assert "1 failed, 1 passed" in repro.stdout, repro.stdout[-2000:]


LAZY_SUITE = {
    "ctxstack.py": '''
        import threading

        _local = threading.local()

        def invoke(value):
            # click's push_context/pop_context: the stack is made on first use, left empty.
            _local.__dict__.setdefault("stack", []).append(value)
            try:
                return value * 2
            finally:
                _local.stack.pop()

        def leave_pushed(value):
            _local.__dict__.setdefault("pushed", []).append(value)
        ''',
    "test_ctx.py": '''
        import ctxstack

        def test_first_invocation():
            assert ctxstack.invoke(2) == 4

        def test_later_invocation():
            assert ctxstack.invoke(3) == 6

        def test_leaves_one_pushed():
            ctxstack.leave_pushed(1)
        ''',
}


def _leaks(summary: Path) -> dict[str, list[tuple[str, str]]]:
    data = json.loads(summary.read_text(encoding="utf-8"))
    return {t["nodeid"].rsplit("::", 1)[1]: [(f"{c['probe']}:{c['key']}", c["severity"])
                                             for c in t["leaks"]]
            for t in data["tests"] if t["leaks"]}


def test_an_empty_container_made_on_first_use_is_low_a_filled_one_stays_high(
        tmp_path: Path) -> None:
    """click makes its context stack on the first invocation and leaves it empty: that is no
    state a later test finds changed (LOW, still recorded), where a value left in it is."""
    root = write_suite(tmp_path / "suite", LAZY_SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 0, run.output[-3000:]
    leaks = _leaks(run.json_path)
    assert leaks.get("test_first_invocation") == [("attributes:ctxstack:_local", "low")], leaks
    assert leaks.get("test_leaves_one_pushed") == [("attributes:ctxstack:_local", "high")], leaks
    assert "test_later_invocation" not in leaks
