"""How values look: text forms, truncation with the length kept, structural diffs, redaction."""

from __future__ import annotations

from statesnap.base.redact import PREFIX
from statesnap.output.report.changes import ChangeViews
from statesnap.output.report.values import (
    DIFF_LINES,
    DiffLine,
    Scrubber,
    ValueView,
    as_text,
    show,
    structural_diff,
)
from statesnap.state.diff import Change


def test_strings_stay_as_they_are_and_the_rest_is_json() -> None:
    assert as_text("fast") == "fast"
    assert as_text(None) == "null"
    assert as_text({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert as_text("é ∅") == "é ∅"


def test_long_values_are_cut_and_keep_their_full_length() -> None:
    value = "x" * 5000
    v = show(value, limit=100)
    assert v.text == "x" * 100
    assert v.length == 5000
    assert v.truncated
    assert v.to_json() == {"text": "x" * 100, "length": 5000}
    short = show("abc")
    assert not short.truncated
    assert short.to_json() == {"text": "abc"}


def test_the_missing_side_of_an_added_key_is_absent_not_null() -> None:
    assert show(None, absent=True) == ValueView("", 0, absent=True)
    assert show("anything", absent=True).to_json() == {"text": "", "absent": True}
    assert show(None).text == "null"


def test_structural_diff_names_each_nested_difference() -> None:
    before = {"level": "INFO", "handlers": ["stderr", "file"], "filters": {"a": 1}}
    after = {"level": "DEBUG", "handlers": ["stderr"], "filters": {"a": 1, "b": 2}}
    d = structural_diff(before, after)
    assert d is not None
    lines = {(ln.sign, ln.path, ln.text) for ln in d.lines}
    assert ("~", "['level']", "INFO → DEBUG") in lines
    assert ("-", "['handlers'][1]", "file") in lines
    assert ("+", "['filters']['b']", "2") in lines
    assert d.more == 0


def test_structural_diff_of_a_list_changed_in_place() -> None:
    d = structural_diff(["/venv/site", "/src"], ["/venv/site", "/src", "/tmp/plugin"])
    assert d is not None
    assert [(ln.sign, ln.path, ln.text) for ln in d.lines] == [("+", "[2]", "/tmp/plugin")]


def test_structural_diff_is_capped_and_counts_the_rest() -> None:
    before = {f"k{i:03d}": i for i in range(DIFF_LINES + 25)}
    after = {k: v + 1 for k, v in before.items()}
    d = structural_diff(before, after)
    assert d is not None
    assert len(d.lines) == DIFF_LINES
    assert d.more == 25


def test_no_structural_diff_for_scalars_or_mismatched_kinds() -> None:
    assert structural_diff("a", "b") is None
    assert structural_diff({"a": 1}, [1]) is None
    assert structural_diff({}, {"a": 1}) is None


def test_scrubber_redacts_secret_looking_env_values_left_in_clear() -> None:
    s = Scrubber()
    leaked = s.change("env", "GITHUB_TOKEN", "ghp_abcdef123456")
    assert leaked.startswith(PREFIX) and "ghp_" not in leaked
    # The same value keeps the same stand-in within one report, so a change stays visible.
    assert s.change("env", "GITHUB_TOKEN", "ghp_abcdef123456") == leaked
    assert s.change("env", "GITHUB_TOKEN", "other") != leaked


def test_scrubber_keeps_values_already_redacted_and_harmless_ones() -> None:
    s = Scrubber()
    done = f"{PREFIX}0123456789ab>"
    assert s.change("env", "API_KEY", done) == done
    assert s.change("env", "ZOO_MODE", "fast") == "fast"
    # Only env names are taken as variable names: a module called "keyring" is not a secret.
    assert s.change("modules", "keyring", "<module>") == "<module>"
    assert s.mapping({"DB_PASSWORD": "pw", "HOME": "/root"})["HOME"] == "/root"
    assert s.mapping({"DB_PASSWORD": "pw"})["DB_PASSWORD"].startswith(PREFIX)


def test_table_values_are_cut_at_200_characters_and_panel_values_at_2000() -> None:
    assert not show("x" * 200).truncated
    assert show("x" * 200).to_json() == {"text": "x" * 200}
    cut_short = show("x" * 201)
    assert (cut_short.text, cut_short.length, cut_short.truncated) == ("x" * 200, 201, True)
    long = ChangeViews(Scrubber()).detail(
        Change("env", "BIG", "changed", "a", "y" * 2001), leak=True)
    assert (len(long.after.text), long.after.length, long.after.truncated) == (2000, 2001, True)
    whole = ChangeViews(Scrubber()).detail(
        Change("env", "BIG", "changed", "a", "y" * 2000), leak=True)
    assert whole.after.to_json() == {"text": "y" * 2000}
    # A long value shown whole is not marked cut (lengths past the small-int cache).
    assert not show("z" * 300, limit=2000).truncated


def test_values_are_one_line_json_unless_pretty_and_keep_non_ascii() -> None:
    assert show({"a": [1], "b": "é"}).text == '{"a": [1], "b": "é"}'
    assert as_text({"b": "é", "a": 1}, pretty=True) == '{\n  "a": 1,\n  "b": "é"\n}'


def test_a_structural_diff_keeps_40_lines_and_counts_the_rest() -> None:
    before = {f"k{i:03d}": i for i in range(41)}
    d = structural_diff(before, {k: v + 1 for k, v in before.items()})
    assert d is not None
    assert (len(d.lines), d.more) == (40, 1)
    assert d.lines[0] == DiffLine("~", "['k000']", "0 → 1")
    exact = {f"k{i:03d}": i for i in range(40)}
    d = structural_diff(exact, {k: v + 1 for k, v in exact.items()})
    assert d is not None
    assert (len(d.lines), d.more) == (40, 0)


def _sized(text_length: int) -> dict[str, str]:
    """A dict whose JSON text is ``text_length`` characters long."""
    value = {"a": "x" * (text_length - 9)}
    assert len(as_text(value)) == text_length
    return value


def test_no_structural_diff_for_values_of_more_than_50000_characters_together() -> None:
    assert structural_diff(_sized(25_000), _sized(25_000) | {"a": "y" * 24_991}) is not None
    assert structural_diff(_sized(25_001), _sized(25_000)) is None
    assert structural_diff(_sized(25_000), _sized(25_001)) is None
    assert structural_diff(_sized(30_000), _sized(30_000) | {"a": "y" * 29_991}) is None


def test_added_and_removed_items_show_their_side() -> None:
    d = structural_diff({"keep": 1, "old": "gone"}, {"keep": 1, "new": "here"})
    assert d is not None
    assert [(ln.sign, ln.path, ln.text) for ln in d.lines] == [
        ("+", "['new']", "here"), ("-", "['old']", "gone")]


def test_only_env_values_are_scrubbed_whatever_the_probe_name_sorts_like() -> None:
    s = Scrubber()
    for probe in ("attributes", "children", "cwd", "builtin", "files", "modules"):
        assert s.change(probe, "API_TOKEN", "ghp_abcdef123456") == "ghp_abcdef123456", probe
    assert s.change("env", "API_TOKEN", "ghp_abcdef123456").startswith(PREFIX)
    assert s.change("env", "API_TOKEN", None) is None


def test_values_json_cannot_write_are_shown_by_their_repr() -> None:
    assert as_text({(1, 2): "tuple key"}) == "{(1, 2): 'tuple key'}"  # TypeError in json
    loop: list[object] = []
    loop.append(loop)
    assert as_text(loop) == "[[...]]"  # ValueError in json: a circular value


def _nest(depth: int, leaf: int) -> list[object]:
    value: list[object] = [leaf]
    for _ in range(depth):
        value = [value]
    return value


def test_a_value_too_deep_for_deepdiff_gets_no_diff_and_costs_no_report() -> None:
    shallow = structural_diff(_nest(3, 1), _nest(3, 2))
    assert shallow is not None and shallow.lines[0].text == "1 → 2"
    # deepdiff recurses once per level and gives up (RecursionError) on this one.
    assert structural_diff(_nest(400, 1), _nest(400, 2)) is None
