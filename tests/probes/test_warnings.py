"""The ``warnings`` probe against the real filter list and hooks.

Every test runs inside pytest's own ``catch_warnings``: the list the probe sees at setup is
pytest's copy for this test, which these tests change for real; pytest throws it away after.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.warnings_ import LIST_KEY, WarningsProbe, filter_key
from statesnap.state.diff import diff_maps


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
    before = probe.read()
    token, light = probe.token(), probe.light_token()
    warnings.filterwarnings("ignore", message="zoo.*", category=ZooWarning, module="app")
    assert probe.token() != token and probe.light_token() != light
    changes = diff_maps("warnings", before, probe.read())
    added = [c for c in changes if c.change == "added"]
    key = f"filter:ignore:{__name__}.ZooWarning:zoo.*:app:0"
    assert [(c.key, c.after) for c in added] == [(key, "at 0")]
    # The others moved one place down: reported, at low severity.
    moved = [c for c in changes if c.change == "changed"]
    assert moved
    assert all(probe.severity_of(c.key, c.before, c.after) == Severity.LOW for c in moved)


def test_changes_inside_catch_warnings_are_disposable(probe: WarningsProbe) -> None:
    first = probe.read()
    token, light = probe.token(), probe.light_token()
    with warnings.catch_warnings():  # as pytest does around every test
        warnings.simplefilter("error")
        assert probe.light_token() == light  # checkpoints inside cost no read
    assert probe.token() == token
    assert probe.read() is first


def test_replacing_the_list_and_the_hooks(probe: WarningsProbe) -> None:
    before = probe.read()
    token = probe.token()
    warnings.filters = list(warnings.filters)  # equal contents, another list (pytest undoes it)
    assert probe.token() != token
    changes = {c.key: c for c in diff_maps("warnings", before, probe.read())}
    assert [(k, c.after) for k, c in changes.items()] == [(LIST_KEY, "replaced")]

    def quiet(*args: object, **kwargs: object) -> None:
        pass

    before = probe.read()
    warnings.showwarning = quiet
    changes = {c.key: c for c in diff_maps("warnings", before, probe.read())}
    assert changes["showwarning"].after.startswith(f"{__name__}.{quiet.__qualname__}#")


def test_restore_puts_filters_and_hooks_back(probe: WarningsProbe) -> None:
    original = probe.read()
    saved = probe.save()
    filters = warnings.filters
    warnings.simplefilter("error", ZooWarning)
    warnings.filters = list(warnings.filters)
    warnings.showwarning = lambda *a, **k: None
    changed = [c.key for c in diff_maps("warnings", original, probe.read())]
    assert LIST_KEY in changed and "showwarning" in changed
    assert sorted(probe.restore(saved, changed)) == sorted(changed)
    assert diff_maps("warnings", original, probe.read()) == []
    assert warnings.filters is filters
    # The C accelerator's caches were invalidated: the old rules apply again.
    with warnings.catch_warnings(record=True) as seen:  # records, keeps the filters
        warnings.warn("again", ZooWarning, stacklevel=1)  # a warning again, not an error
    assert [w.category for w in seen] == [ZooWarning]


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


def test_restore_formatwarning_and_defaultaction(probe: WarningsProbe) -> None:
    original = probe.read()
    saved = probe.save()
    fmt, action = warnings.formatwarning, getattr(warnings, "defaultaction")  # noqa: B009
    try:
        warnings.formatwarning = lambda *a, **k: "x"  # type: ignore[assignment]
        setattr(warnings, "defaultaction", "error")  # noqa: B010
        changed = [c.key for c in diff_maps("warnings", original, probe.read())]
        assert sorted(changed) == ["defaultaction", "formatwarning"]
        assert sorted(probe.restore(saved, changed)) == sorted(changed)
        assert diff_maps("warnings", original, probe.read()) == []
    finally:
        warnings.formatwarning = fmt
        setattr(warnings, "defaultaction", action)  # noqa: B010
