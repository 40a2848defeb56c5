"""A report of a run without findings loads and compiles only what it shows (issue 28: the
report's share of statesnap's own start)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHECK = """
import json, sys
from pathlib import Path
from statesnap.output import delta
from statesnap.output.report import write_report
from statesnap.record.reader import read_record

write_report(Path(sys.argv[2]), [read_record(Path(sys.argv[1]))], [])
print(json.dumps({"causes": "statesnap.analysis.causes" in sys.modules,
                  "tail": delta._tail.cache_info().currsize}))
"""


def test_a_report_without_findings_or_changed_values_loads_neither_grouping_nor_delta_pattern(
        tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import os\n\n"
        "def test_adds():\n    os.environ['STATESNAP_LAZY_T'] = '1'\n\n"
        "def test_other():\n    pass\n")
    record = tmp_path / "r.jsonl"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "-p", "statesnap",
                          f"--statesnap-record={record}"],
                         cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "STATESNAP_LAZY_T" in record.read_text()  # the report shows one added key
    page = tmp_path / "page.html"
    out = subprocess.run([sys.executable, "-c", CHECK, str(record), str(page)],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"causes": False, "tail": 0}
    assert "STATESNAP_LAZY_T" in page.read_text()
