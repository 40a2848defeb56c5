"""Bytes that are not text: file names and environment values a test leaves behind.

A name that is not UTF-8 must be kept exactly (file staging and the replays find the very
file, so the pair is proven), written as valid UTF-8 (``\\udcXX`` escapes a strict JSON reader
accepts and ``os.fsencode`` turns back into the bytes), and shown escaped wherever statesnap
prints it, so a test cannot forge lines or send control sequences to the user's terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pair_runs import CONTROL, run_case

from repro_check import check_reproductions
from suite_runs import child_env

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]


def _file_pair(name: bytes) -> dict[str, str]:
    return {"test_pair.py": f"""
        import os

        NAME = {name!r}

        def test_1_polluter():
            with open(NAME, "wb") as f:
                f.write(b"x")

        def test_2_victim():
            assert not os.path.exists(NAME), "found the polluter's file"
        """}


def _proven(run: object, victim: str, polluter: str) -> dict[str, object]:
    finding = run.finding(victim)  # type: ignore[attr-defined]
    assert finding["status"] == "verified", run.output[-5000:]  # type: ignore[attr-defined]
    assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == [polluter]
    return finding  # type: ignore[no-any-return]


def test_a_file_name_that_is_not_utf8_is_staged_and_the_pair_proven(tmp_path: Path) -> None:
    name = b"flag\xff.txt"
    run = run_case(tmp_path, _file_pair(name))
    finding = _proven(run, "test_2_victim", "test_1_polluter")
    # The key is the exact name: os.fsencode gives back the bytes the test wrote.
    assert finding["probe"] == "files"
    assert os.fsencode(str(finding["key"])) == name
    assert os.fsencode(next(iter(run.changes("files")))) == name
    assert "[VERIFIED]" in run.output
    # The printed reproduction, run as printed, makes the victim fail (the file the run left
    # is gone first: the polluter in the command is what writes it).
    os.unlink(os.path.join(os.fsencode(run.root), name))
    check_reproductions(run.output, run.root, ["test_2_victim"],
                        expect="found the polluter's file")


def test_names_with_newlines_and_escape_codes_are_shown_escaped(tmp_path: Path) -> None:
    name = b"flag\xff\n\x1b[31mFORGED [VERIFIED] line\x1b[0m\x07.txt"
    run = run_case(tmp_path, _file_pair(name))
    _proven(run, "test_2_victim", "test_1_polluter")
    text = run.output
    # Shown as escapes: one line, no forged line, no control sequence.
    assert "flag\\xff\\n\\x1b[31mFORGED [VERIFIED] line\\x1b[0m\\x07.txt" in text
    assert not any(line.lstrip().startswith("\x1b[31mFORGED") or line.startswith("FORGED")
                   for line in text.splitlines())
    env = child_env()
    markdown = subprocess.run(
        [sys.executable, "-m", "statesnap", "explain", "--markdown", "--no-verify",
         str(run.record)], cwd=run.root, env=env, capture_output=True, timeout=120)
    assert markdown.returncode == 0, markdown.stderr[-3000:]
    md = markdown.stdout.decode("utf-8")
    assert not CONTROL.search(md), md
    assert "flag\\xff\\n\\x1b[31mFORGED" in md
    html = run.report.read_text(encoding="utf-8")
    assert "flag\\xff\\n\\x1b[31mFORGED" in html


def test_an_environment_value_that_is_not_utf8_is_kept_exactly(tmp_path: Path) -> None:
    value = b"v\xfe\xff\x1b]0;pwned\x07"
    run = run_case(tmp_path, {"test_env.py": f"""
        import os

        def test_1_polluter():
            os.environ["CHAOS_VALUE"] = os.fsdecode({value!r})

        def test_2_victim():
            assert "CHAOS_VALUE" not in os.environ, "found the polluter's variable"
        """})
    finding = _proven(run, "test_2_victim", "test_1_polluter")
    assert (finding["probe"], finding["key"]) == ("env", "CHAOS_VALUE")
    # Kept losslessly in the record: the same bytes come back.
    assert os.fsencode(run.changes("env")["CHAOS_VALUE"]) == value
    assert "CHAOS_VALUE: ∅ → v\\xfe\\xff\\x1b]0;pwned\\x07" in run.output
    check_reproductions(run.output, run.root, ["test_2_victim"],
                        expect="found the polluter's variable")
