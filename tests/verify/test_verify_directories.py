"""The session's verification of a victim a polluter's leftover directory fails, in the default
order: the recorded run's folders are set aside in the replays (or the victim fails alone and
is called not order-dependent), and the key named is the innermost directory key whose removal
heals it, the one the hunt names (``analysis.keyproof.narrowed_directory``), each step proven
by a replay.  Every printed reproduction runs under plain pytest from a clean tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro_check import check_reproductions, plain_env, reproduce_lines
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow

SUITE = {"test_export.py": '''
    import os

    HERE = os.path.dirname(os.path.abspath(__file__))
    OUT = os.path.join(HERE, "data", "out")


    def test_a_exports():
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, "x.txt"), "w") as fh:
            fh.write("x")


    def test_b_fresh_folder():
        assert not os.path.exists(OUT), "export folder left over"


    def test_c_fresh_files():
        assert not os.path.exists(OUT) or not os.listdir(OUT), "export files left over"
    '''}


def _restored(finding: dict[str, object]) -> list[tuple[list[str], str]]:
    replays = finding["replays"]
    assert isinstance(replays, list)
    return [(r["restored"], r["outcome"]) for r in replays if r["label"] == "key"]


def test_a_leftover_folder_is_proven_by_its_innermost_key(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode == 1, run.output[-3000:]
    assert "2 failed, 1 passed" in run.output, run.output[-3000:]
    assert (root / "data" / "out" / "x.txt").is_file()  # the replays put the run's back

    folder = run.finding("test_b_fresh_folder")
    assert folder["status"] == "verified", run.output[-3000:]
    assert folder["polluters"] == ["test_export.py::test_a_exports"]
    assert (folder["probe"], folder["key"]) == ("files", "data/out/")
    assert folder["proven_keys"] == ["files:data/out/"]
    # data/out/ heals (ranked first: the victim's code names it), and is not narrowed to
    # the file in it: the failure quotes the folder's own path (``exists('…/data/out')``),
    # so putting the file back alone would leave the folder the victim trips over.  data/,
    # which holds it, would heal too, and needs no replay.
    restored = _restored(folder)
    assert (["files:data/out/"], "passed") in restored, folder["replays"]
    assert all(keys != ["files:data/out/x.txt"] for keys, _ in restored), folder["replays"]
    assert all(outcome == "passed" for keys, outcome in restored if keys == ["files:data/"])
    files = run.finding("test_c_fresh_files")
    assert files["status"] == "verified", run.output[-3000:]
    assert (files["probe"], files["key"]) == ("files", "data/out/x.txt")
    assert files["proven_keys"] == ["files:data/out/x.txt"]
    assert ("state: files:data/out/: ∅ → directory (restoring it makes the victim pass)"
            in run.output), run.output[-3000:]
    assert "state: files:data/out/x.txt: ∅ → 1 bytes (restoring it makes the victim pass)" in (
        run.output), run.output[-3000:]

    # From a tree without the run's leftovers, each victim alone passes and each printed
    # reproduction fails it: the polluter's folder is what fails it.
    shutil.rmtree(root / "data")
    for victim in ("test_b_fresh_folder", "test_c_fresh_files"):
        alone = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "-q",
             f"test_export.py::{victim}"], cwd=root, env=plain_env(), capture_output=True,
            text=True, timeout=300)
        assert alone.returncode == 0, alone.stdout[-2000:]
    commands = reproduce_lines(run.output)
    assert len(commands) == 2, run.output[-3000:]
    for command in commands:
        shutil.rmtree(root / "data", ignore_errors=True)
        check_reproductions(f"reproduce: {command}", root,
                            ["test_b_fresh_folder", "test_c_fresh_files"], expect="left over")


def test_the_folder_a_first_run_left_is_named_in_the_second(tmp_path: Path) -> None:
    # Run the suite twice, as users do: the second run starts with the first run's folder
    # there, so the polluter makes nothing new and the victim fails alone.  It is not a
    # genuine failure: with the earlier run's leftovers set aside it passes alone.
    root = write_suite(tmp_path / "suite", SUITE)
    first = run_suite(root, tmp_path / "out", budget=0)
    assert "2 failed, 1 passed" in first.output, first.output[-3000:]
    run = run_suite(root, tmp_path / "out", name="second")
    f = run.finding("test_b_fresh_folder")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_export.py::test_a_exports"]
    assert (f["probe"], f["key"]) == ("files", "data/out/")
    assert "data/out/" in [lo["path"] for lo in f["leftovers"]], f["leftovers"]
    assert "an earlier run left " in f["note"], f["note"]
    assert ("left on disk by an earlier run: data/out/ (written by "
            "test_export.py::test_a_exports)") in run.output, run.output[-3000:]
    # The replays put the folder back as the run left it.
    assert _tree(root / "data") == ["out", "out/x.txt"]
    assert not list((tmp_path / "out").glob("second.logs/aside*")), "a stash was left behind"
    victim = [c for c in reproduce_lines(run.output) if "test_b_fresh_folder" in c]
    assert len(victim) == 1, run.output[-3000:]
    shutil.rmtree(root / "data")
    check_reproductions(f"reproduce: {victim[0]}", root, ["test_b_fresh_folder"],
                        expect="left over")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))
