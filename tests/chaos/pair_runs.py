"""One chaos case: the same small suite run by plain pytest and by pytest with statesnap.

A case is a suite whose tests do something hostile to statesnap (a file name that is not
UTF-8, a global whose ``items()`` raises) beside a planted polluter→victim pair.
:func:`run_case` writes the suite twice (each run starts from the same files: the polluter's
leftovers of one run must not meet the other), runs plain pytest on one copy and
``pytest -p statesnap`` (record, summary JSON and report asked for) on the other, inside a
fresh pid namespace (replays signal process groups: ``tests/pidns.py``), and checks what every
case must give:

- the same outcomes, exit code and summary line as plain pytest;
- no traceback of statesnap's, no probe switched off, no error of its own;
- a record that is valid UTF-8 JSON Lines (``json.loads`` of each line's bytes), read back by
  ``statesnap explain``; the summary JSON and the report valid UTF-8;
- no control character in statesnap's output that plain pytest's did not print.

What is particular to a case (the pair's verdict, a key's value) the test checks itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pidns
from suite_runs import child_env, summary_line

#: ``PASSED test_a.py::t`` lines of ``-rA``'s short summary: a test's outcome.
_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", re.MULTILINE)
#: Characters that act on a terminal: C0 controls but newline and tab, DEL, C1 controls.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rA")


@dataclass
class CaseRun:
    """Both runs of a case, and statesnap's files."""

    plain: subprocess.CompletedProcess[bytes]
    snap: subprocess.CompletedProcess[bytes]
    root: Path
    record: Path
    summary: Path
    report: Path

    @property
    def output(self) -> str:
        """statesnap's run's output as text (bytes that are not UTF-8 escaped)."""
        return (self.snap.stdout + self.snap.stderr).decode("utf-8", "backslashreplace")

    def summary_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.summary.read_bytes())
        return data

    def finding(self, victim: str) -> dict[str, Any]:
        found = [f for f in self.summary_json()["findings"] if f["victim"].endswith(victim)]
        assert len(found) == 1, (victim, self.output[-4000:])
        return found[0]

    def record_lines(self) -> list[dict[str, Any]]:
        """Every line of the record, each parsed from its bytes (strict UTF-8 JSON)."""
        return [json.loads(line) for line in self.record.read_bytes().splitlines()]

    def changes(self, probe: str) -> dict[str, Any]:
        """``{key: after}`` of every recorded change of ``probe``."""
        out: dict[str, Any] = {}
        for line in self.record_lines():
            for ch in line.get("changes") or []:
                if line.get("type") in ("test", "collection") and ch["probe"] == probe:
                    out[ch["key"]] = ch["after"]
        return out


def write(root: Path, files: Mapping[str, str]) -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, source in files.items():
        (root / name).write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")


def outcomes(out: bytes) -> dict[str, str]:
    return {m.group(2): m.group(1)
            for m in _OUTCOME.finditer(out.decode("utf-8", "backslashreplace"))}


def run_case(tmp_path: Path, files: Mapping[str, str], timeout: float = 300) -> CaseRun:
    """Run the suite ``files`` both ways and check what every chaos case must give."""
    pidns.require()
    plain_root, root, out = tmp_path / "plain", tmp_path / "snap", tmp_path / "out"
    write(plain_root, files)
    write(root, files)
    out.mkdir()
    env = child_env()
    plain = subprocess.run([sys.executable, "-m", "pytest", *_ARGS], cwd=plain_root, env=env,
                           capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    record, summary, report = out / "run.jsonl", out / "run.json", out / "pollution.html"
    cmd = [sys.executable, "-m", "pytest", *_ARGS, "-p", "statesnap",
           f"--statesnap-record={record}", f"--statesnap-json={summary}", f"--report={report}"]
    snap = subprocess.run(pidns.wrap(cmd), cwd=root, env=env, capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    run = CaseRun(plain, snap, root, record, summary, report)
    text = run.output
    assert pidns.bystander_survived(snap.stderr.decode("utf-8", "backslashreplace"))
    # The namespace's first process adds its own line to stderr: compare stdout.
    assert snap.returncode == plain.returncode, (plain.stdout[-3000:], text[-5000:])
    said = summary_line(plain.stdout.decode("utf-8", "backslashreplace"))
    assert said is not None, plain.stdout[-3000:]
    assert summary_line(snap.stdout.decode("utf-8", "backslashreplace")) == said, text[-5000:]
    assert outcomes(snap.stdout) == outcomes(plain.stdout), text[-5000:]
    assert outcomes(plain.stdout), plain.stdout[-3000:]
    for sign in ("Traceback (most recent call last)", "INTERNALERROR", "switched off",
                 "error(s) of its own", "cannot write", "was not written"):
        assert sign not in text, (sign, text[-5000:])
    # Valid UTF-8 JSON Lines, parsed from bytes as a strict reader would.
    assert len(run.record_lines()) > 2
    run.summary_json()
    run.report.read_bytes().decode("utf-8")
    plain_controls = set(CONTROL.findall(plain.stdout.decode("utf-8", "backslashreplace")))
    snap_controls = set(CONTROL.findall(snap.stdout.decode("utf-8", "backslashreplace")))
    assert snap_controls <= plain_controls, (snap_controls - plain_controls, text[-5000:])
    assert not CONTROL.search(run.report.read_text(encoding="utf-8"))
    explain = subprocess.run([sys.executable, "-m", "statesnap", "explain", str(record)],
                             cwd=root, env=env, capture_output=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    assert explain.returncode == 0, explain.stderr[-3000:]
    assert not CONTROL.search(explain.stdout.decode("utf-8")), explain.stdout[-3000:]
    return run
