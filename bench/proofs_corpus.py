"""The real-world corpus mode of :mod:`bench_proofs`: replays per victim on public projects.

For each case of ``bench/realworld/cases.toml`` whose source and environment are already set
up in ``$STATESNAP_BENCH_CACHE`` (by :mod:`bench_real`; nothing is fetched or installed here,
a case that is not set up is skipped with one line):

1. an order of the whole suite in which the case's victim FAILS under plain pytest, with its
   known polluter(s) before it among the suite's other tests.  The first of these that holds:
   the suite's collected order with the victim moved last; the same with the polluters moved
   just before it; each full-suite order the last hunt replayed (``runs/CASE/record.logs``)
   with a polluter before the victim.  The victim must also pass alone.  Every test's plain
   outcome in that order is kept (the other victims it exposes are counted too);
2. per side (``this tree`` and ``--against``), one pytest session with ``-p statesnap``, as
   a user would run it: the node ids on the command line in that order, ``-p no:randomly``,
   ``--statesnap-json``, a verification budget large enough that nothing is cut short;
3. per finding, from the summary JSON: verdict, the replays stored with it, the key named and
   the keys proven; for the case's own victim also the right polluter (one of cases.toml's
   ``polluters``) and the right key (a proven key holding one of ``keys``).  Every verified
   finding's printed reproduction is run under plain pytest (the victim must fail) and its
   victim alone (it must pass): one that does not hold is a false positive.

The sessions' statesnap comes from ``PYTHONPATH`` (this tree's ``src/`` or the baseline's), so
the shared case environments' ``.pth`` file is neither read for statesnap nor rewritten.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "realworld"))
sys.path.insert(0, str(HERE))
from bench_real import run_repro  # noqa: E402
from casesetup import (  # noqa: E402
    CACHE,
    PYTEST_ARGS,
    Case,
    failed,
    load_cases,
    outcome,
    passed,
    plain,
    pytest_env,
)

#: Where this mode writes (one folder per case and side); the hunts' runs/ is only read.
#: Where the sessions' files go (STATESNAP_BENCH_RUNS: two branches measuring at once).
OUT = CACHE / os.environ.get("STATESNAP_BENCH_RUNS", "runs-corpusproofs")


@dataclass
class Order:
    """The order a case's session runs, and what plain pytest gave in it."""

    how: str
    ids: list[str]
    #: ``{node id: outcome}`` under plain pytest in this order.
    plain: dict[str, str] = field(default_factory=dict)


def installed(case: Case) -> tuple[Path, Path] | None:
    """``(source dir, python)`` when bench_real has set the case up here, else None."""
    src = CACHE / "src" / case.slug
    python = CACHE / "venvs" / case.slug / "bin" / "python"
    stamp = python.parent.parent / ".stamp"
    if src.is_dir() and python.exists() and stamp.exists():
        return src, python
    return None


def collect(case: Case, python: Path, src: Path) -> list[str]:
    proc = subprocess.run([str(python), "-m", "pytest", *PYTEST_ARGS, "--collect-only", "-q",
                           *case.args, case.suite], cwd=src, capture_output=True, text=True,
                          env=pytest_env(), timeout=600)
    return [line.strip() for line in proc.stdout.splitlines() if "::" in line
            and not line.startswith(" ")]


def _hunt_orders(case: Case, ids: list[str]) -> list[tuple[str, list[str]]]:
    """Full-suite orders the last hunt of the case replayed, a polluter before the victim."""
    logs = CACHE / "runs" / case.id / "record.logs"
    out = []
    for path in sorted(logs.glob("hunt-*/*.order.json")):
        try:
            order = [str(x) for x in json.loads(path.read_text(encoding="utf-8"))]
        except (OSError, ValueError):
            continue
        if set(order) != set(ids) or case.victim not in order:
            continue
        at = order.index(case.victim)
        if any(p in order[:at] for p in case.polluters):
            out.append((f"the hunt's {path.parent.name}/{path.name.split('.')[0]}", order))
    return out


def candidates(case: Case, ids: list[str]) -> list[tuple[str, list[str]]]:
    others = [i for i in ids if i != case.victim]
    rest = [i for i in others if i not in case.polluters]
    known = [p for p in case.polluters if p in ids]
    return [("collected order, the victim moved last", [*others, case.victim]),
            ("collected order, the polluters then the victim moved last",
             [*rest, *known, case.victim]),
            *_hunt_orders(case, ids)]


