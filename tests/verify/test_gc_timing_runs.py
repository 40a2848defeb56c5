"""A session's proof that rests on garbage-collection timing says so (issue 28).

The suite keeps a subclass alive by a reference cycle; its conftest turns the collector off
so that the recorded run fails the victim every time.  The session proves the polluter with
the collector off, then a replay with ``gc.collect()`` before the victim passes: the finding
says the failure depends on garbage-collection timing, names the class the cycle keeps
alive, its fix breaks the cycle, and its reproduction (run as printed, bytecode written or
not) fails the victim.
"""

from __future__ import annotations

from pathlib import Path

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

SUITE = {
    "conftest.py": """
        import gc

        gc.disable()  # the recorded run: no collection between the tests
        """,
    "shapes.py": """
        class Shape:
            kinds = ()

            @classmethod
            def all_kinds(cls):
                found = list(cls.kinds)
                for sub in cls.__subclasses__():
                    found += sub.all_kinds()
                return found
        """,
    "test_a_kinds.py": """
        import shapes

        def test_declares_a_kind():
            class Hexagon(shapes.Shape):
                kinds = ("hexagon",)
            Hexagon.example = Hexagon()   # a cycle: alive until the next collection
            assert "hexagon" in shapes.Shape.all_kinds()
        """,
    "test_b_catalogue.py": """
        import shapes

        def test_catalogue_starts_empty():
            assert shapes.Shape.all_kinds() == [], "unexpected kinds"
        """,
}


def test_a_failure_held_by_a_reference_cycle_says_it_rests_on_gc_timing(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_catalogue_starts_empty")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_a_kinds.py::test_declares_a_kind"]
    assert "depends on garbage-collection timing" in f["note"], f["note"]
    assert "test_declares_a_kind.<locals>.Hexagon" in f["note"], f["note"]
    assert f["hint"].startswith("break the reference cycle that keeps Hexagon alive"), f["hint"]
    assert "gc.disable()" in f["repro"], f["repro"]
    assert [r["label"] for r in f["replays"]][-2:] == ["gc", "confirm"]
    assert f["replays"][-2]["outcome"] == "passed"
    # The line printed (the collector off) is the one that confirmed the finding.
    assert f["replays"][-1]["command"] == f["repro"]
    assert f["replays"][-1]["outcome"] == "failed"
    for bytecode in ("", "1"):
        check_reproductions(run.output, root, ["test_catalogue_starts_empty"],
                            env={"PYTHONDONTWRITEBYTECODE": bytecode},
                            expect="unexpected kinds")
