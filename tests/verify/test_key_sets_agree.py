"""One finding, one key: the session, ``statesnap explain --verify`` and the hunt name the same
key set, led by the same key, for the same victim and polluter.

The victim reads a config dict the polluter filled from variables it left set: neither the
dict nor the variables restored alone heal it, the three together do, and the failure seen is
about the dict (its first assertion).  The hunt has always put that key first (``lead_first``);
the session's verification named the best-ranked key of the set instead (a variable, whose
name the failure text quotes), so one finding had two keys depending on who proved it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tally_suite import TALLY

pytestmark = pytest.mark.slow

SUITE = {"pytest.ini": "[pytest]\n", **TALLY}
VICTIM = "test_a_config.py::test_read"
LEAD = "attributes:tally.config:_config"
THE_SET = {LEAD, "env:tally_store", "env:tally_folder"}


def _pytest(root: Path, record: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
                           "-p", "no:cacheprovider", f"--statesnap-record={record}", *args],
                          cwd=root, capture_output=True, text=True, timeout=600)


def _statesnap(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", *args], cwd=root,
                          capture_output=True, text=True, timeout=900)


def _the_finding(findings: list[dict[str, Any]], text: str) -> dict[str, Any]:
    (f,) = [f for f in findings if f["victim"] == VICTIM]
    assert [p.split("::")[-1] for p in f["polluters"]] == ["test_deploy"], text
    return f


def test_the_session_the_cli_and_the_hunt_name_one_key_for_one_finding(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    for name, text in SUITE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")

    # The session: the polluter runs first, the victim fails and is verified in the session.
    summary = tmp_path / "summary.json"
    failing = tmp_path / "failing.jsonl"
    proc = _pytest(root, failing, f"--statesnap-json={summary}", "test_b_deploy.py",
                   "test_a_config.py")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    session = _the_finding(json.loads(summary.read_text(encoding="utf-8"))["findings"], out)
    assert session["status"] == "verified", out
    assert set(session["proven_keys"]) == THE_SET, out
    assert f"state: {LEAD}: " in proc.stdout, out
    assert not session["hint_proven"], out

    # The CLI, verifying the same record again.
    cli = _statesnap(root, "explain", str(failing), "--verify", "--json")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    again = _the_finding(json.loads(cli.stdout), cli.stdout + cli.stderr)

    # The hunt, from a run in the default order (the victim first: it passes).
    passing = tmp_path / "passing.jsonl"
    assert _pytest(root, passing).returncode == 0
    hunt = _statesnap(root, "hunt", str(passing), "--json", "-q", "--budget", "600")
    latent = _the_finding(json.loads(hunt.stdout)["findings"], hunt.stdout + hunt.stderr)
    assert latent["status"] == "latent", hunt.stdout

    keys = [(f["probe"], f["key"], f["proven_keys"][0]) for f in (session, again, latent)]
    assert keys == [("attributes", "tally.config:_config", LEAD)] * 3, keys
    assert session["proven_keys"] == again["proven_keys"] == latent["proven_keys"], keys