def plain_outcomes(case: Case, python: Path, src: Path, ids: list[str]) -> dict[str, str]:
    proc = plain(python, src, [*case.args, *ids], timeout=1800)
    return {i: outcome(proc, i) or "not run" for i in ids}


def failing_order(case: Case, python: Path, src: Path) -> Order | str:
    """The first candidate order that fails the victim under plain pytest, or why none."""
    alone = plain(python, src, [*case.args, case.victim])
    if not passed(alone, case.victim):
        return f"the victim does not pass alone (exit {alone.returncode})"
    ids = collect(case, python, src)
    if case.victim not in ids:
        return f"the victim is not collected from {case.suite}"
    for how, order in candidates(case, ids):
        got = plain_outcomes(case, python, src, order)
        if got[case.victim] in ("failed", "error"):
            return Order(how, order, got)
    return "no candidate order fails the victim under plain pytest"


def load_order(case: Case, python: Path, src: Path) -> Order | str:
    """The case's order, found once and kept (both sides and later runs use the same one)."""
    path = OUT / case.id / "order.json"
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return Order(data["how"], data["ids"], data["plain"])
    found = failing_order(case, python, src)
    if isinstance(found, Order):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"how": found.how, "ids": found.ids, "plain": found.plain},
                                   indent=1), encoding="utf-8")
    return found


@dataclass
class Session:
    side: str
    wall: float
    cpu: float
    exit: int
    findings: list[dict[str, Any]]
    #: Verified findings whose printed reproduction did not hold under plain pytest.
    false_positives: list[str] = field(default_factory=list)
    #: Their victims.
    fp_victims: set[str] = field(default_factory=set)
    #: Passed and failed counts of pytest's last line differ from plain pytest's in the order.
    counts_differ: str | None = None
    error: str | None = None


