"""The demo suite's verdicts as every reader shows them: the session and the record read back.

    .venv/bin/python tests/cli/demo_verdicts.py     # runs the demo once, prints the table

Runs ``tests/demo`` (copied to a scratch folder) once with ``pytest -p statesnap``, then
reads the verdicts back from: the session's terminal section, its summary JSON, its
pollution.html, ``statesnap explain`` (text, ``--json``, ``--markdown``) and ``statesnap
report``.  Each reader's answer is ``{victim: (status, polluters, probe:key)}``; they must
all be the session's.  The table printed is the one in BENCHMARKS.md.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "demo"

Verdict = tuple[str, tuple[str, ...], str]
Verdicts = dict[str, Verdict]

#: How the terminal and ``explain`` word each status (statesnap.output.explain).
_WORDS = {"VERIFIED": "verified", "suspected, not replayed": "suspected",
          "suspected": "suspected", "not order-dependent": "not-order-dependent",
          "verified": "verified", "latent": "latent", "brittle": "brittle",
          "unexplained": "unexplained", "not deterministic": "not-deterministic",
          "LATENT": "latent", "BRITTLE": "brittle"}


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "STATESNAP_"))}
    out["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), out.get("PATH", "")])
    return out


@dataclass
class DemoRun:
    root: Path
    out: Path
    proc: subprocess.CompletedProcess[str]
    readers: dict[str, str] = field(default_factory=dict)

    @property
    def record(self) -> Path:
        return self.out / "run.jsonl"


def run_demo(base: Path, budget: int = 900) -> DemoRun:
    """The demo suite, run once as ``make demo`` runs it (record and outputs in ``out``)."""
    root, out = base / "demo", base / "out"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns(".pytest_cache", "build",
                                                               "__pycache__"))
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-q",
         f"--statesnap-record={out / 'run.jsonl'}", f"--statesnap-json={out / 'summary.json'}",
         f"--report={out / 'session.html'}", f"--statesnap-verify-budget={budget}"],
        cwd=root, env=env(), capture_output=True, text=True, timeout=budget + 300)
    shutil.rmtree(root / "build", ignore_errors=True)
    return DemoRun(root, out, proc)


def cli(run: DemoRun, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", *args], cwd=run.root, env=env(),
                          capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)


def from_json(findings: list[Mapping[str, object]]) -> Verdicts:
    out: Verdicts = {}
    for f in findings:
        polluters = tuple(str(p) for p in f.get("polluters") or [])  # type: ignore[attr-defined]
        key = f"{f['probe']}:{f['key']}" if f.get("probe") and f.get("key") else ""
        out[str(f["victim"])] = (str(f["status"]), polluters, key if polluters else "")
    return out


_HEAD = re.compile(r"^  \[(?P<status>[^\]]+)\] (?P<victim>\S+)$")
#: A cause that broke several victims, shown once (statesnap.output.explain.format_cause).
_CAUSE = re.compile(r"^  \[(?P<status>[^\]]+)\] \d+ tests broken by one cause: ")


def from_text(text: str, expected: Verdicts) -> Verdicts:
    """The findings block of the terminal section or of ``statesnap explain``.  A state line
    reads ``state: PROBE:KEY: BEFORE → AFTER`` and keys may hold ": ": it names the
    expected key when it starts with it, else it is kept whole (and differs)."""
    out: Verdicts = {}
    victim = None
    cause: list[str] | None = None  # a shared cause's [status, polluters, state line]
    for line in text.splitlines():
        found = _CAUSE.match(line)
        if found is not None:
            victim, cause = None, [_WORDS.get(found["status"], found["status"]), "", ""]
            continue
        if cause is not None and line.startswith("      "):
            body = line.strip()
            if body.startswith("polluted by: "):
                cause[1] = body[len("polluted by: "):]
            elif body.startswith("state: "):
                cause[2] = body[len("state: "):]
            elif line.startswith("        "):  # one victim of the cause
                member = body.split(" (", 1)[0]
                want = expected.get(member, ("", (), ""))[2]
                key = want if want and cause[2].startswith(want + ": ") else cause[2]
                out[member] = (cause[0], tuple(cause[1].split(" + ")), key)
            continue
        cause = None
        head = _HEAD.match(line)
        if head is not None:
            victim = head["victim"]
            out[victim] = (_WORDS.get(head["status"], head["status"]), (), "")
            continue
        if not line.startswith("      "):
            victim = None
        if victim is None:
            continue
        status, polluters, key = out[victim]
        body = line.strip()
        for label in ("polluted by: ", "top suspect: "):
            if body.startswith(label):
                polluters = tuple(body[len(label):].split(" + "))
        if body.startswith("state: "):
            state = body[len("state: "):]
            want = expected.get(victim, ("", (), ""))[2]
            key = want if want and state.startswith(want + ": ") else state
        out[victim] = (status, polluters, key if polluters else "")
    return out


def from_markdown(md: str) -> Verdicts:
    out: Verdicts = {}
    for block in md.split("\n### ")[0:]:
        block = block.removeprefix("### ")
        title = block.split("\n", 1)[0]
        names = re.findall(r"`([^`]+)`", title)
        if not names or "Files changed" in title:
            continue
        status = re.search(r"^- \*\*status\*\*: (.+)$", block, re.M)
        state = re.search(r"^- \*\*state\*\*: `([^`]+)`", block, re.M)
        polluters = tuple(names[1:])
        word = status[1] if status else "?"
        out[names[0]] = (_WORDS.get(word, word.split(",")[0]), polluters,
                         state[1] if state and polluters else "")
    return out


_ARTICLE = re.compile(r'<article class="finding status-[^"]+" id="finding-\d+">(.*?)</article>',
                      re.S)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


_NAME = re.compile(r'class="test-link"[^>]*>(.*?)</button>|class="test-name"[^>]*>(.*?)</span>',
                   re.S)


def from_html(page: str) -> Verdicts:
    out: Verdicts = {}
    for body in _ARTICLE.findall(page):
        head = body.split("</header>", 1)[0]
        badge = re.search(r'<span class="badge[^"]*"[^>]*>(.*?)</span>', head, re.S)
        names = [_text(a or b) for a, b in _NAME.findall(head)]
        if badge is None or not names:
            continue
        label = _text(badge[1])
        ref = re.search(r'<code class="ref">(.*?)</code>', body)
        status = _WORDS.get(label, label)
        victims = body.split('<ul class="victims">', 1)
        if len(victims) == 2:  # a shared cause: its polluters in the head, victims listed
            for a, b in _NAME.findall(victims[1]):
                out[_text(a or b)] = (status, tuple(names), _text(ref[1]) if ref else "")
            continue
        polluters = tuple(names[1:])
        out[names[0]] = (status, polluters, _text(ref[1]) if ref and polluters else "")
    return out


def read_back(run: DemoRun) -> dict[str, Verdicts]:
    """Every reader's verdicts, keyed by the reader's name (the session's under "session")."""
    summary = json.loads((run.out / "summary.json").read_text(encoding="utf-8"))
    session = from_json(summary["findings"])
    section = run.proc.stdout.split(" statesnap ", 1)[-1]
    text = cli(run, "explain", str(run.record))
    as_json = cli(run, "explain", str(run.record), "--json")
    md = cli(run, "explain", str(run.record), "--markdown")
    report = cli(run, "report", str(run.record), "-o", str(run.out / "read-back.html"))
    for name, proc in (("explain", text), ("explain --json", as_json),
                       ("explain --markdown", md), ("report", report)):
        if proc.returncode != 0:
            raise AssertionError(f"statesnap {name} failed: {proc.stderr[-2000:]}")
        run.readers[name] = proc.stdout + proc.stderr
    return {
        "session": session,
        "session terminal": from_text(section, session),
        "session pollution.html": from_html((run.out / "session.html").read_text("utf-8")),
        "explain": from_text(text.stdout, session),
        "explain --json": from_json(json.loads(as_json.stdout)),
        "explain --markdown": from_markdown(md.stdout),
        "report": from_html((run.out / "read-back.html").read_text("utf-8")),
    }


def rerank(run: DemoRun) -> Verdicts:
    """What re-ranking from the record alone names (the readers' old answer)."""
    from statesnap.analysis.attribution import attribute
    from statesnap.record.reader import read_record

    found = attribute(read_record(run.record))
    return {f.victim: (f.status, tuple(f.polluters), f"{f.probe}:{f.key}" if f.polluters
                       else "") for f in found}


def table(found: Mapping[str, Verdicts], old: Verdicts) -> str:
    session = found["session"]
    readers = [r for r in found if r != "session"]
    lines = ["| victim | session: status | polluter(s) | key | " + " | ".join(readers)
             + " | re-ranked from the record alone (before format 2) |",
             "| --- | --- | --- | --- | " + " | ".join("---" for _ in readers) + " | --- |"]
    for victim, (status, polluters, key) in sorted(session.items()):
        same = ["same" if found[r].get(victim) == session[victim] else
                f"**{found[r].get(victim)}**" for r in readers]
        o = old.get(victim)
        was = ("same polluter" if o is not None and o[1] == polluters else
               f"other polluter: {' + '.join(o[1]) or '—'}" if o is not None else "—")
        short = victim.split("::")[-1]
        names = " + ".join(p.split("::")[-1] for p in polluters) or "—"
        lines.append(f"| {short} | {status} | {names} | `{key or '—'}` | " + " | ".join(same)
                     + f" | {was} |")
    return "\n".join(lines)


INTRO = """# Verdicts on the demo: in the session and read back from the record

`.venv/bin/python tests/cli/demo_verdicts.py --out bench/results/demo-verdicts.md` (the same
check runs in `tests/cli/test_demo_verdicts.py`) runs `tests/demo` once as `make demo` does,
then reads the verdicts back from the session's terminal section and pollution.html,
`statesnap explain` (text, `--json`, `--markdown`) and `statesnap report RECORD`. "same" means
status, polluters and key equal the session's (its summary JSON). The last column is what
re-ranking from the record alone names: what `explain`, `report`, `replay` and the Markdown
showed before the record kept the session's verdicts (record format 2).
"""


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="also write the section to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="statesnap-demo-verdicts-") as tmp:
        run = run_demo(Path(tmp))
        found = read_back(run)
        old = rerank(run)
        session = found["session"]
        differ = sum(1 for v in session if old.get(v, ("", (), ""))[1] != session[v][1])
        agree = all(found[r] == session for r in found)
        text = (INTRO + f"\nAll readers agree with the session: {'yes' if agree else 'NO'}; "
                f"re-ranking alone names another polluter for {differ} of {len(session)} "
                "victims.\n\n" + table(found, old) + "\n")
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
