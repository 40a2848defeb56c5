"""``statesnap diff A B``: header differences and each new victim's prefix order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from statesnap.cli import main
from statesnap.record.journal import RecordWriter


def _header(**over: Any) -> dict[str, Any]:
    head: dict[str, Any] = {
        "type": "header", "format": 1, "worker": "main", "rootdir": "/ci/checkout",
        "python": {"version": "3.11.9", "implementation": "CPython"},
        "platform": {"system": "Linux", "release": "5.15", "platform": "Linux-5.15-x86_64"},
        "packages": {"pytest": "8.3.3", "psutil": "6.0.0"},
        "plugins": ["pytest-xdist-3.6.1"], "seed": None, "args": ["-p", "statesnap"],
        "mtime_resolution": {"/ci/checkout": {"resolution_ns": 1, "write_tick_ns": 4_000_000,
                                              "fs_type": "ext4", "mount_point": "/"}},
        "probes": [{"name": "env", "status": "ok"}],
    }
    head.update(over)
    return head


def _record(path: Path, header: dict[str, Any], order: list[str], failing: set[str]) -> Path:
    w = RecordWriter(path)
    w.write(header)
    for i, name in enumerate(order):
        bad = name in failing
        w.write({"type": "test", "index": i, "nodeid": f"tests/test_m.py::{name}",
                 "worker": "main", "outcome": "failed" if bad else "passed",
                 "phases": {"setup": "passed", "call": "failed" if bad else "passed"},
                 "changes": []})
    w.write({"type": "footer", "exitstatus": int(bool(failing))})
    w.close()
    return path


def test_environment_and_prefix_differences(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(),
                ["test_1", "test_2", "test_victim", "test_4"], set())
    b_header = _header(
        packages={"pytest": "8.3.3", "psutil": "6.1.0", "numpy": "2.0.0"},
        platform={"system": "Linux", "release": "6.5", "platform": "Linux-6.5-x86_64"},
        mtime_resolution={"/ci/checkout": {"resolution_ns": 1_000_000_000,
                                           "write_tick_ns": 1_000_000_000,
                                           "fs_type": "overlay", "mount_point": "/"}})
    b = _record(tmp_path / "b.jsonl", b_header,
                ["test_3", "test_1", "test_victim", "test_2"], {"test_victim"})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "  package psutil: 6.0.0 → 6.1.0" in out
    assert "  package numpy: — → 2.0.0" in out
    assert "  platform.release: 5.15 → 6.5" in out
    assert ("  filesystem of checkout: mtime to 1 ns, writes tick every 4 ms (ext4 at /) → "
            "mtime to 1 s, writes tick every 1 s (overlay at /)") in out
    assert "package pytest" not in out  # the same in both
    assert "  tests/test_m.py::test_victim: passed in A, fails in B" in out
    assert "    ran before it only in B (1): tests/test_m.py::test_3" in out
    assert "    ran before it only in A (1): tests/test_m.py::test_2" in out


def test_the_same_tests_in_another_order(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1", "test_2", "test_victim"], set())
    b = _record(tmp_path / "b.jsonl", _header(), ["test_2", "test_1", "test_victim"],
                {"test_victim"})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "environment: the same" in out
    assert ("    the 2 tests both ran before it ran in another order: from position 1, "
            "A ran tests/test_m.py::test_1, B ran tests/test_m.py::test_2") in out


def test_same_order_points_at_the_environment(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1", "test_victim"], set())
    b = _record(tmp_path / "b.jsonl", _header(seed=1234), ["test_1", "test_victim"],
                {"test_victim"})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "  seed: None → 1234" in out
    assert "the same tests ran before it in the same order" in out


def test_no_new_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1"], {"test_1"})
    b = _record(tmp_path / "b.jsonl", _header(), ["test_1", "test_new"], {"test_1"})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "no test fails in B that passed in A" in out
    assert "no test fails in A that passed in B" in out
    assert "tests that fail only in" not in out


def test_both_directions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A victim that fails in A and passes in B is reported as well, with its prefix diff,
    and swapping the records swaps the sides."""
    a = _record(tmp_path / "a.jsonl", _header(), ["test_p", "test_1", "test_victim"],
                {"test_victim"})
    b = _record(tmp_path / "b.jsonl", _header(), ["test_1", "test_victim", "test_p"], set())
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "no test fails in B that passed in A" in out
    assert "tests that fail only in A:\n  tests/test_m.py::test_victim: passed in B, fails in A\n" \
        "    ran before it only in A (1): tests/test_m.py::test_p\n" in out
    assert main(["diff", str(b), str(a)]) == 0
    out = capsys.readouterr().out
    assert "no test fails in A that passed in B" in out
    assert "tests that fail only in B:\n  tests/test_m.py::test_victim: passed in A, fails in B\n" \
        "    ran before it only in B (1): tests/test_m.py::test_p\n" in out


def test_one_failure_each_way_with_its_own_prefix(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1", "test_x", "test_2", "test_y"],
                {"test_x"})
    b = _record(tmp_path / "b.jsonl", _header(), ["test_2", "test_x", "test_1", "test_y"],
                {"test_y"})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    b_part, a_part = out.split("tests that fail only in B:")[1].split("tests that fail only in A:")
    assert "test_y: passed in A, fails in B" in b_part
    assert "the 3 tests both ran before it ran in another order: from position 1, " \
        "A ran tests/test_m.py::test_1, B ran tests/test_m.py::test_2" in b_part
    assert "test_x: passed in B, fails in A" in a_part
    assert "ran before it only in A (1): tests/test_m.py::test_1" in a_part
    assert "ran before it only in B (1): tests/test_m.py::test_2" in a_part


def _fs(tick_ns: int, resolution_ns: int = 1, fs_type: str = "ext4") -> dict[str, Any]:
    return {"/ci/checkout": {"resolution_ns": resolution_ns, "write_tick_ns": tick_ns,
                             "fs_type": fs_type, "mount_point": "/"}}


@pytest.mark.parametrize(("tick_a", "tick_b", "res_b", "fs_b", "shown"), [
    (6_900, 7_011, 1, "ext4", False),  # the measurement's jitter (issue 12)
    (4_000_000, 3_000_000, 1, "ext4", False),
    (6_900, 4_000_000, 1, "ext4", True),  # three orders of magnitude: a real difference
    (6_900, 6_900, 1_000_000_000, "ext4", True),  # the mtime's own resolution
    (6_900, 6_900, 1, "overlay", True),
])
def test_write_tick_jitter_is_no_environment_difference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tick_a: int, tick_b: int,
        res_b: int, fs_b: str, shown: bool) -> None:
    a = _record(tmp_path / "a.jsonl", _header(mtime_resolution=_fs(tick_a)), ["test_1"], set())
    b = _record(tmp_path / "b.jsonl", _header(mtime_resolution=_fs(tick_b, res_b, fs_b)),
                ["test_1"], set())
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert ("filesystem of checkout" in out) is shown, out
    assert ("environment: the same" in out) is not shown, out


def test_a_missing_record_is_one_line_and_exit_2(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1"], set())
    assert main(["diff", str(a), str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("statesnap diff: error: ") and err.count("\n") == 1, err
    assert "nope.jsonl" in err
