"""A victim of a cache filled in place, inside a module-level object: found, keyed, reproduced.

The polluter's only change is a fill of the resolver's ``_cache`` dict (a cache part of the
object: rated LOW, never "leaked"); a test that resets the cache runs between it and the victim
in the recorded order backwards, so neither that order nor one LOW order of every LOW leaker
exposes the victim.  The LOW leakers are grouped as the leakers are (a fill and a reset leave
the key two ways), and the fill is restored by the key-level proof.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions, plain_env
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow

RESOLVER = '''
class Resolver:
    def __init__(self):
        self.default = "v1"
        self._cache = {}

    def resolve(self, name, version=None):
        if name not in self._cache:
            self._cache[name] = version or self.default
        return self._cache[name]

    def reset(self):
        self._cache = {}


RESOLVER = Resolver()
'''

FILES = {
    "resolver.py": RESOLVER,
    "test_a_victim.py": '''
import resolver

def test_resolves_the_default():
    assert resolver.RESOLVER.resolve("pkg") == "v1", "stale resolution"
''',
    "test_b_reset.py": '''
import resolver

def test_resets():
    resolver.RESOLVER.reset()
''',
    "test_c_pin.py": '''
import resolver

def test_pins_a_version():
    resolver.RESOLVER.resolve("pkg", version="v2")
''',
}

VICTIM = "test_a_victim.py::test_resolves_the_default"
POLLUTER = "test_c_pin.py::test_pins_a_version"


def test_a_cache_part_filled_by_a_polluter_is_hunted_keyed_and_reproduced(
        suite: Suite) -> None:
    suite.write(FILES)
    record = suite.record()
    # The fill is recorded, LOW, as the polluter's (it is the only change the polluter made).
    tests = {t.nodeid: t for t in read_record(record).tests}
    assert all(t.outcome == "passed" for t in tests.values())
    [fill] = tests[POLLUTER].changes
    assert (fill.probe, fill.key, fill.severity) == ("attributes", "resolver:RESOLVER", 1)
    assert " cache~" in str(fill.before) and " cache~" in str(fill.after)
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)[VICTIM]
    assert f"[LATENT] {VICTIM}" in block, block
    assert f"polluted by: {POLLUTER}" in block, block
    assert "state: attributes:resolver:RESOLVER:" in block, block
    assert "(restoring it makes the victim pass)" in block, block
    assert "fix: clear the cache of resolver.RESOLVER in a fixture" in block, block
    check_reproductions(block, suite.root, [VICTIM], expect="stale resolution")
    alone = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", VICTIM],
                           cwd=suite.root, env=plain_env(), capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 0, alone.stdout + alone.stderr
