"""The ``env`` probe's reads in a real run: each variable's entry kept from the last read
while its raw value is the same object, made again when it moved.

A read follows a token that moved, usually for one variable; the others are given their
last entry again without decoding.  What must still show, test after test: a value changed,
changed again, set to the same text as a new object (no change), a secret-looking variable
(its digest, never the value) and its change, a removal, an addition, and a value put back.
"""

from __future__ import annotations

from pathlib import Path

from suite_runs import run_suite, write_suite

SUITE = {
    "test_env.py": '''
        import os

        def test_1_mode_b():
            os.environ["APP_MODE"] = "b"

        def test_2_other():
            os.environ["APP_OTHER"] = "1"

        def test_3_mode_c():
            os.environ["APP_MODE"] = "c"

        def test_4_mode_same_text():
            os.environ["APP_MODE"] = "".join(["c"])

        def test_5_token_set():
            os.environ["APP_API_TOKEN"] = "hunter2-hunter2"

        def test_6_token_changed():
            os.environ["APP_API_TOKEN"] = "hunter3-hunter3"

        def test_7_other_gone():
            del os.environ["APP_OTHER"]

        def test_8_mode_back():
            os.environ["APP_MODE"] = "a"
        ''',
}


def test_each_read_shows_the_variables_as_they_are(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "--statesnap-probes=env",
                    env={"APP_MODE": "a"})
    assert run.proc.returncode == 0, run.output[-3000:]
    seen = {t.nodeid.rsplit("::", 1)[1]: [(c.key, c.change, c.before, c.after)
                                         for c in t.changes if c.probe == "env"]
            for t in run.record().tests}
    token = seen["test_5_token_set"][0][3]
    token2 = seen["test_6_token_changed"][0][3]
    assert seen == {
        "test_1_mode_b": [("APP_MODE", "changed", "a", "b")],
        "test_2_other": [("APP_OTHER", "added", None, "1")],
        "test_3_mode_c": [("APP_MODE", "changed", "b", "c")],
        "test_4_mode_same_text": [],
        "test_5_token_set": [("APP_API_TOKEN", "added", None, token)],
        "test_6_token_changed": [("APP_API_TOKEN", "changed", token, token2)],
        "test_7_other_gone": [("APP_OTHER", "removed", "1", None)],
        "test_8_mode_back": [("APP_MODE", "changed", "c", "a")],
    }, run.output[-3000:]
    assert token != token2 and "hunter" not in token + token2
    assert "hunter" not in run.record_path.read_text(encoding="utf-8")
