"""Runs of the hostile suite (``suite/``) with and without statesnap, one pollution per run.

Each pollution is run twice in its own copy of the suite: plain ``pytest`` and ``pytest -p
statesnap`` asking for all three outputs (record, summary JSON, report).  The statesnap run goes
inside a fresh pid namespace beside a bystander process (``tests/pidns.py``): a pollution such
as a mocked ``subprocess.Popen`` once made the session end ``kill(-1, SIGKILL)``, and there it
reaches the namespace only, where the bystander's death says so.  Both runs of a
pollution go at the same time; :func:`run_all` spreads the pollutions over a few workers.
Used by ``test_hostile.py`` and, to print the table in ``BENCHMARKS.md``, run as a script:
``.venv/bin/python tests/plugin/hostile/hostile_harness.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SUITE = Path(__file__).resolve().parent / "suite"

try:
    import pidns
except ImportError:  # run as a script: tests/ is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import pidns
from suite_runs import summary_line  # noqa: E402 (tests/ on the path just above)

#: Every pollution of the suite, with the pytest arguments it needs to survive pytest's own
#: per-test restoring (output capture puts ``sys.stdout`` back after each test, the warnings
#: plugin the filters): without them the pollution would not reach the session end.
POLLUTIONS: dict[str, tuple[str, ...]] = {
    "platform": (),
    "environ": (),
    "stub_json": (),
    "stub_jinja2": (),
    "stub_deepdiff": (),
    "open": (),
    "cwd": (),
    "logging": (),
    "warnings": ("-p", "no:warnings"),
    "stdout": ("-s",),
    "socket_timeout": (),
    "recursion_limit": (),
    "sigterm": (),
    # What statesnap spawns, waits for, kills, reads and walks with (issue 27, section 1).
    "popen_mock": (),
    "os_kill": (),
    "os_killpg": (),
    "os_waitpid": (),
    "select": (),
    "scandir": (),
    "listdir": (),
    "stat": (),
    "json_dumps": (),
    "json_loads": (),
    "json_encode": (),
    "frozen_time": (),
    # What the warm parent is reached through (replays forked from it, issue 28 section 2).
    "socket_class": (),
    "socketpair": (),
    "signal_signal": (),
    # About 2,000 descriptors left open (issue 27, section 4): no select() on descriptors.
    "many_fds": (),
}

ARTIFACTS = ("record", "json", "report")


@dataclass
class Run:
    """One pytest process."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def summary(self) -> str | None:
        return summary_line(self.stdout)

    @property
    def bystander_survived(self) -> bool:
        """The run went inside a pid namespace (:func:`pidns.wrap`): whether the bystander
        beside it was still alive when it ended."""
        return pidns.bystander_survived(self.stderr)


@dataclass
class Pair:
    """One pollution: the run without statesnap and the run with it, and its outputs."""

    pollution: str
    victim: bool
    plain: Run
    snap: Run
    outputs: dict[str, Path] = field(default_factory=dict)

    def written(self) -> dict[str, bool]:
        """Which outputs exist and are complete (parsed back, not just present)."""
        return {name: _complete(name, path) for name, path in self.outputs.items()}

    def why_not(self, name: str) -> list[str]:
        """The lines of the statesnap run that name an output it could not write."""
        path = str(self.outputs[name])
        return [line for line in self.snap.output.splitlines()
                if path in line and "statesnap:" in line]

    def summary_json(self) -> dict[str, object]:
        data: dict[str, object] = json.loads(self.outputs["json"].read_text(encoding="utf-8"))
        return data


def _complete(name: str, path: Path) -> bool:
    if not path.is_file():
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    if name == "record":
        # Complete: a footer, then only the session's stored verdicts (record format 2).
        kinds = [json.loads(line).get("type") for line in text.splitlines()]
        return "footer" in kinds and set(kinds[kinds.index("footer") + 1:]) <= {"finding"}
    if name == "json":
        return isinstance(json.loads(text).get("findings"), list)
    return text.rstrip().endswith("</html>")


def _env(pollution: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "STATESNAP_", "HOSTILE_"))}
    env["HOSTILE_POLLUTION"] = pollution
    return env


def _start(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], argv: Sequence[str], timeout: float) -> Run:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n[hostile harness: killed after {timeout:.0f} s]"
    return Run(list(argv), proc.returncode, out, err)


