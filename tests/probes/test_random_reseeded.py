"""Under pytest-randomly, which reseeds the global generators before every test phase, the
``random`` probe stays off: no test can leave them changed for another.

Before, every test of such a run, even ``assert True``, was listed with low ``random:random``
and ``random:numpy.random`` leaks (randomly's own reseeding), a genuine failure was told
"earlier change, not the cause: random:random by ..." of a test that never used random, and
the hunt spent orders on those leaks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SUITE = '''
import random


def test_draws():
    random.random()


def test_nothing():
    assert True


def test_genuine():
    assert 0
'''


def _run(tmp_path: Path, *plugin_args: str) -> dict[str, object]:
    (tmp_path / "test_r.py").write_text(SUITE, encoding="utf-8")
    summary = tmp_path / "s.json"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    *plugin_args, "-p", "statesnap", f"--statesnap-json={summary}",
                    f"--statesnap-record={tmp_path / 'r.jsonl'}",
                    "--statesnap-verify-budget=0", "test_r.py"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
                   env={**_env(), "PYTEST_ADDOPTS": ""})
    data: dict[str, object] = json.loads(summary.read_text(encoding="utf-8"))
    return data


def _env() -> dict[str, str]:
    import os
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STATESNAP_"))}


def _random_leaks(data: dict[str, object]) -> list[str]:
    tests = data["tests"]
    assert isinstance(tests, list)
    return [f"{t['nodeid']} {lk['key']}" for t in tests for lk in t["leaks"]
            if lk["probe"] == "random"]


def _header_status(tmp_path: Path) -> dict[str, object]:
    header = json.loads((tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()[0])
    [status] = [p for p in header["probes"] if p["name"] == "random"]
    assert isinstance(status, dict)
    return status


def test_randomly_reseeding_every_test_closes_the_channel(tmp_path: Path) -> None:
    data = _run(tmp_path, "-p", "randomly", "--randomly-seed=1")
    assert _random_leaks(data) == []
    status = _header_status(tmp_path)
    assert status["status"] == "unavailable" and status.get("absent") is True
    assert "pytest-randomly reseeds" in str(status["detail"])


def test_without_its_reseeding_the_generators_are_watched(tmp_path: Path) -> None:
    # --randomly-dont-reset-seed: the plugin shuffles but no longer reseeds between tests.
    data = _run(tmp_path, "-p", "randomly", "--randomly-seed=1", "--randomly-dont-reset-seed")
    assert any(leak.endswith(" random") and "test_draws" in leak for leak in _random_leaks(data))
    assert _header_status(tmp_path)["status"] == "ok"
