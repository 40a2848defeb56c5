"""The probe of docs/writing-a-probe.md works as the page says, pasted as it stands.

The page's conftest.py is taken from the Markdown and run in a real pytest session with
statesnap: a test that registers a file type leaks ``mimetypes:.zoo``, a later test that needs
the default fails, and statesnap proves it against that key.  A guide whose
example does not run teaches nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from repro_check import check_reproductions

PAGE = Path(__file__).resolve().parents[2] / "docs" / "writing-a-probe.md"

TESTS = '''
import mimetypes

mimetypes.init()  # the table loaded, as the suite's first lookup would


def test_registers_zoo_files():
    mimetypes.add_type("text/x-zoo", ".zoo")


def test_zoo_files_are_unknown_by_default():
    assert mimetypes.guess_type("animals.zoo") == (None, None)
'''


def conftest_of_the_page() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if b.startswith("# conftest.py")]
    return block


@pytest.mark.slow
def test_the_guide_s_probe_proves_its_victim(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(conftest_of_the_page(), encoding="utf-8")
    (suite / "test_mime.py").write_text(TESTS, encoding="utf-8")
    summary = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-p", "statesnap", f"--statesnap-json={summary}",
         f"--statesnap-record={tmp_path / 'r.jsonl'}"],
        cwd=suite, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads(summary.read_text(encoding="utf-8"))
    leaks = {t["nodeid"]: [(lk["probe"], lk["key"]) for lk in t["leaks"]] for t in data["tests"]}
    assert ("mimetypes", ".zoo") in leaks["test_mime.py::test_registers_zoo_files"]
    [finding] = data["findings"]
    assert finding["victim"] == "test_mime.py::test_zoo_files_are_unknown_by_default"
    assert finding["status"] == "verified", proc.stdout[-3000:]
    assert finding["polluters"] == ["test_mime.py::test_registers_zoo_files"]
    assert finding["proven_keys"] == ["mimetypes:.zoo"]
    # The printed reproduction, run as printed under plain pytest, fails the victim.
    check_reproductions(proc.stdout, suite, [finding["victim"]], expect="text/x-zoo")
