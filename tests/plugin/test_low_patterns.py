"""Changes a maintainer would not act on, rated LOW when that is all they are (issue 29):
a class-scoped fixture setting its own class's attributes through ``request.cls``, a lazy
singleton made on first use, and a memo making a lock per key.  What follows them -- a test
changing the class attribute, the singleton rebound to another instance, a registry keeping a
test's class -- keeps its severity.
"""

from __future__ import annotations

from pathlib import Path

from suite_runs import run_suite, write_suite

FILES = {
    "app.py": """
        import threading

        _default_instance = None
        WRITE_LOCKS = {}
        REGISTRY = {}


        def lock_for(name):
            return WRITE_LOCKS.setdefault(name, threading.Lock())


        class Engine:
            def __init__(self):
                self.rows = []


        def engine():
            global _default_instance
            if _default_instance is None:
                _default_instance = Engine()
            return _default_instance
        """,
    "test_cls.py": """
        import pytest

        import app


        @pytest.fixture(scope="class")
        def shared(request):
            request.cls.conn = {"open": True}   # its own class's attribute: LOW


        @pytest.mark.usefixtures("shared")
        class TestShared:
            def test_one(self):
                assert self.conn["open"]

            def test_two(self):
                assert self.conn["open"]


        @pytest.mark.usefixtures("shared")
        class TestChanged:
            def test_changes_it(self):
                type(self).conn = {"open": False}   # after the set-up: the test's, HIGH


        def test_first_use():
            assert app.engine().rows == []      # the singleton made: LOW


        def test_rebinds():
            app._default_instance = app.Engine()   # another instance: HIGH


        def test_lock_memo():
            app.lock_for("out.log")             # a lock made for its key: LOW


        def test_registers():
            class Thing:
                pass

            app.REGISTRY["thing"] = Thing       # a test's class kept: HIGH
        """,
}


def test_request_cls_and_lazy_singleton(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    leaks = run.leak_severities()
    assert ("test_cls:TestShared.conn", "low") in leaks["test_one"], leaks
    assert ("app:_default_instance", "low") in leaks["test_first_use"], leaks
    assert ("app:_default_instance", "high") in leaks["test_rebinds"], leaks
    assert ("test_cls:TestChanged.conn", "high") in leaks["test_changes_it"], leaks
    above_low = {name for name, keys in leaks.items() if any(s != "low" for _, s in keys)}
    assert ("app:WRITE_LOCKS", "low") in leaks["test_lock_memo"], leaks
    assert ("app:REGISTRY", "high") in leaks["test_registers"], leaks
    assert above_low == {"test_rebinds", "test_changes_it", "test_registers"}, leaks
