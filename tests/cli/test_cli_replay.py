"""``statesnap replay`` and ``statesnap bisect`` on real records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runs import Recorded

from statesnap.record.reader import read_record
from suite_runs import run_suite, statesnap_cli, write_suite

RAN = re.compile(r"^(test_\w+\.py::\S+) (?:PASSED|FAILED)", re.MULTILINE)


def _ran(stdout: str) -> list[str]:
    return RAN.findall(stdout)


def test_replay_runs_the_recorded_order_with_extra_pytest_args(zoo: Recorded) -> None:
    cli = statesnap_cli("replay", str(zoo.record), "--", "-v", "-p", "no:cacheprovider",
                        cwd=zoo.root)
    assert cli.returncode == 1, cli.stderr
    recorded = [t.nodeid for t in zoo.run.record().tests]
    assert _ran(cli.stdout) == recorded
    assert "FAILED test_pair.py::test_f_needs_both" in cli.stdout
    assert "-v -p no:cacheprovider --statesnap-order=" in cli.stderr
    # No scratch cache_dir for a child without the cacheprovider: pytest would not know it.
    assert "cache_dir" not in cli.stderr and "Unknown config option" not in cli.stdout
    log = Path(cli.stderr.strip().rsplit("output kept in ", 1)[1])
    assert log.parent == zoo.record.with_suffix(".logs")
    assert "test_zoo.py::test_b_victim FAILED" in log.read_text(encoding="utf-8")


def test_replay_until_stops_after_that_test(zoo: Recorded) -> None:
    cli = statesnap_cli("replay", str(zoo.record), "--until", "test_zoo.py::test_b_victim",
                        "--", "-v", cwd=zoo.root)
    assert cli.returncode == 1
    assert _ran(cli.stdout) == ["test_zoo.py::test_a_sets_mode", "test_zoo.py::test_b_victim"]


def test_replay_dry_run_prints_a_runnable_command_and_runs_nothing(zoo: Recorded) -> None:
    logs = zoo.record.with_suffix(".logs")
    before = set(logs.glob("*")) if logs.exists() else set()
    cli = statesnap_cli("replay", str(zoo.record), "--until", "test_zoo.py::test_broken",
                        "--dry-run", cwd=zoo.root)
    assert cli.returncode == 0
    assert cli.stdout == ""
    command = cli.stderr.splitlines()[1]
    assert command.startswith("$ ") and "--statesnap-order=" in command
    new = set(logs.glob("*")) - before
    assert [p.suffixes[-2:] for p in new] == [[".order", ".json"]]  # the order, no log
    (order_file,) = new
    assert json.loads(order_file.read_text()) == [
        "test_zoo.py::test_a_sets_mode", "test_zoo.py::test_b_victim", "test_zoo.py::test_broken"]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    base = tmp_path_factory.mktemp("xdist")
    root = write_suite(base / "suite", {
        "test_w1.py": "def test_one(): pass\ndef test_two(): pass\n",
        "test_w2.py": "def test_three(): pass\ndef test_four(): pass\n",
    })
    run = run_suite(root, base / "out", "-n", "2", "--dist", "loadfile", budget=0)
    assert run.proc.returncode == 0, run.output[-3000:]
    return Recorded(root, run)


def test_replay_of_one_xdist_worker(two_workers: Recorded) -> None:
    from statesnap.record.lanes import read_lanes

    lanes = {lane.worker: [t.nodeid for t in lane.tests] for lane in read_lanes(two_workers.record)}
    assert set(lanes) == {"gw0", "gw1"}
    for worker, order in lanes.items():
        cli = statesnap_cli("replay", str(two_workers.record), "--worker", worker, "--", "-v",
                            cwd=two_workers.root)
        assert cli.returncode == 0, cli.stderr
        assert _ran(cli.stdout) == order
    mixed = statesnap_cli("replay", str(two_workers.record), cwd=two_workers.root)
    assert mixed.returncode == 2
    assert mixed.stderr.strip() == ("statesnap replay: error: the record holds 2 xdist "
                                    "workers' orders (gw0, gw1): pick one with --worker, or "
                                    "name a test with --until")
    wrong = statesnap_cli("replay", str(two_workers.record), "--worker", "gw9",
                          cwd=two_workers.root)
    assert wrong.returncode == 2
    assert "no worker 'gw9' in the record (workers: gw0, gw1)" in wrong.stderr


def test_bisect_finds_both_polluters_and_prints_the_reproduction(zoo: Recorded) -> None:
    cli = statesnap_cli("bisect", str(zoo.record), "--test", "test_pair.py::test_f_needs_both",
                        cwd=zoo.root)
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert lines[0].startswith("test_pair.py::test_f_needs_both fails after 2 test(s)")
    assert lines[1:3] == ["  test_pair.py::test_c_sets_host", "  test_pair.py::test_d_sets_port"]
    assert lines[3] == ("reproduce: python -m pytest -p no:randomly test_pair.py::test_c_sets_host"
                        " test_pair.py::test_d_sets_port test_pair.py::test_f_needs_both")
    assert "replaying" in cli.stderr  # progress


def test_bisect_of_a_test_that_fails_alone(zoo: Recorded) -> None:
    cli = statesnap_cli("bisect", str(zoo.record), "--test", "test_zoo.py::test_broken",
                        cwd=zoo.root)
    assert cli.returncode == 1
    assert "fails alone: it is not order-dependent" in cli.stdout


def test_replays_of_a_record_never_touch_the_record(zoo: Recorded) -> None:
    text = zoo.record.read_text(encoding="utf-8")
    statesnap_cli("replay", str(zoo.record), "--until", "test_zoo.py::test_a_sets_mode",
                  cwd=zoo.root)
    assert zoo.record.read_text(encoding="utf-8") == text
    assert read_record(zoo.record).footer is not None
