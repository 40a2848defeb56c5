"""Under ``CI=true`` a test that needs a tool CI installs fails where it would skip.

``make test`` installs gcc (the NVML stand-in), Debian's Chromium (the browser tests) and the
test extra (numpy, playwright); on CI a skip of such a test means that install broke, and a
silent skip would hide it.  Marked tests: ``browser``, ``needs_gcc``, ``needs_numpy``,
``needs_scistack``, ``needs_pidns``, ``needs_mountns``.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

#: Markers of tests CI must run, with what installs their tool.
REQUIRED_IN_CI = {
    "browser": "`make chromium` (Debian's chromium) and the test extra (playwright)",
    "needs_gcc": "gcc (`make test` installs it with apt when missing)",
    "needs_numpy": "the test extra (`pip install -e '.[test]'`)",
    "needs_scistack": "the test extra (pandas, matplotlib, scikit-learn)",
    "needs_pidns": "util-linux's unshare, run as root (tests/pidns.py)",
    "needs_mountns": "util-linux's unshare and mount, run as root (tests/chaos/mountns.py)",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_configure(config: pytest.Config) -> None:
    for name, tool in REQUIRED_IN_CI.items():
        config.addinivalue_line("markers", f"{name}: needs {tool}; never skipped under CI=true")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    if not isinstance(report, pytest.TestReport) or not report.skipped or not in_ci():
        return report
    if hasattr(report, "wasxfail"):
        return report
    needed = [name for name in REQUIRED_IN_CI if item.get_closest_marker(name) is not None]
    if needed:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (f"{reason}\nCI=true: this test must run on CI, not skip; install "
                           + "; ".join(REQUIRED_IN_CI[n] for n in needed))
    return report
