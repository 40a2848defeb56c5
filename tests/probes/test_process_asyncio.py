"""``import asyncio`` alone is no leak above LOW; a loop left set or a policy changed is HIGH.

The process probe's ``asyncio.*`` keys exist only once asyncio is imported, so a test that
merely imports it makes them appear with their pristine values (``none``, ``default``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.process import ProcessProbe

SUITE = """
import sys

def test_a_imports_asyncio():
    assert "asyncio" not in sys.modules  # else this suite proves nothing
    import asyncio

def test_b_leaves_a_loop_set():
    import asyncio
    asyncio.set_event_loop(asyncio.new_event_loop())

def test_c_closes_and_unsets_it():
    import asyncio
    asyncio.get_event_loop_policy().get_event_loop().close()
    asyncio.set_event_loop(None)

def test_d_changes_the_policy():
    import asyncio
    class Policy(asyncio.DefaultEventLoopPolicy):
        pass
    asyncio.set_event_loop_policy(Policy())
"""


def test_import_alone_is_low_and_a_loop_or_policy_left_is_high(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_p=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "-p", "no:asyncio", "-p", "no:anyio",
        "--statesnap-json", "out.json", "--statesnap-probes", "process",
    )
    result.assert_outcomes(passed=4)
    summary = json.loads((pytester.path / "out.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in summary["tests"]}
    imported = tests["test_a_imports_asyncio"]
    assert imported["leaked"] is False, imported["leaks"]
    assert [(x["key"], x["severity"]) for x in imported["leaks"]] == [
        ("asyncio.event_loop", "low"), ("asyncio.policy", "low")]
    loop = tests["test_b_leaves_a_loop_set"]
    assert loop["leaked"] is True
    assert [(x["key"], x["after"], x["severity"]) for x in loop["leaks"]] == [
        ("asyncio.event_loop", "open", "high")]
    policy = tests["test_d_changes_the_policy"]
    assert policy["leaked"] is True
    assert [(x["key"], x["severity"]) for x in policy["leaks"]] == [
        ("asyncio.policy", "high")]


def test_only_appearing_with_the_pristine_value_is_low(tmp_path: Path) -> None:
    probe = ProcessProbe()
    probe.setup(ProbeContext(rootdir=tmp_path))
    assert probe.severity_of("asyncio.event_loop", None, "none") == Severity.LOW
    assert probe.severity_of("asyncio.policy", None, "default") == Severity.LOW
    assert probe.severity_of("asyncio.event_loop", None, "open") == Severity.HIGH
    assert probe.severity_of("asyncio.event_loop", "none", "closed") == Severity.HIGH
    assert probe.severity_of("asyncio.policy", None, "mod.UvPolicy") == Severity.HIGH
    assert probe.severity_of("asyncio.policy", "default", "mod.UvPolicy") == Severity.HIGH
    probe.close()
