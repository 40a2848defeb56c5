"""The command a hunt prints for an order (``hunt/repro.py``), run the way a user runs it.

Each printed command is pasted into a shell under plain pytest, in a suite whose tests log
their own names: the command must run exactly the order it was printed for, in that order,
inline for a short order and through an ``@FILE`` of node ids for a long one, and only where
the recorded pytest reads such a file.  The header is a real recorded run's.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hunt_helpers import Suite

from repro_check import run_reproduction, statesnap_words
from statesnap.hunt.repro import args_file_of, order_command, reads_args_files, up_to
from statesnap.record.reader import read_record

#: The longest order printed inline, as documented (a literal: a changed limit must fail here).
MAX_INLINE = 8
#: Two more tests than that.
_TESTS = [f"test_{n:02d}.py::test_it" for n in range(MAX_INLINE + 2)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Suite, dict[str, Any]]:
    """A suite whose tests append their node ids to ``$ORDER_LOG``, and its recorded header."""
    base = tmp_path_factory.mktemp("repro")
    suite = Suite(base / "suite", base / "out")
    suite.root.mkdir()
    suite.out.mkdir()
    suite.write({"pytest.ini": "[pytest]\n"})
    suite.write({nodeid.split("::")[0]: (
        "import os\n\n"
        "def test_it():\n"
        "    with open(os.environ.get('ORDER_LOG', os.devnull), 'a') as log:\n"
        f"        log.write({nodeid!r} + '\\n')\n") for nodeid in _TESTS})
    record = suite.record()
    header = dict(read_record(record).header)
    assert reads_args_files(header), header.get("packages")  # this pytest reads @FILE
    return suite, header


def _ran(command: str, suite: Suite, log: Path) -> list[str]:
    """The node ids ``command`` ran, in order, pasted into a shell in the suite's root."""
    assert not statesnap_words(command), command
    run = run_reproduction(command, suite.root, env={"ORDER_LOG": str(log)})
    assert run.proc.returncode == 0, (command, run.output[-3000:])
    return log.read_text(encoding="utf-8").splitlines()


def _with_pytest(header: Mapping[str, Any], version: str | None) -> dict[str, Any]:
    return {**header, "packages": {**(header.get("packages") or {}), "pytest": version}}


def test_an_order_of_up_to_the_inline_limit_is_printed_as_node_ids(
        recorded: tuple[Suite, dict[str, Any]], tmp_path: Path) -> None:
    suite, header = recorded
    order = _TESTS[MAX_INLINE - 1::-1]  # the longest inline order, backwards
    args_file = tmp_path / "001-pair.args"
    command = order_command(header, order, args_file)
    assert shlex.split(command)[-len(order):] == order, command
    assert not args_file.exists()
    assert _ran(command, suite, tmp_path / "ran.log") == order


def test_a_short_order_is_printed_as_node_ids(
        recorded: tuple[Suite, dict[str, Any]], tmp_path: Path) -> None:
    suite, header = recorded
    order = [_TESTS[3], _TESTS[1]]
    args_file = tmp_path / "001-pair.args"
    command = order_command(header, order, args_file)
    words = shlex.split(command)
    assert words[-2:] == order and not any(w.startswith("@") for w in words), command
    assert not args_file.exists()
    assert _ran(command, suite, tmp_path / "ran.log") == order


def test_a_longer_order_is_read_from_a_file_of_node_ids(
        recorded: tuple[Suite, dict[str, Any]], tmp_path: Path) -> None:
    suite, header = recorded
    order = _TESTS[MAX_INLINE::-1]  # the shortest order read from a file, backwards
    assert len(order) == MAX_INLINE + 1
    args_file = tmp_path / "002-latent.args"
    command = order_command(header, order, args_file)
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "pytest"], command
    assert words[-1] == f"@{args_file.resolve()}", command
    assert not set(order) & set(words), command
    assert args_file.read_text(encoding="utf-8") == "".join(f"{n}\n" for n in order)
    # The file lies outside the suite's folder: the command names it by its absolute path.
    assert _ran(command, suite, tmp_path / "ran.log") == order


@pytest.mark.parametrize("version", ["8.1.2", "7.4.4", "", None])
def test_a_long_order_stays_inline_where_the_recorded_pytest_reads_no_file(
        recorded: tuple[Suite, dict[str, Any]], tmp_path: Path, version: str | None) -> None:
    # The printed command must work with the pytest the user has: one before 8.2 would take
    # "@FILE" for a path to collect, and an unknown version is not assumed to read it.
    suite, header = recorded
    order = _TESTS[::-1]
    args_file = tmp_path / "003-latent.args"
    command = order_command(_with_pytest(header, version), order, args_file)
    assert shlex.split(command)[-len(order):] == order, command
    assert not args_file.exists()
    if version == "8.1.2":
        assert _ran(command, suite, tmp_path / "ran.log") == order


@pytest.mark.parametrize(("version", "reads"), [
    ("8.2.0", True), ("8.2", True), ("8.10.1", True), ("9.0.1", True), ("10.1", True),
    ("8.1.9", False), ("8.0", False), ("7.9.0", False), ("6.12", False), ("8", False),
    ("", False), (None, False), ("dev", False),
])
def test_the_recorded_pytest_version_decides_whether_a_file_is_used(
        recorded: tuple[Suite, dict[str, Any]], tmp_path: Path, version: str | None,
        reads: bool) -> None:
    _, header = recorded
    order = _TESTS[::-1]
    args_file = tmp_path / "004-latent.args"
    command = order_command(_with_pytest(header, version), order, args_file)
    assert (shlex.split(command)[-1] == f"@{args_file.resolve()}") is reads, command
    assert args_file.exists() is reads
    assert reads_args_files({"packages": {"pytest": version}}) is reads


def test_a_long_order_without_a_file_to_write_is_printed_inline(
        recorded: tuple[Suite, dict[str, Any]]) -> None:
    _, header = recorded
    order = _TESTS[::-1]
    assert shlex.split(order_command(header, order, None))[-len(order):] == order
    assert not reads_args_files({})
    assert not reads_args_files({"packages": None})


def test_an_order_is_cut_after_the_test_it_is_printed_for() -> None:
    order = ["t.py::a", "t.py::b", "t.py::c"]
    assert up_to(order, "t.py::b") == ["t.py::a", "t.py::b"]
    assert up_to(order, "t.py::c") == order
    assert up_to(order, "t.py::a") == ["t.py::a"]
    assert up_to(iter(order), "t.py::b") == ["t.py::a", "t.py::b"]
    assert up_to(order, "t.py::z") == order  # not in it: all of it, never a guess


def test_the_file_of_node_ids_lies_beside_the_runs_order_file(tmp_path: Path) -> None:
    order_file = tmp_path / "hunt" / "003-latent.order.json"
    assert args_file_of(str(order_file)) == tmp_path / "hunt" / "003-latent.args"
    assert args_file_of("004-pair.order.json") == Path("004-pair.args")
    assert args_file_of(None) is None
    assert args_file_of("") is None
