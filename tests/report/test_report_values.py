"""How values look: text forms, truncation with the length kept, structural diffs, redaction."""

from __future__ import annotations

from statesnap.redact import PREFIX
from statesnap.report.values import (
    DIFF_LINES,
    Scrubber,
    as_text,
    show,
    structural_diff,
)


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
    assert show(None, absent=True).absent
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
