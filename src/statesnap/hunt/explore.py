"""The hunt's orders: which to run, one at a time, and which to put off behind the proofs.

Runs the orders :mod:`statesnap.hunt.plan` builds from the record's leaks (each depends on what
the previous ones exposed, so they run in turn), within the hunt's budget, and keeps what each
exposed.  Once an order exposed a new failure, the orders that would start late or whose kind
has gone stale are put off until the proofs have run (a second round).  The orders and why:
docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

import random
import time
from typing import Any

from statesnap.hunt.options import HuntError, HuntOptions
from statesnap.hunt.plan import (
    HuntSuite,
    cleaners_last,
    group_keys,
    leaker_groups,
    leakers_first,
    low_groups,
    neighbour_orders,
    new_failures,
    random_order,
    reversed_order,
    touched,
    without_leakers,
)
from statesnap.hunt.runs import (
    CLEANERS_AFTER,
    CLEANERS_LAST,
    LEAKERS_FIRST,
    LOW_FIRST,
    NEIGHBOURS,
    RANDOM,
    REVERSED,
    WITHOUT_LEAKERS,
    Observed,
    Replays,
)
from statesnap.replay.runner import BudgetSpent

#: Tests changing the leaked keys above which no neighbour orders are run (n tests take n
#: orders of n tests: quadratic).
MAX_NEIGHBOURS = 40
#: Orders of LOW-severity leakers first, one per group (plan.low_groups) up to this many: a
#: suite whose tests each leave the RNG state differently would otherwise get one per test.
MAX_LOW_GROUPS = 4
#: Once an order has exposed a new failure, no order starts past this share of the budget:
#: the rest goes to proving what was found (a suite of many leaking groups on a slow machine
#: would otherwise spend it all exploring and prove nothing).  Such an order is deferred, not
#: dropped: it runs after the proofs while the budget lasts (a second round, under the same
#: rule for the budget left then).
EXPLORE_SHARE = 0.5
#: Once an order has exposed a new failure, an order of a kind whose last this many orders
#: exposed nothing new is deferred behind the proofs too: orders of one kind differ only in
#: which group leads (pykicad's twenty leakers-first orders all exposed the same 27 tests).
STALE_ORDERS = 3
#: Leakers-first orders run before the recorded order backwards, where there are more groups
#: than this.  One backwards run puts every polluter that followed its victim in the record
#: before it, which no single group does: behind dozens of groups (structlog: 58, from tests
#: each leaving one growing dict differently) it was never reached within the budget.
REVERSED_AFTER = 4


class Explorer:
    """The exploring rounds of one hunt: the orders it ran, what they exposed, what it left."""

    def __init__(self, suite: HuntSuite, replays: Replays, options: HuntOptions) -> None:
        self.suite = suite
        self.replays = replays
        self.options = options
        self.explored: list[Observed] = []
        self.skipped: list[str] = []
        self.seeds: list[int] = []
        #: Orders put off behind the proofs: ``{label: what it is, in words}``.
        self.deferred: dict[str, str] = {}
        self._deferring = True
        #: The exploring round: when it started, the seconds it may use, the failures that
        #: were known before it (the second round's rule counts only new ones).
        self._round_from: float | None = None  # None: the hunt's own start
        self._round_span = options.budget
        #: The first random order's seed, picked once (a second round runs the same ones).
        self._base_seed: int | None = None
        self._known: set[str] = set()
        #: Orders run in a row, by kind, that exposed no failure not seen before.
        self._stale: dict[str, int] = {}
        self._ran: set[str] = set()

    # -- 1-3: the orders -------------------------------------------------------------------
    def explore(self) -> None:
        suite = self.suite
        groups = leaker_groups(suite)
        for i, group in enumerate(groups, start=1):
            self._explore(leakers_first(suite, group), f"leakers-first-{i}", LEAKERS_FIRST,
                          f"{len(group)} leaking test(s) first (group {i}/{len(groups)})",
                          group=i)
            if i == REVERSED_AFTER < len(groups):
                self._explore_reversed()
        if groups:
            # Leaking victims found so far run at its end: that is their check too.
            found = [n for o in self.explored for n in o.run.new_failures]
            order = without_leakers(suite, then=[n for n in suite.order() if n in found])
            self._explore(order, "without-leakers", WITHOUT_LEAKERS,
                          f"{len(order)} test(s) without the leaking ones")
        for i, group in enumerate(groups, start=1):
            self._explore(leakers_first(suite, group, rest_reversed=True),
                          f"leakers-first-rest-reversed-{i}", CLEANERS_AFTER,
                          f"{len(group)} leaking test(s) first, the rest backwards "
                          f"(group {i}/{len(groups)})", group=i)
        overwriters: list[str] = []
        for i, group in enumerate(groups, start=1):
            cleaners = self._cleaners(group, i)
            if cleaners:
                overwriters += [*group, *cleaners]
                self._explore(cleaners_last(suite, group, cleaners),
                              f"leakers-first-cleaners-last-{i}", CLEANERS_LAST,
                              f"{len(group)} leaking test(s) first, {len(cleaners)} test(s) "
                              f"that reset their state last (group {i}/{len(groups)})",
                              group=i)
        lows = low_groups(suite)
        for i, low in enumerate(lows[:MAX_LOW_GROUPS], start=1):
            label = "low-leakers-first" if len(lows) == 1 else f"low-leakers-first-{i}"
            of = "" if len(lows) == 1 else f" (group {i}/{len(lows)})"
            self._explore(leakers_first(suite, low), label, LOW_FIRST,
                          f"{len(low)} test(s) with LOW-severity leaks first{of}")
        if len(lows) > MAX_LOW_GROUPS and self._round_from is None:  # said in the first round
            self.skipped.append(
                f"low-leakers-first-{MAX_LOW_GROUPS + 1} to -{len(lows)} (LOW-severity "
                f"leakers that leave a key another leaves differently; --all-leaks groups "
                "them with the others)")
        self._explore_reversed()  # run once: a second call finds its label already run
        self._neighbours(overwriters)
        if self._base_seed is None and self.options.random_orders:
            self._base_seed = self.options.seed
            if self._base_seed is None:
                self._base_seed = random.SystemRandom().randrange(2**32)
        base = self._base_seed
        for k in range(self.options.random_orders):
            assert base is not None
            seed = (base + k) % 2**32
            if self._explore(random_order(suite, seed), f"random-{seed}", RANDOM,
                             f"random order, seed {seed}", seed=seed):
                self.seeds.append(seed)

    def _explore_reversed(self) -> None:
        if len(self.suite.tests) > 1:
            # Even where no test leaked anything seen: a session fixture's object changed in
            # place is state no probe reaches, and backwards every polluter that followed its
            # victim runs before it.
            self._explore(reversed_order(self.suite), "reversed", REVERSED,
                          "the recorded order backwards")

    def _neighbours(self, overwriters: list[str]) -> None:
        """The tests that change the leaked keys, each right before each other one once.

        Only where at least three do (two are covered by the orders so far) and at most
        :data:`MAX_NEIGHBOURS` (the orders grow as the square of their number)."""
        wanted = set(overwriters)
        tests = [n for n in self.suite.order() if n in wanted]
        if len(tests) < 3:
            return
        if len(tests) > MAX_NEIGHBOURS:
            self._skip(f"neighbour orders ({len(tests)} tests change the leaked state again, "
                       f"more than {MAX_NEIGHBOURS})")
            return
        orders = neighbour_orders(tests)
        for i, order in enumerate(orders, start=1):
            before = len(self.skipped)
            self._explore(order, f"neighbours-{i}", NEIGHBOURS,
                          f"{len(order)} tests that change the same state, each right "
                          f"before another (order {i}/{len(orders)})")
            if len(self.skipped) > before:
                self.skipped[-1] = f"neighbours-{i} to -{len(orders)} ({len(order)} tests each)"
                return
        put_off = [f"neighbours-{i}" for i in range(1, len(orders) + 1)
                   if f"neighbours-{i}" in self.deferred]
        if len(put_off) > 1:
            # One line for the lot, as when the budget cuts them.
            for label in put_off:
                del self.deferred[label]
            self.deferred[put_off[0]] = (f"{put_off[0]} to -{put_off[-1].rsplit('-', 1)[1]} "
                                         f"({len(tests)} tests each)")

    def _cleaners(self, group: list[str], number: int) -> list[str]:
        """Tests that changed a key of the group's leaks after the group's leakers ran first
        (in its leakers-first runs): each may have reset the state before a victim."""
        keys = group_keys(self.suite, group)
        found: list[str] = []
        for obs in self.explored:
            child = obs.child() if obs.run.group == number else None
            if child is not None and obs.run.kind in (LEAKERS_FIRST, CLEANERS_AFTER):
                found += touched(child.tests, keys, skip=group)
        return list(dict.fromkeys(found))

    def _explore(self, order: list[str], label: str, kind: str, message: str,
                 **meta: Any) -> bool:
        """Run one hunt order; False when the budget left no time for it (or, once an order
        exposed a new failure, :data:`EXPLORE_SHARE` of it is spent).

        An extra order (not the first two kinds, not a random one asked for) that equals
        one already run is not run again."""
        if not order or label in self._ran:
            return False  # the second round runs only what the first one put off
        if kind in (CLEANERS_AFTER, CLEANERS_LAST, LOW_FIRST, REVERSED, NEIGHBOURS) and any(
                o.order == order for o in self.explored):
            return False
        if kind != WITHOUT_LEAKERS and self._exposed():
            start = self.replays.started if self._round_from is None else self._round_from
            late = time.monotonic() - start > EXPLORE_SHARE * self._round_span
            if self._deferring and (late or self._stale.get(kind, 0) >= STALE_ORDERS):
                self.deferred[label] = f"{label} ({len(order)} tests)"
                return False
            if late:
                self.deferred.pop(label, None)
                self._skip(f"{label} ({len(order)} tests; the rest of the budget proves what "
                           "the orders found)")
                return False
        self.deferred.pop(label, None)
        try:
            obs = self.replays.run(order, label, kind, message, **meta)
        except BudgetSpent:
            self._skip(f"{label} ({len(order)} tests)")
            return False
        if obs.result.error is not None and not obs.result.outcomes:
            raise HuntError(f"the {label} run could not run: {obs.result.error} "
                            f"(log: {obs.run.log})")
        obs.run.new_failures = new_failures(self.suite, order, obs.result.outcomes)
        seen = {n for o in self.explored for n in o.run.new_failures}
        fresh = any(n not in seen for n in obs.run.new_failures)
        self._stale[kind] = 0 if fresh else self._stale.get(kind, 0) + 1
        self.explored.append(obs)
        self._ran.add(label)
        return True

    def _skip(self, line: str) -> None:
        # Once: the backwards order is tried early and again in its usual place.
        if line not in self.skipped:
            self.skipped.append(line)

    def _exposed(self) -> bool:
        """Whether an order of this round exposed a failure not known before it."""
        return any(n not in self._known for o in self.explored for n in o.run.new_failures)

    # -- the second round ------------------------------------------------------------------
    def second_round(self, known: set[str]) -> None:
        """Start the round after the proofs, on the budget left: the orders put off run now,
        none is put off again, and only failures not in ``known`` count as new."""
        self._deferring = False
        self._round_from, self._round_span = time.monotonic(), self.replays.left()
        self._known = known
        self.deferred = {}  # planned again from all that ran; what it cannot run, skipped

    def give_up_deferred(self) -> None:
        """The orders still put off had no budget left: listed with the skipped ones."""
        self.skipped += [f"{text}: put off behind the proofs, no budget left for it"
                         for text in self.deferred.values()]
        self.deferred = {}
