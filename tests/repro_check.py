"""Run every "reproduce:" command statesnap printed, under plain pytest, and check it fails.

A printed reproduction is a promise: pasted into a shell, it makes the victim fail, with
nothing of statesnap's needed.  :func:`check_reproductions` takes statesnap's output (terminal
section, ``explain``, ``bisect``), runs each command it finds the way a user would (``sh -c``
in the directory the command was printed for, ``python`` on ``PATH`` being this interpreter)
with statesnap never activated: no ``PYTEST_ADDOPTS``, no ``PYTEST_PLUGINS``.  pytest then
rejects any option of statesnap's (``unrecognized arguments``), and the victim must fail.

Reuse: ``from repro_check import check_reproductions`` in any test under ``tests/``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: ``reproduce: CMD`` as the terminal section, ``explain`` and ``bisect`` print it.
_REPRODUCE = re.compile(r"^\s*(?:[-*]\s*)?reproduce:\s*(?P<cmd>\S.*?)\s*$", re.MULTILINE)
#: Variables that would activate statesnap (or anything else) behind the command's back.
_ACTIVATING_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_CURRENT_TEST")


def reproduce_lines(output: str) -> list[str]:
    """Every command printed after ``reproduce:``, in order, without repeats."""
    return list(dict.fromkeys(m.group("cmd") for m in _REPRODUCE.finditer(output)))


def statesnap_words(command: str) -> list[str]:
    """Words of ``command`` that only a statesnap-enabled pytest understands."""
    words = shlex.split(command.split(" && ")[-1])
    return [w for i, w in enumerate(words)
            if w.startswith(("--statesnap", "--report", "-pstatesnap"))
            or (w == "-p" and i + 1 < len(words) and words[i + 1] == "statesnap")]


def plain_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without what activates plugins, ``python`` being this one."""
    env = {k: v for k, v in os.environ.items()
           if k not in _ACTIVATING_ENV and not k.startswith(("PYTEST_XDIST", "STATESNAP_"))}
    env.update(extra or {})
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


@dataclass
class Reproduction:
    command: str
    proc: subprocess.CompletedProcess[str]

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr


def run_reproduction(command: str, cwd: Path, env: Mapping[str, str] | None = None,
                     timeout: float = 300) -> Reproduction:
    """``command`` pasted into a shell in ``cwd``, statesnap not activated."""
    proc = subprocess.run(command, shell=True, cwd=cwd, env=plain_env(env), text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return Reproduction(command, proc)


def check_reproductions(output: str, cwd: Path, victims: Sequence[str],
                        env: Mapping[str, str] | None = None,
                        expect: str | None = None) -> list[Reproduction]:
    """Run every printed reproduction; each must fail (exit 1) one of ``victims``.

    ``victims``: node ids (or their test names) that a reproduction may be for; the one it
    fails must show in the output.  ``expect``: text the failure must show (the victim's
    own assertion message, so a command that fails for another reason does not pass).
    Returns the runs; fails the calling test when there is none.
    """
    commands = reproduce_lines(output)
    assert commands, f"no reproduce: line in the output:\n{output[-3000:]}"
    runs = []
    for command in commands:
        run = run_reproduction(command, cwd, env)
        text = run.output
        assert "unrecognized arguments" not in text, (command, text[-3000:])
        own = statesnap_words(command)
        assert not own, f"a printed command carries statesnap's own options {own}: {command}"
        assert run.proc.returncode == 1, (command, run.proc.returncode, text[-3000:])
        names = [v.rsplit("::", 1)[-1] for v in victims]
        assert any(name in text for name in names), (command, victims, text[-3000:])
        if expect is not None:
            assert expect in text, (command, expect, text[-3000:])
        runs.append(run)
    return runs
