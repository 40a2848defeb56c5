"""Each kind of state as a polluter: a real run names it, proves it by replay, and the printed
reproduction really fails the victim (while the victim alone passes).

Each case is a two-test suite: ``test_a_pollutes`` changes one piece of global state and never
undoes it, ``test_b_victim`` relies on it being as it was.  The key-level replay (restore that
one key before the victim) must heal the victim wherever the probe can restore.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from suite_runs import run_shell, run_suite, write_suite


@dataclass
class Case:
    probe: str
    key_part: str
    polluter: str
    victim: str
    support: dict[str, str] | None = None
    restorable: bool = True
    #: Imported by the test module (at collection, as real suites import their code).
    imports: str = ""


CASES = {
    "env": Case("env", "ZOO_MODE",
                'os.environ["ZOO_MODE"] = "fast"',
                'assert os.environ.get("ZOO_MODE") is None'),
    "syspath": Case("syspath", "sys.path:",
                    'sys.path.insert(0, os.path.join(os.getcwd(), "plugins"))',
                    'assert not any(p.endswith("plugins") for p in sys.path)'),
    "cwd": Case("cwd", "cwd",
                'os.chdir("sub")',
                'assert os.path.exists("pytest.ini")',
                support={"sub/.keep": ""}),
    "modules": Case("modules", "zoo_backend",
                    'import types; sys.modules["zoo_backend"] = types.ModuleType("fake")',
                    'import zoo_backend; assert zoo_backend.NAME == "real"',
                    support={"zoo_backend.py": 'NAME = "real"\n'}),
    "attributes": Case("attributes", "zoo_settings:SETTINGS",
                       'zoo_settings.SETTINGS["mode"] = "fast"',
                       'assert zoo_settings.SETTINGS["mode"] == "slow"',
                       imports="import zoo_settings",
                       support={"zoo_settings.py": 'SETTINGS = {"mode": "slow"}\n'}),
    "logging": Case("logging", "zoo.audit",
                    'logging.getLogger("zoo.audit").setLevel(logging.ERROR)',
                    'assert logging.getLogger("zoo.audit").getEffectiveLevel() == '
                    'logging.WARNING'),
    "umask": Case("process", "umask",
                  "os.umask(0o077)",
                  "old = os.umask(0o022); os.umask(old); assert old == 0o022"),
    "decimal": Case("process", "decimal",
                    "decimal.getcontext().prec = 5",
                    "assert decimal.getcontext().prec == 28"),
    "recursionlimit": Case("process", "recursionlimit",
                           "sys.setrecursionlimit(123456)",
                           "assert sys.getrecursionlimit() == 1000"),
    "file left behind": Case("files", "left.txt",
                             'open("out/left.txt", "w").write("x")',
                             'assert not os.path.exists("out/left.txt")',
                             support={"out/.keep": ""}, restorable=False),
}


def _suite(case: Case) -> dict[str, str]:
    body = f'''
        import decimal, logging, os, sys
        {case.imports}

        def test_a_pollutes():
            {case.polluter}

        def test_b_victim():
            {case.victim}
        '''
    files = {"test_kind.py": body}
    files.update(case.support or {})
    return files


@pytest.mark.parametrize("name", list(CASES))
def test_each_kind_of_state_is_named_and_proven(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    old = os.umask(0o022)  # the umask case expects the usual one at the start
    try:
        root = write_suite(tmp_path / "suite", _suite(case))
        run = run_suite(root, tmp_path / "out")
    finally:
        os.umask(old)
    assert run.proc.returncode == 1, run.output[-3000:]
    f = run.finding("test_b_victim")
    assert f["status"] == "verified", (f, run.output[-3000:])
    assert f["polluters"] == ["test_kind.py::test_a_pollutes"]
    assert f["probe"] == case.probe
    assert case.key_part in f["key"]
    if case.restorable:
        assert f["hint_proven"] is True
        assert f["proven_keys"] == [f"{f['probe']}:{f['key']}"]
    assert f["hint"]
    # The terminal names it too, with a reproduction command.
    assert "[VERIFIED] test_kind.py::test_b_victim" in run.output
    assert f"state: {case.probe}:" in run.output
    assert f"reproduce: {f['repro']}" in run.output
    # Every replay left its full log beside the record, linked from the finding.
    assert f["logs"]
    for log in f["logs"]:
        text = (run.record_path.parent / log).read_text(encoding="utf-8")
        assert text.startswith("$ ") and "test_b_victim" in text


def test_printed_reproduction_really_fails_the_victim(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", _suite(CASES["attributes"]))
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_victim")
    assert f["status"] == "verified"
    repro = run_shell(f["repro"], cwd=root)
    assert repro.returncode == 1, repro.stdout
    assert "1 failed, 1 passed" in repro.stdout
    assert "FAILED test_kind.py::test_b_victim" in repro.stdout
    alone = run_shell(f["repro"].replace("test_kind.py::test_a_pollutes ", ""), cwd=root)
    assert alone.returncode == 0, alone.stdout
