"""The hunt's fix hint follows how the proven key changed: in place, or rebound.

The hunt runs in a process that never imported the suite's modules: what the key holds is
known only from the record's fingerprints.  A list appended to, or a dict updated, in place is
not undone by ``monkeypatch.setattr(mod, NAME, ...)`` that puts the same (filled) object back:
its contents must be copied or restored.  A rebound name is undone by setattr.
"""

from __future__ import annotations

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions

pytestmark = pytest.mark.slow

REGISTRY = '''
HANDLERS = []
SETTINGS = {"level": 1}
MODE = "slow"

class Bus:
    def __init__(self):
        self.listeners = []

BUS = Bus()
'''

# The readers run first in the default order: the recorded run passes, the hunt exposes them.
READERS = '''
import registry

def test_no_handlers():
    assert registry.HANDLERS == [], "handlers left"

def test_default_settings():
    assert registry.SETTINGS == {"level": 1}, "settings left"

def test_no_listeners():
    assert registry.BUS.listeners == [], "listeners left"

def test_slow_mode():
    assert registry.MODE == "slow", "mode left"
'''

WRITERS = '''
import registry

def test_registers():
    registry.HANDLERS.append("audit")

def test_configures():
    registry.SETTINGS.update(level=5)

def test_listens():
    registry.BUS.listeners.append("x")

def test_fast():
    registry.MODE = "fast"
'''


def test_an_in_place_change_gets_a_copy_or_restore_hint_and_a_rebinding_a_setattr_one(
        suite: Suite) -> None:
    suite.write({"registry.py": REGISTRY, "test_a_readers.py": READERS,
                 "test_b_writers.py": WRITERS})
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    blocks = finding_blocks(proc.stdout)
    cases = {
        "test_no_handlers": ("test_registers", "registry:HANDLERS"),
        "test_default_settings": ("test_configures", "registry:SETTINGS"),
        "test_no_listeners": ("test_listens", "registry:BUS"),
        "test_slow_mode": ("test_fast", "registry:MODE"),
    }
    for victim, (polluter, key) in cases.items():
        block = blocks[f"test_a_readers.py::{victim}"]
        assert f"[LATENT] test_a_readers.py::{victim}" in block, block
        assert f"polluted by: test_b_writers.py::{polluter}" in block, block
        assert f"state: attributes:{key}:" in block, block
        assert "(restoring it makes the victim pass)" in block, block
    for victim, name in (("test_no_handlers", "HANDLERS"), ("test_default_settings",
                                                             "SETTINGS")):
        block = blocks[f"test_a_readers.py::{victim}"]
        assert (f"fix: copy the module-level list/dict before changing it (monkeypatch."
                f"setattr(registry, '{name}', a copy)) or restore {name} in a fixture") in block
        assert "so the original is put back" not in block, block
    listeners = blocks["test_a_readers.py::test_no_listeners"]
    assert "give each test a fresh one with monkeypatch.setattr(registry, 'BUS'" in listeners
    assert "so the original is put back" not in listeners, listeners
    mode = blocks["test_a_readers.py::test_slow_mode"]
    assert ("fix: patch MODE with monkeypatch.setattr(registry, 'MODE', ...) so the original "
            "is put back after the test") in mode, mode
    check_reproductions(proc.stdout, suite.root, list(cases))
