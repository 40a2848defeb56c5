"""With statesnap on, every test gets the same outcome as without it (issue 2, "never break").

One inner suite with every kind of outcome pytest knows, run with and without ``-p statesnap``
under several option sets; the per-phase reports, the outcome counts and the exit code must be
identical.  Runs that might crash the interpreter (``-W error``, the default probe set, the
verifier replaying failures) run in a subprocess.
"""

from __future__ import annotations

import pytest

OUTCOME_SUITE = '''
import os
import socket
import threading
import warnings

import pytest


def test_pass():
    pass


def test_fail():
    assert 1 == 2


def test_skip():
    pytest.skip("skipped inside the test")


@pytest.mark.skip(reason="skipped by mark")
def test_skip_mark():
    pass


@pytest.mark.skipif(True, reason="skipped by condition")
def test_skipif():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="known bug, fixed")
def test_xpass():
    pass


@pytest.mark.xfail(strict=True, reason="must fail")
def test_xpass_strict():
    pass


@pytest.mark.xfail(strict=True, reason="must fail")
def test_xfail_strict():
    assert 0


def test_xfail_imperative():
    pytest.xfail("decided at run time")


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup boom")


def test_setup_error(broken_setup):
    pass


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown boom")


def test_teardown_error(broken_teardown):
    pass


def test_fail_and_teardown_error(broken_teardown):
    assert 0


@pytest.fixture
def skipping_fixture():
    pytest.skip("skipped in a fixture")


def test_skipped_by_fixture(skipping_fixture):
    pass


def test_warns():
    warnings.warn("careful", UserWarning)


def test_deprecated():
    warnings.warn("old api", DeprecationWarning)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n != 2


class TestGrouped:
    def test_method(self):
        assert True

    def test_method_fails(self):
        raise ValueError("in a method")


# Tests that really change global state, so that the probes have work to do.
def test_leaks_env():
    os.environ["OUTCOME_SUITE_LEAK"] = "1"


def test_sees_env():
    assert os.environ.get("OUTCOME_SUITE_LEAK") == "1"


def test_leaks_socket_pipe_and_thread():
    # Raw descriptors, not objects: a socket object collected later would warn
    # (ResourceWarning) into whichever test runs then, even in another in-process run.
    socket.socket().detach()
    os.pipe()
    t = threading.Thread(target=lambda: None, name="outcome-suite-thread")
    t.start()
    t.join()


def test_leaks_module_attribute():
    import json
    json.outcome_suite_marker = True
'''

#: ``(pytest options, statesnap options)`` for the in-process runs (fast); each is run with
#: and without statesnap.  A selection that starts with ``-`` needs the ``=`` form, or pytest's
#: parser takes it for an option of its own.
IN_PROCESS_VARIANTS = [
    pytest.param([], [], id="defaults"),
    pytest.param([], ["--statesnap-probes", "env"], id="only-env"),
    pytest.param([], ["--statesnap-probes", "none"], id="no-probe"),
    pytest.param([], ["--statesnap-probes=-env,-modules"], id="drop-env-modules"),
    pytest.param([], ["--statesnap-probes", "env,threads,fds,cwd,syspath"], id="several"),
    pytest.param(["-p", "no:cacheprovider"], [], id="no-cacheprovider"),
    pytest.param(["-x"], [], id="exitfirst"),
    pytest.param(["--runxfail"], [], id="runxfail"),
]

#: The same for subprocess runs: the crash-prone ones.
SUBPROCESS_VARIANTS = [
    pytest.param([], [], id="defaults"),
    pytest.param(["-W", "error"], [], id="W-error"),
    pytest.param(["-W", "error"], ["--statesnap-probes=-files"], id="W-error-no-files"),
]

#: statesnap options that only make the run faster (no replays of the failing tests).
NO_VERIFY = ["--statesnap-verify-budget", "0"]


