"""Replays run exactly the user's invocation, whatever options it had and wherever they were.

Each case is one real ``pytest -p statesnap`` run (a subprocess) of a small polluting suite,
with the options of issue 12 in different positions, values attached and as separate words.
The suite's ini has ``filterwarnings = error``, so any option a replay adds that pytest does
not know (``-o cache_dir`` under ``-p no:cacheprovider``) is an internal error, not a warning.

The victim first checks that it runs configured as in the recorded run (verbosity, ``-W``,
``-o``, ``--tb``, ``-r``, ``-s``, a conftest option, plugins loaded or blocked): a replay that
lost or added an option makes it fail for that reason, so the finding is not ``verified``, and
the printed command (run under plain pytest by :mod:`repro_check`) fails with the wrong text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repro_check import check_reproductions, plain_env
from suite_runs import write_suite

CONFTEST = """
import json, os
import pytest


def pytest_addoption(parser):
    parser.addoption("--flavour", default="plain", help="a conftest's valued option")
    parser.addini("flavour_ini", "an ini value", default="none")


def fingerprint(config):
    return {
        "flavour": config.getoption("--flavour"),
        "flavour_ini": config.getini("flavour_ini"),
        "verbose": config.option.verbose,
        "capture": config.option.capture,
        "tbstyle": config.option.tbstyle,
        "reportchars": config.option.reportchars,
        "warnings": list(config.option.pythonwarnings or []),
        "plugins": {name: config.pluginmanager.has_plugin(name)
                    for name in ("localplugin", "cacheprovider", "doctest")},
    }


@pytest.fixture
def same_config(request):
    # The first process to get here (the recorded run) writes what it saw; every later one
    # (replays, the printed command) must see the same.
    path = os.environ["E2E_FINGERPRINT"]
    mine = fingerprint(request.config)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        with open(path) as f:
            first = json.load(f)
        if "-rA" in os.environ.get("PYTEST_ADDOPTS", "").split():
            # statesnap's run of the printed line, which reads its outcomes with -v -rA
            # added (documented): verbosity and report characters are its own there.
            for key in ("verbose", "reportchars"):
                mine.pop(key)
                first.pop(key)
        assert mine == first, "E2E: configured differently from the recorded run"
    else:
        with os.fdopen(fd, "w") as f:
            json.dump(mine, f)
