"""A key of a module that the polluter's body imports first in the replay is still proven.

The shape of l293d (the corpus case ``l293d-pins-in-use``): a class-level list that a
metaclass will not let anyone assign, the same list bound again as a module global, and tests
that ``import`` the package inside their bodies.  In the session the first test imported it,
so the polluter's in-place append is recorded; in the pair replay the polluter imports it
first, so the child's saves (after collection, after each setup) never held the module and
the key replay put nothing back.  That replay must not count as "the key does not heal": the
key replay runs again with the module imported before the child saves, once a control replay
(imported first, nothing put back) shows the victim still fails.  Where the record shows the
run first imported the module in a test's body (as here), that control and the import come
before the key's first replay (statesnap.analysis.keyrank.imported_in_a_body): one replay less.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow

SUITE = {
    "pins/__init__.py": "from pins.driver import *\n",
    "pins/config.py": '''
        class Locked(type):
            """Like l293d's ConfigMeta: only set_NAME methods may assign."""

            def __setattr__(cls, attr, value):
                raise AttributeError(f"object {cls.__name__!r} has no attribute {attr!r}")


        class Config(metaclass=Locked):
            in_use = []
        ''',
    "pins/driver.py": '''
        from pins.config import Config

        in_use = Config.in_use  # the same list, a second name


        def claim(pin):
            if pin in in_use:
                raise ValueError(f"pin {pin} already in use")
            in_use.append(pin)


        def release(pin):
            in_use.remove(pin)
        ''',
    "test_pins.py": '''
        def test_a_imports():
            import pins
            assert pins.Config.in_use == []


        def test_b_claims_and_keeps():
            import pins
            pins.claim(29)


        def test_c_claims_and_releases():
            import pins
            pins.claim(29)
            pins.release(29)
            assert pins.in_use == []
        ''',
}


def test_a_key_of_a_module_the_polluter_imports_first_is_proven(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_c_claims_and_releases")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_pins.py::test_b_claims_and_keeps"], f["polluters"]
    assert f["proven_keys"] == ["attributes:pins.config:Config.in_use"], (f["replays"],
                                                                           f["note"])
    assert (f["probe"], f["key"]) == ("attributes", "pins.config:Config.in_use")
    labels = [r["label"] for r in f["replays"]]
    # The run first imported the module in a test's body (test_a_imports), so a replay
    # child's saves never hold it: the control (imported first, nothing put back) runs
    # before the key's first replay, which imports it first too and heals.  No key replay
    # that puts nothing back.  (The pair is the printed line, run as printed: it confirms
    # it too.)
    assert labels == ["alone", "pair-printed", "import", "key"], labels
    # Each replay lists what its child really put back.
    assert [r["restored"] for r in f["replays"] if r["label"] in ("key", "import")] == [
        [], ["attributes:pins.config:Config.in_use"]], f["replays"]
    outcomes = [r["outcome"] for r in f["replays"]]
    assert outcomes == ["passed", "failed", "failed", "passed"], outcomes
    assert "no key proven" not in (f["note"] or ""), f["note"]
    check_reproductions(run.output, root, ["test_c_claims_and_releases"],
                        expect="already in use")
