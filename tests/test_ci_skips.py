"""The CI guard (tests/ci_skips.py) in a real inner pytest: under CI=true a test that needs a
tool CI installs fails where it would skip; elsewhere, and for other skips, nothing changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GUARD = Path(__file__).resolve().parent / "ci_skips.py"
SUITE = '''
import pytest

@pytest.mark.browser
@pytest.mark.skipif(True, reason="chromium missing")
def test_browser():
    pass

@pytest.mark.needs_numpy
def test_numpy():
    pytest.importorskip("no_such_numpy_module")

def test_other_skip():
    pytest.skip("not this platform")

@pytest.mark.needs_gcc
@pytest.mark.xfail(reason="known", run=False)
def test_xfail_stays():
    pass
'''


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         ci: str | None) -> pytest.RunResult:
    pytester.makepyfile(test_suite=SUITE)
    # The subprocess finds the guard through PYTHONPATH, ahead of what is there already.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(GUARD.parent), os.environ.get("PYTHONPATH", "")) if p))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    return pytester.runpytest_subprocess("-p", "ci_skips", "-p", "no:randomly", "-rA")


def test_under_ci_the_needed_tools_fail_loudly(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, "true")
    # A skip in setup (skipif) becomes a setup error, one in the call a failure.
    result.assert_outcomes(failed=1, errors=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines([
        "*CI=true: this test must run on CI, not skip; install `make chromium`*",
        "*CI=true: this test must run on CI, not skip; install the test extra*",
    ])
    assert "chromium missing" in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_without_ci_they_skip(pytester: pytest.Pytester,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    for ci in (None, "false"):
        result = _run(pytester, monkeypatch, ci)
        result.assert_outcomes(skipped=3, xfailed=1)
        assert result.ret == pytest.ExitCode.OK