"""

SUITE = {
    "pytest.ini": """
        [pytest]
        filterwarnings =
            error
        markers =
            slow: a marked test
    """,
    "conftest.py": CONFTEST,
    "localplugin.py": """
        def pytest_configure(config):
            config.addinivalue_line("markers", "local: from a -p plugin")
    """,
    "test_pollution.py": """
        import os
        import pytest


        def test_a_polluter():
            os.environ["E2E_POLLUTED"] = "1"


        @pytest.mark.slow
        def test_b_marked():
            pass


        def test_c_victim(same_config):
            assert os.environ.get("E2E_POLLUTED") is None, "E2E: polluted by an earlier test"
    """,
}
VICTIM = "test_pollution.py::test_c_victim"
POLLUTER = "test_pollution.py::test_a_polluter"

#: statesnap's own words, placed among the user's: {rec} and {sum} are filled in per run.
ON = ["-p", "statesnap"]

CASES = [
    pytest.param(
        ["-p", "no:randomly", "-q", *ON, "--statesnap-record", "{rec}", "-p", "localplugin",
         "-W", "error::DeprecationWarning", "--tb=short", "test_pollution.py", "-o",
         "flavour_ini=x", "--flavour", "sour", "-rA", "--statesnap-json={sum}"],
        {"verbose": -1, "tbstyle": "short", "reportchars": "A", "flavour": "sour",
         "flavour_ini": "x", "warnings": ["error::DeprecationWarning"]},
        id="issue-12 -q then -p; separate values; record path as a separate word"),
    pytest.param(
        ["test_pollution.py", "-qq", "--flavour=sour", "-p", "no:cacheprovider", *ON, "-k",
         "polluter or victim", "--maxfail=2", "-s", "-pno:randomly",
         "--statesnap-record={rec}", "--statesnap-json", "{sum}"],
        {"verbose": -2, "capture": "no", "flavour": "sour",
         "plugins": {"localplugin": False, "cacheprovider": False, "doctest": True}},
        id="no cacheprovider under filterwarnings=error; -k; -qq; paths first"),
    pytest.param(
        ["-v", "-x", "-p", "no:randomly", "-m", "not slow", "--tb", "short", *ON,
         "-Werror::DeprecationWarning", ".", "-o=flavour_ini=y", "-pno:doctest",
         "--statesnap-record={rec}", "--statesnap-json={sum}"],
        {"verbose": 1, "tbstyle": "short", "flavour_ini": "y",
         "warnings": ["error::DeprecationWarning"],
         "plugins": {"localplugin": False, "cacheprovider": True, "doctest": False}},
        id="-v -x -m, attached -W and -o, -p no:NAME"),
    pytest.param(
        ["-sv", "-k=victim or polluter", "-mnot slow", "--reruns-delay", "0", "-plocalplugin",
         "-rA", "--maxfail", "2", "-p", "no:cacheprovider", "-oflavour_ini=z", *ON,
         "-p", "no:randomly", "--statesnap-probes", "env", "--statesnap-record={rec}",
         "--statesnap-json={sum}", "test_pollution.py"],
        {"verbose": 1, "capture": "no", "reportchars": "A", "flavour_ini": "z",
         "plugins": {"localplugin": True, "cacheprovider": False, "doctest": True}},
        id="chains, attached -k -m -p -o, a plugin's valued option, no cacheprovider"),
]


def _run(root: Path, out: Path, args: list[str]) -> tuple[subprocess.CompletedProcess[str],
                                                          dict[str, Any], dict[str, Any]]:
    rec, summary, fp = out / "run.jsonl", out / "run.json", out / "fingerprint.json"
    words = [a.replace("{rec}", str(rec)).replace("{sum}", str(summary)) for a in args]
    env = plain_env({"E2E_FINGERPRINT": str(fp)})
    proc = subprocess.run([sys.executable, "-m", "pytest", *words], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    text = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in text, text[-4000:]
    assert proc.returncode == 1, text[-4000:]
    found = json.loads(summary.read_text())["findings"]
    (finding,) = [f for f in found if f["victim"] == VICTIM]
    return proc, finding, json.loads(fp.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(("args", "expected"), CASES)
def test_replays_and_printed_commands_run_the_invocation(
        tmp_path: Path, args: list[str], expected: dict[str, Any]) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    out = tmp_path / "out"
    out.mkdir()
    proc, finding, first = _run(root, out, args)
    text = proc.stdout + proc.stderr
    # The options had their effect in the recorded run (so the comparison means something).
    for key, value in expected.items():
        assert first[key] == value, (key, first)
    assert finding["status"] == "verified", (finding, text[-4000:])
    assert finding["polluters"] == [POLLUTER]
    logs = sorted((out / "run.logs").glob("*.log"))
    assert logs, "no replay ran"
    for log in logs:
        body = log.read_text()
        assert "PytestConfigWarning" not in body and "INTERNALERROR" not in body, body[-3000:]
        assert "configured differently" not in body, body[-3000:]
    check_reproductions(text, root, [VICTIM],
                        env={"E2E_FINGERPRINT": str(out / "fingerprint.json")},
                        expect="E2E: polluted by an earlier test")


def test_a_replay_adds_no_cache_dir_without_the_cacheprovider(tmp_path: Path) -> None:
    """The header says whether the run had pytest's cache; only then a scratch cache_dir."""
    root = write_suite(tmp_path / "suite", SUITE)
    out = tmp_path / "out"
    out.mkdir()
    _run(root, out, ["-p", "no:randomly", "-p", "no:cacheprovider", *ON,
                     "--statesnap-record={rec}", "--statesnap-json={sum}",
                     "--statesnap-verify-budget=0"])
    header = json.loads((out / "run.jsonl").read_text().splitlines()[0])
    assert header["replay"]["cacheprovider"] is False
    assert header["replay"]["plain_args"] == ["-p", "no:randomly", "-p", "no:cacheprovider"]
    assert os.path.exists(out / "run.jsonl")


@pytest.mark.slow
def test_cli_replays_and_their_printed_commands(tmp_path: Path) -> None:
    """``explain --verify`` and ``bisect`` replay from the record alone (another process, the
    session's option table gone): the same invocation, and commands plain pytest runs."""
    root = write_suite(tmp_path / "suite", SUITE)
    out = tmp_path / "out"
    out.mkdir()
    fp = str(out / "fingerprint.json")
    _run(root, out, ["-qq", "-p", "no:randomly", *ON, "-p", "no:cacheprovider", "--tb", "short",
                     "-W", "error::DeprecationWarning", "--flavour=sour", "-oflavour_ini=q",
                     "--statesnap-record", "{rec}", "--statesnap-json={sum}",
                     "--statesnap-verify-budget=0", "test_pollution.py"])
    for command in (["explain", str(out / "run.jsonl"), "--verify"],
                    ["bisect", str(out / "run.jsonl"), "--test", VICTIM]):
        cli = subprocess.run([sys.executable, "-m", "statesnap", *command], cwd=root,
                             env=plain_env({"E2E_FINGERPRINT": fp}), capture_output=True,
                             text=True, timeout=600, stdin=subprocess.DEVNULL)
        text = cli.stdout + cli.stderr
        assert cli.returncode in (0, 1), text[-3000:]
        assert POLLUTER in text and "configured differently" not in text, text[-3000:]
        check_reproductions(text, root, [VICTIM], env={"E2E_FINGERPRINT": fp},
                            expect="E2E: polluted by an earlier test")
