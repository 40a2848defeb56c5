"""The ``scistack`` probe against the real numpy, pandas, matplotlib and scikit-learn.

Every setting a test can leave changed shows as its own key (and only while it differs from
the default), moves the token, and is put back by ``restore``.  Without numpy imported the
probe imports nothing and reads nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.builtin import builtin_probes
from statesnap.probes.scistack.probe import NO_NUMPY, SciStackProbe

pytestmark = pytest.mark.needs_scistack


@pytest.fixture
def libs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The four libraries, imported, with every global setting put back afterwards by their
    own APIs (not by the probe under test)."""
    monkeypatch.setenv("MPLBACKEND", "agg")
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    mpl = pytest.importorskip("matplotlib")
    sklearn = pytest.importorskip("sklearn")
    plt = pytest.importorskip("matplotlib.pyplot")
    err, printing = np.geterr(), np.get_printoptions()
    sk = sklearn.get_config()
    backend = dict.__getitem__(mpl.rcParams, "backend")
    try:
        with mpl.rc_context():
            yield {"np": np, "pd": pd, "mpl": mpl, "sklearn": sklearn, "plt": plt}
    finally:
        np.seterr(**err)
        np.seterrcall(None)
        np.set_printoptions(**printing)
        with warnings.catch_warnings():  # deprecated options warn when reset
            warnings.simplefilter("ignore")
            pd.reset_option("all")
        sklearn.set_config(**sk)
        plt.close("all")
        dict.__setitem__(mpl.rcParams, "backend", backend)


@pytest.fixture
def probe(tmp_path: Path) -> SciStackProbe:
    p = SciStackProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    return p


def test_is_a_builtin_probe() -> None:
    names = [p.name for p in builtin_probes()]
    assert names.index("scistack") == names.index("torch") + 1


def test_every_setting_is_a_key_and_is_restored(libs: dict[str, Any],
                                                probe: SciStackProbe) -> None:
    np, pd, mpl, sklearn, plt = (libs[k] for k in ("np", "pd", "mpl", "sklearn", "plt"))
    clean = probe.read()
    assert clean == {}  # importing the libraries adds no key
    saved = probe.save()
    token = probe.token()

    def fmt(x: float) -> str:
        return "x"

    np.seterr(divide="raise")
    np.seterrcall(fmt)
    np.set_printoptions(precision=3, formatter={"float": fmt})
    pd.set_option("display.max_rows", 7)
    mpl.rcParams["font.size"] = 3
    sklearn.set_config(assume_finite=True)
    plt.figure()
    plt.figure()
    assert probe.token() != token
    changed = probe.read()
    expected = {
        "numpy.errstate": "divide=raise over=warn under=ignore invalid=warn",
        "numpy.errcall": f"{__name__}.test_every_setting_is_a_key_and_is_restored.<locals>.fmt",
        "numpy.printoptions:precision": "3",
        "numpy.printoptions:formatter":
            "{'float': " + f"{__name__}.test_every_setting_is_a_key_and_is_restored"
            ".<locals>.fmt}",
        "pandas.option:display.max_rows": "7",
        "matplotlib.rcParams:font.size": "3.0",
        "matplotlib.figures": "2 open (numbers 1, 2)",
        "sklearn.config:assume_finite": "True",
    }
    assert changed == expected
    json.dumps(changed)
    restored = probe.restore(saved, list(expected))
    assert sorted(restored) == sorted(expected)
    assert probe.read() == clean
    assert np.geterr()["divide"] == "warn" and np.geterrcall() is None
    assert np.get_printoptions()["precision"] == 8
    assert np.get_printoptions()["formatter"] is None
    assert pd.get_option("display.max_rows") == 60
    assert mpl.rcParams["font.size"] == 10.0
    assert sklearn.get_config()["assume_finite"] is False
    assert plt.get_fignums() == []


