"""A file rewritten with its size kept (tomlkit's ``test_toml_file`` writes its example file
back with the same text) must not read ``870 bytes → 870 bytes``: a leak line, a ``state:``
line and the Markdown that show no change at all.

``test_a`` rewrites ``data.txt`` with the same three bytes and moves its mtime 5 s forward;
``test_b`` trusts the mtime it read at import and fails after it, passing alone.
"""

from __future__ import annotations

from pathlib import Path

from suite_runs import run_shell, run_suite, statesnap_cli, write_suite

SUITE = {
    "data.txt": "abc",
    "test_data.py": '''
        import os
        from pathlib import Path

        DATA = Path(__file__).parent / "data.txt"
        SEEN = DATA.stat().st_mtime_ns  # at collection

        def test_a_rewrites_the_same_text():
            st = DATA.stat()
            DATA.write_text(DATA.read_text())
            os.utime(DATA, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))

        def test_b_trusts_the_mtime():
            assert DATA.stat().st_mtime_ns == SEEN
        ''',
}

SAID = "data.txt: 3 bytes → 3 bytes, rewritten (mtime +5.000 s)"


def test_a_same_size_rewrite_says_what_moved(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "test_data.py")
    assert run.proc.returncode == 1, run.output[-3000:]
    out = run.proc.stdout.split(" statesnap ", 1)[1]  # the statesnap section
    assert f"test_data.py::test_a_rewrites_the_same_text: {SAID} [call]" in out, out[-3000:]
    assert f"state: files:{SAID}" in out, out[-3000:]
    assert "3 bytes → 3 bytes [" not in out and "3 bytes → 3 bytes (" not in out

    md = statesnap_cli("explain", str(run.record_path), "--markdown", "--no-verify", cwd=root)
    assert md.returncode == 0, md.stderr
    assert "`3 bytes` → `3 bytes, rewritten (mtime +5.000 s)`" in md.stdout, md.stdout

    # The verdict the line describes is real: its reproduction fails the victim.
    finding = run.finding("test_b_trusts_the_mtime")
    assert finding["status"] == "verified", finding
    repro = run_shell(finding["repro"], cwd=root)
    assert "1 failed, 1 passed" in repro.stdout, repro.stdout[-2000:]
