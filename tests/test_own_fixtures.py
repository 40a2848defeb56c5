"""statesnap.analysis.own_fixtures: pytest's made-up fixture names become the user's methods."""

from __future__ import annotations

import subprocess
import sys

from statesnap.analysis.own_fixtures import display_fixture, fixture_words


def test_internal_names_become_the_user_s_methods() -> None:
    words = fixture_words("_unittest_setUpClass_fixture_TestCache")
    assert (words.name, words.undo, words.internal) == (
        "TestCache.setUpClass", "in tearDownClass (or addClassCleanup)", True)
    assert display_fixture("_xunit_setup_module_fixture_tests.test_db") == (
        "tests.test_db.setup_module")
    plain = fixture_words("db_session")
    assert (plain.name, plain.undo, plain.internal) == (
        "db_session", "after its yield (or in a finaliser)", False)
    assert repr(plain) == ("FixtureWords(name='db_session', "
                           "undo='after its yield (or in a finaliser)', internal=False)")
    assert plain == fixture_words("db_session")
    assert plain != fixture_words("other")


def test_importing_it_compiles_no_regular_expression() -> None:
    """Every session imports the module (the core plugin); its pattern is compiled on the
    first fixture it names."""
    code = ("import re, sys\n"
            "compiled = []\n"
            "real = re.compile\n"
            "re.compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)\n"
            "import statesnap.analysis.own_fixtures as m\n"
            "assert not [p for p in compiled if 'fixture_' in str(p)], compiled\n"
            "m.fixture_words('_xunit_setup_class_fixture_T')\n"
            "assert [p for p in compiled if 'fixture_' in str(p)], compiled\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
