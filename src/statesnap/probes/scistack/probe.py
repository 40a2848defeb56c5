"""``scistack``: the global settings of numpy, pandas, matplotlib and scikit-learn.

Read only once the library is imported (found in ``sys.modules``, never imported here).  Until
numpy is imported -- pandas, matplotlib and scikit-learn all import it -- a token is one
``sys.modules`` lookup; from then on the work is the watchers' (``_watch``, ``_libs``,
``_mpl``), loaded then.  Keys exist only while a setting differs from the library's default
(pyplot's open figures: while any is open).  Keys, hints and costs: docs/PROBES.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from statesnap.probes.base import DeferredProbe, ProbeContext, Severity, import_own

if TYPE_CHECKING:
    from statesnap.probes.scistack._watch import SciState

#: The token while numpy is not imported.
NO_NUMPY = "numpy not imported"
#: ``matplotlib.backend`` while it is ``rcsetup._auto_backend_sentinel`` where a backend had
#: been picked (a test wrote the sentinel back).
AUTO_BACKEND = "auto (resolved on first use)"
_MODULES = ("statesnap.probes.scistack._watch", "statesnap.probes.scistack._libs",
            "statesnap.probes.scistack._mpl")

#: Fix hints by key prefix; ``{name}`` is the part after the prefix.  Known without setting
#: the probe up (the CLI and the hunt ask for hints from the record alone).
HINTS: tuple[tuple[str, str], ...] = (
    ("numpy.errstate", "change numpy's error handling inside `with np.errstate(...):` rather "
                       "than with np.seterr(...), or put the old state back in a finaliser "
                       "(`old = np.seterr(...)`, then `np.seterr(**old)`)"),
    ("numpy.errcall", "set the error callback inside `with np.errstate(call=...):` rather "
                      "than with np.seterrcall(...)"),
    ("numpy.printoptions:", "change print options inside `with np.printoptions({name}=...):` "
                            "rather than with np.set_printoptions(...)"),
    ("pandas.option:", "change the option inside `with pd.option_context({name!r}, ...):` "
                       "rather than with pd.set_option(...)"),
    ("matplotlib.rcParams:", "change the setting inside `with matplotlib.rc_context("
                             "{{{name!r}: ...}}):` (or use monkeypatch.setitem(matplotlib."
                             "rcParams, {name!r}, ...))"),
    ("matplotlib.backend", "choose the backend once for the whole suite (MPLBACKEND, or "
                           "matplotlib.use(...) in conftest.py); a test that switches it must "
                           "switch back in a finaliser (plt.switch_backend(old))"),
    ("matplotlib.figures", "close the figures a test opens: plt.close(fig) in the test or a "
                           "finaliser; an autouse fixture calling plt.close('all') covers a "
                           "whole suite"),
    ("sklearn.config:", "change the setting inside `with sklearn.config_context({name}=...):` "
                        "rather than with sklearn.set_config(...)"),
)


def hint_for(key: str) -> str | None:
    for prefix, text in HINTS:
        if key.startswith(prefix):
            return text.format(name=key[len(prefix):]) if prefix.endswith(":") else text
    return None


class SciStackProbe(DeferredProbe["SciState"]):
    """A shell that costs one ``sys.modules`` lookup per token until numpy is imported."""

    name = "scistack"
    severity = Severity.HIGH
    restorable = True
    trigger = "numpy"
    idle = NO_NUMPY

    def build(self, own_modules: set[str], ctx: ProbeContext | None) -> SciState:
        watch, libs, mpl = (import_own(m, own_modules) for m in _MODULES)
        state: SciState = watch.SciState(
            (libs.NumpyWatcher, libs.PandasWatcher, mpl.RcParamsWatcher,
             mpl.FiguresWatcher, libs.SklearnWatcher), ctx.notes if ctx is not None else {})
        return state

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if after is None:
            return Severity.LOW  # put back to the default (all figures closed)
        if key == "matplotlib.backend":
            return Severity.MEDIUM  # switched by a test (what pyplot picks itself is no key)
        # The rest, pyplot's open figures included: a figure left open is what plt.gca(),
        # plt.gcf() and the next figure's number give every later test.
        return self.severity

    def hint(self, key: str, change: str) -> str | None:
        return hint_for(key)
