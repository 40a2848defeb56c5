"""A printed reproduction runs its tests in the order it names, whatever plugin reorders tests.

Real runs with pytest-reverse and pytest-random-order installed and switched on: the session
proves a victim, and the command it prints, run as printed under plain pytest (the same
plugins installed), fails the victim.  Before, the command kept ``--reverse`` and passed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import child_env, run_suite, write_suite

VICTIM_FIRST = {
    "test_zoo.py": """
        import os

        def test_victim():
            assert os.environ.get("ZOO_REORDER") is None, "ZOO_REORDER leaked"

        def test_polluter():
            os.environ["ZOO_REORDER"] = "1"
        """,
}


def test_reverse_reproduction_keeps_its_order(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", VICTIM_FIRST)
    run = run_suite(root, tmp_path / "out", "--reverse")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert "--reverse" not in f["repro"], f["repro"]
    assert "-p no:reverse" in f["repro"], f["repro"]
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_REORDER leaked")


def test_random_order_reproduction_keeps_its_order(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", VICTIM_FIRST)
    # A seed whose shuffle runs the polluter before the victim (half of them do).
    for seed in range(1, 20):
        run = run_suite(root, tmp_path / f"out{seed}", "--random-order-bucket=global",
                        f"--random-order-seed={seed}", budget=60)
        if run.proc.returncode == 1:
            break
    else:
        pytest.fail("no seed ran the polluter first")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert "--random-order-bucket=none" in f["repro"], f["repro"]
    assert f"--random-order-seed={seed}" not in f["repro"], f["repro"]
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_REORDER leaked")


def test_pytest_order_reproduction_keeps_its_order(tmp_path: Path) -> None:
    # pytest-order runs the victim first (its marker): the recorded run passes; the hunt's
    # order [polluter, victim] fails it, and the printed command must keep that order,
    # where pytest-order would sort the victim first again.
    root = write_suite(tmp_path / "suite", {"test_zoo.py": """
        import os

        import pytest

        def test_polluter():
            os.environ["ZOO_REORDER"] = "1"

        @pytest.mark.order(1)
        def test_victim():
            assert os.environ.get("ZOO_REORDER") is None, "ZOO_REORDER leaked"
        """})
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode == 0, run.output[-3000:]
    header = run.record().header
    assert header["replay"]["reorders"] == ["pytest-order"], header["replay"]
    hunt = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(run.record_path),
                           "--budget", "300"], cwd=root, env=child_env(), capture_output=True,
                          text=True, timeout=600)
    assert "[LATENT] test_zoo.py::test_victim" in hunt.stdout, hunt.stdout + hunt.stderr
    assert "-p no:pytest_order" in hunt.stdout, hunt.stdout
    check_reproductions(hunt.stdout, root, ["test_victim"], expect="ZOO_REORDER leaked")


def test_pytest_order_left_alone_where_no_test_has_a_marker(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", VICTIM_FIRST)
    run = run_suite(root, tmp_path / "out", "--reverse")
    assert "pytest-order" not in run.record().header["replay"]["reorders"]
    assert "pytest_order" not in run.finding("test_victim")["repro"]


def test_xdist_in_addopts_is_switched_off_by_the_reproduction(tmp_path: Path) -> None:
    # addopts spreads tests over two workers; the run kept the file together (loadfile).
    # The printed command drops --dist, so without -n0 plain pytest would put polluter and
    # victim in two processes and pass.
    files = {"pytest.ini": "[pytest]\naddopts = -n 2\n", "test_zoo.py": """
        import os

        def test_polluter():
            os.environ["ZOO_REORDER"] = "1"

        def test_victim():
            assert os.environ.get("ZOO_REORDER") is None, "ZOO_REORDER leaked"
        """}
    root = write_suite(tmp_path / "suite", files)
    run = run_suite(root, tmp_path / "out", "--dist", "loadfile")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["repro"].split()[-3] == "-n0", f["repro"]
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_REORDER leaked")
