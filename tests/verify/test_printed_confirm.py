"""A verified finding's printed reproduction was run exactly as printed, and failed the victim.

Replays run pytest with statesnap on; the line printed for the user runs plain pytest.  The
verifier runs that line, as printed, in a fresh process (statesnap.proof.confirm) before a
finding stays verified, with replays forked from a warm parent and with every replay cold:

- a victim that fails only while statesnap's plugin is loaded is blamed on its polluter by
  every replay, but the printed line passes it: not verified, the note says why, no line;
- the ordinary case is verified: its first pair was the printed line itself, run as printed
  (``pair-printed``), which failed the victim, and the line is not run a second time;
- where the printed pair passes the victim but the pair replay (statesnap on) fails it, the
  suspect is still proven by that replay, and its line then runs again as printed (``confirm``)
  and refuses it, as before the first pair ran as printed;
- under pytest-reverse in the ini file's ``addopts`` (it reverses the ids a command names),
  the printed line, which names them reversed, still confirms.

Real sessions; every line printed is run again here under plain pytest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, statesnap_cli, write_suite

#: The victim fails after the polluter only while statesnap's plugin is loaded: in the run
#: and in every replay, never under the printed (plain pytest) line.
NEEDS_THE_PLUGIN = """
    import os

    def test_polluter():
        os.environ["ZOO_FLAG"] = "1"

    def test_victim(request):
        loaded = request.config.pluginmanager.has_plugin("statesnap")
        assert not (loaded and os.environ.get("ZOO_FLAG")), "ZOO_FLAG leaked"
    """

ORDINARY = """
    import os

    def test_polluter():
        os.environ["ZOO_FLAG"] = "1"

    def test_victim():
        assert os.environ.get("ZOO_FLAG") is None, "ZOO_FLAG leaked"
    """

WARM = pytest.mark.parametrize("warm", ["on", "off"])


#: The replays that run a line exactly as printed: the first pair, and the confirmation.
AS_PRINTED = ("pair-printed", "confirm")


def _confirm(f: dict[str, Any]) -> dict[str, Any]:
    """The one run of the finding's printed line, exactly as printed, that failed the victim
    (a verified finding's rule)."""
    confirms = [r for r in f["replays"] if r["label"] in AS_PRINTED
                and r["command"] == f["repro"] and r["outcome"] == "failed"]
    assert len(confirms) == 1, f["replays"]
    confirm: dict[str, Any] = confirms[0]
    return confirm


@WARM
def test_a_line_that_does_not_fail_the_victim_is_not_verified(tmp_path: Path,
                                                              warm: str) -> None:
    root = write_suite(tmp_path / "suite", {"test_zoo.py": NEEDS_THE_PLUGIN})
    run = run_suite(root, tmp_path / "out", f"--statesnap-replay-warm={warm}")
    assert run.proc.returncode == 1, run.output[-3000:]
    f = run.finding("test_victim")
    # The printed pair passed the victim; the pair replay (statesnap on) blamed the
    # polluter ...
    assert [(r["label"], r["outcome"]) for r in f["replays"]][1:3] == [
        ("pair-printed", "passed"), ("pair", "failed")], f["replays"]
    # ... and the printed line, run as printed again once the polluter was proven, passed
    # the victim again.
    [confirm] = [r for r in f["replays"] if r["label"] == "confirm"]
    assert confirm["outcome"] == "passed", confirm
    assert confirm["command"].startswith("python -m pytest "), confirm
    assert "statesnap" not in confirm["command"], confirm
    assert f["status"] != "verified", f
    assert f["repro"] == "" and f["polluters"] == [], f
    assert "test_zoo.py::test_polluter" in f["note"], f["note"]
    assert "the printed reproduction, run exactly as printed" in f["note"], f["note"]
    assert "it passed" in f["note"], f["note"]
    assert "reproduce:" not in run.output, run.output[-3000:]
    assert "[VERIFIED]" not in run.output, run.output[-3000:]


@WARM
def test_a_verified_finding_ran_its_printed_line(tmp_path: Path, warm: str) -> None:
    root = write_suite(tmp_path / "suite", {"test_zoo.py": ORDINARY})
    run = run_suite(root, tmp_path / "out", f"--statesnap-replay-warm={warm}")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    confirm = _confirm(f)
    # The first pair was the printed line: it proved the polluter and confirmed the line.
    assert [r["label"] for r in f["replays"]] == ["alone", "pair-printed", "key"], f["replays"]
    assert confirm["command"] == f["repro"], (confirm, f["repro"])
    assert confirm["outcome"] == "failed", confirm
    log = (run.record_path.parent / confirm["log"]).read_text("utf-8")
    # The log is the printed line's own output: plain pytest, no statesnap child.
    assert log.startswith(f"$ {f['repro']}\n"), log[:500]
    assert "ZOO_FLAG leaked" in log, log[-2000:]
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_FLAG leaked")


def test_reverse_in_the_ini_file_still_confirms(tmp_path: Path) -> None:
    # Written victim first: pytest-reverse runs the polluter first.
    victim_first = """
        import os

        def test_victim():
            assert os.environ.get("ZOO_FLAG") is None, "ZOO_FLAG leaked"

        def test_polluter():
            os.environ["ZOO_FLAG"] = "1"
        """
    root = write_suite(tmp_path / "suite", {"pytest.ini": "[pytest]\naddopts = --reverse\n",
                                            "test_zoo.py": victim_first})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    confirm = _confirm(f)
    assert confirm["command"] == f["repro"] and confirm["outcome"] == "failed", confirm
    # What ran is the printed line (the ids named reversed), not a replay of the order.
    log = (run.record_path.parent / confirm["log"]).read_text("utf-8")
    assert log.startswith(f"$ {f['repro']}\n"), log[:500]
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_FLAG leaked")


def test_bisect_prints_only_a_line_that_failed_the_victim(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_zoo.py": NEEDS_THE_PLUGIN})
    run = run_suite(root, tmp_path / "out", budget=0)
    cli = statesnap_cli("bisect", str(run.record_path), "--test", "test_zoo.py::test_victim",
                        cwd=root)
    # Replays (statesnap on) find the polluter; the printed line passes the victim.
    assert "test_zoo.py::test_polluter" in cli.stdout, cli.stdout + cli.stderr
    assert "not proven: this line, run exactly as printed, did not fail" in cli.stdout, (
        cli.stdout + cli.stderr)
    assert "reproduce:" not in cli.stdout, cli.stdout
    assert cli.returncode == 1, cli.stdout + cli.stderr


def test_a_line_other_than_the_first_pair_is_confirmed_again(tmp_path: Path) -> None:
    # Two polluters together: the top suspect's printed pair passes the victim, delta
    # debugging proves both, and the line printed (three ids) is run as printed before the
    # finding stays verified.
    both = """
        import os

        def test_a():
            os.environ["ZOO_A"] = "1"

        def test_b():
            os.environ["ZOO_B"] = "1"

        def test_victim():
            assert not (os.environ.get("ZOO_A") and os.environ.get("ZOO_B")), "both leaked"
        """
    root = write_suite(tmp_path / "suite", {"test_zoo.py": both})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_zoo.py::test_a", "test_zoo.py::test_b"], f
    labels = [(r["label"], r["outcome"]) for r in f["replays"]]
    assert labels[1] == ("pair-printed", "passed"), labels
    confirm = _confirm(f)
    assert confirm["label"] == "confirm" and f["replays"][-1] == confirm, labels
    check_reproductions(run.output, root, ["test_victim"], expect="both leaked")