def run_session(case: Case, python: Path, src: Path, order: Order, side: str,
                statesnap_src: Path, budget: int) -> Session:
    out = OUT / case.id / ("baseline" if side.startswith("baseline") else "this-tree")
    if out.exists():
        import shutil

        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = pytest_env()
    env["PYTHONPATH"] = str(statesnap_src)
    cmd = [str(python), "-m", "pytest", "-p", "statesnap", *PYTEST_ARGS, "-q",
           f"--statesnap-json={out / 'summary.json'}",
           f"--statesnap-record={out / 'record.jsonl'}",
           f"--statesnap-verify-budget={budget}", *case.args, *order.ids]
    before = os.times()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True,
                          timeout=budget + 1800)
    wall = time.monotonic() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    (out / "session.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    summary = out / "summary.json"
    if not summary.exists():
        return Session(side, wall, cpu, proc.returncode, [],
                       error=f"no summary JSON (exit {proc.returncode}; {out / 'session.log'})")
    findings = json.loads(summary.read_text(encoding="utf-8")).get("findings", [])
    s = Session(side, wall, cpu, proc.returncode, findings)
    s.counts_differ = compare_counts(proc.stdout, order)
    for f in findings:
        if f.get("status") != "verified":
            continue
        repro = run_repro(str(f.get("repro") or ""), python, src)
        alone = plain(python, src, [*case.args, f["victim"]])
        if not (failed(repro, f["victim"]) and passed(alone, f["victim"])):
            s.fp_victims.add(f["victim"])
            s.false_positives.append(f"{f['victim']} after {f.get('polluters')}: "
                                     f"{f.get('repro')}")
    return s


def compare_counts(stdout: str, order: Order) -> str | None:
    """None when the session's summary line counts as many passed and failed tests as plain
    pytest gave in the same order (statesnap changes no outcome); else both."""
    import re

    lines = [ln for ln in stdout.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    got = {w: int(n) for n, w in re.findall(r"(\d+) (passed|failed)", lines[-1] if lines else "")}
    want = {"passed": sum(o == "passed" for o in order.plain.values()),
            "failed": sum(o == "failed" for o in order.plain.values())}
    got = {k: got.get(k, 0) for k in want}
    return None if got == want else f"with statesnap {got}, plain {want}"


def row(case: Case, f: dict[str, Any], false_positive: bool) -> dict[str, Any]:
    """One finding, scored; ``right_*`` are None for a victim cases.toml does not name.

    ``right_polluter``: ``known`` (one of cases.toml's ``polluters``), ``other, checked`` (a
    verified polluter cases.toml does not list, whose printed line fails the victim under
    plain pytest), else ``no``.  ``replays_cold_confirm`` counts the replays less the one that
    runs the printed line cold to confirm it (``confirm``), which da35524 did not run.
    """
    proven = list(f.get("proven_keys") or [])
    mine = f["victim"] == case.victim
    labels = [str(r.get("label")) for r in f.get("replays") or []]
    polluter: str | None = None
    if mine:
        polluter = ("known" if set(f.get("polluters") or []) & set(case.polluters) else
                    "other, checked" if f["status"] == "verified" and not false_positive
                    else "no")
    return {
        "case": case.id, "victim": f["victim"], "own": mine, "status": f["status"],
        "replays": len(labels), "replays_less_confirm": len(labels) - labels.count("confirm"),
        "labels": labels, "polluters": list(f.get("polluters") or []),
        "key": f"{f['probe']}:{f['key']}" if f.get("probe") else None, "proven": proven,
        "right_polluter": polluter,
        "right_key": any(k in p for p in proven for k in case.keys) if mine else None,
        "false_positive": false_positive, "note": f.get("note"),
    }


def figures(rows: list[dict[str, Any]]) -> str:
    counts = [r["replays"] for r in rows if r["status"] != "not-order-dependent"]
    if not counts:
        return "no order-dependent victim"
    return (f"{len(counts)} order-dependent: replays median {statistics.median(counts):g}, "
            f"worst {max(counts)}, total {sum(counts)}")


def cases(wanted: list[str]) -> list[Case]:
    return [c for c in load_cases() if not wanted or c.id in wanted]


def _short(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


def _print_session(s: Session, rows: list[dict[str, Any]]) -> None:
    print(f"\n#### {s.side}: session {s.wall:.0f} s wall, {s.cpu:.0f} s CPU, exit {s.exit}\n")
    if s.error:
        print(f"- {s.error}")
        return
    print("| victim | verdict | replays | labels | polluters | key proven | right polluter "
          "| right key |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(rows, key=lambda r: (not r["own"], r["victim"])):
        yn: dict[bool | None, str] = {None: "-", True: "yes", False: "NO"}
        print(f"| {'**' + _short(r['victim']) + '**' if r['own'] else _short(r['victim'])} "
              f"| {r['status']} | {r['replays']} | {' '.join(r['labels'])} "
              f"| {', '.join(_short(p) for p in r['polluters']) or '-'} "
              f"| {', '.join(r['proven']) or (r['key'] or '-') + ' (not proven)'} "
              f"| {r['right_polluter'] or '-'} | {yn[r['right_key']]} |")
    for r in rows:
        if r["note"] and r["status"] != "verified":
            print(f"- {_short(r['victim'])}: {r['note']}")
    for fp in s.false_positives:
        print(f"- **FALSE POSITIVE** (the printed line does not fail the victim under plain "
              f"pytest, or the victim does not pass alone): {fp}")
    print(f"\n{figures(rows)}", flush=True)


def run_corpus(wanted: list[str], sides: list[tuple[str, Path]], budget: int) -> None:
    """Every case, each side in turn (the side going first alternates case by case)."""
    results: dict[str, dict[str, Any]] = {}
    for n, case in enumerate(cases(wanted)):
        where = installed(case)
        if where is None:
            print(f"\n### {case.id}: skipped: not set up under {CACHE} (run bench_real.py "
                  "--validate-only --case ID there first)", flush=True)
            continue
        src, python = where
        order = load_order(case, python, src)
        if isinstance(order, str):
            print(f"\n### {case.id}: not valid here: {order}", flush=True)
            results[case.id] = {"invalid": order}
            continue
        bad = sorted(i for i, o in order.plain.items() if o in ("failed", "error"))
        print(f"\n### {case.id}: {len(order.ids)} tests, {order.how}; under plain pytest "
              f"{len(bad)} fail in this order: {', '.join(_short(i) for i in bad)}",
              flush=True)
        entry: dict[str, Any] = {"order": order.how, "tests": len(order.ids),
                                 "plain_failures": bad, "sides": {}}
        for side, statesnap_src in (sides if n % 2 == 0 else sides[::-1]):
            s = run_session(case, python, src, order, side, statesnap_src, budget)
            rows = [row(case, f, f["victim"] in s.fp_victims) for f in s.findings]
            _print_session(s, rows)
            if not s.error and not any(r["own"] for r in rows):
                print(f"- **the case's victim has no finding** ({case.victim})", flush=True)
            if s.counts_differ:
                print(f"- **outcomes differ from plain pytest**: {s.counts_differ}")
            entry["sides"][side] = {"wall": s.wall, "cpu": s.cpu, "exit": s.exit,
                                    "counts_differ": s.counts_differ,
                                    "error": s.error, "false_positives": s.false_positives,
                                    "rows": rows, "load": os.getloadavg()[0]}
        results[case.id] = entry
        (OUT / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    case_table(results, [side for side, _ in sides])
    summarise(results, [side for side, _ in sides])


def case_table(results: dict[str, dict[str, Any]], sides: list[str]) -> None:
    """One line per case and side: the own victim's verdict, replays, polluter, key."""
    print("\n## corpus: the cases' own victims\n")
    print("| case | side | verdict | replays (less confirm) | polluter | key | "
          "other victims (replays) | session s wall / CPU | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case_id, e in results.items():
        for side in sides:
            g = e.get("sides", {}).get(side)
            if g is None:
                continue
            own = [r for r in g["rows"] if r["own"]]
            other = [f"{_short(r['victim'])} ({r['replays']})" for r in g["rows"]
                     if not r["own"] and r["status"] != "not-order-dependent"]
            if own:
                r = own[0]
                key = (f"{'right' if r['right_key'] else 'NOT right'}: {', '.join(r['proven'])}"
                       if r["proven"] else f"none proven (named {r['key']})")
                cells = [r["status"], f"{r['replays']} ({r['replays_less_confirm']})",
                         f"{r['right_polluter']}: "
                         f"{', '.join(_short(p) for p in r['polluters'])}", key]
            else:
                cells = ["NO FINDING", "-", "-", "-"]
            print(f"| {case_id} | {side} | {' | '.join(cells)} | {', '.join(other) or '-'} "
                  f"| {g['wall']:.0f} / {g['cpu']:.0f} | {g['load']:.1f} |")


def summarise(results: dict[str, dict[str, Any]], sides: list[str]) -> None:
    """The corpus table: the cases' own victims, then every order-dependent finding."""
    print("\n## corpus: summary\n")
    print("| side | cases | own victim verified | polluter known / other (checked) "
          "| key proven / right | replays per own victim: median / worst (less confirm) "
          "| other order-dependent victims (verified) "
          "| replays, all order-dependent: median / worst (less confirm) | false positives |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for side in sides:
        got = [e["sides"][side] for e in results.values() if side in e.get("sides", {})]
        rows = [r for g in got for r in g["rows"]]
        own = [r for r in rows if r["own"]]
        dep = [r for r in rows if r["status"] != "not-order-dependent"]
        other = [r for r in dep if not r["own"]]
        print(f"| {side} | {len(got)} | {sum(r['status'] == 'verified' for r in own)} "
              f"| {sum(r['right_polluter'] == 'known' for r in own)} / "
              f"{sum(r['right_polluter'] == 'other, checked' for r in own)} "
              f"| {sum(bool(r['proven']) for r in own)} / "
              f"{sum(bool(r['right_key']) for r in own)} "
              f"| {_mw(own)} | {len(other)} ({sum(r['status'] == 'verified' for r in other)}) "
              f"| {_mw(dep)} | {sum(len(g['false_positives']) for g in got)} |")
    print(f"\n(per case and side: {OUT / 'results.json'})", flush=True)


def _mw(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "-"
    all_ = [r["replays"] for r in rows]
    less = [r.get("replays_less_confirm", r["replays"]) for r in rows]
    return (f"{statistics.median(all_):g} / {max(all_)} "
            f"({statistics.median(less):g} / {max(less)})")


if __name__ == "__main__":
    # The tables again from a results file a corpus run wrote: proofs_corpus.py RESULTS.json
    saved = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    for e in saved.values():  # a file written before these two fields were kept
        for g in e.get("sides", {}).values():
            for r in g["rows"]:
                r.setdefault("replays_less_confirm", r["replays"] - r["labels"].count("confirm"))
                if isinstance(r["right_polluter"], bool):
                    r["right_polluter"] = "known" if r["right_polluter"] else "not known"
    names = list(dict.fromkeys(side for e in saved.values() for side in e.get("sides", {})))
    case_table(saved, names)
    summarise(saved, names)
