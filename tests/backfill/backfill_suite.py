"""A small project with two planted polluters, run as CI would run it (``pytest -n 2 -v``).

Run with ``--dist loadfile``, so each file stays in one worker:
``test_admin.py::test_enable_fast_mode`` sets ``ZOO_MODE`` and never removes it, and
``test_admin.py::test_default_mode_is_slow`` expects the default;
``test_registry.py::test_register_night_plugin`` appends to a module-level list and
``test_registry.py::test_registry_starts_empty`` expects it empty.  Fillers pass in any order;
``test_admin.py::test_broken_alone`` fails alone too (not order-dependent).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

FILES = {
    "pytest.ini": """
        [pytest]
        testpaths = tests
    """,
    "zoo/__init__.py": """
        REGISTRY = []
    """,
    "tests/__init__.py": "",
    "tests/conftest.py": """
        import sys, pathlib
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    """,
    "tests/test_admin.py": """
        import os

        def test_admin_filler_1():
            assert 1 + 1 == 2

        def test_enable_fast_mode():
            os.environ["ZOO_MODE"] = "fast"

        def test_admin_filler_2():
            assert "zoo".upper() == "ZOO"

        def test_default_mode_is_slow():
            assert os.environ.get("ZOO_MODE", "slow") == "slow"

        def test_broken_alone():
            assert {}.get("x") == 1, "broken on its own"
    """,
    "tests/test_registry.py": """
        import zoo

        def test_registry_filler():
            assert isinstance(zoo.REGISTRY, list)

        def test_register_night_plugin():
            zoo.REGISTRY.append("night")

        def test_registry_filler_2():
            assert True

        def test_registry_starts_empty():
            assert zoo.REGISTRY == []
    """,
    "tests/test_misc.py": """
        def test_misc_1():
            assert sorted([3, 1, 2]) == [1, 2, 3]

        def test_misc_2():
            assert "a,b".split(",") == ["a", "b"]
    """,
}

VICTIMS = {"tests/test_admin.py::test_default_mode_is_slow":
           ["tests/test_admin.py::test_enable_fast_mode"],
           "tests/test_registry.py::test_registry_starts_empty":
           ["tests/test_registry.py::test_register_night_plugin"]}
GENUINE = "tests/test_admin.py::test_broken_alone"


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def git_init(root: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, text=True,
                              capture_output=True, env={**os.environ,
                              "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
                              "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid"}
                              ).stdout.strip()
    git("init", "-q")
    (root / ".gitignore").write_text("ci/\nout*/\n.pytest_cache/\n__pycache__/\n")
    git("add", "-A")
    git("commit", "-q", "-m", "suite")
    return git("rev-parse", "HEAD")


def run_ci(root: Path, ci: Path, statesnap: bool = True) -> subprocess.CompletedProcess[str]:
    """``pytest -n 2 -v --dist loadfile`` with JUnit XML, pytest-replay files and a record."""
    ci.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "pytest", "-n", "2", "-v", "--dist", "loadfile",
            "-p", "no:randomly", "-p", "no:cacheprovider", f"--junitxml={ci / 'junit.xml'}",
            f"--replay-record-dir={ci}"]
    if statesnap:
        args += ["-p", "statesnap", f"--statesnap-record={ci / 'record.jsonl'}",
                 "--statesnap-verify-budget=0"]
    # Nothing of an outer pytest: under xdist, PYTEST_XDIST_WORKER would make the inner
    # run's pytest-replay name its files after the outer worker.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")
           and not k.startswith("PYTEST_XDIST")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(args, cwd=root, text=True, capture_output=True, env=env,
                          timeout=300, check=False)
    (ci / "console.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return proc


@dataclass
class CiRun:
    """A project checkout and the artifacts its CI run left in ``ci``."""

    root: Path
    ci: Path
    commit: str
