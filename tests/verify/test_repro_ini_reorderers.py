"""A reordering plugin switched on by the ini file, whose off switch plain pytest refuses.

- ``addopts = --reverse``: ``-p no:reverse`` leaves the ini's ``--reverse`` an unrecognised
  argument (pytest exits 4, the replays too).  The command keeps pytest-reverse on and names
  its node ids reversed, so that pytest-reverse runs them in the proven order.
- pytest-order under ``--strict-markers``: ``-p no:pytest_order`` makes its ``order`` marker
  unknown, a collection error.  The command adds ``-o strict_markers=false`` (after addopts,
  so it wins): the marker is then a warning, and the named order runs.

Real runs with the plugins installed; every printed command is run as printed under plain
pytest (the same plugins installed, statesnap off) and must fail the victim.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from repro_check import check_reproductions
from suite_runs import child_env, run_suite, write_suite

VICTIM_FIRST = """
    import os

    def test_victim():
        assert os.environ.get("ZOO_INI") is None, "ZOO_INI leaked"

    def test_polluter():
        os.environ["ZOO_INI"] = "1"
    """


def test_reverse_in_the_ini_file_is_kept_and_the_ids_named_reversed(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"pytest.ini": "[pytest]\naddopts = --reverse\n",
                                            "test_zoo.py": VICTIM_FIRST})
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode == 1, run.output[-3000:]
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert "no:reverse" not in f["repro"], f["repro"]
    # pytest-reverse reverses what it is given: the victim is named first, runs last.
    words = f["repro"].split()
    assert words[-2].endswith("::test_victim") and words[-1].endswith("::test_polluter"), words
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_INI leaked")


def test_pytest_order_blocked_under_strict_markers(tmp_path: Path) -> None:
    # pytest-order runs the victim first (its marker): the recorded run passes; the hunt's
    # order [polluter, victim] fails it, and the printed command blocks pytest-order, whose
    # marker --strict-markers (in addopts) would then refuse.
    root = write_suite(tmp_path / "suite", {
        "pytest.ini": "[pytest]\naddopts = --strict-markers\n",
        "test_zoo.py": """
        import os

        import pytest

        def test_polluter():
            os.environ["ZOO_INI"] = "1"

        @pytest.mark.order(1)
        def test_victim():
            assert os.environ.get("ZOO_INI") is None, "ZOO_INI leaked"
        """})
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode == 0, run.output[-3000:]
    assert run.record().header["replay"]["reorders"] == ["pytest-order"]
    hunt = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(run.record_path),
                           "--budget", "300"], cwd=root, env=child_env(), capture_output=True,
                          text=True, timeout=600)
    assert "[LATENT] test_zoo.py::test_victim" in hunt.stdout, hunt.stdout + hunt.stderr
    assert "-p no:pytest_order -o strict_markers=false" in hunt.stdout, hunt.stdout
    check_reproductions(hunt.stdout, root, ["test_victim"], expect="ZOO_INI leaked")


def test_reverse_in_pytest_addopts_is_kept_and_the_command_says_it(tmp_path: Path) -> None:
    # ``PYTEST_ADDOPTS=--reverse`` (a CI job's environment): ``-p no:reverse`` made every
    # replay and the printed line stop on "unrecognized arguments: --reverse", nothing proven.
    # The command keeps pytest-reverse on and says ``--reverse`` itself, so it runs in the
    # proven order in that environment and in a shell without it.
    reversed_env = {"PYTEST_ADDOPTS": "-p no:randomly --reverse"}
    root = write_suite(tmp_path / "suite", {"test_zoo.py": VICTIM_FIRST})
    run = run_suite(root, tmp_path / "out", env=reversed_env)
    assert run.proc.returncode == 1, run.output[-3000:]
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert "no:reverse" not in f["repro"] and " --reverse " in f["repro"], f["repro"]
    words = f["repro"].split()
    assert words[-2].endswith("::test_victim") and words[-1].endswith("::test_polluter"), words
    check_reproductions(run.output, root, ["test_victim"], env=reversed_env,
                        expect="ZOO_INI leaked")
    check_reproductions(run.output, root, ["test_victim"], expect="ZOO_INI leaked")
