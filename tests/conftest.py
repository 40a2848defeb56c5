"""Shared test setup.

pytest-randomly is installed for its own tests; everywhere else it would shuffle the inner
pytester runs, so it is switched off unless a test asks for it with ``-p randomly``.
"""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester", "ci_skips"]

# The inner sessions of these tests are not the CI job's: on GitHub Actions each would append
# its findings to the job summary and print annotations (statesnap.contain.ci).  Tests of that
# feature set these variables themselves.
for _name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "GITHUB_WORKSPACE"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _no_random_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Pytester deletes PYTEST_ADDOPTS when it is created, after the autouse fixture above ran;
    # set it again so inner runs (inline and subprocess) keep the written order too.
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    return pytester
