"""A change deep inside an object with a long fingerprint reads as a change in the terminal.

Cut from their starts at the terminal's width, two fingerprints of one object whose first 60
characters agree (a descriptor whose private memo filled, seen on cachetools 8.0.2) printed
the same text on both sides of the arrow: a leak line and a finding's ``state:`` line that
showed no change. The leak line says what changed (the attribute, its two values); the
finding's state line is cut around the first difference.
"""

from __future__ import annotations

import re

import pytest

REGISTRY = '''
class Registry:
    def __init__(self):
        # Short enough to be kept whole in the fingerprint, long enough together to push
        # the hook past the terminal's 60 characters.
        self.title = "the plugin registry"
        self.owner = "the project maintainers"
        self.hook = None


REGISTRY = Registry()
'''

SUITE = '''
import registry


def test_installs_a_hook():
    registry.REGISTRY.hook = "installed-by-test"


def test_expects_no_hook():
    assert registry.REGISTRY.hook is None
'''

LINE = re.compile(r"registry:REGISTRY: (?P<before>.+) → (?P<after>.+?)"
                  r"(?: \[call\]| \(restoring it makes the victim pass\))?$")


def _sides(lines: list[str], marker: str) -> tuple[str, str]:
    found = [LINE.search(line) for line in lines if marker in line and " → " in line]
    hits = [m for m in found if m is not None]
    assert hits, "\n".join(lines)
    return hits[0]["before"], hits[0]["after"]


def test_leak_and_state_lines_show_where_the_long_values_differ(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(registry=REGISTRY, test_registry=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "statesnap", "--statesnap-probes=attributes",
        "--statesnap-verify-budget=120",
    )
    result.assert_outcomes(passed=1, failed=1)
    lines = result.outlines
    leak = [line for line in lines if "test_installs_a_hook: registry:REGISTRY" in line]
    assert leak, result.stdout.str()
    # Too long for the line: the attribute that changed, not two cut ends (output/delta.py).
    assert "registry:REGISTRY: ~'hook': None → 'installed-by-test' [call]" in leak[0], leak
    # The finding's state line, proven by replay, shows the change as well.
    state = [line for line in lines if line.strip().startswith("state: attributes:")]
    assert state, result.stdout.str()
    s_before, s_after = _sides(state, "state:")
    assert s_before != s_after and "installed" in s_after, result.stdout.str()
