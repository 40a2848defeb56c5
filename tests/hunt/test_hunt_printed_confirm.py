"""A hunt's finding keeps its printed line only once that line, run exactly as printed, failed
the victim (``Prover.confirm_printed``).

The hunt's runs are pytest sessions with statesnap on, often forked from a warm parent; what
the user is given is one plain-pytest line.  A latent victim that fails after its polluter
only while statesnap's plugin is loaded is exposed and blamed by every run of the hunt, and
its printed line passes it: the hunt leaves it suspected, says why, and prints no line.  An
ordinary latent victim is proven, and its last run is that line, which failed it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions

pytestmark = pytest.mark.slow

#: The victims run before their polluters in the recorded order, which passes.
SUITE = {
    "test_zoo.py": """
import os

def test_a_needs_the_plugin(request):
    loaded = request.config.pluginmanager.has_plugin("statesnap")
    assert not (loaded and os.environ.get("ZOO_PLUGIN")), "ZOO_PLUGIN leaked"

def test_b_ordinary():
    assert os.environ.get("ZOO_PLAIN") is None, "ZOO_PLAIN leaked"

def test_c_plugin_polluter():
    os.environ["ZOO_PLUGIN"] = "1"

def test_d_plain_polluter():
    os.environ["ZOO_PLAIN"] = "1"
""",
}


@pytest.mark.parametrize("warm", ["on", "off"])
def test_a_hunt_prints_only_lines_that_failed_their_victim(suite: Suite, warm: str) -> None:
    suite.write(SUITE)
    record = suite.record()
    out = suite.out / "hunt.json"
    proc = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), "--json",
                           str(out), "--budget", "600", "--replay-workers", "1"],
                          cwd=suite.root, capture_output=True, text=True, timeout=900,
                          env={**_env(), "STATESNAP_REPLAY_WARM": warm})
    text = proc.stdout + proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    found = {f["victim"].split("::")[-1]: f for f in data["findings"]}
    plugin, plain = found["test_a_needs_the_plugin"], found["test_b_ordinary"]
    # Exposed and blamed by the hunt's runs, but the plain line passed it: suspected, no line.
    assert plugin["status"] == "suspected", (plugin, text[-3000:])
    assert plugin["repro"] == "", plugin
    assert "its printed reproduction, run exactly as printed" in plugin["note"], plugin
    assert "it passed" in plugin["note"], plugin
    # The ordinary victim: latent, and its line ran as printed and failed it.
    assert plain["status"] == "latent", (plain, text[-3000:])
    assert plain["polluters"] == ["test_zoo.py::test_d_plain_polluter"], plain
    confirms = [r for r in data["hunt"]["runs"] if r["kind"] == "confirm"]
    assert len(confirms) == 2, data["hunt"]["runs"]
    logs = [Path(r["log"]).read_text(encoding="utf-8") for r in confirms]
    assert any(log.startswith(f"$ {plain['repro']}\n") for log in logs), logs
    check_reproductions(proc.stdout, suite.root, ["test_b_ordinary"], expect="ZOO_PLAIN leaked")


def _env() -> dict[str, Any]:
    import os

    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTEST_XDIST", "STATESNAP_")) and k != "PYTEST_CURRENT_TEST"}
