"""The ``attributes`` probe's token: all watched objects of all tracked modules, flattened.

Readings are few C-level loops (see :mod:`._dictwatch` for the version tags); each reading
keeps the module that owns its object, so ``read`` re-describes only the modules that moved.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from copy import copy as _copy  # captured: a test may patch copy.copy
from itertools import chain, compress, islice, repeat
from operator import is_, ne
from typing import TYPE_CHECKING, Any, Protocol

from statesnap.probes._dictwatch import (
    VERSION_OFFSET,
    Versions,
    portable_reader,
    probe_support,
    versions,
    words_at,
)
from statesnap.probes._listwatch import contents_reader
from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes._same import binds_as_described
from statesnap.probes.attributes._subclasswatch import slot_places, slots
from statesnap.probes.attributes.scan import MODULE_PART

if TYPE_CHECKING:
    from statesnap.probes.attributes.scan import Tracked

    #: A module and one of its parts (:data:`MODULE_PART`, or a key of ``Tracked.parts``).
    Owner = tuple[Tracked, str]

_MISSING = object()
#: Readings of :class:`Bindings`: one number per "binds what it was described with", never
#: reused by another Bindings (a rebuilt watch's reading must not equal an old one's).
_GENERATIONS = itertools.count()


def _seq_sig(seq: Any) -> tuple[int, int]:
    n = len(seq)
    items = seq if n <= D.HUGE else chain(islice(seq, D.SAMPLE), _tail(seq))
    return n, sum(map(id, items))


def _tail(seq: Any) -> Any:
    try:
        return islice(reversed(seq), D.SAMPLE)
    except TypeError:  # sets have no end to sample from
        return ()


def _cache_size(func: Any) -> int:
    try:
        return int(func.cache_info().currsize)
    except Exception:
        return -1


def watched_objects(t: Tracked) -> tuple[list[Any], ...]:
    """What ``t``'s parts add to a watch, each list followed by the owners of its objects:
    dicts, mapping proxies, sequences, cache dicts, slow caches, classes.

    Kept on ``t`` with the parts dict it was gathered from; describing a module makes a new
    parts dict, so a watch rebuilt for another module's sake reuses this one's.
    """
    if t.watched is not None and t.watched[0] is t.parts:
        return t.watched[1]
    lists: tuple[list[Any], ...] = tuple([] for _ in range(12))
    dicts, own_dicts, proxies, own_proxies, seqs, own_seqs = lists[:6]
    cdicts, own_cdicts, slow, own_slow, classes, own_classes = lists[6:]
    for key, part in t.parts.items():
        if part.cls is None and not (part.dicts or part.seqs or part.caches):
            continue  # most parts (functions, scalars) watch nothing
        owner = (t, key)
        if part.cls is not None:
            classes.append(part.cls[1])
            own_classes.append(owner)
        for m in ((part.cls[2],) if part.cls is not None else ()) + part.dicts:
            if isinstance(m, dict):
                dicts.append(m)
                own_dicts.append(owner)
            else:
                proxies.append(m)
                own_proxies.append(owner)
        for seq in part.seqs:
            seqs.append(seq)
            own_seqs.append(owner)
        for _, func, d in part.caches:
            if d is not None:
                cdicts.append(d)
                own_cdicts.append(owner)
            else:
                slow.append(func)
                own_slow.append(owner)
    t.watched = (t.parts, lists)
    return lists


#: ``id(old list) -> {(module's Tracked, part key): the list swapped in for it there}``.
Swaps = dict[int, dict[tuple[Any, str], Any]]


def _swap(objs: list[Any], owners: list[Owner], new_of: Swaps) -> list[Any]:
    """``objs`` (``objs`` itself where none is swapped) with each list its owning part
    swapped (``Tracked.swaps``) replaced; one that another part watches too stays there (a
    module global that a reset copied)."""
    hits = list(compress(range(len(objs)), map(new_of.__contains__, map(id, objs))))
    if not hits:
        return objs
    out = list(objs)
    for i in hits:
        new = new_of[id(objs[i])].get(owners[i])
        if new is not None:
            out[i] = new
    return out


def swap_watched(t: Tracked, new_of: Swaps) -> None:
    """What :func:`watched_objects` keeps for ``t``, after its parts' lists were replaced by
    equal copies (``Tracked.swaps``): those swapped in, for the parts they are in now."""
    if t.watched is None:
        return
    lists = list(t.watched[1])
    lists[4] = _swap(lists[4], lists[5], new_of)  # the sequences and their owners
    t.watched = (t.parts, tuple(lists))


class Bindings:
    """Module namespaces watched by what they bind rather than by their version tag.

    A namespace's tag moves on every store, even of the object already bound: click's test
    runner swaps four modules' functions and puts them back around every invocation, and each
    move made a read of the probe (a few hundred on click's suite).  For the modules found
    written to that way (:meth:`Tracked.rewritten`), the token's reading is a number that
    stands for "every namespace binds every described name to the object it was described
    with" (checked again only when one of their tags moved since it last held), and the raw
    tags while one does not (never equal to any earlier reading: tags only grow).
    """

    def __init__(self, mods: list[Tracked]) -> None:
        self.mods = mods
        self.versions = versions([t.ns for t in mods])
        self._tags = self.versions.read
        self._held: object = None
        self._gen = next(_GENERATIONS)

    def renew(self) -> None:
        """One of the modules was described again: a reading made before stands for other
        bindings."""
        self._gen = next(_GENERATIONS)
        self._held = None

    def token(self) -> object:
        tags = self._tags()
        if tags != self._held:
            if not all(map(binds_as_described, self.mods)):
                return tags
            self._held = tags
        return self._gen

    def tag_items(self) -> tuple[Any, ...]:
        """Each namespace's raw tag, in :attr:`mods` order (for :meth:`Watch.readings`)."""
        values = self.versions.per_item(self._tags())
        return tuple(values[: len(self.mods)])


class Carried(Protocol):
    """What a new watch carries the last readings over from: a :class:`Watch`, or both halves
    of a split one (``_splitwatch.SplitWatch``), their segments concatenated."""

    @property
    def segments(self) -> list[list[Any]]: ...

    @property
    def last(self) -> tuple[Any, ...] | None: ...

    def last_tag_items(self) -> tuple[Any, ...]: ...


class Watch:
    """All tracked modules' watched objects, flattened for cheap reads.

    Readings come in segments: version tags (one per distinct dict, address order), mapping
    proxies, lengths of small sequences, item-id sums of the non-empty ones, signatures of
    huge sequences, cache-dict lengths, slow cache sizes, classes' subclass slots.  Each
    segment has its objects and their owning modules, so a changed reading names the module
    to describe again.
    """

    def __init__(self, mods: list[Tracked], previous: Carried | None = None,
                 same_as: Watch | None = None) -> None:
        tagged: list[dict[Any, Any]] = []
        proxies: list[Mapping[str, Any]] = []
        self.small: list[Any] = []
        self.huge: list[Any] = []
        self.cache_dicts: list[dict[Any, Any]] = []
        self.slow_caches: list[Any] = []
        classes: list[type] = []
        own: dict[str, list[Owner]] = {k: [] for k in "tpshcfkb"}
        by_bindings: list[Tracked] = []
        seqs: list[Any] = []
        own_seqs: list[Owner] = []
        for t in mods:
            t.rewatch = False
            if t.by_bindings:
                by_bindings.append(t)
                own["b"].append((t, MODULE_PART))
            else:
                tagged.append(t.ns)
                own["t"].append((t, MODULE_PART))
            (t_dicts, t_own_dicts, t_proxies, t_own_proxies, t_seqs, t_own_seqs, t_cdicts,
             t_own_cdicts, t_slow, t_own_slow, t_classes, t_own_classes) = watched_objects(t)
            tagged += t_dicts
            own["t"] += t_own_dicts
            proxies += t_proxies
            own["p"] += t_own_proxies
            seqs += t_seqs
            own_seqs += t_own_seqs
            self.cache_dicts += t_cdicts
            own["c"] += t_own_cdicts
            self.slow_caches += t_slow
            own["f"] += t_own_slow
            classes += t_classes
            own["k"] += t_own_classes
        for seq, owner in zip(seqs, own_seqs, strict=True):
            big = len(seq) > D.HUGE
            (self.huge if big else self.small).append(seq)
            own["h" if big else "s"].append(owner)
        # Item ids are summed over non-empty sequences only (an empty registry is the common
        # case and costs a step of the chain per list); one that fills up changes its length,
        # and read() then rebuilds the watch with it.
        self._filled = tuple(map(bool, self.small))
        self.nonempty = list(compress(self.small, self._filled))
        self._item_ids: Callable[[], object] = contents_reader(self.nonempty)
        self._ntags = len(tagged)
        #: Each class's subclass slot: the first subclass made or the last one freed.  Where
        #: both can be read, in the same call as the dicts' tags (one word more per class).
        self.classes = classes
        self._versions: Versions
        self._slots: Versions | None
        self._slot_reader: Callable[[], object]
        self._proxies: Callable[[], object]
        if same_as is not None and same_as.reads(tagged, proxies, classes):
            # The very same dicts, proxies and classes (structlog's reset: only the processor
            # list is new): readers over them read the same words, laid out once.
            self._versions, self._slots = same_as._versions, same_as._slots
            self._slot_reader, self._proxies = same_as._slot_reader, same_as._proxies
        else:
            places = slot_places(classes) if probe_support() and tagged else None
            if places is not None:
                self._versions = words_at([(d, VERSION_OFFSET) for d in tagged] + places)
                self._slots = None
                self._slot_reader = tuple
            else:
                self._versions = versions(tagged)
                self._slots = slots(classes)
                self._slot_reader = self._slots.read
            self._proxies = portable_reader(proxies)
        self._tags: Callable[[], object] = self._versions.read
        #: The namespaces watched by what they bind; read in the same segment layout as the
        #: others (their raw tags), but for the token through :meth:`Bindings.token`.
        self.bindings = Bindings(by_bindings)
        #: The slots' reading in the tokens, with the bindings' where there are any (one call
        #: either way: a token is read three times a test).
        self._slot_token: Callable[[], object] = self._slot_reader
        if by_bindings:
            slot_reader, bindings_token = self._slot_reader, self.bindings.token
            self._slot_token = (bindings_token if slot_reader is tuple
                                else lambda: (slot_reader(), bindings_token()))
        #: Per segment of :meth:`readings`: the objects read, and the modules owning them.
        #: The tag segment is listed per dict as given (see :meth:`_tag_items`).
        self.segments: list[list[Any]] = [tagged, proxies, self.small, self.nonempty,
                                          self.huge, self.cache_dicts, self.slow_caches,
                                          classes, [t.ns for t in by_bindings]]
        self.owners: list[list[Owner]] = [
            own["t"], own["p"], own["s"], list(compress(own["s"], self._filled)), own["h"],
            own["c"], own["f"], own["k"], own["b"]]
        #: Readings when the owners were last described (None: not known), and, for a watch
        #: rebuilt since, the last tag of each dict (the raw tag segment belongs to a layout).
        self.last: tuple[Any, ...] | None = None
        self._last_tag_items: tuple[Any, ...] | None = None
        if previous is not None and previous.last is not None:
            self._carry(previous)

    def swapped(self, new_of: Swaps) -> Watch:
        """This watch with the lists in ``new_of`` swapped in for the parts that swapped them,
        each of the same length and the very same items (``Tracked.swaps``): what it reads of
        them is the same, so its last readings stand; only the reader of item identities is
        made again."""
        small = _swap(self.small, self.owners[2], new_of)
        huge = _swap(self.huge, self.owners[4], new_of)
        if small is self.small and huge is self.huge:
            return self
        w = _copy(self)
        w.small, w.huge = small, huge
        w.nonempty = list(compress(w.small, self._filled))
        w._item_ids = contents_reader(w.nonempty)
        w.segments = [*self.segments[:2], w.small, w.nonempty, w.huge, *self.segments[5:]]
        return w

    def reads(self, tagged: list[Any], proxies: list[Any], classes: list[type]) -> bool:
        """Whether this watch's dicts, proxies and classes are these, in this order."""
        return (_same(tagged, self.segments[0]) and _same(proxies, self.segments[1])
                and _same(classes, self.classes))

    def _tag_items(self, raw: object) -> tuple[Any, ...]:
        values = self._versions.per_item(raw)  # type: ignore[arg-type]
        return tuple(values[: self._ntags])

    def _carry(self, previous: Carried) -> None:
        # Same object, same last reading; new objects read as "unknown" (their owner dirty).
        assert previous.last is not None
        old = list(previous.last)
        old[0] = previous.last_tag_items()
        last: list[Any] = []
        for k, (objs, values) in enumerate(zip(previous.segments, old, strict=True)):
            by_id = dict(zip(map(id, objs), values, strict=False))
            last.append(tuple(map(by_id.get, map(id, self.segments[k]), repeat(_MISSING))))
        self._last_tag_items = last[0]
        last[0] = None  # never equal to a raw reading: compared per dict instead
        self.last = tuple(last)

    def last_tag_items(self) -> tuple[Any, ...]:
        assert self.last is not None
        if self._last_tag_items is not None:
            return self._last_tag_items
        return self._tag_items(self.last[0])

    def remember(self, now: tuple[Any, ...]) -> None:
        """``now`` is what the owners were described from."""
        self.last = now
        self._last_tag_items = None

    def dirty(self, now: tuple[Any, ...]) -> list[tuple[Owner, Any]]:
        """The parts of modules owning an object whose reading moved since :attr:`last`,
        each with that object (a part owning several moved objects comes once per object)."""
        last = self.last
        if last is None:
            return []
        out: list[tuple[Owner, Any]] = []
        for k, (a, b) in enumerate(zip(now, last, strict=True)):
            if a == b:
                continue  # one C-level comparison for the usual case
            if k == 0:
                a, b = self._tag_items(a), self.last_tag_items()
            pairs = zip(self.owners[k], self.segments[k], strict=True)
            out += compress(pairs, map(ne, a, b))
        return out

    def filled_moved(self) -> bool:
        """Whether a watched sequence became empty or non-empty since the watch was built."""
        return tuple(map(bool, self.small)) != self._filled

    def token(self) -> object:
        return (
            self._tags(),
            self._proxies(),
            tuple(map(len, self.small)),
            self._item_ids(),
            tuple(map(_seq_sig, self.huge)),
            tuple(map(len, self.cache_dicts)),
            tuple(map(_cache_size, self.slow_caches)),
            self._slot_token(),
        )

    def light(self) -> object:
        # Every dict's tag (rebinding, class attributes, dict containers), but only the total
        # length of sequences and caches: an append or a cache fill shows, a same-length
        # change of a list waits for the full token.
        return (self._tags(), sum(map(len, self.small)), sum(map(len, self.huge)),
                sum(map(len, self.cache_dicts)), tuple(map(_cache_size, self.slow_caches)),
                self._slot_token())

    def _slot_items(self, tags: object) -> tuple[Any, ...]:
        # Per class as listed (a raw reading is in address order).
        if self._slots is None:
            values = self._versions.per_item(tags)  # type: ignore[arg-type]
            return tuple(values[self._ntags: self._ntags + len(self.classes)])
        values = self._slots.per_item(self._slot_reader())  # type: ignore[arg-type]
        return tuple(values[: len(self.classes)])

    def readings(self) -> tuple[Any, ...]:
        """One segment of readings per entry of :attr:`segments` (C-level loops only)."""
        tags = self._tags()
        return (
            tags,
            self._proxies(),
            tuple(map(len, self.small)),
            tuple(map(sum, map(_ID_MAP, self.nonempty))),
            tuple(map(_seq_sig, self.huge)),
            tuple(map(len, self.cache_dicts)),
            tuple(map(_cache_size, self.slow_caches)),
            self._slot_items(tags),
            self.bindings.tag_items() if self.bindings.mods else (),
        )


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))


#: ``_ID_MAP(seq)`` is ``map(id, seq)``, built without a Python frame.
_ID_MAP = functools.partial(map, id)
