"""Secret-looking environment values never reach statesnap's files or its terminal section.

The change itself stays visible: a ``<redacted:...>`` digest stands in for the value.  What
pytest itself prints (the failure's traceback) is pytest's business; statesnap's section,
record, summary JSON and replay logs are ours.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from statesnap.base.redact import PREFIX

NEW_SECRET = "tok-9f8e7d6c5b4a-NEW"
OLD_SECRET = "pw-0a1b2c3d4e5f-OLD"
MONKEY_SECRET = "sess-77aa88bb99cc-MP"

SECRET_SUITE = f'''
import os


def test_sets_a_token_and_fails():
    os.environ["MY_API_TOKEN"] = "{NEW_SECRET}"
    assert False, "rejected token " + os.environ["MY_API_TOKEN"]


def test_changes_a_password():
    os.environ["MY_SERVICE_PASSWORD"] = os.environ["MY_SERVICE_PASSWORD"][::-1]


def test_monkeypatched_secret_in_message(monkeypatch):
    monkeypatch.setenv("MY_SESSION_ID", "{MONKEY_SECRET}")
    raise RuntimeError("session " + os.environ["MY_SESSION_ID"] + " expired")


def test_victim():
    assert "MY_API_TOKEN" not in os.environ
'''

SECRETS = (NEW_SECRET, OLD_SECRET, OLD_SECRET[::-1], MONKEY_SECRET)


def _statesnap_files(run, extra: list[Path]) -> dict[Path, str]:
    """Every file statesnap wrote for the run: record, replay logs and child records, extras."""
    paths = [run.record_path, *extra]
    logs = run.record_path.with_suffix(".logs")
    if logs.is_dir():
        paths += sorted(p for p in logs.rglob("*") if p.is_file())
    return {p: p.read_text(encoding="utf-8", errors="replace") for p in paths if p.is_file()}


@pytest.fixture
def secret_run(inner, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
               tmp_path: Path):
    monkeypatch.setenv("MY_SERVICE_PASSWORD", OLD_SECRET)
    pytester.makepyfile(test_secrets=SECRET_SUITE)
    summary = tmp_path / "summary.json"
    run = inner("--statesnap-json", str(summary), "--statesnap-verify-budget", "60",
                subprocess=True)
    return run, summary


def test_secrets_nowhere_in_record_summary_or_section_but_changes_visible(secret_run) -> None:
    run, summary = secret_run
    # test_victim fails after the token leak: a verified finding shows digests too.
    assert run.outcomes() == {"passed": 1, "failed": 3}
    texts = _statesnap_files(run, [summary])
    assert run.record_path in texts and summary in texts
    section = "\n".join(run.section())
    assert section  # statesnap printed its section
    for secret in SECRETS:
        assert secret not in section
        for path in (run.record_path, summary):
            assert secret not in texts[path], (secret, path)
    # pytest's own traceback does show it: proof that the test really used the value.
    assert NEW_SECRET in run.result.stdout.str()

    # The changes stay visible, as digests.
    record = run.record()
    token = record.test_by_id("test_secrets.py::test_sets_a_token_and_fails")
    assert token is not None
    (added,) = [c for c in token.changes if c.key == "MY_API_TOKEN"]
    assert added.change == "added" and added.before is None
    assert isinstance(added.after, str) and added.after.startswith(PREFIX)

    password = record.test_by_id("test_secrets.py::test_changes_a_password")
    assert password is not None
    (changed,) = [c for c in password.changes if c.key == "MY_SERVICE_PASSWORD"]
    assert changed.change == "changed"
    assert changed.before.startswith(PREFIX) and changed.after.startswith(PREFIX)
    assert changed.before != changed.after  # two values, two digests
    # The header's copy of the environment is redacted the same way.
    assert record.header["env"]["MY_SERVICE_PASSWORD"] == changed.before

    # The failure message is kept, with the secret replaced by the same digest.
    assert token.failure is not None
    assert "rejected token " + added.after in token.failure["message"]
    assert added.after in token.failure["text"]
    monkey = record.test_by_id("test_secrets.py::test_monkeypatched_secret_in_message")
    assert monkey is not None and monkey.failure is not None
    assert PREFIX in monkey.failure["message"] and "expired" in monkey.failure["message"]
    # The section shows the leak, digest and all.
    assert any("MY_API_TOKEN: ∅ → <redacted:" in line for line in run.section())


def test_secrets_are_not_in_replay_logs(secret_run) -> None:
    run, summary = secret_run
    logs = run.record_path.with_suffix(".logs")
    assert logs.is_dir() and any(logs.iterdir())  # the failures were replayed
    for path, text in _statesnap_files(run, [summary]).items():
        for secret in SECRETS:
            assert secret not in text, (secret, path)
