"""With many leaking groups, the recorded order backwards runs after the first few of them.

One backwards run puts every polluter that followed its victim in the record before it; one
leakers-first order only moves one group.  structlog's suite has 58 groups (its tests each
leave one growing dict differently): behind all of them the backwards order was never reached
in a 200 s budget, and a planted victim of a test no probe saw leak went unfound.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions
from statesnap.hunt.explore import REVERSED_AFTER

pytestmark = pytest.mark.slow

GROUPS = REVERSED_AFTER + 2

SUITE = {
    # The victim runs first in the record, its polluter last: the pollution is of a standard
    # library module's attribute, which no probe watches, so the polluter is no leaker.
    "test_a_victim.py": (
        "import json.decoder\n\n\n"
        "def test_decoder_untouched():\n"
        "    assert not hasattr(json.decoder, 'REVEARLY_FLAG')\n"),
    # Each sets one variable to its own value: a group of its own each.
    "test_m_levels.py": "import os\n\n" + "\n".join(
        f"def test_sets_level_{i}():\n    os.environ['REVEARLY_LEVEL'] = '{i}'\n"
        for i in range(GROUPS)),
    "test_z_polluter.py": (
        "import json.decoder\n\n\n"
        "def test_flags_the_decoder():\n"
        "    json.decoder.REVEARLY_FLAG = True\n"),
}


def test_backwards_runs_after_the_first_groups(suite: Suite) -> None:
    suite.write(SUITE)
    record = suite.record()
    out_json = suite.out / "hunt.json"
    proc = subprocess.run(
        [sys.executable, "-m", "statesnap", "hunt", str(record), "--budget", "600",
         "--json", str(out_json)], cwd=suite.root, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"in {GROUPS} group(s)" in proc.stdout, proc.stdout
    ran = re.findall(r"^\s+\d+\. (\S+), ", proc.stdout, re.MULTILINE)
    assert ran[:REVERSED_AFTER + 1] == [
        *(f"leakers-first-{i}" for i in range(1, REVERSED_AFTER + 1)), "reversed"], ran
    assert ran.count("reversed") == 1, ran
    findings = json.loads(out_json.read_text(encoding="utf-8"))["findings"]
    victim = [f for f in findings if f["victim"].endswith("test_decoder_untouched")]
    assert [(f["status"], f["polluters"]) for f in victim] == [
        ("latent", ["test_z_polluter.py::test_flags_the_decoder"])], proc.stdout
    check_reproductions(proc.stdout, suite.root, ["test_decoder_untouched"])
