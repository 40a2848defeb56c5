"""The mtime race (mypy's CI failure): a file rewritten while its mtime did not change.

``test_a`` builds ``build/out.txt`` and a cache keyed on its mtime; ``test_b`` rewrites the
file within the same mtime tick (put back with ``os.utime``, as a coarse filesystem would);
``test_c`` trusts the cache because the mtime is the same, and fails.  The terminal, the
report and the Markdown must say so in words: the file, both tests, the filesystem's mtime
resolution, and that caches keyed on mtime miss it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from suite_runs import run_suite, statesnap_cli, write_suite

SUITE = {
    "test_build.py": '''
        import json
        import os
        from pathlib import Path

        OUT = Path(__file__).parent / "build" / "out.txt"
        CACHE = Path(__file__).parent / "build" / "cache.json"

        def test_a_builds():
            OUT.parent.mkdir(exist_ok=True)
            OUT.write_text("hello")
            st = OUT.stat()
            CACHE.write_text(json.dumps({"mtime_ns": st.st_mtime_ns, "text": "hello"}))

        def test_b_rewrites_in_the_same_tick():
            st = OUT.stat()
            OUT.write_text("hello, world: 19 b")
            os.utime(OUT, ns=(st.st_atime_ns, st.st_mtime_ns))

        def test_c_trusts_the_cache():
            cache = json.loads(CACHE.read_text())
            if OUT.stat().st_mtime_ns == cache["mtime_ns"]:
                text = cache["text"]  # unchanged, says the mtime
            else:
                text = OUT.read_text()
            assert text == OUT.read_text()
        ''',
}

SENTENCE = ("build/out.txt: test_build.py::test_b_rewrites_in_the_same_tick changed its size "
            "(5 → 18 bytes) but the mtime did not change since "
            "test_build.py::test_a_builds wrote it")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_terminal_report_and_markdown_say_the_mtime_did_not_change(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "test_build.py",
                    f"--report={tmp_path / 'out' / 'session.html'}", budget=0)
    assert run.proc.returncode == 1, run.output[-3000:]
    out = run.proc.stdout.split(" statesnap ", 1)[1]  # the statesnap section
    # Terminal: the sentence, the resolution, the hint; no fingerprint cut mid-word.
    assert SENTENCE in out, out[-4000:]
    assert "within one tick of the filesystem's mtime resolution: mtime to " in out
    assert "caches keyed on mtime" in out
    assert "'flag':" not in out and "mtime_ns" not in out
    assert "build/out.txt: 5 bytes → 18 bytes, same mtime" in out

    md = statesnap_cli("explain", str(run.record_path), "--markdown", "--no-verify", cwd=root)
    assert md.returncode == 0, md.stderr
    assert "### Files changed while the mtime did not change" in md.stdout
    assert SENTENCE in md.stdout
    assert "caches keyed on mtime" in md.stdout

    report = statesnap_cli("report", str(run.record_path), "-o", str(tmp_path / "r.html"),
                           cwd=root)
    assert report.returncode == 0, report.stderr
    for page in (tmp_path / "r.html", tmp_path / "out" / "session.html"):
        text = _one_line(html.unescape(page.read_text(encoding="utf-8")))
        assert SENTENCE in text, page
        assert "changed while the mtime did not change" in text
        assert "fix: caches keyed on mtime" in text
        # The leak table and the diffs show the file in words, not its fingerprint's JSON.
        assert "5 bytes" in text and "18 bytes, same mtime" in text
        assert "\"size\":" not in text and "size-changed-mtime-kept" not in text


def test_a_race_in_a_session_without_failures_is_still_said(tmp_path: Path) -> None:
    """The race lines do not depend on a failure (the terminal skips them only when no test
    changed a file)."""
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "test_build.py", "--deselect",
                    "test_build.py::test_c_trusts_the_cache", budget=0)
    assert run.proc.returncode == 0, run.output[-3000:]
    out = run.proc.stdout.split(" statesnap ", 1)[1]
    assert SENTENCE in out, out[-4000:]
    assert "1 file(s) changed while the mtime did not change:" in out


def test_a_finding_whose_state_is_the_raced_file_says_so_with_both_tests() -> None:
    from statesnap.analysis.findings import Finding
    from statesnap.output.explain import format_finding, markdown

    header = {"rootdir": "/src/app", "mtime_resolution": {"/src/app": {
        "resolution_ns": 1_000_000_000, "write_tick_ns": None, "fs_type": "vfat",
        "mount_point": "/src"}}}
    f = Finding(victim="t.py::test_reads", polluters=["t.py::test_writes"], probe="files",
                key="build/out.txt", status="verified", before={"size": 5, "mtime_ns": 7},
                after={"size": 19, "mtime_ns": 7, "flag": "size-changed-mtime-kept"},
                hint="modify a copy of build/out.txt under tmp_path", repro="python -m pytest",
                proven_keys=["files:build/out.txt"])  # a key replay showed it
    text = "\n".join(format_finding(f, header))
    assert "state: files:build/out.txt: 5 bytes → 19 bytes, same mtime" in text
    assert ("mtime: build/out.txt: t.py::test_writes changed its size (5 → 19 bytes) but the "
            "mtime did not change before t.py::test_reads read it") in text
    assert "mtime resolution: mtime to 1 s (vfat at /src)" in text
    assert "fix: caches keyed on mtime" in text
    md = markdown([f], header)
    assert "- **mtime**: build/out.txt: t.py::test_writes changed its size" in md
    assert "- **fix**: caches keyed on mtime" in md
