"""State that lives in wide fixtures, hunted from a recorded run and proven by re-creating the
fixture before the victim (the ``fixtures`` probe, on in the hunt's runs and replays).

Each suite is written on the pattern of a real order-dependent test (bench/realworld:
multiindex's session container, stowage's ``setup_class`` temporary directory, dzonegit's
session repository): the victim runs first in the default order, so the recorded run passes
and only the hunt's orders expose it.  Every printed reproduction is run under plain pytest.
"""

from __future__ import annotations

import pytest
from hunt_helpers import Suite
from test_hunt_proofs import finding_blocks, statesnap_hunt

from repro_check import check_reproductions
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow


def test_a_session_container_changed_in_place_by_a_later_test(suite: Suite) -> None:
    # A session-scoped roster (a user class keeping members in a dict) that one test
    # changes through its own method; the victim expects the roster as the fixture built it.
    suite.write({
        "conftest.py": '''
import pytest


class Roster:
    def __init__(self, names):
        self.members = {name: {"active": True} for name in names}

    def retire(self, name):
        self.members[name]["active"] = False

    def active(self):
        return sorted(n for n, m in self.members.items() if m["active"])


@pytest.fixture(scope="session")
def roster():
    return Roster(["ada", "bob", "cy"])
''',
        "test_a_roster.py": '''
def test_everyone_active(roster):
    assert roster.active() == ["ada", "bob", "cy"], "someone is retired"

def test_count(roster):
    assert len(roster.members) == 3
''',
        "test_b_retire.py": '''
def test_retire(roster):
    roster.retire("bob")
    assert roster.active() == ["ada", "cy"]

def test_unrelated():
    assert True
''',
    })
    record = suite.record()
    # The recording run does not watch fixtures (its per-test path stays as it was).
    assert not any(c.probe == "fixtures" for t in read_record(record).tests for c in t.changes)
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = finding_blocks(proc.stdout)["test_a_roster.py::test_everyone_active"]
    assert "polluted by: test_b_retire.py::test_retire" in block, block
    assert "state: fixtures:roster: ∅ → session fixture changed in place" in block, block
    assert "(re-creating it before the victim makes it pass)" in block, block
    assert "re-creating the session fixture 'roster' before the victim heals it" in block, block
    assert "narrow its scope (function), or hand each test a copy" in block, block
    check_reproductions(block, suite.root, ["test_everyone_active"],
                        expect="someone is retired")


def test_state_made_by_a_setup_class_and_session_fixtures_outside_the_rootdir(
        suite: Suite) -> None:
    # Neither value changes: what they made does.  setup_class makes a temporary directory
    # (outside the rootdir) for the class and a test leaves a symlink in it; a session
    # fixture makes a workspace under pytest's basetemp and a test leaves a lock file there;
    # another session fixture hands out the same folder whenever it is set up.
    suite.write({
        "test_a_tree.py": '''
import os
import shutil
import tempfile


class TestTree:
    def setup_class(cls):
        cls.top = tempfile.mkdtemp(prefix="tree_")
        open(os.path.join(cls.top, "leaf.txt"), "w").close()

    def teardown_class(cls):
        shutil.rmtree(cls.top)

    def test_walk(self):
        assert sorted(os.listdir(self.top)) == ["leaf.txt"], "stray entries in the tree"

    def test_linked_leaf(self):
        os.symlink(os.path.join(self.top, "leaf.txt"), os.path.join(self.top, "alias"))
        assert os.path.islink(os.path.join(self.top, "alias"))
''',
        "test_b_workspace.py": '''
import pytest


@pytest.fixture(scope="session")
def workspace(tmp_path_factory):
    return tmp_path_factory.mktemp("workspace")


def test_unlocked(workspace):
    assert not (workspace / "LOCK").exists(), "the workspace is locked"


def test_takes_the_lock(workspace):
    (workspace / "LOCK").write_text("held")
    assert (workspace / "LOCK").exists()
''',
        "test_c_store.py": '''
import pytest


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    # The same folder whenever it is set up again: re-creating it does not empty it.
    path = tmp_path_factory.getbasetemp() / "store"
    path.mkdir(exist_ok=True)
    return path


def test_store_empty(store):
    assert list(store.iterdir()) == [], "the store holds a file"


def test_put(store):
    (store / "item").write_text("x")
''',
    })
    record = suite.record()
    proc = statesnap_hunt(record, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    blocks = finding_blocks(proc.stdout)
    # Nothing re-created heals it: no key is claimed, and the finding says what is not
    # watched.
    store = blocks["test_c_store.py::test_store_empty"]
    assert "polluted by: test_c_store.py::test_put" in store, store
    assert "no key proven: the polluter has no recorded change that can be restored, and " \
        "re-creating the wide fixtures does not heal the victim" in store, store
    assert "state: fixtures:" not in store and "makes it pass" not in store, store
    check_reproductions(store, suite.root, ["test_store_empty"], expect="holds a file")
    tree = blocks["test_a_tree.py::TestTree::test_walk"]
    assert "polluted by: test_a_tree.py::TestTree::test_linked_leaf" in tree, tree
    # The user's method, never pytest's name for the fixture it made of it.
    assert "state: fixtures:TestTree.setup_class: what the fixture made" in tree, tree
    assert "_xunit_setup" not in tree, tree
    assert "move it to setup_method" in tree, tree
    work = blocks["test_b_workspace.py::test_unlocked"]
    assert "polluted by: test_b_workspace.py::test_takes_the_lock" in work, work
    assert "state: fixtures:workspace: what the fixture made" in work, work
    assert "(re-creating it before the victim makes it pass)" in work, work
    for block in (tree, work):
        # What was not watched is said plainly.
        assert "files outside the watched roots" in block, block
        assert "are not watched" in block, block
    check_reproductions(tree, suite.root, ["test_walk"], expect="stray entries")
    check_reproductions(work, suite.root, ["test_unlocked"], expect="the workspace is locked")
