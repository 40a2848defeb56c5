"""The tests run whatever the disk does (issue 27, section 2).

Each case is a real pair of pytest processes, plain and with ``-p statesnap``, inside a mount
namespace (``mountns.py``) where a small ``tmpfs`` fills up mid-session or ``.pytest_cache``
is mounted read-only.  statesnap may lose its own files, never a test: the same outcomes,
summary line and exit code as plain pytest, one line for each file it could not write, no
traceback, and a record that says where it was cut short.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mountns
import pytest
from chaos_runs import PYTEST, check_same_run, env, outcomes, statesnap_lines

from statesnap.record.reader import read_record

pytestmark = [pytest.mark.needs_mountns, pytest.mark.slow]

#: 25 tests, one that fills the small disk, 30 that each leak a long environment value (so
#: their record lines need more room than statesnap keeps in reserve), then a failure.
FILLS_THE_DISK = '''
import os, pytest

SMALL = os.environ["SMALL"]

@pytest.mark.parametrize("i", range(25))
def test_before(i):
    assert i >= 0

def test_fills_the_disk():
    fd = os.open(os.path.join(SMALL, "ballast"), os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)

@pytest.mark.parametrize("i", range(30))
def test_leaks_a_long_value(i):
    os.environ[f"CHAOS_LONG_{i}"] = str(i) * 8000

def test_last():
    assert os.environ.get("CHAOS_FAIL") != "1"
'''


def _pair(tmp_path: Path, *snap_args: str, fail: bool, size: str = "1m"
          ) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Path]:
    """The suite run plain and with statesnap, each on a fresh small disk; what statesnap's
    run left on its disk is copied to the returned folder."""
    mountns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_fills.py").write_text(FILLS_THE_DISK)
    small = tmp_path / "small"
    small.mkdir()
    kept = tmp_path / "kept"
    environ = env(tmp_path / "tmp", SMALL=str(small), CHAOS_FAIL="1" if fail else "0")
    plain = mountns.run([mountns.tmpfs(small, size)], [*PYTEST, "-v"], cwd=project,
                        env=environ)
    snap = mountns.run([mountns.tmpfs(small, size)],
                       [*PYTEST, "-v", "-p", "statesnap", *snap_args], cwd=project,
                       env=environ, keep=(small, kept))
    return plain, snap, kept


@pytest.mark.parametrize("fail", [True, False], ids=["failing", "passing"])
def test_a_disk_that_fills_mid_session_cuts_the_record_not_the_run(tmp_path: Path,
                                                                   fail: bool) -> None:
    small = tmp_path / "small"
    plain, snap, kept = _pair(tmp_path, "--statesnap-record", str(small / "run.jsonl"),
                              "--statesnap-json", str(small / "summary.json"),
                              "--report", str(small / "report.html"), fail=fail)
    check_same_run(plain, snap)
    assert plain.returncode == (1 if fail else 0)
    assert len(outcomes(plain.stdout)) == 57
    lines = statesnap_lines(snap.stdout)
    assert lines[0] == (f"statesnap: the record {small / 'run.jsonl'} was cut short (No space "
                        "left on device); the 57 tests all ran, those after the cut are not in "
                        "it: nothing was replayed"), lines
    assert f"statesnap: cannot write {small / 'summary.json'}: No space left on device" in lines
    assert f"statesnap: cannot write {small / 'report.html'}: No space left on device" in lines
    # The record: whole lines up to the cut, then the note saying so, last.
    text = (kept / "run.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows[-1]["type"] == "cut" and rows[-1]["errno"] == "ENOSPC", rows[-1]
    assert all(row["type"] != "footer" for row in rows)
    record = read_record(kept / "run.jsonl")
    assert record.cut is not None and record.running is None and not record.crashed
    assert 26 <= len(record.tests) < 57  # the tests up to the full disk, some after it
    assert [t.nodeid.split("::")[1] for t in record.tests[:26]] == [
        *(f"test_before[{i}]" for i in range(25)), "test_fills_the_disk"]
    # Readers show it: explain says the record was cut short, and where.
    explain = subprocess.run([*PYTEST[:1], "-m", "statesnap", "explain",
                              str(kept / "run.jsonl")], capture_output=True, text=True,
                             timeout=120)
    assert explain.returncode == 0, explain.stderr
    assert ("note: the record (main) was cut short mid-run (No space left on device): the tests "
            "after its last one ran but are not in it") in explain.stderr
    assert "Traceback" not in explain.stdout + explain.stderr
    page = tmp_path / "pollution.html"
    report = subprocess.run([*PYTEST[:1], "-m", "statesnap", "report", str(kept / "run.jsonl"),
                             "-o", str(page)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert "cut short mid-run</span> (No space left on device)" in page.read_text()


def test_outputs_that_find_the_disk_full_at_the_end_keep_the_exit_code(tmp_path: Path) -> None:
    # The record in the project's cache (room enough); the summary and report on the disk
    # the suite fills.
    small = tmp_path / "small"
    plain, snap, kept = _pair(tmp_path, "--statesnap-json", str(small / "summary.json"),
                              "--report", str(small / "report.html"), fail=False)
    check_same_run(plain, snap)
    assert plain.returncode == 0
    lines = statesnap_lines(snap.stdout)
    assert lines == [
        f"statesnap: cannot write {small / 'summary.json'}: No space left on device",
        f"statesnap: cannot write {small / 'report.html'}: No space left on device"], lines
    assert not (kept / "summary.json").exists() and not (kept / "report.html").exists()
    assert [p.name for p in kept.iterdir()] == []  # no partial file, no temporary one


VICTIM = '''
import os

def test_polluter():
    os.environ["CHAOS_RO_FLAG"] = "1"

def test_victim():
    assert "CHAOS_RO_FLAG" not in os.environ
'''


def _read_only_cache(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    mountns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_victim.py").write_text(VICTIM)
    (project / ".pytest_cache").mkdir()
    return project, env(tmp_path / "tmp")


def test_a_read_only_cache_moves_the_default_record_to_the_temporary_dir(tmp_path) -> None:
    project, environ = _read_only_cache(tmp_path)
    cache = project / ".pytest_cache"
    summary = tmp_path / "summary.json"
    plain = mountns.run([mountns.read_only(cache)], [*PYTEST, "-v"], cwd=project, env=environ)
    snap = mountns.run([mountns.read_only(cache)],
                       [*PYTEST, "-v", "-p", "statesnap", "--statesnap-json", str(summary)],
                       cwd=project, env=environ)
    check_same_run(plain, snap)
    assert plain.returncode == 1
    [moved] = [line for line in statesnap_lines(snap.stdout + snap.stderr)
               if "the record is at" in line]
    runs = cache / "statesnap" / "runs"
    fallback = tmp_path / "tmp" / "statesnap-0" / "runs"
    assert moved.startswith(f"statesnap: cannot write in {runs} (Read-only file system); "
                            f"the record is at {fallback}/"), moved
    [record_path] = fallback.glob("*.jsonl")
    assert moved.endswith(str(record_path))
    record = read_record(record_path)
    assert record.footer is not None and len(record.tests) == 2
    # The replays ran from the fallback (their logs beside it): the pair is proven.
    [finding] = json.loads(summary.read_text())["findings"]
    assert finding["status"] == "verified", snap.stdout[-3000:]
    assert [p.split("::")[1] for p in finding["polluters"]] == ["test_polluter"]
    assert list(cache.iterdir()) == []


def test_a_record_path_the_user_named_in_a_read_only_place_is_still_a_usage_error(
        tmp_path: Path) -> None:
    project, environ = _read_only_cache(tmp_path)
    target = project / ".pytest_cache" / "mine.jsonl"
    snap = mountns.run([mountns.read_only(project / ".pytest_cache")],
                       [*PYTEST, "-p", "statesnap", "--statesnap-record", str(target)],
                       cwd=project, env=environ)
    assert snap.returncode == pytest.ExitCode.USAGE_ERROR
    assert [line for line in snap.stderr.splitlines() if line.strip()] == [
        f"ERROR: --statesnap-record {target}: cannot write in {target.parent} "
        "(Read-only file system)"]
    assert "passed" not in snap.stdout


#: In a full tmpfs: the session's writer, with the reserve (``fallocate``) or without it (as
#: on a filesystem that has none), writes lines until the disk refuses one.
WRITER = r'''
import json, os, sys
from pathlib import Path
from statesnap.record import reserve
from statesnap.record.journal import RecordWriter

small, with_reserve = Path(sys.argv[1]), sys.argv[2] == "yes"
if not with_reserve:
    reserve._load = lambda: None
writer = RecordWriter(small / "run.jsonl", keep_going=True)
writer.write({"type": "header", "format": 2})
fd = os.open(small / "ballast", os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"x" * 512)
except OSError:
    pass
os.close(fd)
for index in range(200):
    writer.write_start(index, f"t.py::test_{index}")
    writer.write({"type": "test", "index": index, "nodeid": f"t.py::test_{index}",
                  "outcome": "passed", "changes": [], "pad": "y" * 700})
writer.close()
print(json.dumps({"cut": writer.cut, "noted": writer.cut_noted}))
'''


@pytest.mark.parametrize("with_reserve", ["yes", "no"])
def test_the_writer_ends_a_record_the_disk_refuses_with_whole_lines(tmp_path: Path,
                                                                    with_reserve: str) -> None:
    mountns.require()
    small, kept = tmp_path / "small", tmp_path / "kept"
    small.mkdir()
    proc = mountns.run([mountns.tmpfs(small, "256k")],
                       [*PYTEST[:1], "-c", WRITER, str(small), with_reserve], cwd=tmp_path,
                       env=env(tmp_path / "tmp"), keep=(small, kept))
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    assert said["cut"]["errno"] == "ENOSPC"
    text = (kept / "run.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    rows = [json.loads(line) for line in text.splitlines()]  # whole lines only
    record = read_record(kept / "run.jsonl")
    assert record.tests, "the disk took no test line at all"
    if with_reserve == "yes":  # room was kept for the note
        assert said["noted"] and rows[-1]["type"] == "cut" and record.cut is not None
    elif said["noted"]:  # without a reserve, the note is there only if it fitted
        assert rows[-1]["type"] == "cut"
    else:
        assert record.cut is None and rows[-1]["type"] in ("start", "test")
