"""plugin.markers.names_on: every marker an item carries, from itself or any parent.

Features ask it once at collection instead of one ``get_closest_marker`` per item; a marker it
missed would switch a feature off (isolation, guards, reruns) for the tests that asked for it.
"""

from __future__ import annotations

import pytest

SUITE = '''
import pytest

pytestmark = pytest.mark.on_module


@pytest.mark.on_class
class TestKlass:
    @pytest.mark.on_method
    def test_m(self):
        pass


@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.on_param)])
def test_p(x):
    pass


def test_plain():
    pass
'''


def test_every_marker_of_the_items_and_their_parents_is_named(pytester: pytest.Pytester) -> None:
    # Imported here, with pytester's copy of sys.modules in place: a plugin module imported
    # by the outer process would be shared with the inner in-process runs of other tests.
    from statesnap.plugin.markers import names_on

    # The inner session's own marks, registered: unknown, each would warn in the outer run.
    pytester.makeini("[pytest]\nmarkers =\n    on_module\n    on_class\n    on_method\n"
                     "    on_param\n")
    items = pytester.getitems(SUITE)
    assert len(items) == 4
    names = names_on(items)
    assert {"on_module", "on_class", "on_method", "on_param", "parametrize"} <= names
    for item in items:  # as get_closest_marker sees them, item by item
        for name in ("on_module", "on_class", "on_method", "on_param"):
            if item.get_closest_marker(name) is not None:
                assert name in names_on([item])
    assert "on_method" not in names_on([i for i in items if "TestKlass" not in i.nodeid])
    assert "on_param" not in names_on([i for i in items if "2" not in i.nodeid])
    assert "statesnap_isolate" not in names
    assert names_on([]) == set()


def test_a_module_level_isolate_marker_still_isolates(pytester: pytest.Pytester) -> None:
    # The marker sits on the module, not the test: only a walk through the parents finds it.
    pytester.makepyfile(test_iso='''
import os
import pytest

pytestmark = pytest.mark.statesnap_isolate("fork")


def test_leaks():
    os.environ["NAMES_ON_LEAK"] = "1"


def test_sees_nothing():
    assert "NAMES_ON_LEAK" not in os.environ
''')
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           "--statesnap-verify-budget=0")
    result.assert_outcomes(passed=2)
