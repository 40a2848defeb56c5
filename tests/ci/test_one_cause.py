"""One cause, one entry: victims of one polluter's one key shown once, in a real run.

One test's ``os.chdir`` breaks three tests; another polluter breaks a fourth alone.  The
terminal, pollution.html (parsed) and the job summary show the chdir cause once with its three
victims under it, and each victim's reproduction, on demand, runs as printed.
"""

from __future__ import annotations

import shlex
from html.parser import HTMLParser
from pathlib import Path

import pytest

from suite_runs import SuiteRun, run_shell, run_suite, statesnap_cli, write_suite

SUITE = {
    "data/a.txt": "a\n",
    "test_cwd.py": """
        import os
        import pathlib

        HERE = pathlib.Path(__file__).parent

        def test_moves_away():
            os.chdir(HERE / "data")

        def test_reads_one():
            assert os.path.exists("test_cwd.py")

        def test_reads_two():
            assert os.path.exists("test_cwd.py")

        def test_reads_three():
            assert os.path.exists("test_cwd.py")

        def test_sets_mode():
            os.environ["ONE_CAUSE_MODE"] = "x"

        def test_reads_mode():
            assert "ONE_CAUSE_MODE" not in os.environ
    """,
}
SHARED = [f"test_cwd.py::test_reads_{n}" for n in ("one", "two", "three")]
ALONE = "test_cwd.py::test_reads_mode"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, Path, Path]:
    tmp = tmp_path_factory.mktemp("cause")
    root = write_suite(tmp / "proj", SUITE)
    report = tmp / "pollution.html"
    summary = tmp / "summary.md"
    result = run_suite(root, tmp / "out", f"--report={report}",
                       env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.proc.returncode == 1, result.output[-4000:]
    return result, report, summary


class Cards(HTMLParser):
    """Each finding card's victims and reproductions, as a browser would read them."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: list[dict[str, list[str]]] = []
        self._stack: list[tuple[str, str]] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        self._stack.append((tag, cls))
        if tag == "article" and "finding" in cls.split():
            self.cards.append({"rows": [], "repros": [], "victim": []})
        if tag == "code" and any(c == "victim-repro" or c == "repro" for _, cl in self._stack
                                 for c in cl.split()):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "code" and self._text is not None:
            self.cards[-1]["repros"].append("".join(self._text))
            self._text = None
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        classes = {c for _, cl in self._stack for c in cl.split()}
        if self.cards and "victim-row" in classes and data.strip().startswith("test_cwd.py::"):
            self.cards[-1]["rows"].append(data.strip())
        elif self.cards and "victim" in classes and data.strip().startswith("test_cwd.py::"):
            self.cards[-1]["victim"].append(data.strip())


def test_report_shows_the_cause_once(run: tuple[SuiteRun, Path, Path]) -> None:
    result, report, _ = run
    parser = Cards()
    parser.feed(report.read_text(encoding="utf-8"))
    assert len(parser.cards) == 2, parser.cards
    shared = [c for c in parser.cards if c["rows"]]
    alone = [c for c in parser.cards if not c["rows"]]
    assert len(shared) == 1 and len(alone) == 1
    assert shared[0]["rows"] == SHARED
    assert alone[0]["victim"] == [ALONE]
    repros = shared[0]["repros"]
    assert len(repros) == len(SHARED)
    root = result.record_path.parent.parent / "proj"
    for victim, command in zip(SHARED, repros, strict=True):
        assert shlex.split(command)[-1] == victim
        proc = run_shell(command, cwd=root)
        assert proc.returncode == 1 and f"FAILED {victim}" in proc.stdout, proc.stdout[-2000:]


def test_terminal_and_summary_show_the_cause_once(run: tuple[SuiteRun, Path, Path]) -> None:
    result, _, summary = run
    out = result.proc.stdout
    assert out.count("3 tests broken by one cause: test_cwd.py::test_moves_away") == 1
    assert out.count("polluted by: test_cwd.py::test_moves_away") == 1
    assert out.count("[VERIFIED] test_cwd.py::test_reads_mode") == 1
    for victim in SHARED:
        assert f"[VERIFIED] {victim}" not in out
        assert f"      {victim} (AssertionError" in out
    text = summary.read_text(encoding="utf-8")
    assert text.count("which broke 3 tests") == 1
    # On demand: each victim's own reproduction, from the stored verdict.
    root = result.record_path.parent.parent / "proj"
    cli = statesnap_cli("explain", str(result.record_path), "--test", SHARED[2],
                        cwd=root)
    assert cli.returncode == 0, cli.stderr
    command = next(line.split("reproduce: ", 1)[1] for line in cli.stdout.splitlines()
                   if "reproduce: " in line)
    proc = run_shell(command, cwd=root)
    assert proc.returncode == 1 and f"FAILED {SHARED[2]}" in proc.stdout
