"""Progress of the session's replays: one updating line on a terminal, one line per victim in
a log.  Real sessions, one with its output in a pseudo-terminal, one piped (as in CI).

Before, every replay printed a line of its own (``statesnap: replaying A → B``), 164 of them
for a 20-victim session.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from suite_runs import BASE_ARGS, child_env, write_suite

SUITE = {
    "test_zoo.py": """
        import os

        def test_a_polluter():
            os.environ["ZOO_P"] = "1"

        def test_b_other():
            os.environ["ZOO_Q"] = "1"

        def test_c_victim():
            assert os.environ.get("ZOO_P") is None, "ZOO_P leaked"

        def test_d_victim():
            assert os.environ.get("ZOO_Q") is None, "ZOO_Q leaked"
        """,
}


def _cmd(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", *BASE_ARGS, "-p", "statesnap", "-q",
            f"--statesnap-record={tmp_path / 'run.jsonl'}", "--statesnap-verify-budget=300"]


def _on_a_terminal(tmp_path: Path, suite: dict[str, str]) -> tuple[int, str]:
    """The session's exit code and output, run in a pseudo-terminal."""
    root = write_suite(tmp_path / "suite", suite)
    env = {k: v for k, v in child_env().items() if k != "CI"}
    env.update(TERM="xterm", COLUMNS="200")
    main, child = pty.openpty()
    proc = subprocess.Popen(_cmd(tmp_path), cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=child, stderr=child)
    os.close(child)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child side closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(main)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_one_line_is_rewritten(tmp_path: Path) -> None:
    rc, out = _on_a_terminal(tmp_path, SUITE)
    assert rc == 1, out[-3000:]
    assert "[VERIFIED] test_zoo.py::test_c_victim" in out, out[-3000:]
    # The status line: victims done, replays run and queued, the budget left.
    assert re.search(r"victims \d/2 · \d+ replay\(s\) run · \d victim\(s\) queued · "
                     r"\d+ s of budget left", out), out[-3000:]
    # No line of its own per replay: the status is rewritten in place.
    lines = [ln for ln in out.replace("\r", "\n").splitlines()
             if ln.startswith("statesnap: replaying")]
    assert not lines, lines


def test_in_a_log_one_line_per_victim(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    proc = subprocess.run(_cmd(tmp_path), cwd=root, env=child_env(), capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "statesnap: replaying" not in out, out
    settled = [ln.split()[1:4] for ln in out.splitlines() if ln.startswith("statesnap: [")]
    # Victims verified side by side settle in whichever order their replays end: the count
    # runs in order, each victim is named once.
    assert [s[0] for s in settled] == ["[1/2]", "[2/2]"], out
    assert sorted(s[1:] for s in settled) == [
        ["verified", "test_zoo.py::test_c_victim"],
        ["verified", "test_zoo.py::test_d_victim"]], out


def test_node_ids_on_the_live_line_are_text_not_markup(tmp_path: Path) -> None:
    # Parameter ids "/" and "red" make node ids ``test_div[/]`` and ``test_div[red]``: read as
    # rich markup on the live line, the first raised (the session end failed, every finding
    # lost) and the second vanished from the line.
    suite = {"test_calc.py": """
        import os
        import pytest

        def test_a_polluter():
            os.environ["CALC_MODE"] = "1"

        @pytest.mark.parametrize("op", ["red", "/"])
        def test_div(op):
            assert os.environ.get("CALC_MODE") is None, "CALC_MODE leaked"
        """}
    rc, out = _on_a_terminal(tmp_path, suite)
    assert rc == 1, out[-3000:]
    assert "session end failed" not in out, out[-3000:]
    assert "[VERIFIED] 2 tests broken by one cause: test_calc.py::test_a_polluter" in out, (
        out[-3000:])
    assert "test_calc.py::test_div[/] (AssertionError" in out, out[-3000:]
