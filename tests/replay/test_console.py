"""A failure's exception type read back from pytest's short summary (replay/console.py): what
the run of a printed line is compared on."""

from __future__ import annotations

import pytest

from statesnap.replay.console import read_console, signature


@pytest.mark.parametrize(("message", "exc_type"), [
    # A rewritten assert: pytest prints the expression without "AssertionError: ".
    ("assert '<json5 stub>' ==...", "AssertionError"),
    ("assert", "AssertionError"),
    ("AssertionError: ZOO leaked", "AssertionError"),
    ("KeyError: 'x'", "KeyError"),
    ("asserting things went wrong", None),
])
def test_the_exception_type_of_a_short_summary_message(message: str,
                                                       exc_type: str | None) -> None:
    assert signature(message)["exc_type"] == exc_type


def test_a_quiet_run_read_with_its_summary() -> None:
    text = ("test_zoo.py .F                                    [100%]\n"
            "=========================== short test summary info ============================\n"
            "PASSED test_zoo.py::test_polluter\n"
            "FAILED test_zoo.py::test_victim - assert 'x' == 'y'\n")
    outcomes, failures = read_console(text)
    assert outcomes == {"test_zoo.py::test_polluter": "passed",
                        "test_zoo.py::test_victim": "failed"}
    assert failures["test_zoo.py::test_victim"]["exc_type"] == "AssertionError"
