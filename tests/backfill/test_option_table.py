"""An invocation read out of a CI log is split with the checkout's own options, plugins' too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from statesnap.backfill.artifacts import load
from statesnap.backfill.optiontable import FALLBACK, CheckoutTables, ask_checkout
from statesnap.backfill.orderrecord import replay_invocation, write_order_record
from statesnap.record.reader import read_record

CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--stage", action="store", default="dev")
    parser.addoption("--fast", action="store_true")
"""

TESTS = """
def test_stage(request):
    assert request.config.getoption("stage") == "staging"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "tests" / "test_stage.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def test_a_conftest_option_takes_its_value(checkout: Path) -> None:
    args = ["--stage", "staging", "--fast", "-v", "tests"]
    table = ask_checkout(checkout, args, sys.executable)
    assert table is not None
    assert table.nargs["--stage"] is None  # one value
    assert table.nargs["--fast"] == 0
    kept = replay_invocation(args, table, checkout)
    assert kept == ["-p", "statesnap", "--stage", "staging", "--fast", "-v"]
    # The fixed table of pytest's own options takes --stage for a flag and its value for a
    # test path: the replay would lose the option's value and run with the default.
    assert "staging" not in replay_invocation(args, FALLBACK, checkout)


def test_the_kept_words_run_the_test_as_ci_did(checkout: Path) -> None:
    args = ["--stage", "staging", "-v", "tests"]
    table = CheckoutTables(checkout, sys.executable).table(args)
    kept = [a for a in replay_invocation(args, table, checkout) if a not in ("-p", "statesnap")]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *kept,
                           "tests/test_stage.py::test_stage"], cwd=checkout,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_arguments_the_checkout_refuses_fall_back_with_a_note(checkout: Path) -> None:
    tables = CheckoutTables(checkout, sys.executable)
    assert tables.table(["--no-such-option", "tests"]) is FALLBACK
    assert len(tables.notes) == 1
    assert "--no-such-option tests" in tables.notes[0]
    assert "pytest's own options only" in tables.notes[0]
    # Asked once per distinct invocation.
    assert tables.table(["--no-such-option", "tests"]) is FALLBACK
    assert len(tables.notes) == 1


def test_nothing_is_run_or_written_in_the_checkout(checkout: Path) -> None:
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))
    junit = checkout / "junit.xml"
    table = ask_checkout(checkout, ["--junitxml", str(junit), "--stage", "x"], sys.executable)
    assert table is not None
    assert not junit.exists()
    after = sorted(p.relative_to(checkout) for p in checkout.rglob("*")
                   if "__pycache__" not in p.parts)
    assert after == [p for p in before if "__pycache__" not in p.parts]


def test_a_log_with_a_plugin_option_gives_an_order_record_that_keeps_it(
        checkout: Path, tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_text("$ python -m pytest --stage staging -v tests\n"
                   "tests/test_stage.py::test_stage PASSED [100%]\n")
    loaded = load([log], checkout, sys.executable)
    assert loaded.bad == []  # the id was collected with --stage's value, not a path "staging"
    assert loaded.tables is not None
    path = write_order_record(loaded.shards[0], checkout, tmp_path / "order.jsonl",
                              loaded.tables.table(loaded.shards[0].args))
    header = read_record(path).header
    assert header["replay"]["args"] == ["-p", "statesnap", "--stage", "staging", "-v"]
