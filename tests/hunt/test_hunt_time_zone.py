"""The process's local time zone, left changed by ``time.tzset()`` behind a ``TZ`` that
monkeypatch put back: seen, proven by key, and hunted, each reproduction run under plain pytest.

Met in a dateutil-like suite: the ``env`` probe sees ``TZ`` restored, but ``time.localtime``
and ``time.timezone`` keep the polluter's zone until someone calls ``tzset`` again.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions

pytestmark = pytest.mark.slow

# A POSIX rule (UTC+13:45) needs no tzdata and is no machine's own zone.
POLLUTER = '''
import time

def test_far_east_clock(monkeypatch):
    monkeypatch.setenv("TZ", "FAR-13:45")
    time.tzset()
    assert time.localtime(0).tm_min == 45
'''

VICTIM = '''
import os
import time

# What the zone is when this file is imported: the one TZ (or its absence) gives.
START = time.timezone

def test_clock_matches_the_environment():
    assert time.timezone == START, f"local zone moved: {time.tzname} (TZ={os.environ.get('TZ')})"
'''


def test_a_zone_left_behind_tzset_is_the_proven_key(suite: Suite) -> None:
    suite.write({"test_a_clock.py": POLLUTER, "test_b_victim.py": VICTIM})
    plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"],
                           cwd=suite.root, capture_output=True, text=True, timeout=300)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           "-p", "statesnap", f"--statesnap-record={suite.out / 'r.jsonl'}"],
                          cwd=suite.root, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == plain.returncode == 1, out
    assert plain.stdout.splitlines()[-1].split(" in ")[0] in out  # same summary line
    assert "test_a_clock.py::test_far_east_clock: time.zone:" in out, out
    assert "(UTC+13:45)" in out, out
    block = out.split("[VERIFIED] test_b_victim.py::test_clock_matches_the_environment")[1]
    assert "polluted by: test_a_clock.py::test_far_east_clock" in block, out
    assert "state: process:time.zone:" in block, out
    assert "(restoring it makes the victim pass)" in block, out
    check_reproductions(block, suite.root, ["test_clock_matches_the_environment"],
                        expect="local zone moved")


def test_a_victim_before_the_zone_polluter_is_hunted(suite: Suite) -> None:
    # The recorded order passes: only the leak of the zone tells the hunt where to look.
    suite.write({"test_a_victim.py": VICTIM, "test_b_clock.py": POLLUTER})
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_victim.py::test_clock_matches_the_environment"]
    assert "polluted by: test_b_clock.py::test_far_east_clock" in block, block
    assert "state: process:time.zone:" in block, block
    check_reproductions(block, suite.root, ["test_clock_matches_the_environment"],
                        expect="local zone moved")
