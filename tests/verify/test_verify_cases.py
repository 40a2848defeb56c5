"""Verification end to end on real runs: the cases that decide whether a finding is right."""

from __future__ import annotations

import json
import re
from pathlib import Path

from suite_runs import run_shell, run_suite, statesnap_cli, write_suite


def test_a_victim_that_needs_two_polluters_names_both(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_two.py": '''
        import os

        def test_a_sets_host():
            os.environ["ZOO_HOST"] = "remote"

        def test_b_harmless():
            os.environ["ZOO_COLOUR"] = "green"

        def test_c_sets_port():
            os.environ["ZOO_PORT"] = "99"

        def test_d_neutral():
            pass

        def test_e_victim():
            # Breaks only when both are set: either alone is fine.
            assert not (os.environ.get("ZOO_HOST") and os.environ.get("ZOO_PORT"))
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_e_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_two.py::test_a_sets_host", "test_two.py::test_c_sets_port"]
    # Restoring either key heals the victim; each polluter's key is proven.
    assert sorted(f["proven_keys"]) == ["env:ZOO_HOST", "env:ZOO_PORT"]
    assert "polluted by: test_two.py::test_a_sets_host + test_two.py::test_c_sets_port" in (
        run.output)
    repro = run_shell(f["repro"], cwd=root)
    assert "FAILED test_two.py::test_e_victim" in repro.stdout


def test_the_last_writer_after_a_cleaner_is_named(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_cleaner.py": '''
        import os

        def test_1_first_polluter():
            os.environ["ZOO_MODE"] = "fast"

        def test_2_cleaner():
            del os.environ["ZOO_MODE"]

        def test_3_repolluter():
            os.environ["ZOO_MODE"] = "turbo"

        def test_4_victim():
            assert os.environ.get("ZOO_MODE") is None
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_4_victim")
    assert f["status"] == "verified"
    assert f["polluters"] == ["test_cleaner.py::test_3_repolluter"]
    assert (f["before"], f["after"]) == (None, "turbo")
    assert f["cleaners"] == ["test_cleaner.py::test_2_cleaner"]


def test_a_genuinely_broken_test_is_not_order_dependent(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_broken.py": '''
        import os

        def test_a_leaks():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_broken():
            assert 1 + 1 == 3
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_broken")
    assert f["status"] == "not-order-dependent"
    assert f["polluters"] == []
    assert f["repro"].endswith("test_broken.py::test_b_broken")
    assert "test_a_leaks" not in f["repro"]
    assert "[not order-dependent] test_broken.py::test_b_broken" in run.output
    assert len(f["logs"]) == 1  # one replay (alone) settled it


def test_a_module_scoped_fixture_that_is_never_undone(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {
        "test_m1_db.py": '''
            import os
            import pytest

            @pytest.fixture(scope="module")
            def database():
                os.environ["ZOO_DB"] = "sqlite://"   # no yield, no cleanup
                return "db"

            def test_uses_database(database):
                assert database == "db"

            def test_same_module_sees_it(database):
                assert os.environ["ZOO_DB"] == "sqlite://"
            ''',
        "test_m2_victim.py": '''
            import os

            def test_expects_no_database():
                assert "ZOO_DB" not in os.environ
            ''',
    })
    run = run_suite(root, tmp_path / "out")
    assert "test_same_module_sees_it" not in {f["victim"] for f in run.findings()}
    f = run.finding("test_expects_no_database")
    assert f["status"] == "verified"
    assert f["polluters"] == ["test_m1_db.py::test_uses_database"]
    assert (f["probe"], f["key"]) == ("env", "ZOO_DB")
    assert "module-scoped fixture 'database'" in f["note"]


def test_find_cleaners_names_a_test_that_undoes_the_leak(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_fc.py": '''
        import os

        def test_a_pollutes():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_victim():
            assert "ZOO_MODE" not in os.environ

        def test_c_tidies_up():
            os.environ.pop("ZOO_MODE", None)
        '''})
    run = run_suite(root, tmp_path / "out", "--statesnap-find-cleaners")
    f = run.finding("test_b_victim")
    assert f["status"] == "verified"
    assert f["cleaners"] == ["test_fc.py::test_c_tidies_up"]
    assert "cleaned by: test_fc.py::test_c_tidies_up" in run.output


def test_the_key_level_replay_names_the_key_the_victim_relies_on(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {
        "checks.py": '''
            import os

            def check_environment():
                assert os.environ.get("ZOO_" + "REGION") is None
            ''',
        "test_keys.py": '''
            import os
            from checks import check_environment

            def test_a_sets_two():
                os.environ["ZOO_LABEL"] = "blue"
                os.environ["ZOO_REGION"] = "eu"

            def test_b_victim():
                check_environment()
            ''',
    })
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_victim")
    assert f["status"] == "verified"
    assert f["proven_keys"] == ["env:ZOO_REGION"]
    assert f["key"] == "ZOO_REGION"
    assert f["hint_proven"] is True
    assert "restoring it makes the victim pass" in run.output


def test_repeats_that_disagree_make_the_finding_not_deterministic(tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    root = write_suite(tmp_path / "suite", {"test_flaky.py": '''
        import os

        def test_a_leaks():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_flaky():
            path = os.environ["ZOO_COUNTER"]
            n = int(open(path).read()) if os.path.exists(path) else 0
            open(path, "w").write(str(n + 1))
            assert n % 2 == 1, f"run {n} of this test: even runs fail"
        '''})
    env = {"ZOO_COUNTER": str(counter)}
    run = run_suite(root, tmp_path / "out", "--statesnap-verify-repeat=2", env=env)
    f = run.finding("test_b_flaky")
    assert f["status"] == "not-deterministic", run.output[-3000:]
    assert f["polluters"] == []
    assert "failed in 1 of 2 repeats" in f["note"]
    assert counter.read_text() == "3"  # the recorded run and two repeats of the alone replay
    assert "[not deterministic] test_flaky.py::test_b_flaky" in run.output


def test_a_record_of_a_crashed_run_is_explained_from_the_cli(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_crash.py": '''
        import os, signal

        def test_a_arms():
            os.environ["ZOO_CRASH"] = "1"

        def test_b_crashes_when_armed():
            if os.environ.get("ZOO_CRASH"):
                os.kill(os.getpid(), signal.SIGSEGV)

        def test_c_never_runs():
            pass
        '''})
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode < 0 or run.proc.returncode > 1  # the interpreter died
    record = run.record()
    assert record.running is not None
    assert record.running["nodeid"] == "test_crash.py::test_b_crashes_when_armed"
    cli = statesnap_cli("explain", str(run.record_path), "--verify", "--json", cwd=root)
    assert cli.returncode == 0, cli.stderr
    (f,) = json.loads(cli.stdout)
    assert f["victim"] == "test_crash.py::test_b_crashes_when_armed"
    assert f["status"] == "verified"
    assert f["polluters"] == ["test_crash.py::test_a_arms"]
    assert f["exc_type"] == "crash"
    assert "did not finish while test_crash.py::test_b_crashes_when_armed was running" in (
        cli.stderr)


def test_parametrized_ids_with_spaces_brackets_and_unicode(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_ids.py": '''
        import os
        import pytest

        @pytest.mark.parametrize("mode", ["fast lane", "x[1]", "naïve ✓"])
        def test_a_pollutes(mode):
            if mode == "x[1]":
                os.environ["ZOO_MODE"] = mode

        @pytest.mark.parametrize("who", ["zoë keeper"])
        def test_b_victim(who):
            assert "ZOO_MODE" not in os.environ
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_ids.py::test_a_pollutes[x[1]]"]
    victim = f["victim"]
    assert victim.startswith("test_ids.py::test_b_victim[")
    repro = run_shell(f["repro"], cwd=root)
    assert "1 failed, 1 passed" in repro.stdout, repro.stdout
    replay = statesnap_cli("replay", str(run.record_path), "--", "-v", cwd=root)
    assert replay.returncode == 1
    ran = [m.group(1) for m in re.finditer(r"^(test_ids\.py::.*?) (?:PASSED|FAILED)",
                                           replay.stdout, re.MULTILINE)]
    assert len(ran) == 4
    assert ran == [t.nodeid for t in run.record().tests]
