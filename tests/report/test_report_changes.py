"""One change as the leak table and the per-test panel show it (report/changes.py)."""

from __future__ import annotations

from typing import Any

from statesnap.base.redact import PREFIX
from statesnap.output.report.changes import ChangeView, ChangeViews, file_words
from statesnap.output.report.values import Scrubber, ValueView
from statesnap.state.diff import Change


def _view(**kw: Any) -> ChangeView:
    data: dict[str, Any] = {"probe": "env", "key": "K", "change": "changed",
                            "before": ValueView("a", 1), "after": ValueView("b", 1),
                            "phase": None, "fixture": None, "scope": None, "severity": 2,
                            "leak": True}
    data.update(kw)
    return ChangeView(**data)


def test_where_names_the_phase_and_the_fixture_with_its_scope() -> None:
    assert _view().where == ""
    assert _view(fixture="db", scope="module").where == ""  # no phase: nothing known
    assert _view(phase="call").where == "call"
    assert _view(phase="setup", fixture="db", scope="module").where == (
        "setup, fixture db (module)")
    assert _view(phase="setup", fixture="db").where == "setup, fixture db (function)"


def test_to_json_carries_a_diff_only_when_it_has_lines_and_the_rest_only_when_cut() -> None:
    views = ChangeViews(Scrubber())
    nested = Change("logging", "logger:app", "changed", {"level": "INFO"},
                    {"level": "DEBUG"}, phase="call", severity=3)
    data = views.detail(nested, leak=False).to_json()
    assert data == {
        "probe": "logging", "key": "logger:app", "change": "changed",
        "before": {"text": '{\n  "level": "INFO"\n}'},
        "after": {"text": '{\n  "level": "DEBUG"\n}'},
        "where": "call", "severity": 3, "leak": False,
        "diff": [["~", "['level']", "INFO → DEBUG"]],
        "delta": '~"level": "INFO" → "DEBUG"',
    }
    many = {f"k{i:02d}": i for i in range(45)}
    cut = views.detail(Change("logging", "l", "changed", many,
                              {k: v + 1 for k, v in many.items()}), leak=True).to_json()
    assert len(cut["diff"]) == 40 and cut["diff_more"] == 5
    # The leak table's short form: one-line values, no diff.
    short = views.build(nested, leak=True).to_json()
    assert short["before"] == {"text": '{"level": "INFO"}'} and "diff" not in short
    same = views.detail(Change("logging", "l", "changed", {"a": 1}, {"a": 1}), leak=True)
    assert "diff" not in same.to_json()


def test_added_and_removed_sides_are_absent_and_get_no_diff() -> None:
    views = ChangeViews(Scrubber())
    added = views.detail(Change("env", "NEW", "added", None, {"x": 1}), leak=True)
    assert added.before.to_json() == {"text": "", "absent": True}
    assert added.after.to_json() == {"text": '{\n  "x": 1\n}'}
    assert added.diff is None
    removed = views.detail(Change("env", "OLD", "removed", {"x": 1}, None), leak=True)
    assert removed.after.absent and not removed.before.absent
    assert removed.diff is None
    changed = views.build(Change("env", "K", "changed", None, "v"), leak=True)
    assert changed.before.to_json() == {"text": "null"}
    # A key removed and put back with both sides nested gets no diff either.
    both = views.detail(Change("env", "K", "removed", {"x": 1}, {"x": 2}), leak=True)
    assert both.diff is None


def test_keys_are_cut_at_300_characters() -> None:
    views = ChangeViews(Scrubber())
    assert views.build(Change("files", "k" * 300, "added", None, 1), leak=True).key == "k" * 300
    assert views.build(Change("files", "k" * 301, "added", None, 1), leak=True).key == "k" * 300


def test_files_fingerprints_read_as_words_other_probes_as_they_are() -> None:
    fingerprint = {"size": 19, "mtime_ns": 5}
    assert file_words("files", fingerprint) == "19 bytes"
    assert file_words("env", fingerprint) is fingerprint
    for probe in ("fds", "logging", "modules", "threads", "zzz-third-party"):
        assert file_words(probe, fingerprint) is fingerprint, probe
    assert file_words("files", "not a fingerprint") == "not a fingerprint"
    view = ChangeViews(Scrubber()).build(
        Change("files", "data.txt", "changed", {"size": 1, "mtime_ns": 5}, fingerprint),
        leak=True)
    assert (view.before.text, view.after.text) == ("1 bytes", "19 bytes")


def test_secret_env_values_are_scrubbed_on_both_sides() -> None:
    view = ChangeViews(Scrubber()).build(
        Change("env", "API_TOKEN", "changed", "ghp_old123456", "ghp_new123456"), leak=True)
    assert view.before.text.startswith(PREFIX) and view.after.text.startswith(PREFIX)
    assert "ghp_" not in view.before.text + view.after.text


def test_the_same_pair_of_values_is_diffed_once() -> None:
    views = ChangeViews(Scrubber())
    first = views.diff({"a": 1}, {"a": 2})
    assert first is not None and views.diff({"a": 1}, {"a": 2}) is first
    assert views.diff("a", {"a": 2}) is None and views.diff({"a": 2}, "a") is None
    assert views.diff([1], [1, 2]) is not None
