"""The ``warnings`` probe against the real filter list and hooks.

Every test runs inside pytest's own ``catch_warnings``, which puts the filters back after it;
the tests change them for real and rely on that (and on their own ``catch_warnings``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from statesnap.diff import diff_maps
from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.warnings_ import LIST_KEY, WarningsProbe, filter_key


@pytest.fixture
def probe(tmp_path: Path) -> WarningsProbe:
    p = WarningsProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    return p


class ZooWarning(UserWarning):
    pass


def test_every_filter_has_a_key_with_its_position(probe: WarningsProbe) -> None:
    got = probe.read()
    for i, item in enumerate(warnings.filters):
        assert str(i) in got[filter_key(item)]
    assert got[LIST_KEY] == "original"
    assert got["showwarning"].startswith("warnings.showwarning#")
    json.dumps(got)


def test_a_new_filter_is_added_and_moves_the_token(probe: WarningsProbe) -> None:
    with warnings.catch_warnings():
        before = probe.read()
        token = probe.token()
        warnings.filterwarnings("ignore", message="zoo.*", category=ZooWarning, module="app")
        assert probe.token() != token
        changes = diff_maps("warnings", before, probe.read())
        added = [c for c in changes if c.change == "added"]
        key = f"filter:ignore:{__name__}.ZooWarning:zoo.*:app:0"
        assert [(c.key, c.after) for c in added] == [(key, "at 0")]
        # The others moved one place down: reported, at low severity.
        moved = [c for c in changes if c.change == "changed"]
        assert moved
        assert all(probe.severity_of(c.key, c.before, c.after) == Severity.LOW for c in moved)


def test_replacing_the_list_and_the_hooks(probe: WarningsProbe) -> None:
    original = warnings.filters
    with warnings.catch_warnings():  # a copy with the same filters: no change
        copy_token = probe.token()
        warnings.filters = list(warnings.filters)  # and another one
        assert probe.token() == copy_token
    try:
        before = probe.read()
        warnings.filters = list(original)  # rebound for good: equal contents, another list
        changes = {c.key: c for c in diff_maps("warnings", before, probe.read())}
        assert [(k, c.after) for k, c in changes.items()] == [(LIST_KEY, "replaced")]
    finally:
        warnings.filters = original

    def quiet(*args: object, **kwargs: object) -> None:
        pass

    with warnings.catch_warnings():
        before = probe.read()
        warnings.showwarning = quiet
        changes = {c.key: c for c in diff_maps("warnings", before, probe.read())}
        assert changes["showwarning"].after.startswith(f"{__name__}.{quiet.__qualname__}#")


def test_reads_are_cached_per_token(probe: WarningsProbe) -> None:
    first = probe.read()
    assert probe.read() is first
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inside = probe.read()
        assert inside is not first
    assert probe.read() is first  # pytest's per-test copy and the original alternate


def test_restore_puts_filters_and_hooks_back(probe: WarningsProbe) -> None:
    with warnings.catch_warnings():
        original = probe.read()
        saved = probe.save()
        filters = warnings.filters
        warnings.simplefilter("error", ZooWarning)
        warnings.showwarning = lambda *a, **k: None
        changed = [c.key for c in diff_maps("warnings", original, probe.read())]
        assert sorted(probe.restore(saved, changed)) == sorted(changed)
        assert diff_maps("warnings", original, probe.read()) == []
        assert warnings.filters is filters
        # The C accelerator's caches were invalidated: the old rules apply again.
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            warnings.warn("again", ZooWarning, stacklevel=1)
        assert len(seen) == 1


def test_hints(probe: WarningsProbe) -> None:
    assert "catch_warnings" in (probe.hint("filter:ignore::x::0", "added") or "")
    assert "monkeypatch.setattr(warnings, 'showwarning'" in (
        probe.hint("showwarning", "changed") or "")


SUITE = """
import warnings

warnings.filterwarnings("ignore", message="at import")

def test_changes_filters():
    warnings.simplefilter("error")

def test_after():
    warnings.warn("fine", UserWarning)
"""


def test_pytest_puts_filters_back_so_a_test_changing_them_leaks_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_w=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "warnings",
    )
    result.assert_outcomes(passed=2)
    summary = json.loads((pytester.path / "out.json").read_text())
    assert [t["leaks"] for t in summary["tests"]] == [[], []]
