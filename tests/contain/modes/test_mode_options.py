"""Bad values of the containment options are usage errors, never tracebacks."""

from __future__ import annotations

import pytest

from statesnap.plugin.start import pytest_option_table
from statesnap.replay.args import replay_args


@pytest.mark.parametrize(("args", "message"), [
    (["--statesnap-isolate", "test_one.py"], "expected one of auto, fork, spawn"),
    (["--statesnap-isolate=sometimes"], "expected one of auto, fork, spawn"),
    (["--statesnap-strict", "tests/test_one.py"], "is not a list of probes"),
    (["--statesnap-strict=nope", "test_one.py"], "unknown probe(s) nope"),
    (["--statesnap-restore=env,bogus", "test_one.py"], "unknown probe(s) bogus"),
    (["-o", "statesnap_allow=ZOO_MODE", "test_one.py"], "is not probe:key"),
    (["--statesnap-isolate-timeout=-1", "test_one.py"], "must be 0 or more"),
])
def test_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "statesnap", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_mode_flags_never_reach_a_replay(pytester: pytest.Pytester) -> None:
    table = pytest_option_table(pytester.parseconfig("-p", "statesnap"))
    args = ["-p", "statesnap", "--statesnap-isolate", "spawn", "--statesnap-strict=env",
            "--statesnap-restore", "-s", "--statesnap-isolate-child=/tmp/c", "-v"]
    assert replay_args(args, table) == ["-p", "statesnap", "-s", "-v"]


def test_features_register_in_order_and_one_can_be_blocked(pytester: pytest.Pytester) -> None:
    """The features' options follow the core's in FEATURES order, each feature's configure
    runs (its marker is declared), and ``-p no:NAME`` leaves one feature out entirely."""
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    shown = pytester.runpytest("-p", "no:randomly", "-p", "statesnap", "--help").stdout.str()
    places = [shown.index(f"--statesnap-{name}") for name in ("isolate", "strict", "restore")]
    assert shown.index("--statesnap-record") < places[0] and places == sorted(places)
    markers = pytester.runpytest("-p", "no:randomly", "-p", "statesnap", "--markers")
    assert "statesnap_isolate" in markers.stdout.str()
    assert "statesnap_requires_clean" in markers.stdout.str()
    blocked = pytester.runpytest("-p", "no:randomly", "-p", "statesnap",
                                 "-p", "no:statesnap.contain.strict", "--statesnap-strict=env")
    assert blocked.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --statesnap-strict=env" in blocked.stderr.str()
    others = pytester.runpytest("-p", "no:randomly", "-p", "statesnap",
                                "-p", "no:statesnap.contain.strict", "--statesnap-restore=env")
    assert others.ret == pytest.ExitCode.OK
