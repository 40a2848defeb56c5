"""The bundled demo, run once: every reader shows the verdicts the session proved.

Before record format 2, ``statesnap explain``, ``statesnap report`` and the Markdown re-ranked
the demo's failures from the record alone and named another polluter for several victims.
Now the session stores its verdicts and every reader shows them.  Each printed reproduction
is run under plain pytest (statesnap never activated) and must fail its victim.

The check of printed commands is a minimal local one (``_plain_run``); the shared
``tests/repro_check.py`` of the replay work can replace it once both are merged.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from demo_verdicts import DemoRun, read_back, rerank, run_demo

from statesnap.analysis.findings import PROVEN_STATUSES


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    run = run_demo(tmp_path_factory.mktemp("demo"))
    assert run.proc.returncode == 1, run.proc.stdout[-3000:] + run.proc.stderr[-3000:]
    return run


def _plain_run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A printed command pasted into a shell: ``python`` is this one, and nothing in the
    environment activates statesnap (no PYTEST_ADDOPTS, no PYTEST_PLUGINS)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STATESNAP_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_every_reader_agrees_with_the_session(demo: DemoRun) -> None:
    found = read_back(demo)
    session = found["session"]
    assert len(session) == 9, session
    assert sum(1 for s, _, _ in session.values() if s == "verified") >= 7, session
    for reader, verdicts in found.items():
        assert verdicts == session, f"{reader} disagrees with the session"
    # The Markdown needed no replay: every verdict was stored.
    assert "replaying" not in demo.readers["explain --markdown"]
    # Re-ranking from the record alone (what the readers did before) names other polluters
    # for some victims: the agreement above is the stored verdicts', not a coincidence.
    old = rerank(demo)
    assert any(old[v][1] != session[v][1] for v in session if session[v][0] == "verified")


def test_every_printed_reproduction_fails_its_victim_under_plain_pytest(demo: DemoRun) -> None:
    from statesnap.analysis.verdicts import stored
    from statesnap.record.reader import read_record

    shown = demo.proc.stdout
    # A cause that broke several victims prints one of their commands ("reproduce (ID): ...")
    # and lists the others under it; each one's own is `statesnap explain --test ID`'s.
    commands = re.findall(r"^\s+reproduce(?: \(\S+\))?: (.+)$", shown, re.M)
    verdicts = stored(read_record(demo.record))
    proven = [f for f in verdicts if f.repro_proven]
    assert len(commands) == len(set(commands)) and set(commands) <= {f.repro for f in proven}
    for f in proven:
        assert f.repro in commands or re.search(rf"^ {{8}}{re.escape(f.victim)}( \(|$)", shown,
                                                re.M), f.victim
    for f in verdicts:
        if f.status not in PROVEN_STATUSES:
            continue
        proc = _plain_run(f.repro, demo.root)
        assert proc.returncode == 1, f"{f.repro}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        assert f"FAILED {f.victim}" in proc.stdout, f"{f.repro}\n{proc.stdout[-2000:]}"
        # The replay that proved it is stored with the failure it saw.
        proof = [r for r in f.replays if r.command == f.repro and not r.restored]
        assert proof and proof[-1].outcome in ("failed", "error"), f.replays
        assert proof[-1].signature and proof[-1].signature.startswith(f.exc_type or "")