def test_restoring_one_print_option_leaves_the_others(libs: dict[str, Any],
                                                      probe: SciStackProbe) -> None:
    np = libs["np"]
    saved = probe.save()
    np.set_printoptions(precision=3, linewidth=40)
    assert probe.restore(saved, ["numpy.printoptions:precision"]) == [
        "numpy.printoptions:precision"]
    assert {k: v for k, v in probe.read().items() if k.startswith("numpy")} == {
        "numpy.printoptions:linewidth": "40"}


def test_context_managers_leave_no_key(libs: dict[str, Any], probe: SciStackProbe) -> None:
    np, pd, mpl, sklearn = (libs[k] for k in ("np", "pd", "mpl", "sklearn"))
    before = probe.read()
    with np.errstate(all="ignore"), pd.option_context("display.width", 10), \
            mpl.rc_context({"lines.linewidth": 4}), sklearn.config_context(working_memory=9):
        inside = probe.read()
        assert {"numpy.errstate", "pandas.option:display.width",
                "matplotlib.rcParams:lines.linewidth",
                "sklearn.config:working_memory"} <= inside.keys()
    probe.token()
    assert probe.read() == before


def test_figures_closed_by_restore_only_those_opened_since(libs: dict[str, Any],
                                                           probe: SciStackProbe) -> None:
    plt = libs["plt"]
    kept = plt.figure()
    saved = probe.save()
    plt.figure()
    plt.figure()
    assert probe.read()["matplotlib.figures"] == "3 open (numbers 1, 2, 3)"
    assert probe.restore(saved, ["matplotlib.figures"]) == ["matplotlib.figures"]
    assert plt.get_fignums() == [kept.number]
    plt.close(kept)
    assert "matplotlib.figures" not in probe.read()
    # A figure open at the save and closed since cannot be opened again: not restored.
    assert probe.restore(saved, ["matplotlib.figures"]) == []


def test_backend_switch_is_seen_and_put_back(libs: dict[str, Any],
                                             probe: SciStackProbe) -> None:
    mpl = libs["mpl"]
    saved = probe.save()
    assert "matplotlib.backend" not in probe.read()
    mpl.use("svg")
    assert probe.read()["matplotlib.backend"] == "svg"
    assert probe.restore(saved, ["matplotlib.backend"]) == ["matplotlib.backend"]
    assert "matplotlib.backend" not in probe.read()
    assert mpl.get_backend().lower() == "agg"


def test_the_backend_pyplot_picks_is_the_default(tmp_path: Path) -> None:
    """No backend chosen: pyplot picks one on first use, whichever test that is -- no key;
    a backend a test chose is one, and restoring it goes back to what pyplot picked."""
    code = textwrap.dedent("""
        from pathlib import Path
        from statesnap.probes.base import ProbeContext
        from statesnap.probes.scistack.probe import SciStackProbe
        import matplotlib
        p = SciStackProbe()
        p.setup(ProbeContext(rootdir=Path('.')))
        saved = p.save()
        print(sorted(p.read()))
        import matplotlib.pyplot as plt
        plt.close(plt.figure())  # picks the backend
        p.token()
        print(sorted(p.read()))
        picked = matplotlib.get_backend()
        matplotlib.use("svg")
        p.token()
        print(sorted(p.read().items()))
        print(p.restore(saved, ["matplotlib.backend"]), sorted(p.read()),
              matplotlib.get_backend() == picked)
    """)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["MPLCONFIGDIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[]", "[]", "[('matplotlib.backend', 'svg'), "
        "('matplotlib.rcParams:backend_fallback', 'False')]",
        "['matplotlib.backend'] ['matplotlib.rcParams:backend_fallback'] True"]


def test_mplbackend_is_the_default_backend(tmp_path: Path) -> None:
    """``MPLBACKEND`` is written into rcParams after rcParamsOrig is copied: it is still
    every process's default, no key."""
    code = ("from pathlib import Path; from statesnap.probes.base import ProbeContext; "
            "from statesnap.probes.scistack.probe import SciStackProbe; import matplotlib; "
            "p = SciStackProbe(); p.setup(ProbeContext(rootdir=Path('.'))); "
            "print(sorted(p.read())); matplotlib.use('pdf'); p.token(); print(sorted(p.read()))")
    env = dict(os.environ, MPLBACKEND="Agg", MPLCONFIGDIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True).stdout.splitlines()
    assert out == ["[]", "['matplotlib.backend', 'matplotlib.rcParams:backend_fallback']"]