def run_pair(pollution: str, workdir: Path, *, victim: bool = True,
             timeout: float = 240) -> Pair:
    """Both runs of one pollution, each in its own copy of the suite under ``workdir``.

    With ``victim`` the order-dependent failure is in the run (statesnap attributes and
    replays it under the pollution); without, it is deselected and the run passes.
    """
    extra = (*POLLUTIONS[pollution], *(() if victim else ("-k", "not victim")))
    env = _env(pollution)
    base = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"]
    plain_dir = workdir / "plain"
    snap_dir = workdir / "statesnap"
    out_dir = workdir / "outputs"  # outside the suite: the files probe never sees them
    for d in (plain_dir, snap_dir):
        shutil.copytree(SUITE, d, ignore=shutil.ignore_patterns("__pycache__"))
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = {"record": out_dir / "run.jsonl", "json": out_dir / "summary.json",
               "report": out_dir / "pollution.html"}
    plain_argv = [*base, *extra]
    snap_argv = [*base, "-p", "statesnap", f"--statesnap-record={outputs['record']}",
                 f"--statesnap-json={outputs['json']}", f"--report={outputs['report']}",
                 "--statesnap-verify-budget=120", *extra]
    plain = _start(plain_argv, plain_dir, env)
    snap = _start(pidns.wrap(snap_argv), snap_dir, env)
    return Pair(pollution, victim, _finish(plain, plain_argv, timeout),
                _finish(snap, snap_argv, timeout), outputs)


def run_all(pollutions: Iterable[str], root: Path, *, workers: int = 2) -> list[Pair]:
    """Every pollution's pair with the victim, then without, ``workers`` pairs at a time."""
    cases = [(name, victim) for victim in (True, False) for name in pollutions]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(
            lambda case: run_pair(case[0], root / f"{case[0]}-{case[1]}", victim=case[1]),
            cases))


def verdict_rows(findings: object) -> list[tuple[str, str, str, str]]:
    """(victim, status, polluters, key) of each finding of a summary or ``explain --json``."""
    rows = []
    for f in findings if isinstance(findings, list) else []:
        if isinstance(f, dict):
            rows.append((str(f.get("victim")), str(f.get("status")),
                         " + ".join(f.get("polluters") or []), f"{f.get('probe')}:{f.get('key')}"))
    return sorted(rows)


def read_back(pair: Pair) -> list[tuple[str, str, str, str]] | None:
    """The verdicts ``statesnap explain --json RECORD`` reads back after the session, in a
    clean process (None when the record is missing or explain fails)."""
    record = pair.outputs["record"]
    if not record.is_file():
        return None
    proc = subprocess.run([sys.executable, "-m", "statesnap", "explain", "--json", str(record)],
                          cwd=record.parent, env=_env(pair.pollution), capture_output=True,
                          text=True, timeout=120)
    try:
        return verdict_rows(json.loads(proc.stdout))
    except ValueError:
        return None


def table(pairs: Sequence[Pair]) -> list[str]:
    """The Markdown table of ``BENCHMARKS.md``."""
    lines = ["| pollution | without statesnap | with statesnap | record | summary JSON | report "
             "| victim's verdict | read back by `explain --json` | bystander |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for pair in pairs:
        written = pair.written()
        verdict = back = "—"
        if written["json"]:
            session = verdict_rows(pair.summary_json()["findings"])
            verdict = ", ".join(f"{st} ({who or '—'}, `{key}`)" for _, st, who, key in session
                                ) or "none"
            stored = read_back(pair)
            back = ("not readable" if stored is None else
                    "same" if stored == session else
                    "differs: " + ", ".join(f"{st} ({who or '—'})" for _, st, who, _ in stored))
        cells = [f"`{pair.pollution}`" + ("" if pair.victim else " (no victim)"),
                 f"{pair.plain.returncode}: {pair.plain.summary}",
                 f"{pair.snap.returncode}: {pair.snap.summary}",
                 *("written" if written[name] else "not written" for name in ARTIFACTS),
                 verdict, back, "alive" if pair.snap.bystander_survived else "KILLED"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


HEADING = """# The hostile suite: statesnap under a polluted process

Command: `.venv/bin/python tests/plugin/hostile/hostile_harness.py --out bench/results/hostile.md`

`tests/plugin/hostile/suite/` with one pollution per run (left by its last test, so it is in
force at the session end), each run twice: plain `pytest` and `pytest -p statesnap` with
`--statesnap-record`, `--statesnap-json` and `--report`, the latter inside a fresh pid namespace
beside a bystander process (`tests/pidns.py`) that must survive.  With the victim, the session end
attributes and replays an order-dependent failure under the pollution; without (`-k "not
victim"`), the run passes.  An output counts as written when it reads back complete (the
record's footer, the JSON, the closing `</html>`).  `stdout` runs with `-s` and `warnings`
with `-p no:warnings`: otherwise pytest itself puts them back after the test.
"""


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    out: Path | None = None
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1])
        del args[at:at + 2]
    names = args or list(POLLUTIONS)
    reason = pidns.unavailable()
    if reason is not None:
        print(f"hostile harness: the statesnap runs need a pid namespace: {reason}",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="statesnap-hostile-") as tmp:
        pairs = run_all(names, Path(tmp), workers=int(os.environ.get("HOSTILE_WORKERS", "2")))
        rows = table(pairs)
        for line in rows:
            print(line)
        if out is not None:
            out.write_text(HEADING + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
        for pair in pairs:
            if "Traceback" in pair.snap.output:
                print(f"\n{pair.pollution} ({pair.victim=}): traceback in the statesnap run:\n"
                      + pair.snap.output[-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
