"""Checks shared by the verdict tests: every printed reproduction is run under plain pytest.

A minimal local stand-in for the shared ``tests/repro_check.py`` (branch ``replay``), which was
not on main when these tests were written: it reads the terminal section's findings and runs
each ``reproduce:`` command in a shell without statesnap, where it must fail the victim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from repro_check import run_reproduction, statesnap_words

_FINDING = re.compile(r"^  \[(?P<status>[^\]]+)\] (?P<victim>\S+)$")


def blocks(output: str) -> dict[str, list[str]]:
    """``victim -> its lines`` of each finding in a statesnap terminal section."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        m = _FINDING.match(line)
        if m:
            current = out.setdefault(m["victim"], [line])
            continue
        if current is not None:
            if line.startswith("      "):
                current.append(line)
            else:
                current = None
    return out


def repro_lines(output: str) -> dict[str, str]:
    """``victim -> reproduce command`` of every finding that prints one."""
    found: dict[str, str] = {}
    for victim, lines in blocks(output).items():
        for line in lines:
            if line.strip().startswith("reproduce: "):
                found[victim] = line.strip()[len("reproduce: "):]
    return found


def assert_repros_fail(output: str, root: Path, env: Mapping[str, str] | None = None) -> int:
    """Run every printed reproduction under plain pytest: each must fail its victim.

    Returns how many were run (callers assert the number they expect, so that a finding
    that lost its line does not pass unnoticed)."""
    commands = repro_lines(output)
    for victim, command in commands.items():
        assert not statesnap_words(command), command
        proc = run_reproduction(command, root, env).proc
        assert f"FAILED {victim}" in proc.stdout or f"ERROR {victim}" in proc.stdout, (
            command, proc.stdout[-2000:], proc.stderr[-2000:])
    return len(commands)
