"""What changed, in one line (statesnap.output.delta), where a before/after pair is too long
for the line or reads the same once cut: the terminal, the summary JSON's ``delta`` and the
report say it instead of two ends that hide it.
"""

from __future__ import annotations

import json
from pathlib import Path

from statesnap.output.delta import delta
from suite_runs import run_suite, write_suite


def test_container_fingerprints_name_what_was_added_removed_changed() -> None:
    before = "{'a': 1, 'b': [1, 2]} #aaaaaa len=2 ~11111111"
    after = "{'a': 2, 'b': [1, 2], 'c': 'x'} #aaaaaa len=3 ~22222222"
    assert delta(before, after) == "+'c': 'x'; ~'a': 1 → 2; len 2 → 3"
    assert delta("[1, 2, 3] #aaaaaa len=3 ~1", "[1, 3] #aaaaaa len=2 ~2") is not None
    assert delta("[1, 2, 3] #aaaaaa len=3 ~11111111",
                 "[1, 2, 3, 4] #aaaaaa len=4 ~21111111") == "+4; len 3 → 4"
    # Items that read the same are counted (structlog's WRITE_LOCKS).
    lock = "<_io.StringIO>: <_thread.lock>"
    assert delta(f"{{{lock}}} #1217c0 len=1 ~6f5974d3",
                 f"{{{lock}, {lock}}} #1217c0 len=2 ~f78e6224") == f"+{lock}; len 1 → 2"


def test_json_values_and_text() -> None:
    assert delta({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == '+"c": 4; ~"b": 2 → 3'
    assert delta({"level": "INFO"}, {"level": "DEBUG"}) == '~"level": "INFO" → "DEBUG"'
    text = delta("x" * 200 + "abc", "x" * 200 + "abd")
    assert text is not None and text.startswith("at character 202:") and "abc" in text
    assert delta(None, "x") is None and delta("x", "x") is None


def test_same_text_says_identity_or_digest() -> None:
    fp = "<Logger {'_core': <loguru._logger.Core>}> #ee7f50 ~f36762f5 eq~24c9ca11"
    assert delta(fp, fp.replace("~f36762f5", "~11111111")) == (
        "contents changed beyond the preview (the same object; its digest moved)")
    assert delta("<x.Y> #aaaaaa", "<x.Y> #bbbbbb") == (
        "only identity changed (another object, equal as far as it is shown)")


FILES = {
    "app.py": """
        TABLE = {f"entry_number_{i}": "v" * 10 for i in range(3)}
        """,
    "test_a.py": """
        import app


        def test_adds():
            app.TABLE["entry_number_9"] = "new"
        """,
}


def test_terminal_and_summary_say_what_changed(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    line = next(ln for ln in run.output.splitlines() if "app:TABLE" in ln)
    assert "+'entry_number_9': 'new'; len 3 → 4" in line, line
    assert "→ {" not in line  # not both cut ends
    summary = json.loads(run.json_path.read_text(encoding="utf-8"))
    (leak,) = [x for t in summary["tests"] for x in t["leaks"] if x["key"] == "app:TABLE"]
    assert leak["delta"] == "+'entry_number_9': 'new'; len 3 → 4"
    assert leak["before"] and leak["after"]  # the existing fields are kept
