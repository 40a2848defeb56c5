"""Golden reports: committed records in, scrubbed pollution.html out, compared by the tests.

    .venv/bin/python tests/report/report_golden.py            # rewrite snapshots/report/*.html
    .venv/bin/python tests/report/report_golden.py --record   # also re-record the sample run

Inputs live under ``snapshots/records/``:

- ``format1-sample.jsonl`` (+ ``.findings.json``): a real ``pytest -p statesnap`` run of the
  small suite in :data:`SAMPLE_SUITE` (env, sys.path and third-party-probe leaks, two verified
  victims, a genuine failure, hostile parametrize ids), with paths, times, pids and the
  environment normalised so that re-recording on another machine changes little.  It is also
  the golden record of format 1: a later statesnap must still read it.
- ``format2-sample.jsonl`` (+ ``.findings.json``, ``.logs/``): the same suite recorded by
  format-2 statesnap (the verdicts stored after the footer, the replay logs the report
  embeds).  Kept as it is: the golden record of format 2.
- ``format3-sample.jsonl`` (+ ``.findings.json``, ``.logs/``): the current format, what
  re-recording writes.  The suite changes ``sample_app:SETTINGS`` in two tests in a row (the
  second change ``chained``) and binds it under a second name (an ``aliases`` line).
- ``xdist-gw0.jsonl`` / ``xdist-gw1.jsonl``: two workers written with RecordWriter by
  :func:`write_xdist_records` (gauges with a polluter's step, a crash, a probe error).

Volatile parts of the page (the generation time, the statesnap version, header times and
pids) and the inlined stylesheet and script (covered by the browser tests) are scrubbed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report_records import HOSTILE_IDS, entry, env_added, header, write_record

from statesnap.analysis.findings import Finding
from statesnap.analysis.verdicts import findings_of
from statesnap.output.report import build_html
from statesnap.record.journal import Record
from statesnap.record.reader import read_record

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "snapshots" / "records"
REPORTS = ROOT / "snapshots" / "report"
#: The footer's timestamp in every golden report (scrubbed anyway).
GENERATED = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
SAMPLE_ROOT = "/src/sample"
ARTIFACTS_DIR = "/ci/artifacts"
KEPT_PACKAGES = ("pytest", "pluggy", "statesnap", "psutil", "deepdiff", "Jinja2")
KEPT_ENV = ("HOME", "LANG", "PATH", "CI")

SAMPLE_SUITE: dict[str, str] = {
    "sample_app.py": '''\
"""A tiny application whose module-level state the sample tests pollute."""
REGISTRY: list[str] = []
SETTINGS = {"mode": "safe", "retries": 3}
''',
    "conftest.py": '''\
import os

import pytest
import sample_app
from statesnap.probes.base import Probe, Severity


class RegistryProbe(Probe):
    """A third-party probe: the application's handler registry, plotted as a gauge."""

    name = "registry"
    severity = Severity.MEDIUM

    def token(self):
        return len(sample_app.REGISTRY)

    def read(self):
        return {f"entry:{i}": v for i, v in enumerate(sample_app.REGISTRY)}

    def gauges(self, current):
        return {"registry_entries": len(current)}


def pytest_statesnap_add_probes(config):
    return [RegistryProbe()]


@pytest.fixture(scope="module")
def sample_db():
    os.environ["SAMPLE_DB"] = "sqlite://"
    yield
    del os.environ["SAMPLE_DB"]
''',
    "test_config.py": '''\
import os
import sys

import pytest
import sample_app


def test_enable_fast_mode():
    os.environ["SAMPLE_MODE"] = "fast"


def test_uses_db(sample_db):
    assert os.environ["SAMPLE_DB"] == "sqlite://"


def test_adds_plugin_dir():
    sys.path.append("/opt/sample-plugins")


def test_registers_handler():
    sample_app.REGISTRY.append("audit-handler")
    sample_app.REGISTRY.append("metrics-handler")


@pytest.mark.parametrize("label", ["<script>window.__pwned=1</script>",
                                   '"><img src=x onerror="window.__pwned=2">'])
def test_hostile_ids(label):
    os.environ["SAMPLE_LABEL"] = label


@pytest.mark.parametrize("seconds", [10, 20])
def test_sets_timeout(seconds):
    # The same key changed twice: the second change's before is the first's after.
    sample_app.SETTINGS["timeout"] = seconds


@pytest.mark.skip(reason="needs a GPU")
def test_needs_gpu():
    pass


@pytest.mark.xfail(reason="known bug", strict=True)
def test_known_bug():
    assert sample_app.SETTINGS["retries"] == 5


def test_genuinely_broken():
    assert sample_app.SETTINGS["mode"] == "turbo"
''',
    "test_victims.py": '''\
