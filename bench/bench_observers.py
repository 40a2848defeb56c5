"""Why features are called through a plain list on the run state, not a pluggy hook.

Each containment feature that acts around every test is called twice per test (before the
test, after its final snapshot).  This times both ways of making those calls, with two
observers (guards and restore mode, the usual most): the run state's list of observers, and
a pluggy hook with two implementations, in the same process and rounds.

    .venv/bin/python bench/bench_observers.py
"""

from __future__ import annotations

import timeit

import pluggy

SPEC = pluggy.HookspecMarker("statesnap_bench")
IMPL = pluggy.HookimplMarker("statesnap_bench")


class _Spec:
    @SPEC
    def before_test(self, item: object) -> None:
        """One per-test callback."""


class _Observer:
    @IMPL
    def before_test(self, item: object) -> None:
        return None


def main() -> None:
    pm = pluggy.PluginManager("statesnap_bench")
    pm.add_hookspecs(_Spec)
    observers = [_Observer(), _Observer()]
    for obs in observers:
        pm.register(obs)

    def via_list() -> None:
        for obs in observers:
            obs.before_test(1)

    def via_pluggy() -> None:
        pm.hook.before_test(item=1)

    n = 100_000
    best = {f.__name__: min(timeit.repeat(f, number=n, repeat=7)) / n
            for f in (via_list, via_pluggy)}
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1e9:.0f} ns per call (2 observers)")
    print(f"pluggy / list: {best['via_pluggy'] / best['via_list']:.1f}x; two calls per test "
          f"cost {2 * (best['via_pluggy'] - best['via_list']) * 1e6:.1f} us more through "
          "pluggy")


if __name__ == "__main__":
    main()
