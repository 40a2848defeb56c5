"""pytest's own setup of a package is nobody's leak (toolz: ``toolz/tests/`` without an
``__init__.py`` inside the ``toolz`` package).

Before the first test under ``pkg/``, pytest's ``Package.setup`` imports ``pkg/__init__.py``
under the ``prepend`` import mode and inserts the rootdir at ``sys.path[0]`` a second time
(``pkg/tests`` is first since collection).  The first test, which runs no code of its own,
was reported with a HIGH ``syspath`` leak and errored at teardown under ``--statesnap-strict``.
A ``setup_module`` in the ``__init__.py`` is the user's code: what it changes stays a leak.
Real pytest runs in subprocesses, compared with plain pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from suite_runs import child_env, run_suite, write_suite

SUITE = {
    "pkg/__init__.py": "VALUE = 1\n",
    "pkg/tests/test_a.py": '''
        import pkg

        def test_first():
            assert pkg.VALUE == 1

        def test_second():
            assert pkg.VALUE == 1
        ''',
}

WITH_MODULE_SETUP = {
    **SUITE,
    "pkg/__init__.py": '''
        import os

        VALUE = 1

        def setup_module():
            os.environ["PKG_SETUP_DONE"] = "1"  # the user's: never undone
        ''',
}


def _plain(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"], cwd=root,
                          env=child_env(), capture_output=True, text=True, timeout=300)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_pytests_package_import_is_no_leak_and_no_strict_error(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    plain = _plain(root)
    assert plain.returncode == 0, plain.stdout[-2000:]

    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 0, run.output[-3000:]
    assert "no test leaked state" in run.proc.stdout, run.proc.stdout[-3000:]
    summary = json.loads(run.json_path.read_text(encoding="utf-8"))
    assert not [t["nodeid"] for t in summary["tests"] if t["leaked"]], summary["tests"]
    assert _last_line(run.proc.stdout).split(" in ")[0] == \
        _last_line(plain.stdout).split(" in ")[0]
    # The record still shows what happened, labelled as pytest's own.
    first = next(t for t in run.record().tests if t.nodeid.endswith("::test_first"))
    inserted = [c for c in first.changes if c.probe == "syspath"]
    assert inserted, first.changes
    assert {c.fixture for c in inserted} == {"pytest's import of a package's __init__.py"}

    strict = run_suite(root, tmp_path / "out", "-q", "--statesnap-strict", name="strict")
    assert strict.proc.returncode == 0, strict.output[-3000:]
    assert "StateLeaked" not in strict.output
    assert _last_line(strict.proc.stdout).split(" in ")[0] == "2 passed"


def test_a_setup_module_in_the_package_init_stays_the_users_leak(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", WITH_MODULE_SETUP)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 0, run.output[-3000:]
    assert "pkg/tests/test_a.py::test_first: PKG_SETUP_DONE: ∅ → 1" in run.proc.stdout, \
        run.proc.stdout[-3000:]

    strict = run_suite(root, tmp_path / "out", "-q", "--statesnap-strict=env", name="strict")
    assert strict.proc.returncode == 1, strict.output[-3000:]
    assert "env:PKG_SETUP_DONE" in strict.proc.stdout
