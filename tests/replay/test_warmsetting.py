"""The warm-replay switch: the session's option wins over ``STATESNAP_REPLAY_WARM``, which
wins over the default (on); a runner takes what it is given and reads nothing global."""

from __future__ import annotations

from pathlib import Path

import pytest

from statesnap.record.journal import Record
from statesnap.replay.runner import Runner
from statesnap.replay.warmsetting import WARM_ENV, WarmSetting


@pytest.mark.parametrize(("option", "environ", "on", "source"), [
    (None, {}, True, "default"),
    (None, {WARM_ENV: "off"}, False, WARM_ENV),
    (None, {WARM_ENV: " FALSE "}, False, WARM_ENV),
    (None, {WARM_ENV: "on"}, True, WARM_ENV),
    ("on", {WARM_ENV: "off"}, True, "--statesnap-replay-warm"),
    ("off", {}, False, "--statesnap-replay-warm"),
])
def test_the_option_wins_over_the_environment_which_wins_over_the_default(
        option: str | None, environ: dict[str, str], on: bool, source: str) -> None:
    assert WarmSetting.resolve(option, environ) == WarmSetting(on, source)


def test_two_runners_in_one_process_keep_their_own_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WARM_ENV, raising=False)
    record = Record(path=tmp_path / "r.jsonl", header={"rootdir": str(tmp_path)})
    off = Runner(record, warm=WarmSetting(False, "--statesnap-replay-warm"))
    default = Runner(record)
    monkeypatch.setenv(WARM_ENV, "off")
    from_env = Runner(record)
    assert (off.warm.setting.on, default.warm.setting.on, from_env.warm.setting.on) == (
        False, True, False)
    for runner in (off, default, from_env):
        runner.close()
