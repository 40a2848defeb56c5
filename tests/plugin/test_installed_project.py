"""A project installed into site-packages (as tox does) still has its modules watched.

The project is really built and installed by pip into a directory named ``site-packages``
outside the rootdir, and its tests import that copy: the ``attributes`` probe must watch it
(named from the distribution declared by the rootdir's ``pyproject.toml``) and say so; when
the installed metadata names no module, the terminal says plainly that it is not watched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "tox-style-proj"
version = "1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""

TESTS = """
import toxstyle


def test_registers():
    toxstyle.REGISTRY.append("x")


def test_registry_is_empty():
    assert toxstyle.REGISTRY == []
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("tox")
    proj, site = base / "proj", base / "env" / "lib" / "site-packages"
    (proj / "src" / "toxstyle").mkdir(parents=True)
    (proj / "tests").mkdir()
    (proj / "pyproject.toml").write_text(PYPROJECT)
    (proj / "src" / "toxstyle" / "__init__.py").write_text("REGISTRY = []\n")
    (proj / "tests" / "test_reg.py").write_text(TESTS)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(proj)],
        check=True, capture_output=True, cwd=base)
    # Only the installed copy can be imported: the source tree is not on the path.
    (proj / "src" / "toxstyle" / "__init__.py").unlink()
    return proj, site


def _run(proj: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
         "--statesnap-probes=attributes", "--statesnap-json=out.json",
         "--statesnap-verify-budget=0"],
        cwd=proj, env={**_env(), "PYTHONPATH": str(site)}, capture_output=True, text=True,
        check=False)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}


def test_the_installed_project_is_watched_and_said(installed: tuple[Path, Path]) -> None:
    proj, site = installed
    result = _run(proj, site)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (f"the project under test, tox-style-proj, is installed at {site}: its modules "
            "(toxstyle) are watched there") in result.stdout
    summary = json.loads((proj / "out.json").read_text())
    leaks = {t["nodeid"]: [x["key"] for x in t["leaks"]] for t in summary["tests"]}
    assert leaks["tests/test_reg.py::test_registers"] == ["toxstyle:REGISTRY"]
    finding = summary["findings"][0]
    assert finding["key"] == "toxstyle:REGISTRY"
    assert finding["polluters"] == ["tests/test_reg.py::test_registers"]


def test_an_install_naming_no_module_is_said_not_watched(
    installed: tuple[Path, Path],
) -> None:
    proj, site = installed
    info = next(site.glob("tox_style_proj-*.dist-info"))
    # Metadata that names no module: no top_level.txt, a RECORD listing only itself.
    (info / "top_level.txt").unlink()
    (info / "RECORD").write_text(f"{info.name}/RECORD,,\n")
    result = _run(proj, site)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "its modules could not be named: their attributes are NOT watched" in result.stdout


def _editable_checkouts(base: Path, source: str) -> tuple[Path, Path, Path]:
    """Two checkouts of one project and a site folder whose editable install (PEP 610
    ``direct_url.json``, as pip writes it) points at ``source`` ("other" or "proj")."""
    proj, other, site = base / "proj", base / "other", base / "site"
    for tree in (proj, other):
        (tree / "src" / "toxstyle").mkdir(parents=True)
        (tree / "src" / "toxstyle" / "__init__.py").write_text("REGISTRY = []\n")
        (tree / "pyproject.toml").write_text(PYPROJECT)
    (proj / "tests").mkdir()
    (proj / "tests" / "test_reg.py").write_text(TESTS)
    info = site / "tox_style_proj-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tox-style-proj\nVersion: 1.0\n")
    # No top_level.txt (as hatchling's editable installs): the modules cannot be named.
    (info / "RECORD").write_text("__editable___tox_style_proj_finder.py,,\n"
                                 "__editable__.tox_style_proj-1.0.pth,,\n")
    url = (base / source).as_uri()
    (info / "direct_url.json").write_text(json.dumps({"dir_info": {"editable": True},
                                                      "url": url}))
    return proj, other, site


def test_an_editable_install_of_another_checkout_is_said(tmp_path: Path) -> None:
    """A second worktree sharing the venv: the tests import the other checkout's code, whose
    modules lie outside the rootdir.  Before, the terminal said nothing and "no test leaked
    state" hid that nothing of the project was watched."""
    proj, other, site = _editable_checkouts(tmp_path, "other")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
         "--statesnap-probes=attributes", "--statesnap-verify-budget=0"],
        cwd=proj, env={**_env(), "PYTHONPATH": os.pathsep.join([str(other / "src"), str(site)])},
        capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout + result.stderr  # the other copy's state
    assert (f"the project under test, tox-style-proj, is installed in editable mode from "
            f"{other.resolve()}, not from the rootdir: the tests import that copy; its modules "
            "are NOT watched (pip install -e . here to test this checkout)") in result.stdout, \
        result.stdout[-3000:]


def test_an_editable_install_of_this_checkout_says_nothing(tmp_path: Path) -> None:
    proj, _, site = _editable_checkouts(tmp_path, "proj")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
         "--statesnap-probes=attributes", "--statesnap-verify-budget=0"],
        cwd=proj, env={**_env(), "PYTHONPATH": os.pathsep.join([str(proj / "src"), str(site)])},
        capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the project under test" not in result.stdout, result.stdout[-3000:]
    assert "tests/test_reg.py::test_registers: toxstyle:REGISTRY:" in result.stdout
