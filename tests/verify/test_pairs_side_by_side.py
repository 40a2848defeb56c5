"""One victim's candidate pairs side by side (issue 28 §3): real sessions, each inside a fresh pid
namespace (``tests/pidns.py``), whose one victim's pairs run on the idle replay worker too.

The victim's suspects rank ``b`` first, then ``a``, then ``c``; ``a`` and ``c`` both fail it the
same way, ``b`` does not.  One at a time, ``a`` is the polluter (the first in rank order whose
pair fails the victim).  With two workers the pairs of ``a`` and ``c`` run at the same time, and
``a`` is slow (3 s), so ``c``'s answer may well come first: the verdict, polluter, key and
reproduction must still be ``a``'s, and the finding lists the replays one at a time lists.
Ctrl-C while pairs run side by side: ``tests/chaos/test_chaos_pairs.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pidns
from suite_runs import BASE_ARGS, child_env, run_shell, summary_line, write_suite

TRACEBACKS = ("Traceback (most recent call last)", "INTERNALERROR")

SUITE = {
    "zoo.py": """
        import os

        def ready():
            return "RANK_Z" not in os.environ and os.environ.get("RANK_X") != "1"
        """,
    "test_rank.py": """
        import os, time
        import zoo

        def _traced(seconds):
            t0 = time.time()
            time.sleep(seconds)
            with open(os.environ["PAIRS_TRACE"], "a") as f:
                f.write(f"{os.getpid()} {t0} {time.time()}\\n")

        def test_a_sets_x():
            _traced(float(os.environ.get("PAIRS_SLOW", "0")))
            os.environ["RANK_X"] = "1"

        def test_b_sets_y():
            os.environ["RANK_Y"] = "1"

        def test_c_sets_z():
            os.environ["RANK_Z"] = "1"

        def test_d_sets_w():
            os.environ["RANK_W"] = "1"

        def test_victim():
            _traced(0.3)
            mode = os.environ.get("RANK_X", "") + os.environ.get("RANK_Y", "")
            assert mode in ("", "1", "11") and zoo.ready(), "not ready"
        """,
}

VICTIM = "test_rank.py::test_victim"


def _session(root: Path, out: Path, workers: int, trace: Path
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    pidns.require()
    out.mkdir(parents=True)
    tmp = out / "tmp"
    tmp.mkdir()
    argv = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap", "-q",
            f"--statesnap-json={out / 'summary.json'}",
            f"--statesnap-record={out / 'run.jsonl'}",
            f"--statesnap-replay-workers={workers}", "--statesnap-verify-budget=300"]
    proc = subprocess.run(pidns.wrap(argv), cwd=root,
                          env=child_env({"PAIRS_SLOW": "3", "PAIRS_TRACE": str(trace),
                                         "TMPDIR": str(tmp)}),
                          capture_output=True, text=True, timeout=600)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    for text in TRACEBACKS:
        assert text not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert not list(tmp.glob("statesnap-replay-*")), list(tmp.iterdir())
    findings = json.loads((out / "summary.json").read_text(encoding="utf-8"))["findings"]
    assert len(findings) == 1, findings
    return proc, findings[0]


def _overlaps(trace: Path) -> int:
    """Pairs of traced spans (the victim's, ``a``'s) that ran at the same time in two
    different processes."""
    spans = [(int(p), float(a), float(b)) for p, a, b in
             (line.split() for line in trace.read_text().splitlines())]
    return sum(1 for i, (p1, a1, b1) in enumerate(spans) for p2, a2, b2 in spans[i + 1:]
               if p1 != p2 and a1 < b2 and a2 < b1)


@pytest.mark.needs_pidns
@pytest.mark.slow
def test_the_first_failing_pair_in_rank_order_wins_with_two_workers(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    seen: dict[int, dict[str, Any]] = {}
    overlaps: dict[int, int] = {}
    for workers in (1, 2):
        trace = tmp_path / f"trace-{workers}.txt"
        proc, finding = _session(root, tmp_path / f"out{workers}", workers, trace)
        assert proc.returncode == 1, proc.stdout[-3000:]
        assert summary_line(proc.stdout) == "1 failed, 4 passed", proc.stdout[-3000:]
        seen[workers] = finding
        overlaps[workers] = _overlaps(trace)
    one, two = seen[1], seen[2]
    # One at a time: b's pair (the top suspect's, run as printed) passes, a's fails the
    # victim: a is the polluter (c, ranked after it, is never tried).
    assert [(r["label"], r["order"]) for r in one["replays"]][:3] == [
        ("alone", [VICTIM]),
        ("pair-printed", ["test_rank.py::test_b_sets_y", VICTIM]),
        ("pair", ["test_rank.py::test_a_sets_x", VICTIM])]
    assert one["status"] == "verified", one
    assert one["polluters"] == ["test_rank.py::test_a_sets_x"]
    assert (one["probe"], one["key"]) == ("env", "RANK_X")
    for field in ("status", "polluters", "probe", "key", "proven_keys", "repro", "hint"):
        assert two[field] == one[field], (field, one[field], two[field])
    # The finding lists what one at a time ran, in the same order (the pairs not needed
    # are not among its replays).
    assert ([(r["label"], r["order"], r["outcome"]) for r in two["replays"]]
            == [(r["label"], r["order"], r["outcome"]) for r in one["replays"]])
    # One at a time no two replays overlap; with two workers the pairs did.
    assert overlaps[1] == 0
    assert overlaps[2] > 0
    # The reproduction, run exactly as printed, fails the victim.
    assert f"reproduce: {two['repro']}" in proc.stdout
    ran = run_shell(two["repro"], cwd=root, env={"PAIRS_TRACE": str(tmp_path / "t.txt")})
    assert ran.returncode == 1, ran.stdout[-2000:]
    assert summary_line(ran.stdout) == "1 failed, 1 passed", ran.stdout[-2000:]
    # Every replay the finding names kept its files; a pair killed or not needed kept only
    # its log, and no replay's order file is left without its log being listed.
    logs = Path(tmp_path / "out2" / "run.logs")
    listed = {Path(r["log"]).name for r in two["replays"]}
    for order in logs.glob("*.order.json"):
        assert order.name.replace(".order.json", ".log") in listed, order.name
