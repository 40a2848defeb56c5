"""Replay arguments, table-driven, against the option table of a real pytest parser.

The table comes from a real configured pytest (pytester.parseconfig, statesnap and the
installed plugins loaded, a conftest option added), read the way the plugin reads it: so these
cases run against whatever pytest is installed (``make test-compat`` runs them under the
oldest and the newest pytest claimed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from statesnap.plugin.start import pytest_option_table
from statesnap.replay.args import OptionTable, plugin_args, replay_args, split_words
from statesnap.replay.repro import (
    plain_base_args,
    replay_base_args,
    repro_command,
    without_statesnap,
)

CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--flavour", default="plain", help="a conftest's valued option")
    parser.addoption("--loud", action="store_true", help="a conftest's flag")
    parser.addoption("--levels", nargs="*", default=[], help="takes any number of values")
"""


#: The table, read once: parsing a configuration takes a tenth of a second, and the mutation
#: run (scripts/mutation.py) runs this file once per mutant.
_TABLES: list[OptionTable] = []


@pytest.fixture
def table(request: pytest.FixtureRequest) -> OptionTable:
    if not _TABLES:
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        pytester.makeconftest(CONFTEST)
        _TABLES.append(pytest_option_table(pytester.parseconfig("-p", "statesnap")))
    return _TABLES[0]


def test_the_table_holds_arities_from_argparse(table: OptionTable) -> None:
    nargs = table.nargs
    for flag in ("-q", "--quiet", "-v", "-x", "-s", "-l", "--loud", "--lf",
                 "--statesnap-find-cleaners", "--help", "--version"):
        assert nargs[flag] == 0, flag
    for valued in ("-p", "-k", "-m", "-o", "--override-ini", "-W", "--tb", "-r", "--maxfail",
                   "--flavour", "--reruns-delay", "--statesnap-record", "--report", "-c"):
        assert nargs[valued] is None, valued
    assert nargs["--statesnap-isolate"] == "?"
    assert nargs["--levels"] == "*"
    assert table.names("-x") == {"-x", "--exitfirst"}
    assert {"--statesnap-record", "--report", "--statesnap-probes"} <= table.own
    assert not table.own & {"-p", "-q", "--flavour", "--reruns"}