import os

import sample_app
from sample_app import SETTINGS  # an alias of sample_app:SETTINGS


def test_default_mode_is_safe():
    assert os.environ.get("SAMPLE_MODE", "safe") == "safe"


def test_registry_starts_empty():
    assert sample_app.REGISTRY == []


def test_settings_have_no_timeout():
    assert "timeout" not in SETTINGS


def test_unrelated():
    assert 1 + 1 == 2
''',
}


# -- inputs -----------------------------------------------------------------------------------
def _normalise_line(obj: dict[str, Any], started: float) -> dict[str, Any]:
    kind = obj.get("type")
    if kind == "header":
        obj.update(started=started, pid=1000, run_id="sample")
        obj["python"]["executable"] = "/usr/bin/python3"
        obj["packages"] = {k: v for k, v in obj.get("packages", {}).items() if k in KEPT_PACKAGES}
        obj["env"] = {k: v for k, v in obj.get("env", {}).items() if k in KEPT_ENV}
        if "PATH" in obj["env"]:
            obj["env"]["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    elif kind == "test":
        obj["duration"] = round(0.0015 + 0.0005 * (int(obj["index"]) % 4), 6)
    elif kind == "footer":
        obj["finished"] = started + 7.0
    return obj


def record_sample(python: str = sys.executable, stem: str = "format3-sample") -> None:
    """Run the sample suite with statesnap and store its normalised record, findings and
    replay logs (``format1-sample`` and ``format2-sample`` were recorded by format-1 and
    format-2 statesnap: keep them as they are; a new format gets a new stem)."""
    with tempfile.TemporaryDirectory(prefix="statesnap-sample-") as tmp:
        # The record lives outside the suite, as a CI artifact would: inside the rootdir the
        # ``files`` probe would see it grow.
        suite, out = Path(tmp) / "sample", Path(tmp) / "artifacts"
        suite.mkdir()
        out.mkdir()
        for name, text in SAMPLE_SUITE.items():
            (suite / name).write_text(text, encoding="utf-8")
        subprocess.run(
            [python, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
             "-p", "no:cacheprovider", "-q", "--statesnap-record", str(out / "run.jsonl"),
             "--statesnap-json", str(out / "summary.json")],
            cwd=suite, check=False, capture_output=True, text=True, timeout=600,
        )
        real = str(suite.resolve())

        def fix(text: str) -> str:
            for base in {str(out.resolve()), str(out)}:
                text = text.replace(f"{base}/run.logs/", f"{stem}.logs/")
                text = text.replace(base, ARTIFACTS_DIR)
            text = text.replace('"run.logs/', f'"{stem}.logs/')  # stored relative to it
            text = text.replace(str(ROOT), "/src/statesnap")
            return text.replace(real, SAMPLE_ROOT).replace(str(suite), SAMPLE_ROOT)

        lines = []
        for text in (out / "run.jsonl").read_text(encoding="utf-8").splitlines():
            lines.append(json.dumps(_normalise_line(json.loads(fix(text)), GENERATED - 60),
                                    ensure_ascii=False, separators=(",", ":")))
        RECORDS.mkdir(parents=True, exist_ok=True)
        (RECORDS / f"{stem}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        summary = json.loads(fix((out / "summary.json").read_text(encoding="utf-8")))
        (RECORDS / f"{stem}.findings.json").write_text(
            json.dumps(summary["findings"], indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8")
        # The replay logs the report embeds (the rest of the logs folder is not needed).
        logs = RECORDS / f"{stem}.logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        for log in sorted((out / "run.logs").glob("*.log")):
            text = fix(log.read_text(encoding="utf-8"))
            text = re.sub(r"statesnap-replay-cache-[\w-]+", "statesnap-replay-cache", text)
            text = re.sub(r" in \d+\.\d+s", " in 0.01s", text)
            text = text.replace(str(ROOT).lstrip("/"), "statesnap").replace(sys.executable,
                                                                            "/usr/bin/python3")
            (logs / log.name).write_text(text, encoding="utf-8")


def write_xdist_records() -> None:
    """Two xdist workers: gauges with a polluter's step, one worker crashed mid-test."""
    gw0 = []
    for i in range(40):
        gauges = {"fds": 9 + (3 if i >= 12 else 0), "threads": 1 + (i >= 25),
                  "gpu_mem": (64 << 20) + ((256 << 20) if i >= 30 else 0)}
        changes = []
        if i == 12:
            changes = [{"probe": "fds", "key": "fd:9", "change": "added", "before": None,
                        "after": "socket 127.0.0.1:8080", "phase": "call", "severity": 3}]
        if i == 20:
            changes = [{"probe": "logging", "key": "logger:app", "change": "changed",
                        "before": {"level": "WARNING", "handlers": ["StreamHandler"]},
                        "after": {"level": "DEBUG", "handlers": ["StreamHandler",
                                                                 "FileHandler(/tmp/app.log)"]},
                        "phase": "setup", "fixture": "verbose_logs", "scope": "function"}]
        nodeid = HOSTILE_IDS[0] if i == 5 else f"tests/test_net.py::test_case_{i}"
        if i == 7:
            changes = [env_added("APP_TOKEN", "<redacted:0a1b2c3d4e5f>")]
        gw0.append(entry(i, nodeid, "failed" if i == 33 else "passed", worker="gw0",
                         changes=changes, gauges=gauges,
                         failure={"phase": "call", "exc_type": "OSError",
                                  "message": "[Errno 98] Address already in use",
                                  "text": "E   OSError: [Errno 98] Address already in use"}
                         if i == 33 else None))
    gw1 = [entry(i, f"tests/test_db.py::test_query[{i}]", "skipped" if i == 3 else "passed",
                 worker="gw1", gauges={"fds": 9, "threads": 1, "gpu_mem": 64 << 20})
           for i in range(25)]
    RECORDS.mkdir(parents=True, exist_ok=True)
    write_record(RECORDS / "xdist-gw0.jsonl", gw0, head=header("gw0"))
    write_record(RECORDS / "xdist-gw1.jsonl", gw1, head=header("gw1"), footer=False,
                 running="tests/test_db.py::test_segfaults_in_c_extension",
                 errors=[{"probe": "threads", "where": "read", "index": 10,
                          "error": "RuntimeError: dictionary changed size during iteration"}])


def _xdist_findings() -> list[Finding]:
    return [Finding(
        victim="tests/test_net.py::test_case_33", polluters=["tests/test_net.py::test_case_12"],
        probe="fds", key="fd:9", status="suspected", worker="gw0", before=None,
        after="socket 127.0.0.1:8080", exc_type="OSError",
        message="[Errno 98] Address already in use",
        hint="close the socket in the test, or use a fixture that closes it")]


# -- goldens ----------------------------------------------------------------------------------
@dataclass
class Golden:
    name: str
    records: list[str]
    findings: Callable[[], list[Finding]]

    def inputs(self) -> list[Record]:
        return [read_record(RECORDS / r) for r in self.records]

    def render(self) -> str:
        return scrub(build_html(self.inputs(), self.findings(), report_dir=REPORTS,
                                generated=GENERATED))

    @property
    def path(self) -> Path:
        return REPORTS / f"{self.name}.html"


def _sample_findings() -> list[Finding]:
    data = json.loads((RECORDS / "format1-sample.findings.json").read_text(encoding="utf-8"))
    return [Finding.from_json(f) for f in data]


def _stored_findings(stem: str) -> Callable[[], list[Finding]]:
    """What ``statesnap report`` shows: the verdicts the run stored in its record."""
    return lambda: findings_of(read_record(RECORDS / f"{stem}.jsonl"))


GOLDENS = (
    Golden("format1-sample", ["format1-sample.jsonl"], _sample_findings),
    Golden("format2-sample", ["format2-sample.jsonl"], _stored_findings("format2-sample")),
    Golden("xdist-crash", ["xdist-gw0.jsonl", "xdist-gw1.jsonl"], _xdist_findings),
    Golden("format3-sample", ["format3-sample.jsonl"], _stored_findings("format3-sample")),
)

_VOLATILE = re.compile(r'(<span class="volatile">)[^<]*(</span>)')
_STYLE = re.compile(r"<style>.*?</style>", re.S)
_SCRIPT = re.compile(r"<script>.*?</script>", re.S)
_CSP = re.compile(r'(http-equiv="Content-Security-Policy" content=")[^"]*(")')
_GENERATOR = re.compile(r'(<meta name="generator" content=")[^"]*(")')


def scrub(html: str) -> str:
    """The page without what changes on every run or with every stylesheet/script edit."""
    html = _VOLATILE.sub(r"\1…\2", html)
    html = _STYLE.sub("<style>/* static/report.css */</style>", html)
    html = _SCRIPT.sub("<script>/* static/report.js */</script>", html)
    html = _CSP.sub(r"\1…\2", html)
    return _GENERATOR.sub(r"\1statesnap\2", html)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the golden reports.")
    parser.add_argument("--record", action="store_true",
                        help="also re-record the sample run (runs pytest on the sample suite)")
    args = parser.parse_args(argv)
    if args.record:
        record_sample()
    write_xdist_records()
    REPORTS.mkdir(parents=True, exist_ok=True)
    for golden in GOLDENS:
        golden.path.write_text(golden.render(), encoding="utf-8")
        print(f"wrote {golden.path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
