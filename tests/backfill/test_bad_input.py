"""Bad artifacts get one line each and the rest goes on; a worker at another commit and a
port that stays taken are told apart from a verdict."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from backfill_suite import CiRun, git_init

from statesnap.backfill.consolelog import parse_log
from statesnap.backfill.orderrecord import order_header
from statesnap.backfill.tasks import replay_task


def test_each_bad_artifact_is_one_line_and_the_rest_goes_on(project: CiRun) -> None:
    bad = project.root / "bad"
    bad.mkdir()
    (bad / "garbage.log").write_text("npm ERR! something else entirely\n")
    (bad / "not-junit.xml").write_text("<html><body>a CI page</body></html>\n")
    (bad / "broken.xml").write_text("<testsuites><testcase")
    (bad / "gone.xml").write_text(
        '<testsuites><testsuite><testcase classname="tests.test_gone" name="test_x"/>'
        "</testsuite></testsuites>\n")
    (bad / "gone.log").write_text("tests/test_gone.py::test_x PASSED [100%]\n")
    (bad / "cut.jsonl").write_text('{"type":"header","format":1')
    # One good artifact whose tests all passed: it is read, and nothing needs a replay.
    good = project.root / "good.log"
    good.write_text("tests/test_misc.py::test_misc_1 PASSED [ 50%]\n"
                    "tests/test_misc.py::test_misc_2 PASSED [100%]\n")
    out = project.root / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "statesnap", "backfill", str(bad), str(good),
         str(project.root / "missing.log"), "-o", str(out), "--workers", "1", "-q"],
        cwd=project.root, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 7, proc.stderr
    said = "\n".join(lines)
    assert "garbage.log: not a pytest log with -v or -rA lines" in said
    assert "not-junit.xml: XML that is not JUnit (root element <html>" in said
    assert "broken.xml: not well-formed XML" in said
    assert "gone.xml: 1 test case(s) not in the checkout: tests.test_gone::test_x" in said
    assert "gone.log (main): 1 test id(s) not in the checkout" in said
    assert "cut.jsonl:1: truncated inside its header line" in said
    assert "missing.log: no such file" in said
    data = json.loads((out / "summary.json").read_text())
    assert [s["source"] for s in data["backfill"]["shards"]] == [str(good)]
    assert data["findings"] == []
    assert data["backfill"]["workers"] == 0  # nothing failed: no cluster was started


def test_nothing_usable_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text("nothing here\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "statesnap", "backfill", "x.log", "-o",
                           str(out)], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"statesnap backfill: {Path('x.log')}: not a pytest log with -v or -rA lines "
        "(no test outcome found)",
        "statesnap backfill: error: no usable artifact: nothing to backfill"]
    assert not out.exists()


def _spec(root: Path, order: list[str], commit: str | None) -> dict[str, object]:
    text = "\n".join(f"{n} PASSED" for n in order) + "\n"
    (shard,) = parse_log(root / "ci.log", text)
    return {"root": str(root), "checkout": None, "commit": commit, "exclude": [],
            "header": order_header(shard, root), "order": order, "restore": None,
            "label": "t", "timeout": 120, "probes": ["env"], "want_record": False,
            "plain": None, "python": sys.executable}


def test_a_worker_at_another_commit_refuses_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    commit = git_init(root)
    spec = _spec(root, ["tests/test_a.py::test_a"], "0" * 40)
    answer = replay_task(spec)
    assert answer["refused"].endswith(
        f"checkout {root} is at {commit[:12]}, the backfill is at 000000000000")
    assert "\n" not in answer["refused"] and "outcomes" not in answer
    assert replay_task(_spec(root, ["tests/test_a.py::test_a"], commit))["outcomes"] == {
        "tests/test_a.py::test_a": "passed"}


def test_a_taken_port_is_no_verdict_and_a_free_one_runs(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_server.py").write_text(textwrap.dedent(f"""
        import socket

        def test_serves_on_its_fixed_port():
            s = socket.socket()
            s.bind(("127.0.0.1", {port}))
            s.close()
    """))
    commit = git_init(root)
    spec = _spec(root, ["tests/test_server.py::test_serves_on_its_fixed_port"], commit)
    try:
        taken = replay_task(spec)
    finally:
        holder.close()
    assert taken["attempts"] == 3
    assert "Address already in use" in taken["port_conflict"]
    free = replay_task(spec)
    assert "port_conflict" not in free
    assert free["outcomes"] == {"tests/test_server.py::test_serves_on_its_fixed_port": "passed"}