#: (the invocation's arguments, what a replay child keeps, what a printed command keeps)
CASES = [
    pytest.param(["-p", "no:randomly", "-q", "-p", "statesnap", "tests"],
                 ["-p", "no:randomly", "-q", "-p", "statesnap"], ["-p", "no:randomly", "-q"],
                 id="issue-12: -q is a flag, the -p after it keeps its value"),
    pytest.param(["-qq", "tests", "-v", "-s", "-pstatesnap"], ["-qq", "-v", "-s", "-pstatesnap"],
                 ["-qq", "-v", "-s"], id="-qq, attached -p"),
    pytest.param(["-p", "statesnap", "-q", "--statesnap-record=r.jsonl", "tests"],
                 ["-p", "statesnap", "-q"], ["-q"], id="issue-12: the record path stays out"),
    pytest.param(["--maxfail=2", "-W", "error::DeprecationWarning", "t.py"],
                 ["-W", "error::DeprecationWarning"], ["-W", "error::DeprecationWarning"],
                 id="--opt=value never takes the next word"),
    pytest.param(["--tb=short", "t.py", "-rA"], ["--tb=short", "-rA"], ["--tb=short", "-rA"],
                 id="--tb=short leaves the path alone"),
    pytest.param(["--tb", "short", "t.py", "-r", "fE"], ["--tb", "short", "-r", "fE"],
                 ["--tb", "short", "-r", "fE"], id="values as separate words"),
    pytest.param(["-k", "a and not b", "-m", "not slow", "t.py", "-x", "--maxfail", "2", "-s"],
                 ["-s"], ["-s"], id="selection and stopping early are dropped with values"),
    pytest.param(["-k=victim", "-mslow", "-ok=v", "-Werror", "-pmyplugin"],
                 ["-ok=v", "-Werror", "-pmyplugin"], ["-ok=v", "-Werror", "-pmyplugin"],
                 id="attached values"),
    pytest.param(["-o", "cache_dir=/x", "-o", "python_files=*.py", "-o=a=b"],
                 ["-o", "python_files=*.py", "-o=a=b"], ["-o", "python_files=*.py", "-o=a=b"],
                 id="-o, a replay's own cache_dir dropped"),
    pytest.param(["--flavour", "sour", "t.py", "--flavour=sweet", "--loud"],
                 ["--flavour", "sour", "--flavour=sweet", "--loud"],
                 ["--flavour", "sour", "--flavour=sweet", "--loud"], id="a conftest's options"),
    pytest.param(["--reruns-delay", "1", "t.py", "--reruns", "2", "-v"], ["-v"], ["-v"],
                 id="a plugin's valued options, dropped with their values"),
    pytest.param(["-xvs", "t.py"], ["-v", "-s"], ["-v", "-s"], id="a chain losing its -x"),
    pytest.param(["--exitfirst", "--junit-xml", "j.xml", "-l", "--co"], ["-l"], ["-l"],
                 id="dropped under any of their names"),
    pytest.param(["-vkvictim", "-svk", "x", "t.py"], ["-v", "-s", "-v"], ["-v", "-s", "-v"],
                 id="a chain ending in a valued option"),
    pytest.param(["-sv", "-vp", "no:cacheprovider"], ["-sv", "-vp", "no:cacheprovider"],
                 ["-sv", "-vp", "no:cacheprovider"], id="chains kept as written"),
    pytest.param(["-p", "xdist", "-n", "2", "--dist=load", "-p", "randomly",
                  "--randomly-seed", "3", "-p", "no:cacheprovider", "-p", "no:doctest"],
                 ["-p", "no:cacheprovider", "-p", "no:doctest"],
                 ["-p", "no:cacheprovider", "-p", "no:doctest"],
                 id="parallelism and shuffling dropped, blocked plugins kept"),
    pytest.param(["--statesnap-record", "r.jsonl", "--statesnap-probes", "env", "-p",
                  "statesnap", "--report=x.html", "--statesnap-json", "s.json",
                  "--statesnap-find-cleaners", "--statesnap-verify-budget=5",
                  "--statesnap-nvml-every=3", "--statesnap-isolate", "t.py"],
                 ["--statesnap-probes", "env", "-p", "statesnap", "--statesnap-nvml-every=3"],
                 [], id="statesnap's own options: only what the child watches, for a child"),
    pytest.param(["--statesnap-strict=env", "--statesnap-restore", "-q", "t.py"], ["-q"],
                 ["-q"], id="run modes never reach a replay"),
    pytest.param(["-c", "ci.ini", "--rootdir", "r", "--import-mode=importlib", "t.py"],
                 ["-c", "ci.ini", "--rootdir", "r", "--import-mode=importlib"],
                 ["-c", "ci.ini", "--rootdir", "r", "--import-mode=importlib"],
                 id="config options kept"),
    pytest.param(["--levels", "a", "b", "-q", "t.py"], ["--levels", "a", "b", "-q"],
                 ["--levels", "a", "b", "-q"], id="nargs=* takes every value up to an option"),
    pytest.param(["-q", "t.py", "--", "-notanoption", "-x"], ["-q"], ["-q"],
                 id="after --, everything is a path"),
    pytest.param(["--debug", "-q", "--co", "t.py::test_a[-1]"], ["--debug", "-q"],
                 ["--debug", "-q"], id="nargs=? without its value"),
]


@pytest.mark.parametrize(("args", "child", "plain"), CASES)
def test_replay_args(table: OptionTable, args: list[str], child: list[str],
                     plain: list[str]) -> None:
    assert replay_args(args, table) == child
    assert replay_args(args, table, keep_own=False) == plain


def test_words_know_their_values(table: OptionTable) -> None:
    words = split_words(["-qq", "-k", "a or b", "--tb=line", "t.py", "-vpfoo"], table)
    assert [(w.option, w.values) for w in words] == [
        ("-q", ()), ("-q", ()), ("-k", ("a or b",)), ("--tb", ("line",)), (None, ()),
        ("-v", ()), ("-p", ("foo",))]


def test_at_file_arguments(table: OptionTable, tmp_path: Path) -> None:
    (tmp_path / "args.txt").write_text("-q\n--maxfail\n2\n-W\nerror\ntests\n")
    got = replay_args(["@args.txt", "-v"], table, cwd=tmp_path)
    if table.fromfile_prefix:  # pytest 9 reads @FILE itself; a replay gets what was in it
        assert got == ["-q", "-W", "error", "-v"]
    else:  # pytest 8 takes @args.txt for a path
        assert got == ["-v"]


def _header(args: list[str], plain: list[str] | None, **extra: object) -> dict[str, object]:
    replay: dict[str, object] = {"cwd": "/r", "args": args}
    if plain is not None:
        replay["plain_args"] = plain
    return {"rootdir": "/r", "invocation_dir": "/r", "replay": replay, **extra}