def test_severities_and_hints(probe: SciStackProbe) -> None:
    assert probe.severity_of("matplotlib.backend", None, "svg") == Severity.MEDIUM
    assert probe.severity_of("matplotlib.figures", None, "1 open (numbers 1)") == Severity.HIGH
    assert probe.severity_of("numpy.errstate", None, "divide=raise") == Severity.HIGH
    # Put back to the default (by a finaliser, an autouse reset): nothing to act on.
    assert probe.severity_of("pandas.option:display.max_rows", "7", None) == Severity.LOW
    hints = {
        "numpy.errstate": "np.errstate",
        "numpy.errcall": "np.errstate(call=",
        "numpy.printoptions:precision": "np.printoptions(precision=",
        "pandas.option:display.max_rows": "pd.option_context('display.max_rows'",
        "matplotlib.rcParams:font.size": "matplotlib.rc_context({'font.size'",
        "matplotlib.backend": "matplotlib.use",
        "matplotlib.figures": "plt.close",
        "sklearn.config:assume_finite": "sklearn.config_context(assume_finite=",
    }
    for key, text in hints.items():
        assert text in (probe.hint(key, "changed") or ""), key


def test_a_stand_in_module_is_not_read(libs: dict[str, Any], probe: SciStackProbe) -> None:
    libs["plt"].figure()
    probe.token()
    stand_ins = {name: mock.MagicMock() for name in
                 ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "sklearn")}
    with mock.patch.dict(sys.modules, stand_ins):  # undone before pytest's own teardown
        probe.token()
        assert probe.read() == {}
        assert probe.save() == []
    probe.token()
    assert "matplotlib.figures" in probe.read()  # the real modules are read again


def test_nothing_is_imported_or_read_without_numpy(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from statesnap.probes.base import ProbeContext
        from statesnap.probes.scistack.probe import SciStackProbe
        p = SciStackProbe()
        p.setup(ProbeContext(rootdir=Path('.')))
        print(p.token(), p.read(), p.save(), p.restore(p.save(), ["numpy.errstate"]))
        print(sorted(m for m in sys.modules if m.split('.')[0] in
                     ('numpy', 'pandas', 'matplotlib', 'sklearn')
                     or m.startswith('statesnap.probes.scistack._')))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.splitlines()
    assert out == [f"{NO_NUMPY} {{}} None []", "[]"]


def test_a_session_never_imports_the_libraries(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys

        def test_first():
            pass

        def test_nothing_scientific_was_imported():
            assert not {"numpy", "pandas", "matplotlib", "sklearn"} & set(sys.modules)
    """)
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_the_public_getters_stand_in_where_numpy_has_no_context_variables(
        libs: dict[str, Any]) -> None:
    """numpy 1.x keeps its error state and print options elsewhere: the token then asks
    ``np.geterr()``, ``np.geterrcall()`` and ``np.get_printoptions()``."""
    from statesnap.probes.scistack._libs import NumpyWatcher

    np = libs["np"]
    watcher = NumpyWatcher(np)
    assert watcher._vars is not None  # numpy 2 here: the context variables are used
    watcher._vars = None
    token = watcher.token()
    assert watcher.token() == token
    for change in (lambda: np.seterr(over="raise"), lambda: np.seterrcall(print),
                   lambda: np.set_printoptions(linewidth=30)):
        change()
        assert watcher.token() != token
        token = watcher.token()
    out: dict[str, Any] = {}
    watcher.read(out)
    assert out == {"numpy.errstate": "divide=warn over=raise under=ignore invalid=warn",
                   "numpy.errcall": "builtins.print", "numpy.printoptions:linewidth": "30"}
