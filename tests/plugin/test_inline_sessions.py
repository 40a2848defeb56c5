"""Two statesnap sessions in one process: pytester's in-process ``runpytest``, run twice.

pytester takes out of ``sys.modules`` every module an inner session imported, but a package
the outer process had imported before keeps those modules bound as its attributes.  A plugin
author's suite that imports one of statesnap's modules (here ``statesnap.plugin.options``)
and runs ``-p statesnap`` inline twice met an INTERNALERROR in the second session: its
``from statesnap.plugin import core`` found the first session's core by attribute, while its
features imported a new ``statesnap.plugin.run``, so they keyed the run state differently.

The outer suite runs in a subprocess, so that what it has imported is known whatever this
session imported before.
"""

from __future__ import annotations

import pytest

OUTER = '''
import os
import sys

import statesnap.plugin.options  # what a plugin's conftest may do  # noqa: F401

pytest_plugins = ["pytester"]

SUITE = """
import os

def test_leaks_flag():
    os.environ["INLINE_FLAG"] = "1"

def test_victim():
    assert "INLINE_FLAG" not in os.environ
"""


def _session(pytester, n):
    saved = dict(os.environ)
    try:
        result = pytester.runpytest(
            "-p", "statesnap", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            "--statesnap-record", str(pytester.path / f"record-{n}.jsonl"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text
    assert "Traceback" not in text.split("= FAILURES =")[0], text
    assert result.ret == 1, text
    result.assert_outcomes(passed=1, failed=1)
    lines = result.outlines
    start = lines.index("1 finding(s):")
    # The finding as printed, up to its reproduction command.
    return lines[start:start + 4]


def test_two_sessions(pytester):
    pytester.makepyfile(test_suite=SUITE)
    first = _session(pytester, 1)
    second = _session(pytester, 2)
    assert first[1].strip() == "[VERIFIED] test_suite.py::test_victim", first
    assert second == first
'''


def test_a_second_inline_session_is_the_same_as_the_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_outer=OUTER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                           "test_outer.py", timeout=300)
    result.assert_outcomes(passed=1)
