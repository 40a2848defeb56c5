"""Reading a big record back streams it, and reads every line as a full parse does.

A record of 267,000 tests is 200 MB (issue 27): the reader takes it a line at a time and
shares what plain tests (nothing but an outcome and gauges) hold in common, so it holds
about what the entries need, not the file's text and its lines besides.  The entries must
still be exactly what parsing each line on its own gives (the reference here), and the
findings ``statesnap explain --json`` prints from a real run's record must not move.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from statesnap.record.journal import TestEntry
from statesnap.record.reader import read_record

RECORDS = Path(__file__).resolve().parent.parent / "snapshots" / "records"
GOLDEN = sorted(RECORDS.glob("*.jsonl"))


def _reference_tests(path: Path) -> list[TestEntry]:
    """Every test line parsed on its own: what the reader must give.  Format 3 writes a
    change's aliases on an ``aliases`` line and a ``chained`` change without its before (the
    after of its key's last change in the lane): put both back first, the plain way."""
    out = []
    lane = "main"
    afters: dict[tuple[str, str, str], object] = {}
    aliases: dict[tuple[str, str, str], list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line) if line.strip() else {}
        kind = obj.get("type")
        if kind in ("header", "lane"):
            lane = str(obj.get("worker", "main") if kind == "header" else obj["worker"])
        elif kind == "aliases":
            aliases[(lane, obj["probe"], obj["key"])] = obj["aliases"]
        elif kind == "test":
            for c in obj.get("changes") or []:
                ref = (lane, c["probe"], c["key"])
                if c.get("chained"):
                    c["before"] = afters[ref]
                afters[ref] = c.get("after")
                if "aliases" not in c and aliases.get(ref):
                    c["aliases"] = aliases[ref]
            out.append(TestEntry.from_json(obj))
    return out


def _scaled(src: Path, dest: Path, copies: int) -> Path:
    """``src`` with ``copies`` more of each of its plain test lines (new indexes and node
    ids) before its footer: a long run of a real record's plain tests."""
    lines = src.read_text(encoding="utf-8").splitlines()
    plain = [obj for obj in map(json.loads, lines)
             if obj.get("type") == "test" and not obj.get("changes") and "failure" not in obj]
    assert plain, src
    head = [ln for ln in lines if '"type":"footer"' not in ln]
    tail = [ln for ln in lines if '"type":"footer"' in ln]
    extra = []
    index = 100_000
    for n in range(copies):
        for obj in plain:
            obj = dict(obj, index=index, nodeid=f"{obj['nodeid']}[copy-{n}]")
            extra.append(json.dumps({"type": "start", "index": index, "nodeid": obj["nodeid"]},
                                    separators=(",", ":")))
            extra.append(json.dumps(obj, separators=(",", ":")))
            index += 1
    dest.write_text("\n".join([*head, *extra, *tail]) + "\n", encoding="utf-8")
    return dest


@pytest.mark.parametrize("path", GOLDEN, ids=[p.name for p in GOLDEN])
def test_the_golden_records_read_as_a_full_parse_of_each_line(path: Path) -> None:
    record = read_record(path)
    assert record.tests == _reference_tests(path)
    assert record.header["type"] == "header"


def test_a_long_record_is_read_without_holding_its_text(tmp_path: Path) -> None:
    big = _scaled(RECORDS / "format2-sample.jsonl", tmp_path / "big.jsonl", 8000)
    tracemalloc.start()
    try:
        record = read_record(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(record.tests) > 20_000
    assert record.tests == _reference_tests(big)
    # The file's text alone, read whole, is its size; its lines as a list as much again.
    assert peak < big.stat().st_size, (peak, big.stat().st_size)


def _explain_json(path: Path) -> object:
    proc = subprocess.run([sys.executable, "-m", "statesnap", "explain", "--json", str(path)],
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_explain_json_of_a_real_record_is_what_its_lines_say(tmp_path: Path) -> None:
    # The real record, and the same record with its lines rewritten one per parse (the
    # reference reader's view): explain gives the same findings from both.
    src = RECORDS / "format3-sample.jsonl"  # the current format
    rewritten = tmp_path / "rewritten.jsonl"
    rewritten.write_text("".join(
        json.dumps(json.loads(ln), indent=None) + "\n"
        for ln in src.read_text(encoding="utf-8").splitlines() if ln.strip()), encoding="utf-8")
    got = _explain_json(src)
    assert got == _explain_json(rewritten)
    assert got, "the golden record's findings"


def test_records_read_with_shared_names_hold_each_node_id_once(tmp_path: Path) -> None:
    # statesnap diff reads two records of one suite: their plain tests' equal node ids are
    # one string, and each record still reads as a full parse of its lines.
    a = _scaled(RECORDS / "format2-sample.jsonl", tmp_path / "a.jsonl", 800)
    b = tmp_path / "b.jsonl"
    b.write_bytes(a.read_bytes())
    names: dict[str, str] = {}
    first, second = read_record(a, names=names), read_record(b, names=names)
    assert first.tests == second.tests == _reference_tests(a)
    plain = [(x, y) for x, y in zip(first.tests, second.tests, strict=True)
             if "[copy-" in x.nodeid]
    assert len(plain) > 1000
    assert all(x.nodeid is y.nodeid for x, y in plain)
    tracemalloc.start()
    try:
        third = read_record(b, names=names)
        shared, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    tracemalloc.start()
    try:
        fourth = read_record(b)
        alone, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert third.tests == fourth.tests
    # A node id is much of what a plain test holds (a fifth here, with short ids).
    assert shared < 0.9 * alone, (shared, alone)
