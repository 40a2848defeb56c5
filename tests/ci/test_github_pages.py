"""GitHub Actions' own pages, from real pytest runs: the job summary and the annotations.

A suite whose one polluter breaks victims with hostile parametrize ids (``%``, ``:``, ``,``,
a backslash, a backtick), and whose polluter leaves, under a key named ``..</details>``, a
value holding CR, LF and a workflow command, runs under a faked ``$GITHUB_STEP_SUMMARY`` and
``GITHUB_ACTIONS=true``.  The summary is parsed with a Markdown parser (markdown-it-py), the
annotations against GitHub's format.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from suite_runs import SuiteRun, run_shell, run_suite, write_suite

IDS = ["p%25c", "a:b,c", "back\\slash", "tick`s"]
SUITE = {
    "test_ci.py": f'''
        import os
        import pytest

        def test_polluter():
            # A value from the tested process: CR, LF, a workflow command, an escape sequence.
            os.environ["CI_PAGES_MODE</details>"] = "fast\\r\\n::error::pwned%0A\\x1b[31m"

        @pytest.mark.parametrize("x", {IDS!r}, ids={IDS!r})
        def test_victim(x):
            assert os.environ.get("CI_PAGES_MODE</details>", "slow") == "slow"

        def test_alone_broken():
            assert False, "broken on its own"
    ''',
}
#: pytest writes a backslash of an id escaped (``_ascii_escaped_by_config``).
VICTIMS = [f"test_ci.py::test_victim[{i.encode('unicode_escape').decode()}]" for i in IDS]
#: The victims' failing line in test_ci.py (the assert).
LINE = 10


def _run(tmp: Path, *args: str, env: dict[str, str] | None = None) -> tuple[SuiteRun, Path]:
    root = write_suite(tmp / "proj", SUITE)
    summary = tmp / "step_summary.md"
    summary.write_text("earlier step's summary\n", encoding="utf-8")
    base = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(root)}
    return run_suite(root, tmp / "out", *args, env={**base, **(env or {})}), summary


@pytest.fixture(scope="module")
def gh(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, Path]:
    run, summary = _run(tmp_path_factory.mktemp("gh"))
    assert run.proc.returncode == 1, run.output[-4000:]
    return run, summary


def _inline_codes(tokens: list[Token]) -> list[str]:
    return [child.content for t in tokens if t.type == "inline" for child in t.children or []
            if child.type == "code_inline"]


def _list_items(tokens: list[Token]) -> list[tuple[int, str]]:
    """``(depth, inline source)`` of every list item's first paragraph."""
    out = []
    depth = 0
    for i, t in enumerate(tokens):
        if t.type == "bullet_list_open":
            depth += 1
        elif t.type == "bullet_list_close":
            depth -= 1
        elif t.type == "list_item_open":
            inline = next(x for x in tokens[i:] if x.type == "inline")
            out.append((depth, inline.content))
    return out


