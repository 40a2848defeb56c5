"""``scistack``: the global settings of numpy, pandas, matplotlib and scikit-learn.

Read only once the library is imported (found in ``sys.modules``, never imported here).  Until
numpy is imported -- pandas, matplotlib and scikit-learn all import it -- a token is one
``sys.modules`` lookup; from then on the work is the watchers' (``_watch``, ``_libs``,
``_mpl``), loaded then.  Keys exist only while a setting differs from the library's default
(pyplot's open figures: while any is open).  Keys, hints and costs: docs/PROBES.md.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, import_own

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


class SciStackProbe(Probe):
    """A shell that costs one ``sys.modules`` lookup per token until numpy is imported."""

    name = "scistack"
    severity = Severity.HIGH
    restorable = True

    def __init__(self) -> None:
        self._state: SciState | None = None
        self._ctx: ProbeContext | None = None

    def _loaded(self) -> SciState:
        if self._state is None:
            # statesnap's own imports (left out of the modules probe), made when numpy first
            # appears, possibly in the middle of a test.
            own = self._ctx.own_modules if self._ctx is not None else set()
            watch, libs, mpl = (import_own(m, own) for m in _MODULES)
            notes = self._ctx.notes if self._ctx is not None else {}
            self._state = watch.SciState(
                (libs.NumpyWatcher, libs.PandasWatcher, mpl.RcParamsWatcher,
                 mpl.FiguresWatcher, libs.SklearnWatcher), notes)
        return self._state

    def setup(self, ctx: ProbeContext) -> None:
        self._ctx = ctx
        if "numpy" in sys.modules:
            self._loaded()

    def token(self) -> object:
        if self._state is None and "numpy" not in sys.modules:
            return NO_NUMPY
        return self._loaded().token()

    def read(self) -> ProbeMap:
        if self._state is None and "numpy" not in sys.modules:
            return {}
        return self._loaded().read()

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

    def save(self) -> object:
        if self._state is None and "numpy" not in sys.modules:
            return None
        return self._loaded().save()

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        if saved is None:
            return []
        return self._loaded().restore(saved, keys)
