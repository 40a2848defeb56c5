"""The ``scistack`` probe in real pytest runs, with the real numpy, pandas, matplotlib and
scikit-learn: one polluter -> victim pair per setting.

One statesnap session hunts all seven victims: each must be ``[VERIFIED]`` with the key of
its setting (``proven_keys``), and its printed reproduction, run as printed under plain
pytest, must fail it.  A second session with ``--statesnap-restore`` heals them all.
Without the probe no key is named (each finding would come from delta debugging, if at all).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from repro_check import check_reproductions

pytestmark = [pytest.mark.needs_scistack, pytest.mark.slow]

# Each library in its own module: a replay of one pair imports only that library.
NUMPY = '''
import numpy as np
import pytest


def test_raises_on_divide():
    np.seterr(divide="raise")


def test_prints_two_digits():
    np.set_printoptions(precision=2)


def test_divide_by_zero_is_inf():
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        result = np.divide(np.ones(1), np.zeros(1))
    assert np.isinf(result[0])


def test_array_repr():
    assert repr(np.array([0.123456])) == "array([0.123456])"
'''

PANDAS = '''
import pandas as pd


def test_short_tables():
    pd.set_option("display.max_rows", 4)


def test_frame_repr_is_whole():
    assert ".." not in repr(pd.DataFrame({"a": range(10)}))
'''

MATPLOTLIB = '''
import matplotlib
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D


def test_svg_backend():
    matplotlib.use("svg")


def test_thick_lines():
    matplotlib.rcParams["lines.linewidth"] = 7


def test_leaves_a_figure_open():
    plt.figure()
    plt.plot([1, 2])


def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"


def test_default_line_width():
    assert Line2D([0], [0]).get_linewidth() == 1.5


def test_plot_draws_one_line():
    plt.plot([3, 4])
    try:
        assert len(plt.gca().lines) == 1
    finally:
        plt.close("all")
'''

SKLEARN = '''
import numpy as np
import pytest
import sklearn
from sklearn.utils import check_array


def test_trusts_inputs():
    sklearn.set_config(assume_finite=True)


def test_nan_is_rejected():
    with pytest.raises(ValueError):
        check_array(np.array([[np.nan]]))
'''

#: victim -> (its polluter, the key that must be proven).
PAIRS = {
    "test_a_numpy.py::test_divide_by_zero_is_inf":
        ("test_a_numpy.py::test_raises_on_divide", "scistack:numpy.errstate"),
    "test_a_numpy.py::test_array_repr":
        ("test_a_numpy.py::test_prints_two_digits", "scistack:numpy.printoptions:precision"),
    "test_b_pandas.py::test_frame_repr_is_whole":
        ("test_b_pandas.py::test_short_tables", "scistack:pandas.option:display.max_rows"),
    "test_c_matplotlib.py::test_backend_is_agg":
        ("test_c_matplotlib.py::test_svg_backend", "scistack:matplotlib.backend"),
    "test_c_matplotlib.py::test_default_line_width":
        ("test_c_matplotlib.py::test_thick_lines",
         "scistack:matplotlib.rcParams:lines.linewidth"),
    "test_c_matplotlib.py::test_plot_draws_one_line":
        ("test_c_matplotlib.py::test_leaves_a_figure_open", "scistack:matplotlib.figures"),
    "test_d_sklearn.py::test_nan_is_rejected":
        ("test_d_sklearn.py::test_trusts_inputs", "scistack:sklearn.config:assume_finite"),
}


@pytest.fixture(scope="module")
def mpl_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """matplotlib's font cache, built once for this module, outside the runs' rootdir
    (pytester points HOME at its own directory, where each run would build it again)."""
    return tmp_path_factory.mktemp("mplconfig")


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
          mpl_config: Path) -> pytest.Pytester:
    for lib in ("numpy", "pandas", "matplotlib", "sklearn"):
        # Looked up, not imported: pytester takes back the modules a test imported, and
        # numpy cannot be imported twice in one process.
        if importlib.util.find_spec(lib) is None:
            pytest.skip(f"{lib} is not installed")
    # The backend every run starts from, whatever the machine has (a display, Tk).
    monkeypatch.setenv("MPLBACKEND", "agg")
    monkeypatch.setenv("MPLCONFIGDIR", str(mpl_config))
    pytester.makepyfile(test_a_numpy=NUMPY, test_b_pandas=PANDAS,
                        test_c_matplotlib=MATPLOTLIB, test_d_sklearn=SKLEARN)
    return pytester


def test_each_setting_is_proven_by_its_key_and_reproduced(suite: pytest.Pytester) -> None:
    # Three replays per victim, each importing its library in a fresh process: the default
    # budget (120 s) can run out on a loaded machine, leaving the last victims unproven.
    result = suite.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json=out.json",
        "--statesnap-verify-budget=800", timeout=900)
    result.assert_outcomes(passed=7, failed=7)
    findings = {f["victim"]: f
                for f in json.loads((suite.path / "out.json").read_text())["findings"]}
    assert set(findings) == set(PAIRS)
    for victim, (polluter, key) in PAIRS.items():
        f = findings[victim]
        assert f["status"] == "verified", (victim, f)
        assert f["polluters"] == [polluter], (victim, f)
        assert f["proven_keys"] == [key], (victim, f)
        assert f["hint"], (victim, f)
    output = result.stdout.str()
    for _, key in PAIRS.values():
        assert f"state: {key}:" in output, key
    check_reproductions(output, suite.path, list(PAIRS))


def test_restore_mode_heals_every_victim(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-restore", timeout=600)
    result.assert_outcomes(passed=14)
    result.stdout.fnmatch_lines(["*restore mode put back * key(s) after 7 test(s):*"])
