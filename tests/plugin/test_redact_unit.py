"""The redactor on its own: which names are secret, digests, scrubbing free text, the pipe.

A secret in clear in a record or a log is the one bug a user cannot undo, so each rule has a
case that fails when it is loosened: names in any case, the longest secret scrubbed first
(overlapping and nested secrets), short values left alone, the child's pipe.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from statesnap.base.redact import (
    DEFAULT_PATTERNS,
    MIN_SCRUB,
    PREFIX,
    SECRET_FD_ENV,
    Redactor,
    report_secrets_to_parent,
)

DIGEST = re.compile(re.escape(PREFIX) + r"[0-9a-f]{12}>")


@pytest.mark.parametrize("name", [
    "api_token", "aws_secret_access_key", "Db_Password", "GITHUB_TOKEN", "MySessionId",
    "passwd", "x-auth", "Private_Key_File", "cookie_jar", "request_signature", "ssl_cert",
    "SENTRY_DSN", "GoogleCredentials",
])
def test_secret_names_in_any_case(name: str) -> None:
    r = Redactor()
    assert r.is_secret(name)
    assert DIGEST.fullmatch(r(name, "value-of-" + name))


@pytest.mark.parametrize("name", ["HOME", "PATH", "LANG", "pythonpath", "USER", ""])
def test_plain_names_keep_their_value(name: str) -> None:
    r = Redactor()
    assert not r.is_secret(name)
    assert r(name, "/home/someone") == "/home/someone"


def test_every_default_pattern_counts_alone_and_empty_patterns_are_dropped() -> None:
    for pattern in DEFAULT_PATTERNS:
        assert Redactor([pattern]).is_secret(f"my_{pattern.lower()}_x")
    r = Redactor(["", "token"])
    assert r.is_secret("A_TOKEN") and not r.is_secret("")
    nothing = Redactor([])
    assert not nothing.is_secret("API_TOKEN")
    assert nothing("API_TOKEN", "tok-123456") == "tok-123456"
    only_empty = Redactor([""])
    assert not only_empty.is_secret("anything")


def test_patterns_are_literal_text_not_regexes() -> None:
    r = Redactor(["A.B"])
    assert r.is_secret("x_a.b_y")
    assert not r.is_secret("AXB")


@pytest.mark.parametrize("patterns", [DEFAULT_PATTERNS, ("k", "s", "i", "A.B"), ("ſ", "Kelvin"),
                                      ("ß",)])
def test_secret_names_are_those_the_case_blind_regex_finds(patterns: tuple[str, ...]) -> None:
    # ASCII names are tested without the regular expression (cheaper at every start); the
    # answer must stay the regex's, the case folds of non-ASCII letters included.
    regex = re.compile("|".join(re.escape(p) for p in patterns), re.IGNORECASE)
    names = ["", "HOME", "api_token", "Api_ToKeN", "my_key", "MY_\u212aEY", "monkey", "ſ",
             "S", "ss", "SS", "İ", "ı", "I", "x_a.b_y", "AXB", "KELVIN", "\u212aelvin",
             "CREDENTIAL_ſ", "straße", "STRASSE", "ÅUTH", "auth"]
    r = Redactor(patterns)
    for name in names:
        assert r.is_secret(name) == (regex.search(name) is not None), name


def test_digest_is_stable_per_salt_and_differs_between_values_and_salts() -> None:
    one = Redactor(salt=b"s1")
    assert one.digest("hunter22") == one.digest("hunter22")
    assert one.digest("hunter22") != one.digest("hunter23")
    assert Redactor(salt=b"s1").digest("hunter22") == one.digest("hunter22")
    assert Redactor(salt=b"s2").digest("hunter22") != one.digest("hunter22")
    assert Redactor().digest("hunter22") != Redactor().digest("hunter22")  # random salts
    d = one.digest("hunter22")
    assert DIGEST.fullmatch(d) and "hunter22" not in d


def test_non_string_and_none_values() -> None:
    r = Redactor(salt=b"s")
    assert r("API_TOKEN", None) is None
    assert r("API_TOKEN", 12345678) == r.digest(repr(12345678))
    assert r("HOME", 5) == 5


def test_seen_and_on_new_report_each_value_once() -> None:
    r = Redactor(salt=b"s")
    new: list[str] = []
    r.on_new = new.append
    r.digest("first-secret")
    r.digest("first-secret")
    r("MY_TOKEN", "second-secret")
    assert new == ["first-secret", "second-secret"]
    assert r.seen() == ["first-secret", "second-secret"]


def test_secrets_in_takes_only_secret_names_with_a_value() -> None:
    r = Redactor()
    env = {"API_TOKEN": "t-1", "Db_Password": "p-2", "HOME": "/root", "EMPTY_SECRET": ""}
    assert r.secrets_in(env) == ["t-1", "p-2"]


def test_scrub_replaces_every_occurrence_and_keeps_the_rest() -> None:
    r = Redactor(salt=b"s")
    text = "tok=abcdef123 and again abcdef123, home=/root"
    out = r.scrub(text, ["abcdef123"])
    assert out == f"tok={r.digest('abcdef123')} and again {r.digest('abcdef123')}, home=/root"


def test_scrub_leaves_short_values_alone() -> None:
    # Six characters is the documented floor: "true" or "1" would match everywhere.
    assert MIN_SCRUB == 6
    r = Redactor(salt=b"s")
    out = r.scrub("xxxxx yyyyyy zzzzzzz", ["xxxxx", "yyyyyy", "zzzzzzz"])
    assert out == f"xxxxx {r.digest('yyyyyy')} {r.digest('zzzzzzz')}"


def test_scrub_longest_first_when_one_secret_contains_another() -> None:
    # Scrubbing the short one first would leave "...-SUFFIX" of the long one in clear.
    r = Redactor(salt=b"s")
    short, long = "Secret123", "Secret123-SUFFIX-More"
    for order in ([short, long], [long, short]):
        out = r.scrub(f"a {long} b {short} c", order)
        assert out == f"a {r.digest(long)} b {r.digest(short)} c"
        assert "SUFFIX" not in out


def test_scrub_overlapping_secrets_and_case_variants() -> None:
    # Two secrets that overlap (the end of one is the start of the other): the longer is
    # replaced whole, and neither is left whole in clear.  A value differing only in case is
    # a different secret, replaced where it occurs as itself.
    r = Redactor(salt=b"s")
    a, b, upper = "abcdef-ghijkl", "ghijkl-mnopqr-stu", "ABCDEF-GHIJKL"
    out = r.scrub(f"[{a}-mnopqr-stu] [{upper}] [{b}] [{a}]", [a, b, upper])
    assert out == (f"[abcdef-{r.digest(b)}] [{r.digest(upper)}] [{r.digest(b)}] "
                   f"[{r.digest(a)}]")
    assert a not in out and b not in out and upper not in out


def test_scrub_skips_duplicates_and_values_not_in_the_text() -> None:
    r = Redactor(salt=b"s")
    new: list[str] = []
    r.on_new = new.append
    assert r.scrub("nothing here", ["absent-secret", "absent-secret"]) == "nothing here"
    assert new == []  # a value not in the text is never digested (nor sent to the parent)


def _pipe_env() -> tuple[int, int, dict[str, str]]:
    rfd, wfd = os.pipe()
    return rfd, wfd, {SECRET_FD_ENV: str(wfd), "API_TOKEN": "tok-abcdef", "HOME": "/h"}


def _read_lines(rfd: int) -> list[str]:
    os.set_blocking(rfd, False)
    try:
        data = os.read(rfd, 65536)
    except BlockingIOError:
        data = b""
    return [json.loads(line) for line in data.decode().splitlines()]


def test_the_child_sends_each_secret_once_through_the_pipe() -> None:
    rfd, wfd, env = _pipe_env()
    try:
        r = Redactor(salt=b"s")
        assert report_secrets_to_parent(r, env) == wfd
        assert SECRET_FD_ENV not in env  # a suite's own pytest must not see the pipe
        assert not os.get_inheritable(wfd)
        r.digest("later-secret")
        r.digest("later-secret")
        assert _read_lines(rfd) == ["tok-abcdef", "later-secret"]
    finally:
        os.close(rfd)
        os.close(wfd)


@pytest.mark.parametrize("raw", [None, "", "abc", "-3"])
def test_no_pipe_without_a_valid_fd_number(raw: str | None) -> None:
    env = {"API_TOKEN": "tok-abcdef"}
    if raw is not None:
        env[SECRET_FD_ENV] = raw
    r = Redactor()
    assert report_secrets_to_parent(r, env) is None
    assert r.on_new is None and SECRET_FD_ENV not in env


def test_an_fd_that_is_not_a_pipe_or_is_closed_is_left_alone(tmp_path: Path) -> None:
    with open(tmp_path / "f", "w") as f:
        r = Redactor()
        assert report_secrets_to_parent(r, {SECRET_FD_ENV: str(f.fileno())}) is None
        assert r.on_new is None
        assert os.get_inheritable(f.fileno()) is False  # untouched (open() made it so)
    rfd, wfd = os.pipe()
    os.close(rfd)
    os.close(wfd)
    r = Redactor()
    assert report_secrets_to_parent(r, {SECRET_FD_ENV: str(wfd)}) is None
    assert r.on_new is None


def test_a_parent_gone_stops_the_sending_quietly() -> None:
    rfd, wfd, env = _pipe_env()
    os.close(rfd)  # the parent is gone: writing raises EPIPE / BrokenPipeError
    try:
        r = Redactor(salt=b"s")
        assert report_secrets_to_parent(r, env) == wfd
        assert r.on_new is None
        assert DIGEST.fullmatch(r.digest("another-secret"))
    finally:
        os.close(wfd)


def test_answers_are_remembered_per_name_and_stay_right_past_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # is_secret remembers its answer per name (the probes ask about the same names at every
    # read); asked again, after other names, and after the memory was emptied at its limit,
    # each name gets the same answer as a fresh redactor's.
    import statesnap.base.redact as redact

    monkeypatch.setattr(redact, "_NAMES_KEPT", 4)
    r = Redactor()
    names = ["API_TOKEN", "HOME", "db_password", "PATH", "x-auth", "LANG", "API_TOKEN", "HOME"]
    for _ in range(3):
        for name in names:
            assert r.is_secret(name) == Redactor().is_secret(name), name
            assert (r(name, "value-123") == "value-123") != Redactor().is_secret(name)
    assert len(r._secret_names) <= 4
