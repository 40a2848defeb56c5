"""statesnap on real order-dependent tests from public projects (``bench/realworld/cases.toml``).

For each case (set up by :mod:`realworld.casesetup`; a case whose source is absent is skipped
with one line):

1. validation under plain pytest: the victim passes alone and fails after each known polluter;
2. the suite in its default order, plain and with ``-p statesnap`` (recording): per-test
   outcomes, exit code and wall time; when the victim fails there, statesnap's verdict on it;
3. ``statesnap hunt`` from that record, scored on: victim found (a latent or verified finding),
   a right polluter (one of the known ones among its polluters), a right key (the finding's
   ``probe:key`` holds one of the case's key substrings), false positives (every latent finding
   whose printed reproduction, run under plain pytest, does not fail its victim, or whose
   victim does not pass alone), pytest runs and wall time.  A victim that fails in the default
   order under plain pytest is no latent victim: the hunt looks for the ones that order hides,
   so such a case is scored by the session's verdict instead (``verified``, its polluters and
   key, from the summary JSON; its reproduction run under plain pytest like the hunt's), and
   the table says so;
4. detect-test-pollution 1.2.0 told the victim (``--failing-test``), as the baseline.

    .venv/bin/python bench/bench_real.py [--case ID ...] [--budget 300] [--no-dtp]

Writes ``bench/results/realworld.md`` (the table and the commands) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "realworld"))
from casesetup import (
    CACHE,
    PYTEST_ARGS,
    Case,
    Unavailable,
    case_env,
    check_hidden,
    failed,
    load_cases,
    outcome,
    passed,
    plain,
    pytest_env,
    validate,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "realworld.md"
OUT = CACHE / "runs"
SHARED: dict[tuple[str, str, tuple[str, ...]], Hunted] = {}


@dataclass
class Row:
    case: Case
    skipped: str | None = None
    invalid: str | None = None
    tests: int = 0
    same_outcomes: bool | None = None
    exit_plain: int | None = None
    exit_snap: int | None = None
    wall_plain: float = 0.0
    wall_snap: float = 0.0
    default_fails: bool = False
    #: The victim failed in the default order under plain pytest (None: it did not run).
    plain_fails: bool | None = None
    verdict: str = ""
    #: Found, polluter and key come from the session's verdict (the victim is not latent).
    by_session: bool = False
    found: bool = False
    polluter_right: bool = False
    key_right: bool = False
    key: str = ""
    false_positives: int = 0
    findings: int = 0
    hunt_runs: int = 0
    hunt_s: float = 0.0
    dtp_right: bool | None = None
    dtp_s: float = 0.0
    dtp_runs: int = 0
    notes: list[str] = field(default_factory=list)


def junit_outcomes(path: Path) -> dict[str, str]:
    """``{classname::name: outcome}`` from a junit XML file."""
    import xml.etree.ElementTree as ET

    out: dict[str, str] = {}
    if not path.exists():
        return out
    for tc in ET.parse(path).getroot().iter("testcase"):
        kinds = [child.tag for child in tc]
        result = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        out[f"{tc.get('classname')}::{tc.get('name')}"] = result
    return out


def run_suite(case: Case, python: Path, src: Path, out: Path, snap: bool
              ) -> tuple[subprocess.CompletedProcess[str], float, dict[str, str]]:
    xml = out / ("snap.xml" if snap else "plain.xml")
    extra = [f"--junitxml={xml}"]
    if snap:
        extra = ["-p", "statesnap", f"--statesnap-record={out / 'record.jsonl'}",
                 f"--statesnap-json={out / 'summary.json'}", *extra]
    t0 = time.monotonic()
    proc = plain(python, src, [*extra, *case.args, case.suite], timeout=1800)
    return proc, time.monotonic() - t0, junit_outcomes(xml)


def run_repro(command: str, python: Path, src: Path) -> subprocess.CompletedProcess[str]:
    """A printed reproduction, as a user would run it: plain pytest in the rootdir."""
    words = shlex.split(command.split(" && ", 1)[-1])
    if words[:2] == ["python", "-c"]:
        # A reproduction that holds only with the collector off (replay/repro.py's
        # gc_off_command): pytest.main with its own arguments, -rA and no:cacheprovider in.
        return subprocess.run([str(python), *words[1:]], cwd=src, capture_output=True,
                              text=True, env=pytest_env(), timeout=600)
    assert words[:3] == ["python", "-m", "pytest"], command
    return subprocess.run([str(python), *words[1:], "-rA", "-p", "no:cacheprovider"],
                          cwd=src, capture_output=True, text=True, env=pytest_env(),
                          timeout=600)


def right_key(case: Case, f: dict[str, Any]) -> bool:
    text = f"{f.get('probe')}:{f.get('key')}"
    return bool(f.get("key")) and any(k in text for k in case.keys)


@dataclass
class Hunted:
    """One recorded run and hunt of a suite, shared by the cases on the same suite."""

    first: str
    out: Path
    exit_plain: int
    exit_snap: int
    wall_plain: float
    wall_snap: float
    tests: int
    same: bool
    snap_stdout: subprocess.CompletedProcess[str]
    plain_stdout: subprocess.CompletedProcess[str]
    hunt: dict[str, Any] = field(default_factory=dict)
    hunt_s: float = 0.0
    #: ``{(victim, polluters): proven under plain pytest}`` for each checked finding.
    checked: list[tuple[dict[str, Any], bool]] = field(default_factory=list)


def hunt_suite(h: Hunted, case: Case, python: Path, src: Path, budget: float) -> None:
    """``statesnap hunt`` from the recorded run; every finding checked under plain pytest."""
    report = h.out / "hunt.json"
    cmd = [str(python), "-m", "statesnap", "hunt", str(h.out / "record.jsonl"), "--budget",
           str(budget), "--json", str(report), "-q", "--", *case.args]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=src, capture_output=True, text=True, env=pytest_env(),
                   timeout=budget + 600)
    h.hunt_s = time.monotonic() - t0
    if not report.exists():
        return
    h.hunt = json.loads(report.read_text(encoding="utf-8"))
    for f in h.hunt.get("findings", []):
        if f.get("status") not in ("latent", "verified", "brittle"):
            continue
        repro = run_repro(str(f.get("repro") or ""), python, src)
        ok = failed(repro, f["victim"])
        if ok and f.get("status") != "brittle":
            alone = plain(python, src, [*case.args, str(f["victim"])])
            ok = passed(alone, f["victim"])
        h.checked.append((f, ok))


def score_hunt(row: Row, h: Hunted) -> None:
    case = row.case
    if not h.hunt:
        row.notes.append("hunt wrote no JSON")
        return
    if h.first != case.id:
        row.notes.append(f"same recorded run and hunt as {h.first} (counted there)")
    else:
        row.hunt_s = h.hunt_s
        row.hunt_runs = int(h.hunt.get("hunt", {}).get("pytest_runs", 0))
    row.findings = len(h.hunt.get("findings", []))
    for f, ok in h.checked:
        if not ok:
            if h.first == case.id:
                row.false_positives += 1
                row.notes.append(f"false positive: {f['victim']} after {f.get('polluters')}")
            continue
        if f["victim"] == case.victim:
            row.found = True
            if set(f.get("polluters") or []) & set(case.polluters):
                row.polluter_right = True
            row.key = f"{f.get('probe')}:{f.get('key')}"
            row.key_right = right_key(case, f)


def score_verdict(row: Row, out: Path, python: Path, src: Path) -> None:
    """A victim that fails in the default order: the session's verdict on it is what counts.

    The hunt looks for the victims that order hides, so it is not asked to find this one
    again; found, polluter and key are the session's (``verified`` only), and its printed
    reproduction must fail the victim under plain pytest and the victim pass alone, as for
    the hunt's findings.
    """
    row.by_session = True
    row.found = row.polluter_right = row.key_right = False
    row.key = ""
    summary = out / "summary.json"
    if not summary.exists():
        row.verdict = "no summary"
        return
    data = json.loads(summary.read_text(encoding="utf-8"))
    for f in data.get("findings", []):
        if f.get("victim") == row.case.victim:
            who = "+".join(p.rsplit("::", 1)[-1] for p in f.get("polluters") or [])
            right = bool(set(f.get("polluters") or []) & set(row.case.polluters))
            row.verdict = (f"{f.get('status')} ({who or '?'}, "
                           f"{'right' if right else 'wrong'} polluter)")
            if f.get("status") != "verified":
                return
            repro = run_repro(str(f.get("repro") or ""), python, src)
            alone = plain(python, src, [*row.case.args, row.case.victim])
            if not (failed(repro, row.case.victim) and passed(alone, row.case.victim)):
                row.false_positives += 1
                row.notes.append(f"false positive (session): {row.case.victim} after "
                                 f"{f.get('polluters')}")
                return
            row.found, row.polluter_right = True, right
            row.key = f"{f.get('probe')}:{f.get('key')}"
            row.key_right = right_key(row.case, f)
            return
    row.verdict = "no finding"


def run_dtp(row: Row, python: Path, src: Path) -> None:
    case = row.case
    script = python.with_name("detect-test-pollution")
    cmd = [str(script), "--failing-test", case.victim, "--tests", case.suite]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True,
                              env=pytest_env(), timeout=1800)
        text = proc.stdout
    except subprocess.TimeoutExpired:
        row.notes.append("detect-test-pollution timed out")
        row.dtp_right = False
        return
    row.dtp_s = time.monotonic() - t0
    row.dtp_runs = len(re.findall(r"^running step \d+:$", text, re.M)) + 4
    m = re.search(r"the polluting test is: (\S+)", text)
    row.dtp_right = bool(m) and m.group(1) in case.polluters if m else False
    if not m:
        last = text.strip().splitlines()[-1:] or ["no output"]
        row.notes.append(f"detect-test-pollution: {last[0][:80]}")


def run_case(case: Case, budget: float, dtp: bool) -> Row:
    row = Row(case)
    try:
        src, python = case_env(case)
    except Unavailable as exc:
        row.skipped = str(exc)
        print(f"{case.id}: skipped: {exc}", flush=True)
        return row
    why = validate(case, python, src)
    if why is not None:
        row.invalid = why
        print(f"{case.id}: not valid here: {why}", flush=True)
        return row
    shared = (case.source, case.suite, tuple(case.args))
    h = SHARED.get(shared)
    if h is None:
        out = OUT / case.id
        if out.exists():
            import shutil

            shutil.rmtree(out)
        out.mkdir(parents=True)
        p_proc, wall_plain, p_out = run_suite(case, python, src, out, snap=False)
        s_proc, wall_snap, s_out = run_suite(case, python, src, out, snap=True)
        h = Hunted(case.id, out, p_proc.returncode, s_proc.returncode, wall_plain, wall_snap,
                   len(p_out), p_out == s_out and p_proc.returncode == s_proc.returncode,
                   s_proc, p_proc)
        SHARED[shared] = h
        if (out / "record.jsonl").exists():
            hunt_suite(h, case, python, src, budget)
    row.exit_plain, row.exit_snap, row.tests, row.same_outcomes = (
        h.exit_plain, h.exit_snap, h.tests, h.same)
    if h.first == case.id:
        row.wall_plain, row.wall_snap = h.wall_plain, h.wall_snap
    row.default_fails = outcome(h.snap_stdout, case.victim) in ("failed", "error")
    plain_outcome = outcome(h.plain_stdout, case.victim)
    row.plain_fails = None if plain_outcome is None else plain_outcome in ("failed", "error")
    if row.plain_fails is not None and row.plain_fails == case.hidden:
        row.notes.append(f"manifest says hidden={case.hidden}, the default order under plain "
                         f"pytest disagrees (the victim {plain_outcome} there)")
    if row.default_fails != bool(row.plain_fails):
        row.notes.append(f"the victim {plain_outcome} under plain pytest but "
                         f"{outcome(h.snap_stdout, case.victim)} with statesnap")
    score_hunt(row, h)
    if row.default_fails:
        score_verdict(row, h.out, python, src)
    if dtp:
        run_dtp(row, python, src)
    print(f"{case.id}: found={row.found} polluter={row.polluter_right} "
          f"key={row.key_right} ({row.key}) fp={row.false_positives} "
          f"runs={row.hunt_runs} {row.hunt_s:.0f}s dtp={row.dtp_right}", flush=True)
    return row


def _why(r: Row) -> list[str]:
    """Why a row is scored by the session's verdict, said plainly."""
    if not r.by_session:
        return []
    where = ("under plain pytest and with statesnap" if r.plain_fails
             else "with statesnap (not under plain pytest)")
    return [f"not hidden here: the victim fails in the default order {where}, so it is no "
            "latent victim for the hunt; scored by the session's verdict"]


