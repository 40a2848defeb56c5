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


SUBCLASS_SUITE = {
    "session.py": '''
        import threading

        class Context(threading.local):
            # The common form: defaults given in __init__, run once per thread.
            def __init__(self):
                self.user = None
                self.roles = []

        CONTEXT = Context()

        def login(user, *roles):
            CONTEXT.user = user
            CONTEXT.roles.extend(roles)

        def current_user():
            return CONTEXT.user
        ''',
    "test_session.py": '''
        import session

        def test_admin_logs_in():
            session.login("admin", "superuser")
            assert session.current_user() == "admin"

        def test_nobody_is_logged_in():
            assert session.current_user() is None
        ''',
}


def test_a_subclass_of_threading_local_is_watched_like_a_plain_one(tmp_path: Path) -> None:
    """``class Context(threading.local)`` with defaults in ``__init__``: the attribute a test
    left set is its leak (HIGH), the victim's verdict names the key, proven by restoring it."""
    root = write_suite(tmp_path / "suite", SUBCLASS_SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    out = run.proc.stdout
    # The fingerprints are longer than the line: what changed is shown (output/delta.py).
    assert ("test_session.py::test_admin_logs_in: session:CONTEXT: "
            "~'user': None → 'admin'; ~'roles': [] → ['superuser']" in out), out[-3000:]
    assert _leaks(run.json_path) == {
        "test_admin_logs_in": [("attributes:session:CONTEXT", "high")]}
    finding = run.finding("test_nobody_is_logged_in")
    assert finding["status"] == "verified", finding
    assert finding["polluters"] == ["test_session.py::test_admin_logs_in"]
    assert finding["proven_keys"] == ["attributes:session:CONTEXT"], finding
    assert "(restoring it makes the victim pass)" in out
    repro = run_shell(finding["repro"], cwd=root)
    assert "1 failed, 1 passed" in repro.stdout, repro.stdout[-2000:]


OTHER_THREAD_SUITE = {
    "worker.py": '''
        import threading

        INITS = []

        class Context(threading.local):
            def __init__(self):
                INITS.append(threading.current_thread().name)
                self.user = None

        # Made in another thread: this (the tests') thread has no attributes of it yet, and
        # the first look at them from here runs __init__.
        _made = []
        _t = threading.Thread(target=lambda: _made.append(Context()), name="maker")
        _t.start()
        _t.join()
        CONTEXT = _made[0]
        ''',
    "test_worker.py": '''
        import worker

        def test_nothing_looked_at_it_from_here():
            assert worker.INITS == ["maker"]

        def test_first_look_runs_init():
            assert worker.CONTEXT.user is None
            assert worker.INITS == ["maker", "MainThread"]
        ''',
}


def test_a_thread_local_this_thread_never_touched_runs_no_code(tmp_path: Path) -> None:
    """Reading a ``threading.local`` subclass's attributes in a thread that has none yet runs
    its ``__init__`` there: statesnap does not (the project's code runs when the project's
    code asks, not at a snapshot), so both tests pass as under plain pytest."""
    root = write_suite(tmp_path / "suite", OTHER_THREAD_SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 0, run.output[-3000:]
    assert "2 passed" in run.proc.stdout, run.output[-3000:]