def test_summary_is_markdown_with_one_line_per_victim_under_the_cause(gh: tuple[SuiteRun, Path]
                                                                      ) -> None:
    _, path = gh
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step's summary\n"), "appended, not replaced"
    ours = text.removeprefix("earlier step's summary\n")
    tokens = MarkdownIt("commonmark").parse(ours)
    heading = next(tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open")
    assert heading == "statesnap: 4 order-dependent failure(s) proven, 1 other finding(s)"
    items = _list_items(tokens)
    # The cause once (depth 1), its four victims under it (depth 2), the lone failure apart.
    cause = [c for d, c in items if d == 1 and "broke 4 tests" in c]
    assert len(cause) == 1 and "test_ci.py::test_polluter" in cause[0]
    assert "env:CI_PAGES_MODE</details>" in cause[0]
    nested = [c for d, c in items if d == 2]
    assert len(nested) == len(VICTIMS)
    for victim, line in zip(VICTIMS, nested, strict=True):
        codes = _inline_codes(MarkdownIt("commonmark").parse(line))
        assert codes[0] == victim, (codes, line)  # the id whole, in its own code span
        assert "reproduce:" in line and victim in codes[1]
    lone = [c for d, c in items if d == 1 and "test_alone_broken" in c]
    assert len(lone) == 1 and "fails on its own" in lone[0]
    # Counts of leaks, then the issue text folded.
    paragraphs = [t.content for t in tokens if t.type == "inline"]
    assert "**Leaks:** 1 test(s) leaked state (`env` 1)." in paragraphs
    html = [t.content for t in tokens if t.type == "html_block"]
    assert html[0].startswith("<details><summary>Issue text")
    assert html[-1].strip() == "</details>"
    issue_headings = [tokens[i + 1].content for i, t in enumerate(tokens)
                      if t.type == "heading_open" and t.tag == "h3"][1:]
    assert len(issue_headings) == 5  # the issue text keeps one section per victim
    # No key or value of the tested process became Markdown or HTML of its own.
    inline_html = [c.content for t in tokens if t.type == "inline"
                   for c in t.children or [] if c.type == "html_inline"]
    assert inline_html == []
    assert [x.strip() for x in html] == [
        "<details><summary>Issue text (Markdown, ready to paste)</summary>",
        "<details><summary>Environment</summary>", "</details>", "</details>"]


def test_summary_reproduction_runs_as_printed(gh: tuple[SuiteRun, Path]) -> None:
    run, path = gh
    line = next(x for x in path.read_text(encoding="utf-8").splitlines()
                if "test_victim[a:b,c]" in x and "reproduce:" in x)
    codes = _inline_codes(MarkdownIt("commonmark").parse(line))
    command = codes[-1]
    proc = run_shell(command, cwd=run.record_path.parent.parent / "proj")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert re.search(r"FAILED .*test_victim\[a:b,c\]", proc.stdout)


def _unescape(text: str) -> str:
    return (text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
            .replace("%2C", ",").replace("%25", "%"))


ANNOTATION = re.compile(r"^::error (?P<props>[^:]*)::(?P<message>.*)$")


def test_annotations_follow_githubs_format(gh: tuple[SuiteRun, Path]) -> None:
    run, _ = gh
    # pytest's own assertion diff prints the polluter's value ("E   + ::error::pwned"), not at a
    # line's start; ours are one per verified victim, and the value never starts a line.
    lines = [x for x in run.proc.stdout.splitlines() if x.startswith("::")]
    assert len(lines) == len(VICTIMS), lines
    seen = []
    for line in lines:
        found = ANNOTATION.match(line)
        assert found, line
        props = dict(p.split("=", 1) for p in found.group("props").split(","))
        assert set(props) == {"file", "line", "title"}
        assert props["file"] == "test_ci.py" and props["line"] == str(LINE)
        title = _unescape(props["title"])
        assert "polluted by test_ci.py::test_polluter" in title
        message = _unescape(found.group("message"))
        # The value's CR and ESC are written as escapes, on the annotation's one line.
        assert "\r" not in message and "\x1b" not in message
        assert "fast\\r\\n::error::pwned%0A\\x1b[31m" in message
        victim = message.split(" fails after ", 1)[0]
        seen.append(victim)
        assert message.startswith(f"{victim} fails after test_ci.py::test_polluter.\n")
        assert "Reproduce: python -m pytest" in message
    assert seen == VICTIMS
    # The annotations come before pytest's own last line, which stays last.
    assert run.proc.stdout.rstrip().splitlines()[-1].startswith("=")
    assert "5 failed, 1 passed" in run.proc.stdout.rstrip().splitlines()[-1]


def test_escaping_matches_the_toolkit() -> None:
    from statesnap.output.github import escape_data, escape_property

    assert escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"


def test_ci_off_writes_neither(tmp_path: Path) -> None:
    run, summary = _run(tmp_path, "--statesnap-ci=off")
    assert run.proc.returncode == 1, run.output[-3000:]
    assert summary.read_text(encoding="utf-8") == "earlier step's summary\n"
    assert not [x for x in run.proc.stdout.splitlines() if x.startswith("::")]
    assert "4 tests broken by one cause" in run.proc.stdout  # the terminal section still


def test_outside_github_actions_no_annotations(tmp_path: Path) -> None:
    """A test that changes os.environ does not move the summary; no GITHUB_ACTIONS, no
    annotations."""
    # The victim is verified: were GITHUB_ACTIONS read at the end, it would be annotated.
    root = write_suite(tmp_path / "proj", {"test_env.py": """
        import os
        def test_moves_summary():
            os.environ["GITHUB_STEP_SUMMARY"] = os.devnull
            os.environ["GITHUB_ACTIONS"] = "true"

        def test_victim():
            assert "GITHUB_ACTIONS" not in os.environ
    """})
    summary = tmp_path / "summary.md"
    run = run_suite(root, tmp_path / "out", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert run.proc.returncode == 1, run.output[-3000:]
    assert not [x for x in run.proc.stdout.splitlines() if x.startswith("::")]
    tokens = MarkdownIt("commonmark").parse(summary.read_text(encoding="utf-8"))
    assert tokens[1].content == "statesnap: 1 order-dependent failure(s) proven"


def test_bad_mode_is_a_usage_error(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "proj", {"test_ok.py": "def test_ok():\n    pass\n"})
    run = run_suite(root, tmp_path / "out", "--statesnap-ci=sometimes")
    assert run.proc.returncode == 4
    assert "--statesnap-ci: invalid choice: 'sometimes'" in run.proc.stderr
    assert "Traceback" not in run.output
