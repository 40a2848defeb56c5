"""Guards: a test that requires clean state errors naming who dirtied it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Run = Callable[..., Any]


def test_dirty_state_names_the_test_that_dirtied_it(pytester: pytest.Pytester,
                                                    run: Run) -> None:
    pytester.makepyfile(test_guard='''
import os, pytest

def test_sets_devices():
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"

@pytest.mark.statesnap_requires_clean("env:CUDA_VISIBLE_DEVICES", "cuda")
def test_needs_clean_devices():
    pass

@pytest.mark.statesnap_requires_clean("cwd")
def test_needs_clean_cwd():
    pass

@pytest.mark.statesnap_requires_clean("no_such_probe")
def test_bad_spec():
    pass
''')
    inner = run()
    inner.result.assert_outcomes(passed=2, errors=2)
    setup_errors = {r["nodeid"].split("::")[1]: r["text"] for r in inner.reports()
                    if r["when"] == "setup" and r["outcome"] == "failed"}
    text = setup_errors["test_needs_clean_devices"]
    assert "env:CUDA_VISIBLE_DEVICES: ∅ → 1: dirtied by test_guard.py::test_sets_devices " \
           "(index 0)" in text
    assert "no probe 'no_such_probe'" in setup_errors["test_bad_spec"]


def test_guards_pass_when_restore_mode_healed_the_state(pytester: pytest.Pytester,
                                                        run: Run) -> None:
    pytester.makepyfile(test_guard='''
import os, pytest

def test_sets_devices():
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"

@pytest.mark.statesnap_requires_clean("env")
def test_needs_clean_env():
    pass
''')
    inner = run("--statesnap-restore=env")
    inner.result.assert_outcomes(passed=2)


def test_guards_hold_for_isolated_tests(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_guard='''
import os, pytest

def test_sets_devices():
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"

@pytest.mark.statesnap_isolate("spawn")
@pytest.mark.statesnap_requires_clean("env:CUDA_VISIBLE_DEVICES")
def test_spawned():
    pass

@pytest.mark.statesnap_isolate("fork")
@pytest.mark.statesnap_requires_clean("env:CUDA_VISIBLE_DEVICES")
def test_forked():
    pass
''')
    inner = run()
    inner.result.assert_outcomes(passed=1, errors=2)
    texts = [r["text"] for r in inner.reports() if r["outcome"] == "failed"]
    # The verdict is reached against this session's baseline, even for a fresh interpreter.
    assert all("dirtied by test_guard.py::test_sets_devices (index 0)" in t for t in texts)
