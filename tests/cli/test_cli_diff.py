"""``statesnap diff A B``: header differences and each new victim's prefix order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from statesnap.cli import main
from statesnap.record import RecordWriter


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
    main(["diff", str(a), str(b)])
    out = capsys.readouterr().out
    assert "  seed: None → 1234" in out
    assert "the same tests ran before it in the same order" in out


def test_no_new_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _record(tmp_path / "a.jsonl", _header(), ["test_1"], {"test_1"})
    b = _record(tmp_path / "b.jsonl", _header(), ["test_1", "test_new"], {"test_1"})
    main(["diff", str(a), str(b)])
    assert "no test fails in B that passed in A" in capsys.readouterr().out
