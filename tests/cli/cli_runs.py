"""Recorded runs the CLI tests share: made once per module, read (and replayed) many times."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from suite_runs import SuiteRun, run_suite, write_suite

#: ``test_a`` pollutes, ``test_c`` and ``test_d`` pollute together, ``test_broken`` is broken.
ZOO_SUITE = {
    "test_zoo.py": '''
        import os

        def test_a_sets_mode():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_victim():
            assert os.environ.get("ZOO_MODE") is None

        def test_broken():
            assert 2 + 2 == 5
        ''',
    "test_pair.py": '''
        import os

        def test_c_sets_host():
            os.environ["ZOO_HOST"] = "remote"

        def test_d_sets_port():
            os.environ["ZOO_PORT"] = "99"

        def test_e_neutral():
            pass

        def test_f_needs_both():
            assert not (os.environ.get("ZOO_HOST") and os.environ.get("ZOO_PORT"))
        ''',
}


@dataclass
class Recorded:
    root: Path
    run: SuiteRun

    @property
    def record(self) -> Path:
        return self.run.record_path

    def own_copy(self, where: Path) -> Path:
        """A copy of the record for a test that replays: ``explain --verify`` stores what it
        proves in the record it read, which the module's other tests share."""
        copy = where / "own.jsonl"
        shutil.copyfile(self.record, copy)
        return copy


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The zoo suite recorded without in-session verification (the CLI does it)."""
    base = tmp_path_factory.mktemp("zoo")
    root = write_suite(base / "suite", ZOO_SUITE)
    run = run_suite(root, base / "out", "test_zoo.py", "test_pair.py", budget=0)
    assert run.proc.returncode == 1, run.output[-3000:]
    return Recorded(root, run)
