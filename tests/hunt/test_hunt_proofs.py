"""A hunt's findings, checked the way a user meets them: ``statesnap hunt`` prints them, and
every printed ``reproduce:`` line is pasted into a shell under plain pytest.

Each suite here is built so that a shortcut in the proof would print a wrong line: a pair
that fails the victim in another way, a reproduction longer than a few tests, a shared
proof run where another test stands in front of the victim.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions, run_reproduction, statesnap_words
from statesnap.hunt.runs import CLEANERS_LAST

pytestmark = pytest.mark.slow


def statesnap_hunt(record: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), "-q",
                           "--budget", "600", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def finding_blocks(output: str) -> dict[str, str]:
    """``{victim node id: its block of lines}`` from the hunt's terminal output (each
    finding starts with ``  [STATUS] victim``)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("  [") and "] " in line:
            current = blocks.setdefault(line.split("] ", 1)[1].split()[0], [])
        elif not line.startswith("    "):
            current = None
        if current is not None:
            current.append(line)
    return {v: "\n".join(lines) for v, lines in blocks.items()}


def test_a_pair_that_fails_the_victim_differently_is_not_its_polluter(suite: Suite) -> None:
    # The victim fails on the mode check after both leakers (the hunt's order).  Its own code
    # names ZOO_FEED, so the feed leaker is tried first; after it alone the victim fails too,
    # with the same exception type but on the next assertion: another failure, not this one.
    suite.write({
        "checks.py": '''
import os

def mode_is_day():
    return os.environ.get("ZOO_" + "MODE", "day") == "day"

def feed_is_hay():
    return os.environ.get("ZOO_" + "FEED", "hay") == "hay"
''',
        "test_a_visit.py": '''
import os
import checks

def test_visit():
    feed = os.environ.get("ZOO_FEED")
    assert checks.mode_is_day(), f"the zoo is closed (feed: {feed})"
    assert checks.feed_is_hay(), "the animals are hungry"
''',
        "test_b_mode.py": '''
import os

def test_night_mode():
    os.environ["ZOO_MODE"] = "night"
''',
        "test_c_feed.py": '''
import os

def test_meat_feed():
    os.environ["ZOO_FEED"] = "meat"
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_visit.py::test_visit"]
    assert "polluted by: test_b_mode.py::test_night_mode" in block, proc.stdout
    (run,) = check_reproductions(block, suite.root, ["test_a_visit.py::test_visit"],
                                 expect="the zoo is closed")
    assert "test_meat_feed" not in run.command
    alone = run_reproduction("python -m pytest -p no:randomly test_a_visit.py", suite.root)
    assert alone.proc.returncode == 0, alone.output


def test_a_brittle_test_first_in_a_long_shared_run_prints_a_plain_short_command(
        suite: Suite) -> None:
    # Nine tests pass only after test_a_opens set the gate up.  Without it they fail, and
    # the hunt's alone check runs all nine in one process: the first one's failure there is
    # its proof, from an order of nine tests.  Its printed command must run under plain
    # pytest and show it failing, and it needs none of the eight that ran after it.
    files = {
        "test_a_opens.py": '''
import os

def test_opens_gate():
    os.environ["ZOO_GATE"] = "open"
''',
    }
    for i in range(1, 10):
        files[f"test_b_visit_{i}.py"] = f'''
import os

def test_visit_{i}():
    assert os.environ.get("ZOO_GATE") == "open", "the gate is shut"
'''
    suite.write(files)
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    blocks = finding_blocks(proc.stdout)
    victims = [f"test_b_visit_{i}.py::test_visit_{i}" for i in range(1, 10)]
    assert sorted(blocks) == sorted(victims), proc.stdout
    for victim, block in blocks.items():
        assert "[BRITTLE]" in block, block
        (run,) = check_reproductions(block, suite.root, [victim], expect="the gate is shut")
        assert run.command.endswith(f"-p no:randomly -q {victim}"), run.command


def test_a_long_order_is_a_plain_pytest_command_reading_its_node_ids_from_a_file(
        suite: Suite) -> None:
    # test_c_once fails the first time it runs without its mark file, and only then: the
    # hunt's first order fails it, nothing after does, so it stays unexplained, with the
    # whole first order (ten tests) as the command that showed it failing.
    mark = suite.out / "once.mark"
    log = suite.out / "order.log"
    note = f"open({str(log)!r}, 'a').write(__name__ + '\\n')"
    files = {
        "test_a_leaks.py": f'''
import os

def test_leaks():
    {note}
    os.environ["ZOO_KEEPER"] = "on duty"
''',
        "test_c_once.py": f'''
import os

def test_once():
    {note}
    if not os.path.exists({str(mark)!r}):
        open({str(mark)!r}, "w").close()
        raise AssertionError("first visit")
''',
    }
    for i in range(1, 9):
        files[f"test_b_plain_{i}.py"] = f"def test_plain():\n    {note}\n"
    suite.write(files)
    mark.touch()
    record = suite.record()
    mark.unlink()
    summary = suite.out / "hunt.json"
    proc = statesnap_hunt(record, suite.root, "--json", str(summary))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (f,) = json.loads(summary.read_text())["findings"]
    assert (f["victim"], f["status"]) == ("test_c_once.py::test_once", "unexplained"), f
    expected = ["test_a_leaks", *(f"test_b_plain_{i}" for i in range(1, 9)), "test_c_once"]
    words = shlex.split(f["repro"])
    assert words[:3] == ["python", "-m", "pytest"] and words[-1].startswith("@"), f["repro"]
    assert not statesnap_words(f["repro"]), f["repro"]
    ids = Path(words[-1][1:]).read_text().splitlines()
    assert [i.split("::")[0].removesuffix(".py") for i in ids] == expected
    mark.unlink()
    log.unlink()
    run = run_reproduction(f["repro"], suite.root)
    assert run.proc.returncode == 1 and "first visit" in run.output, run.output
    assert log.read_text().split() == expected


def test_cleaners_on_both_sides_of_the_victim_are_moved_out_of_the_way(suite: Suite) -> None:
    # A cleaner runs before the victim and another after it: with the leakers first, the
    # first one stands between the polluter and the victim; with the rest backwards, the
    # second one does.  The hunt saw both reset the variable, and runs them last.
    cleaner = '''
import os

def test_resets_{0}():
    os.environ.pop("ZOO_LIGHTS", None)
'''
    suite.write({
        "test_a_cleaner.py": cleaner.format("a"),
        "test_b_victim.py": '''
import os

def test_lights_are_off():
    assert os.environ.get("ZOO_LIGHTS", "off") == "off", "the lights are on"
''',
        "test_c_cleaner.py": cleaner.format("c"),
        "test_d_polluter.py": '''
import os

def test_turns_lights_on():
    os.environ["ZOO_LIGHTS"] = "on"
''',
    })
    record = suite.record()
    summary = suite.out / "hunt.json"
    proc = statesnap_hunt(record, suite.root, "--json", str(summary))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    victim = "test_b_victim.py::test_lights_are_off"
    block = finding_blocks(proc.stdout)[victim]
    assert "[LATENT]" in block and "polluted by: test_d_polluter.py" in block, proc.stdout
    (run,) = check_reproductions(block, suite.root, [victim], expect="the lights are on")
    assert "test_resets" not in run.command
    runs = json.loads(summary.read_text())["hunt"]["runs"]
    found_in = [r["kind"] for r in runs if victim in r["new_failures"]]
    assert found_in == [CLEANERS_LAST], runs


def test_settings_changed_on_a_module_the_polluter_imported_first_are_the_key(
        suite: Suite) -> None:
    # In the hunt's order the polluter is the first to import zoo_settings, so the only
    # change a replay sees is the module appearing; taking it out heals the victim (a fresh
    # import), but the leak is the setting the recorded run saw changed.  Beside it, a
    # unittest class whose test leaves the working directory in a removed folder.
    suite.write({
        "zoo_settings.py": "OPEN_HOURS = 8\nGUIDE = 'day'\n",
        "test_0_reads_file.py": '''
def test_reads_data():
    with open("pytest.ini") as f:
        assert f.read().startswith("[pytest]"), "not the suite's own ini"
''',
        "test_a_victim.py": '''
def test_reads_settings():
    import zoo_settings
    assert zoo_settings.OPEN_HOURS == 8, "the zoo opens late"
''',
        "test_b_polluter.py": '''
def test_patches_settings():
    import zoo_settings
    zoo_settings.GUIDE = "night"
    zoo_settings.OPEN_HOURS = 12
''',
        "test_c_scratch.py": '''
import os, shutil, tempfile, unittest

class TestScratch(unittest.TestCase):
    def test_works_in_scratch(self):
        scratch = tempfile.mkdtemp()
        os.chdir(scratch)
        shutil.rmtree(scratch)

    def test_other(self):
        pass
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    blocks = finding_blocks(proc.stdout)
    settings = blocks["test_a_victim.py::test_reads_settings"]
    assert "state: attributes:zoo_settings:OPEN_HOURS: 8 → 12" in settings, settings
    assert "monkeypatch.setattr(zoo_settings, 'OPEN_HOURS'" in settings, settings
    assert "stub" not in settings, settings
    assert "restoring also heals it: modules:zoo_settings" in settings, settings
    data = blocks["test_0_reads_file.py::test_reads_data"]
    assert "polluted by: test_c_scratch.py::TestScratch::test_works_in_scratch" in data, data
    assert "state: cwd:cwd:" in data and "tearDown" not in data, data
    check_reproductions(settings, suite.root, ["test_reads_settings"],
                        expect="the zoo opens late")
    check_reproductions(data, suite.root, ["test_reads_data"], expect="pytest.ini")
