"""statesnap keeps no module of the user's alive past the session.

The session-end shield (``plugin/cleanroom``) copies ``sys.modules`` before the first test.
Kept after the session, the copy made those modules outlive the interpreter's own teardown of
them, and a file a module still held (structlog's ``WRITE_LOCKS``, keyed by the files its
loggers write to) warned ``sys:1: ResourceWarning: unclosed file`` on stderr after pytest's
summary, once per file, where plain pytest printed nothing.  Checked here by a weak
reference to a project module, as pytest's last ``pytest_unconfigure`` sees it once
``sys.modules`` lets go of it.
"""

from __future__ import annotations

import pytest

HOLDER = """
LOCKS = {}
"""

CONFTEST = """
import gc
import sys
import weakref

import pytest

import holder  # imported before the session starts, as a conftest's imports are

REF = weakref.ref(holder)
del holder


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    sys.modules.pop("holder", None)
    gc.collect()
    with open("alive.txt", "w") as f:
        f.write(str(REF() is not None))
"""

TESTS = """
def test_uses_it(tmp_path):
    import holder

    holder.LOCKS["x"] = 1
"""


@pytest.mark.parametrize("statesnap", [False, True], ids=["plain", "statesnap"])
def test_no_module_outlives_the_session(pytester: pytest.Pytester, statesnap: bool) -> None:
    pytester.makepyfile(holder=HOLDER, conftest=CONFTEST, test_it=TESTS)
    args = ["-p", "statesnap"] if statesnap else []
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args)
    result.assert_outcomes(passed=1)
    assert (pytester.path / "alive.txt").read_text() == "False"