def _yn(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


def table(rows: list[Row]) -> list[str]:
    head = ("case", "state", "style", "hidden", "tests", "same outcomes", "exit plain/snap",
            "wall plain/snap s", "default-order verdict", "hunt: found", "polluter", "key",
            "false pos.", "runs", "hunt s", "dtp: polluter", "dtp s", "notes")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        c = r.case
        if r.skipped or r.invalid:
            why = r.skipped or f"not valid here: {r.invalid}"
            lines.append(f"| {c.id} | {c.state} | {c.framework} | {_yn(c.hidden)} | "
                         + " | ".join("–" for _ in head[4:-1]) + f" | {why} |")
            continue
        lines.append(" | ".join([
            f"| {c.id}", c.state, c.framework, _yn(c.hidden), str(r.tests),
            _yn(r.same_outcomes), f"{r.exit_plain}/{r.exit_snap}",
            f"{r.wall_plain:.1f}/{r.wall_snap:.1f}",
            r.verdict if r.default_fails else "passes (hidden)",
            _yn(r.found) + (" (session)" if r.by_session else ""), _yn(r.polluter_right),
            f"{_yn(r.key_right)} `{r.key}`" if r.key
            else _yn(r.key_right), str(r.false_positives), str(r.hunt_runs),
            f"{r.hunt_s:.0f}", _yn(r.dtp_right), f"{r.dtp_s:.0f}",
            "; ".join(_why(r) + r.notes) or c.note]) + " |")
    ran = [r for r in rows if not (r.skipped or r.invalid)]
    latent = [r for r in ran if not r.by_session]
    failing = [r for r in ran if r.by_session]
    lines.append(" | ".join([
        "| **total**", "", "", f"{sum(r.case.hidden for r in ran)} hidden",
        str(sum(r.tests for r in ran if r.wall_plain)),
        f"{sum(bool(r.same_outcomes) for r in ran)}/{len(ran)}",
        "", f"{sum(r.wall_plain for r in ran):.0f}/{sum(r.wall_snap for r in ran):.0f}", "",
        f"{sum(r.found for r in ran)}/{len(ran)}: hunt {sum(r.found for r in latent)}/"
        f"{len(latent)} latent, session {sum(r.found for r in failing)}/{len(failing)} failing "
        "in the default order", f"{sum(r.polluter_right for r in ran)}",
        f"{sum(r.key_right for r in ran)}", f"{sum(r.false_positives for r in ran)}",
        f"{sum(r.hunt_runs for r in ran)}", f"{sum(r.hunt_s for r in ran):.0f}",
        f"{sum(bool(r.dtp_right) for r in ran)}", f"{sum(r.dtp_s for r in ran):.0f}",
        f"{len(rows) - len(ran)} case(s) not run"]) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", action="append", default=[], help="run only these case ids")
    p.add_argument("--budget", type=float, default=300.0, help="hunt budget per case (s)")
    p.add_argument("--no-dtp", action="store_true", help="skip detect-test-pollution")
    p.add_argument("--out", type=Path, default=RESULTS, help="the results file to write")
    p.add_argument("--validate-only", action="store_true",
                   help="set up and validate the cases, nothing else")
    args = p.parse_args(argv)
    cases = [c for c in load_cases() if not args.case or c.id in args.case]
    if args.validate_only:
        bad = 0
        for case in cases:
            try:
                src, python = case_env(case)
            except Unavailable as exc:
                print(f"{case.id}: skipped: {exc}")
                continue
            why = validate(case, python, src) or check_hidden(case, python, src)
            bad += why is not None
            print(f"{case.id}: {'valid' if why is None else 'NOT valid: ' + why}", flush=True)
        return 1 if bad else 0
    rows = [run_case(c, args.budget, not args.no_dtp) for c in cases]
    lines = table(rows)
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "bench/bench_real.py", *(argv or sys.argv[1:])])
    args.out.write_text(
        "# statesnap on real order-dependent tests (bench/realworld)\n\n"
        f"`{command}` (`make bench-real`), {time.strftime('%Y-%m-%d')}; pytest runs use "
        f"`{' '.join(PYTEST_ARGS)}`; hunt budget {args.budget:.0f} s per case.\n\n"
        + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