def test_printed_command_uses_the_plain_arguments() -> None:
    header = _header(["-q", "-p", "statesnap", "--statesnap-probes=env"], ["-q"])
    assert repro_command(header, ["t.py::test_v"]) == (
        "python -m pytest -q -p no:randomly t.py::test_v")
    assert replay_base_args(header) == ["-q", "-p", "statesnap", "--statesnap-probes=env",
                                        "-p", "no:randomly"]


def test_older_records_lose_statesnap_words_in_printed_commands() -> None:
    old = ["-p", "statesnap", "-q", "--statesnap-probes", "env,fds", "-pstatesnap",
           "--statesnap-nvml-every=2", "-W", "error", "--report", "x.html"]
    assert without_statesnap(old) == ["-q", "-W", "error"]
    assert plain_base_args(_header(old, None)) == ["-q", "-W", "error", "-p", "no:randomly"]


def test_randomly_pinned_when_the_run_had_it() -> None:
    header = _header(["-q"], ["-q"], plugins=["pytest-randomly-3.15"], seed=7)
    assert plain_base_args(header) == ["-q", "--randomly-seed=7", "--randomly-dont-reorganize"]
    assert replay_base_args(header)[:3] == ["-p", "statesnap", "-q"]


def test_plugin_args_as_pytest_finds_them_before_parsing() -> None:
    assert plugin_args(["-q", "-p", "no:cacheprovider", "-pxdist", "t.py", "-p", " a "]) == [
        "no:cacheprovider", "xdist", "a"]
    assert plugin_args(["-p"]) == []


# -- argparse's rules, against a table built by hand ---------------------------------------
# pytest registers no option with a fixed count, REMAINDER or a negative-number name, and
# pytest 8 reads no @FILE: these cases give the splitter what argparse would, whichever
# pytest is installed.

HAND = OptionTable(
    nargs={"-q": 0, "-v": 0, "-s": 0, "-x": 0, "-k": None, "-m": None, "-p": None, "-W": None,
           "--flavour": None, "--levels": "*", "--rest": "...", "--sub": "A...", "--one": 1,
           "--two": 2, "--opt": "?",
           "--report": None, "--statesnap-probes": None},
    own=frozenset({"--report", "--statesnap-probes"}), fromfile_prefix="@")


@pytest.mark.parametrize(("args", "child"), [
    pytest.param(["-", "-q"], ["-q"], id="a lone dash is a path"),
    pytest.param(["-k", "-1", "-q"], ["-q"], id="a negative number is a value"),
    pytest.param(["-k", "-z y", "-q"], ["-q"], id="a dashed word with a space is a value"),
    pytest.param(["--flavour=very sour", "t.py"], ["--flavour=very sour"],
                 id="--opt=value with a space in the value"),
    pytest.param(["--flavour", "(sour)", "-q"], ["--flavour", "(sour)", "-q"],
                 id="a value sorting before --"),
    pytest.param(["--levels", "+a", "*b", "-q"], ["--levels", "+a", "*b", "-q"],
                 id="nargs=* values sorting before --"),
    pytest.param(["-q", "--rest", "a", "-q", "b"], ["-q", "--rest", "a", "-q", "b"],
                 id="REMAINDER takes the rest of the line"),
    pytest.param(["-v", "--rest"], ["-v", "--rest"], id="REMAINDER at the end"),
    pytest.param(["--one", "x", "t.py"], ["--one", "x"], id="nargs=1 takes one word"),
    pytest.param(["--two", "a", "b", "c"], ["--two", "a", "b"], id="nargs=2 takes two words"),
    pytest.param(["--opt", "-q", "--opt", "x", "t.py"], ["--opt", "-q", "--opt", "x"],
                 id="nargs=? takes a value only when one follows"),
    pytest.param(["-qvp", "no:cacheprovider", "t.py"], ["-qvp", "no:cacheprovider"],
                 id="a chain of three ending in an option that takes the next word"),
    pytest.param(["-qvs", "t.py"], ["-qvs"], id="a chain of three flags"),
    pytest.param(["-q", "--", "-v", "-p", "x"], ["-q"], id="nothing after -- is an option"),
    pytest.param(["-Wignore:a b", "t.py"], ["-Wignore:a b"],
                 id="an attached short value with a space"),
    pytest.param(["--later-flag", "-q", "t.py"], ["--later-flag", "-q"],
                 id="an option unknown to the table is kept as a flag"),
    pytest.param(["-q", "-v", "--levels", "a", "b", "c"], ["-q", "-v", "--levels", "a", "b", "c"],
                 id="nargs=* further along the line"),
    pytest.param(["-k", "+x", "-m", "(y)", "-q"], ["-q"],
                 id="values starting with a character sorting before the dash"),
    pytest.param(["-k", "-z=a b", "-q"], ["-q"], id="a value with a dash, = and a space"),
    pytest.param(["--levels", "a", "-x", "t.py"], ["--levels", "a"],
                 id="nargs=* stops at an option that is dropped"),
    pytest.param(["-v", "--sub", "x", "-q", "y"], ["-v", "--sub", "x", "-q", "y"],
                 id="PARSER (A...) takes the rest of the line"),
    pytest.param(["--levels", "a", "b", "c", "d", "--", "y"], ["--levels", "a", "b", "c", "d"],
                 id="nargs=* takes every value up to a -- near the end"),
    # A plugin of the recorded run that this environment lacks: its letter is unknown here.
    pytest.param(["-qZ", "-v"], ["-qZ", "-v"],
                 id="a chain with a letter unknown to the table is kept as written"),
])
def test_replay_args_by_argparse_rules(args: list[str], child: list[str]) -> None:
    assert replay_args(args, HAND) == child


