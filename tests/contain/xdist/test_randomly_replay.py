"""pytest-randomly: the seed is in the header and a replay reproduces the order and seeds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from statesnap.record.reader import read_record

Run = Callable[..., Any]


def test_a_replay_reproduces_the_shuffled_order(pytester: pytest.Pytester, run: Run,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    draws = tmp_path / "draws"
    draws.mkdir()
    monkeypatch.setenv("DRAWS_DIR", str(draws))
    tests = "\n".join(f'''
def test_{i}(request):
    import os, random
    path = os.path.join(os.environ["DRAWS_DIR"], os.environ.get("DRAW_RUN", "run"))
    with open(path, "a") as f:
        f.write(f"{{request.node.name}} {{random.random()!r}}\\n")
''' for i in range(8))
    pytester.makepyfile(test_shuffled=tests)
    monkeypatch.setenv("DRAW_RUN", "recorded")
    inner = run("--randomly-seed=4242", randomly=True)
    inner.result.assert_outcomes(passed=8)
    record = inner.record()
    assert record.header["seed"] == 4242
    recorded = record.order()
    assert recorded != sorted(recorded, key=lambda n: int(n.rsplit("_", 1)[1]))  # shuffled

    monkeypatch.setenv("DRAW_RUN", "replayed")
    done = subprocess.run([sys.executable, "-m", "statesnap", "replay", str(inner.record_path)],
                          cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    logs = inner.record_path.with_suffix(".logs")
    (replay_record,) = [p for p in logs.glob("*replay.jsonl")]
    assert read_record(replay_record).order() == recorded
    (order_file,) = logs.glob("*replay.order.json")
    assert json.loads(order_file.read_text()) == recorded
    # Same seed, same per-test reseeding: every test drew the same numbers.
    assert (draws / "replayed").read_text() == (draws / "recorded").read_text()
