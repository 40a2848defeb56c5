"""One object, one name (issue 29): an object reachable under several names, changed in place,
is one change under its home (the module that defines it, else a module that is not a test's),
the other names kept as its ``aliases``; a name rebound to another object is still a change of
its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from attribution_records import change, failing, nodeid, t, write

from statesnap.analysis.attribution import dirty_before, rank
from suite_runs import run_suite, write_suite

FILES = {
    "app.py": """
        REGISTRY = {}
        """,
    "test_a.py": """
        from app import REGISTRY


        def test_registers():
            REGISTRY["a"] = 1
        """,
    "test_b.py": """
        import test_a
        from app import REGISTRY


        def test_rebinds_an_alias():
            test_a.REGISTRY = {"fresh": True}
        """,
}


def test_one_change_per_object_and_rebinding_still_seen(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    tests = {t.nodeid.rsplit("::", 1)[1]: t for t in run.record().tests}
    (change,) = [c for c in tests["test_registers"].changes if c.probe == "attributes"]
    assert change.key == "app:REGISTRY"
    assert change.aliases == ["test_a:REGISTRY", "test_b:REGISTRY"]
    rebound = [c.key for c in tests["test_rebinds_an_alias"].changes if c.probe == "attributes"]
    assert rebound == ["test_a:REGISTRY"]
    summary = json.loads(run.json_path.read_text(encoding="utf-8"))
    keys = [x["key"] for t in summary["tests"] for x in t["leaks"] if x["probe"] == "attributes"]
    assert keys.count("app:REGISTRY") == 1 and "test_b:REGISTRY" not in keys
    (leak,) = [x for t in summary["tests"] for x in t["leaks"] if x["key"] == "app:REGISTRY"]
    assert leak["aliases"] == ["test_a:REGISTRY", "test_b:REGISTRY"]
    listed = [ln for ln in run.output.splitlines() if "REGISTRY" in ln]
    assert len(listed) == 2, run.output[-3000:]  # the registry once, the rebinding once
    assert "(also as 2 other names)" in listed[0], listed


def test_a_failure_naming_an_alias_points_at_the_folded_change(tmp_path: Path) -> None:
    """The victim's code names the object by an alias (``REG``): ranking reads the aliases
    that fold_aliases moved off the record, as it would have read their own changes."""
    rec = write(tmp_path / "r.jsonl", [
        t(0, "test_registers", change("attributes", "app:REGISTRY", "<dict #a1b2c3>",
                                      "<dict #a1b2c3 (1 item)>", severity=2,
                                      aliases=["test_y:REG"])),
        t(1, "test_later_severe", change("syspath", "sys.path:/opt/x", None, "at 0",
                                         severity=3)),
        failing(2, "test_victim", code="assert REG == {}"),
    ])
    (victim,) = [x for x in rec.tests if x.nodeid == nodeid("test_victim")]
    cands = rank(victim, dirty_before(rec.tests, victim))
    assert [c.key for c in cands] == ["app:REGISTRY", "sys.path:/opt/x"]
    assert "key named in the failing code" in cands[0].reasons
