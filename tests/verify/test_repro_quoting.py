"""A printed reproduction runs as printed, whatever its node ids hold.

statesnap escapes what it shows of the tested process (a control, a bidirectional control, a
byte that was not UTF-8: ``statesnap.base.text.printable``), and an escaped node id names no
test.  A command word holding such characters is written in ANSI-C quotes (``$'...'``, the
bytes as ``\\xHH``), so the line is printable text and the shell reads back the exact id.
Real runs of a pair in a folder so named; every printed ``reproduce:`` line (the session's
terminal and ``statesnap explain``) is run with bash, statesnap off, and must fail the victim.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro_check import plain_env, reproduce_lines
from suite_runs import BASE_ARGS, SuiteRun, child_env, write_suite

PAIR = """
    import os

    def test_polluter():
        os.environ["ZOO_QUOTED"] = "1"

    def test_victim():
        assert os.environ.get("ZOO_QUOTED") is None, "ZOO_QUOTED leaked"
    """

#: Folder names whose node ids print escaped: a byte that is not UTF-8 (surrogateescape, as
#: Python lists it), a right-to-left override, an escape byte beside a quote.
def _run(root: Path, out: Path, *args: str) -> SuiteRun:
    """``run_suite``'s run, its output read back with bytes that are not UTF-8 escaped (pytest
    prints the node id's raw bytes on its progress line)."""
    out.mkdir()
    record, summary = out / "run.jsonl", out / "run.json"
    cmd = [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap",
           f"--statesnap-record={record}", f"--statesnap-json={summary}",
           "--statesnap-verify-budget=120", *args]
    proc = subprocess.run(cmd, cwd=root, env=child_env(), capture_output=True, text=True,
                          errors="backslashreplace", timeout=300, stdin=subprocess.DEVNULL)
    return SuiteRun(proc, record, summary)


#: Folder names whose node ids print escaped: a byte that is not UTF-8 (surrogateescape, as
#: Python lists it), a right-to-left override, an escape byte beside a quote.
#: pytest's cache cannot store a node id that is not UTF-8 (an INTERNALERROR of plain pytest
#: at the session's end): that suite runs without it, and so does its printed command.
FOLDERS = {"not-utf8": ("sub\udcff", ["-p", "no:cacheprovider"]),
           "bidi": ("sub\u202eevil", []), "escape": ("sub\x1bq'x", [])}


@pytest.mark.skipif(shutil.which("bash") is None, reason="the printed line is run with bash")
@pytest.mark.parametrize(("folder", "args"), list(FOLDERS.values()), ids=list(FOLDERS))
def test_a_node_id_that_prints_escaped_runs_as_printed(tmp_path: Path, folder: str,
                                                        args: list[str]) -> None:
    root = write_suite(tmp_path / "suite", {f"{folder}/test_zoo.py": PAIR})
    run = _run(root, tmp_path / "out", *args)
    finding = run.finding("test_victim")
    assert finding["status"] == "verified", run.output[-3000:]
    explain = subprocess.run([sys.executable, "-m", "statesnap", "explain",
                              str(run.record_path)], cwd=root, env=child_env(),
                             capture_output=True, text=True, timeout=300)
    assert explain.returncode == 0, explain.stderr
    lines = reproduce_lines(run.output) + reproduce_lines(explain.stdout)
    assert lines, run.output[-3000:]
    # What the terminal shows is the command itself, nothing escaped on the way.
    assert finding["repro"] in lines, (finding["repro"], lines)
    assert "$'" in finding["repro"], finding["repro"]
    for line in dict.fromkeys(lines):
        assert line.isprintable(), line
        proc = subprocess.run(["bash", "-c", line], cwd=root, env=plain_env(),
                              capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL, errors="backslashreplace")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, (line, out[-3000:])
        assert "ZOO_QUOTED leaked" in out, (line, out[-3000:])
        assert "1 failed" in out, (line, out[-3000:])
