"""Replay logs: the child's whole output, with secret values scrubbed before they reach disk.

The in-session case (the parent's redactor met the secrets during the run) is covered in
tests/plugin/test_redaction.py; here the parent is a later CLI process that knows none of the
secrets a test set, so only the child's report through the secret pipe can hide them.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from statesnap.base.redact import PREFIX, SECRET_FD_ENV, Redactor
from statesnap.replay.log import DRAIN_AFTER_EXIT, LogPump, SecretPipe
from suite_runs import run_suite, statesnap_cli, write_suite

TOKEN = "tok-4c3b2a190817-CLI"

SECRET_SUITE = {"test_sec.py": f'''
    import os

    def test_a_sets_a_token():
        os.environ["ZOO_API_TOKEN"] = "{TOKEN}"

    def test_b_victim():
        token = os.environ.get("ZOO_API_TOKEN")
        assert token is None, "unexpected token " + token
    '''}


def _logs(record: Path) -> dict[Path, str]:
    logs = record.with_suffix(".logs")
    return {p: p.read_text("utf-8", "replace") for p in sorted(logs.rglob("*")) if p.is_file()}


def test_cli_verification_logs_hold_digests_not_the_secret_a_test_set(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SECRET_SUITE)
    run = run_suite(root, tmp_path / "out", budget=0)
    assert run.proc.returncode == 1, run.output
    cli = statesnap_cli("explain", str(run.record_path), "--verify", "--json", cwd=root)
    assert cli.returncode == 0, cli.stderr
    assert '"verified"' in cli.stdout
    logs = _logs(run.record_path)
    texts = [t for p, t in logs.items() if p.suffix == ".log"]
    assert texts, logs
    # The pair replay printed the assertion message: there, the token is a digest.
    assert any("unexpected token " + PREFIX in t for t in texts), texts
    for path, text in logs.items():
        assert TOKEN not in text, path


def test_statesnap_replay_shows_the_terminal_everything_but_logs_no_secret(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SECRET_SUITE)
    run = run_suite(root, tmp_path / "out", budget=0)
    cli = statesnap_cli("replay", str(run.record_path), cwd=root)
    assert cli.returncode == 1, cli.stderr
    assert "unexpected token " + TOKEN in cli.stdout  # the user's own terminal: as pytest says
    log = Path(cli.stderr.strip().rsplit("output kept in ", 1)[1])
    text = log.read_text("utf-8")
    assert "unexpected token " + PREFIX in text and TOKEN not in text


CHILD = r'''
import os, subprocess, sys
fd = int(os.environ["STATESNAP_SECRET_FD"])
os.write(fd, b'"hunter2-very-secret"\n')
print("the password is hunter2-very-secret, twice: hunter2-very-secret", flush=True)
print("and the env one " + os.environ["ZOO_PASSWORD"], flush=True)
if len(sys.argv) > 1:
    # A leaked grandchild keeps our stdout open long after we exit.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
sys.stdout.write("last line without newline")
'''


def _start(*args: str, secrets: SecretPipe) -> subprocess.Popen[bytes]:
    env = {**os.environ, **secrets.child_env(), "ZOO_PASSWORD": "envsecret-123456"}
    try:
        return subprocess.Popen([sys.executable, "-c", CHILD, *args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=(secrets.write_fd,), start_new_session=True)
    finally:
        secrets.started()


def test_pump_scrubs_reported_and_known_secrets_keeps_the_rest_and_tees_raw() -> None:
    secrets = SecretPipe()
    proc = _start(secrets=secrets)
    log, tee = io.StringIO(), io.BytesIO()
    redactor = Redactor()
    assert proc.stdout is not None
    pump = LogPump(proc.stdout.fileno(), log, redactor, ["envsecret-123456"], secrets, tee)
    assert pump.run(proc, deadline=time.monotonic() + 60) is False
    pump.close()
    proc.stdout.close()
    assert proc.wait() == 0
    text = log.getvalue()
    digest = redactor.digest("hunter2-very-secret")
    assert text.count(digest) == 2 and "hunter2" not in text
    assert "and the env one " + redactor.digest("envsecret-123456") in text
    assert text.endswith("last line without newline")  # nothing the child printed is lost
    assert b"hunter2-very-secret" in tee.getvalue()  # the terminal copy is the raw one


def test_pump_returns_soon_after_exit_when_a_leaked_grandchild_holds_stdout() -> None:
    secrets = SecretPipe()
    proc = _start("leak", secrets=secrets)
    log = io.StringIO()
    assert proc.stdout is not None
    pump = LogPump(proc.stdout.fileno(), log, Redactor(), (), secrets)
    t0 = time.monotonic()
    assert pump.run(proc, deadline=time.monotonic() + 60) is False
    took = time.monotonic() - t0
    pump.close()
    proc.stdout.close()
    os.killpg(proc.pid, 9)  # the grandchild shares the child's session
    assert took < 30 + DRAIN_AFTER_EXIT  # not the grandchild's 60 s
    assert "last line without newline" in log.getvalue()


def test_pump_says_when_the_deadline_came_first() -> None:
    proc = subprocess.Popen([sys.executable, "-c",
                             "import time; print('started', flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    log = io.StringIO()
    pump = LogPump(proc.stdout.fileno(), log, Redactor())
    assert pump.run(proc, deadline=time.monotonic() + 2) is True
    proc.kill()
    assert pump.run(proc) is False
    pump.close()
    proc.stdout.close()
    assert log.getvalue() == "started\n"


def test_secret_pipe_env_names_the_write_end() -> None:
    secrets = SecretPipe()
    assert secrets.child_env() == {SECRET_FD_ENV: str(secrets.write_fd)}
    os.write(secrets.write_fd, b'"one-secret"\n"two-')
    assert secrets.take() == ["one-secret"]
    os.write(secrets.write_fd, b'secret"\n')
    assert secrets.take() == ["two-secret"]  # a value split across writes arrives whole
    secrets.started()
    secrets.close()


def test_a_child_reporting_more_secrets_than_a_pipe_holds_is_not_blocked() -> None:
    # 200 KB of secrets before a word on stdout: the parent must drain the secret pipe as it
    # fills, or the child would block until the replay's timeout.
    script = r'''
import json, os
fd = int(os.environ["STATESNAP_SECRET_FD"])
for i in range(5000):
    os.write(fd, (json.dumps(f"secret-value-{i:06d}-padding-padding") + "\n").encode())
print("last one: secret-value-004999-padding-padding", flush=True)
'''
    secrets = SecretPipe()
    env = {**os.environ, **secrets.child_env()}
    try:
        proc = subprocess.Popen([sys.executable, "-c", script], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=(secrets.write_fd,))
    finally:
        secrets.started()
    assert proc.stdout is not None
    log = io.StringIO()
    redactor = Redactor()
    pump = LogPump(proc.stdout.fileno(), log, redactor, (), secrets)
    t0 = time.monotonic()
    assert pump.run(proc, deadline=t0 + 60) is False
    pump.close()
    proc.stdout.close()
    assert proc.wait() == 0 and time.monotonic() - t0 < 30
    assert log.getvalue() == (
        "last one: " + redactor.digest("secret-value-004999-padding-padding") + "\n")


def test_a_replayed_suite_never_sees_the_secret_pipe(tmp_path: Path) -> None:
    # The child takes the variable out of its environment before any test runs: a pytest the
    # suite starts itself must not write secrets to whatever its own fd of that number is.
    root = write_suite(tmp_path / "suite", {"test_env.py": '''
        import os

        def test_no_pipe_in_sight():
            assert "STATESNAP_SECRET_FD" not in os.environ
        '''})
    run = run_suite(root, tmp_path / "out", budget=0)
    assert run.proc.returncode == 0, run.output
    from statesnap.replay.runner import Runner

    runner = Runner(run.record())
    result = runner.run(["test_env.py::test_no_pipe_in_sight"], label="pipe")
    runner.close()
    assert result.outcomes == {"test_env.py::test_no_pipe_in_sight": "passed"}, result.error