@pytest.mark.parametrize(("args", "child", "plain"), [
    pytest.param(["--report", "x.html", "-q"], ["-q"], ["-q"],
                 id="statesnap's own option without the prefix"),
    pytest.param(["--statesnap-gone=1", "-q"], ["-q"], ["-q"],
                 id="a statesnap option this statesnap no longer has"),
    pytest.param(["--statesnap-probes", "env", "-q"], ["--statesnap-probes", "env", "-q"],
                 ["-q"], id="what the child watches: kept for a child only"),
    pytest.param(["-p", "timeout", "-p", "statesnap", "-p", "anyio"],
                 ["-p", "timeout", "-p", "statesnap", "-p", "anyio"],
                 ["-p", "timeout", "-p", "anyio"], id="only statesnap's own -p is left out"),
])
def test_statesnaps_own_options(args: list[str], child: list[str], plain: list[str]) -> None:
    assert replay_args(args, HAND) == child
    assert replay_args(args, HAND, keep_own=False) == plain


def test_a_long_line() -> None:
    args = ["-q"] * 300 + ["-v", "t.py"]
    assert replay_args(args, HAND) == args[:-1]
    args = ["-q"] * 300 + ["--levels", "a", "b"]
    assert replay_args(args, HAND) == args


def test_at_file_arguments_by_hand(tmp_path: Path) -> None:
    (tmp_path / "args.txt").write_text("-q\n@more.txt\n-k\nslow\n")
    (tmp_path / "more.txt").write_text("-v\ntests\n")
    (tmp_path / "q").write_text("not an argument file")  # "-q" is no "@q"
    got = replay_args(["", "@args.txt", "-q", "@missing.txt", "-s"], HAND, cwd=tmp_path)
    assert got == ["-q", "-v", "-q", "-s"]


def test_plugin_args_of_a_long_line() -> None:
    assert plugin_args(["-pfoo"]) == ["foo"]
    assert plugin_args(["-q"] * 300 + ["-p", "x"]) == ["x"]
    assert plugin_args(["-q"] * 300 + ["-p"]) == []
    assert plugin_args(["-o", "a=b", "-k", "x", "--co"]) == []  # other options' values
    # pytest takes the word after -p as its value, whatever it looks like.
    assert plugin_args(["-p", "-p", "x"]) == ["-p"]


def test_a_child_keeps_the_parents_env_but_what_describes_the_parent() -> None:
    from statesnap.base.redact import SECRET_FD_ENV
    from statesnap.replay.child import child_env

    parent = {"PYTEST_CURRENT_TEST": "t.py::t (call)", SECRET_FD_ENV: "7", "HOME": "/h",
              "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
              "PYTEST_XDIST_TESTRUNUID": "abc", "STATESNAP_REPLAY": "0"}
    assert child_env(parent, keep_xdist=False, STATESNAP_REPLAY="1") == {
        "HOME": "/h", "STATESNAP_REPLAY": "1"}
    # An isolated test runs as part of its xdist worker: it sees the worker's variables.
    assert child_env(parent, keep_xdist=True, STATESNAP_ISOLATED="spawn") == {
        "HOME": "/h", "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
        "PYTEST_XDIST_TESTRUNUID": "abc", "STATESNAP_REPLAY": "0", "STATESNAP_ISOLATED": "spawn"}