def _assert_same(inner, args: list[str], subprocess: bool, extra: list[str]) -> None:
    plain = inner(*args, statesnap=False, subprocess=subprocess)
    snapped = inner(*args, *extra, subprocess=subprocess)
    assert snapped.comparable() == plain.comparable()
    assert snapped.outcomes() == plain.outcomes()
    assert snapped.ret == plain.ret
    # statesnap was really on: it wrote a complete record with a line per test that ran.
    record = snapped.record()
    assert record.footer is not None
    ran = {r["nodeid"] for r in plain.reports()}
    assert {t.nodeid for t in record.tests} == ran


@pytest.mark.parametrize(("args", "options"), IN_PROCESS_VARIANTS)
def test_outcomes_identical_in_process(inner, pytester: pytest.Pytester, args: list[str],
                                       options: list[str]) -> None:
    pytester.makepyfile(test_outcomes_suite=OUTCOME_SUITE)
    _assert_same(inner, args, subprocess=False, extra=[*options, *NO_VERIFY])


@pytest.mark.slow
@pytest.mark.parametrize(("args", "options"), SUBPROCESS_VARIANTS)
def test_outcomes_identical_in_subprocess(inner, pytester: pytest.Pytester, args: list[str],
                                          options: list[str]) -> None:
    pytester.makepyfile(test_outcomes_suite=OUTCOME_SUITE)
    _assert_same(inner, args, subprocess=True, extra=[*options, *NO_VERIFY])


@pytest.mark.slow
def test_outcomes_identical_with_verification(inner, pytester: pytest.Pytester) -> None:
    """Replaying failures at session end (within a small budget) changes no outcome."""
    pytester.makepyfile(test_outcomes_suite=OUTCOME_SUITE)
    _assert_same(inner, ["-W", "error"], subprocess=True,
                 extra=["--statesnap-verify-budget", "5"])


def test_the_suite_covers_every_outcome(inner, pytester: pytest.Pytester) -> None:
    """Guards the comparison above: the inner suite really produces each kind of outcome."""
    pytester.makepyfile(test_outcomes_suite=OUTCOME_SUITE)
    run = inner(*NO_VERIFY)
    counts = run.outcomes()
    for kind in ("passed", "failed", "skipped", "xfailed", "xpassed", "errors", "warnings"):
        assert counts.get(kind, 0) > 0, kind
    # And the record's own outcome per test agrees with pytest's reports.
    by_id = {t.nodeid: t for t in run.record().tests}
    assert by_id["test_outcomes_suite.py::test_pass"].outcome == "passed"
    assert by_id["test_outcomes_suite.py::test_fail"].outcome == "failed"
    assert by_id["test_outcomes_suite.py::test_skip_mark"].outcome == "skipped"
    assert by_id["test_outcomes_suite.py::test_xfail"].outcome == "xfailed"
    assert by_id["test_outcomes_suite.py::test_xpass"].outcome == "xpassed"
    assert by_id["test_outcomes_suite.py::test_xpass_strict"].outcome == "failed"
    assert by_id["test_outcomes_suite.py::test_setup_error"].outcome == "error"
    assert by_id["test_outcomes_suite.py::test_teardown_error"].outcome == "error"
    assert by_id["test_outcomes_suite.py::test_teardown_error"].phases == {
        "setup": "passed", "call": "passed", "teardown": "failed"}
    assert by_id["test_outcomes_suite.py::test_fail_and_teardown_error"].outcome == "failed"


def test_under_W_error_statesnap_emits_no_warning(inner, pytester: pytest.Pytester) -> None:
    """A warning from statesnap itself would turn into a failure under ``-W error``."""
    pytester.makepyfile(test_outcomes_suite=OUTCOME_SUITE)
    run = inner("-W", "error", "-W", "ignore::DeprecationWarning", *NO_VERIFY)
    failing = {r["nodeid"] for r in run.reports() if r["outcome"] == "failed"}
    assert "test_outcomes_suite.py::test_pass" not in failing
    assert "test_outcomes_suite.py::test_leaks_env" not in failing
    assert "test_outcomes_suite.py::test_warns" in failing  # the user's own warning
    assert not any("statesnap" in (r["crash"] or "") for r in run.reports())
