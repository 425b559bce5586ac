"""Simulations kept by scenario, with everything the views built from them, in bounded memory.

The bound counts what is kept (each Dataset's arrays, and the arrays each view holds beside
them, every memory block once) and the work in flight: a simulation starts only when the memory
it will take (:func:`powermodel.simulate.memory_estimate`) fits beside the work in flight and
the runs still in use, evicting the least recently used kept runs to make room (with
``simulations`` above 1, a run waits until the others leave it room), and so does the building
of a view (figures, rule checks: :data:`VIEW_BYTES_PER_STEP`). A view's Python objects (a
figure's layout, a rule check's tables) are not counted: under 1 MB a view. At most
``simulations`` run at once, the others wait in a first-come queue of bounded length whose
positions the page shows; at most :data:`VIEW_BUILDS` views are built at once. The server's
memory as a whole, measured under load by ``bench/load_dashboard.py``, stays within 1.25 times
the bound and the idle server's.
"""

from __future__ import annotations

import gc
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import allocator
from powermodel.errors import PowerModelError
from powermodel.scenario import Scenario
from powermodel.simulate import held_arrays, memory_estimate, memory_fix, simulate

DEFAULT_BYTES = 3 * 2**30  # a 54-day 1-s run peaks at 1.5 GB simulating, its views at 0.6 GB
SCENARIOS_KEPT = 1000
SIMULATIONS = 1  # at once: on a 2-core machine a second one only slows the first
QUEUE = 32  # simulations waiting; beyond, a request is told the server is busy
VIEW_BUILDS = 2  # views built at once (the other requests wait, or answer from the cache)
SLOT_WAIT = 30.0  # s a view build waits for a slot before the request is told to come back
# Peak memory of building a view, per step of its run [B]: measured with tracemalloc on 7 days
# at 1 s, the thermal view 95 B and the grid view with five rules 93 B (the largest), rounded up
VIEW_BYTES_PER_STEP = 128
# Fitted traces kept (their figure and arrays, outside the bound above): a trace the upload
# limit admits has at most ~150,000 samples, a few MB of arrays with its figure
FITS_KEPT = 8
OBJECT_BYTES = 90  # B: a hover text of about 40 characters (CPython's str: 49 B + its length)


class Busy(PowerModelError):
    """The server has more simulations waiting than it queues: try again shortly."""


def scenario_key(scenario: Scenario) -> str:
    """The fingerprint of a scenario (SHA-256 of its JSON): equal scenarios, equal keys, and
    no two scenarios one key (download links and shared caches are looked up by it)."""
    return hashlib.sha256(scenario.to_json().encode()).hexdigest()


@dataclass
class Entry:
    """One simulated scenario and what the views built from it (figures, rule checks ...)."""

    scenario: Scenario
    ds: xr.Dataset
    views: dict[str, Any] = field(default_factory=dict)
    nbytes: int = 0
    view_locks: dict[str, threading.Lock] = field(default_factory=dict)  # one build a view
    buffers: set[int] = field(default_factory=set)  # ids of the arrays counted in nbytes


class SimulationCache:
    """Least recently used simulations, up to ``max_bytes`` of Datasets, view arrays and work
    in flight.

    Safe to share between the server's threads: a scenario asked for by several callbacks at
    once is simulated once, the others wait for it.

    Parameters
    ----------
    max_bytes
        Bound of the memory kept and reserved for work in flight. [B]
    simulations
        Simulations run at once.
    queue
        Simulations that may wait for a turn; more are refused with :class:`Busy`.
    """

    def __init__(
        self, max_bytes: int = DEFAULT_BYTES, simulations: int = SIMULATIONS, queue: int = QUEUE
    ) -> None:
        self.max_bytes = max_bytes
        self.simulations = simulations
        self.queue = queue
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._simulating: dict[str, Future] = {}  # key -> the entry its simulation gives
        self._turns = threading.Condition(self._lock)
        self._waiting: list[str] = []  # keys waiting for a turn, first come first
        self._running = 0
        self._reserved = 0  # bytes held for simulations and view builds in flight
        self._dropped: list[weakref.ref] = []  # runs dropped while a request still held them
        self._view_slots = threading.BoundedSemaphore(VIEW_BUILDS)
        self._in_build = threading.local()  # set while this thread builds a view
        # scenarios seen, by key, for download links and callbacks: kB each, the latest kept
        self.scenarios: OrderedDict[str, Scenario] = OrderedDict()

    def remember(self, scenario: Scenario) -> str:
        """Register a scenario (for download links and callbacks) and return its key."""
        key = scenario_key(scenario)
        with self._lock:
            self.scenarios[key] = scenario
            self.scenarios.move_to_end(key)
            if len(self.scenarios) > SCENARIOS_KEPT:
                self.scenarios.popitem(last=False)
        return key

    def admit(self, scenario: Scenario) -> int:
        """The memory a scenario's run will take [B], refused when more than the bound.

        Raises
        ------
        PowerModelError
            Naming the estimate, the bound and what to change.
        """
        need = memory_estimate(scenario)
        if need > self.max_bytes:
            raise PowerModelError(
                f"this run needs about {_size(need)}, more than the dashboard keeps "
                f"({_size(self.max_bytes)}): {memory_fix(scenario)}"
            )
        return need

    def get(self, scenario: Scenario) -> Entry:
        """The entry of ``scenario``, simulating it if it is not kept; a caller that finds its
        simulation under way waits for the same result.

        Raises
        ------
        Busy
            More simulations wait than the queue holds.
        PowerModelError
            The scenario does not simulate, or alone needs more memory than the bound.
        """
        key = self.remember(scenario)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.scenario == scenario:
                self._entries.move_to_end(key)
                return entry
            result = self._simulating.get(key)
            mine = result is None
            if mine:
                result = self._simulating[key] = Future()
        if not mine:
            return result.result()
        try:
            with self._turn(key, self.admit(scenario)) as keep:
                ds = simulate(scenario)
                counted: set[int] = set()
                nbytes = _arrays_bytes(held_arrays(ds), counted)  # lazy ones unexpanded
                entry = keep(Entry(scenario, ds, nbytes=nbytes, buffers=counted))
            result.set_result(entry)
            return entry
        except BaseException as exc:
            result.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._simulating.pop(key, None)

    def position(self, scenario: Scenario) -> int | None:
        """Where a scenario's simulation stands: its place in the queue (1 is next), 0 while it
        runs or when it is kept, None when nobody asked for it."""
        key = scenario_key(scenario)
        with self._lock:
            if key in self._waiting:
                return self._waiting.index(key) + 1
            return 0 if key in self._simulating or key in self._entries else None

    @contextmanager
    def _turn(self, key: str, need: int) -> Iterator[Callable[[Entry], Entry]]:
        """Wait for a turn to simulate, first come first served, with ``need`` bytes made free
        under the bound; yields ``keep(entry)``, which stores the run and gives its room back
        in one step (so that no other run's room is made by dropping it)."""
        with self._turns:
            if len(self._waiting) >= self.queue:
                raise Busy(
                    f"the server is busy ({len(self._waiting)} runs queued): try again in a minute"
                )
            self._waiting.append(key)
            try:
                self._turns.wait_for(
                    lambda: (
                        self._waiting[0] == key
                        and self._running < self.simulations
                        and (self._running == 0 or self._held() + need <= self.max_bytes)
                    )
                )
            finally:
                self._waiting.remove(key)
                self._turns.notify_all()
            self._running += 1
            self._reserved += need
            dropped = self._evict()
        release_memory(dropped)
        held = [need]

        def keep(entry: Entry) -> Entry:
            with self._turns:
                self._reserved -= held.pop()
                self._entries[key] = entry
                dropped = self._evict()
                self._turns.notify_all()  # what it held is now a kept run, which may go
            release_memory(dropped)
            return entry

        try:
            yield keep
        finally:
            with self._turns:
                self._running -= 1
                self._reserved -= sum(held)  # a run that failed gives its room back here
                self._turns.notify_all()

    def view(self, entry: Entry, name: str, build: Callable[[Entry], Any]) -> Any:
        """What ``build(entry)`` returns, built once per entry (a second caller waits for the
        first) and counted in its size: the arrays it holds that the Dataset does not.

        A build takes one of :data:`VIEW_BUILDS` slots, before the view's own lock (so that no
        thread waits for a slot while holding a lock another build needs), and holds room for
        its temporaries under the bound; a view built inside another's build (a figure's rule
        check) uses that build's slot.

        Raises
        ------
        Busy
            No slot came free within :data:`SLOT_WAIT`.
        """
        if name in entry.views:
            return entry.views[name]
        with self._view_slot(entry.ds.sizes["time"] * VIEW_BYTES_PER_STEP):
            with self._lock:
                lock = entry.view_locks.setdefault(name, threading.Lock())
            with lock:
                if name not in entry.views:
                    entry.views[name] = build(entry)
                    with self._lock:
                        entry.nbytes += _arrays_bytes(entry.views[name], entry.buffers)
                        dropped = self._evict()
                    release_memory(dropped)
        return entry.views[name]

    @contextmanager
    def _view_slot(self, need: int) -> Iterator[None]:
        if getattr(self._in_build, "active", False):
            yield  # nested in a build that holds a slot and its room already
            return
        if not self._view_slots.acquire(timeout=SLOT_WAIT):
            raise Busy("the server is busy building other views: try again shortly")
        with self._lock:
            self._reserved += need
            dropped = self._evict()
        release_memory(dropped)
        self._in_build.active = True
        try:
            yield
        finally:
            self._in_build.active = False
            with self._turns:
                self._reserved -= need
                self._turns.notify_all()  # a run waiting for room may start
            self._view_slots.release()

    @property
    def nbytes(self) -> int:
        """Bytes kept, held for work in flight, and of dropped runs still in use."""
        with self._lock:
            return self._total()

    def _total(self) -> int:
        return sum(e.nbytes for e in self._entries.values()) + self._held()

    def _held(self) -> int:
        """What no eviction frees: room held for work in flight, and runs dropped while a
        request still uses them."""
        self._dropped = [ref for ref in self._dropped if ref() is not None]
        return self._reserved + sum(getattr(ref(), "nbytes", 0) for ref in self._dropped)

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self) -> bool:
        """Drop the least recently used entries until what is kept, held for work in flight
        and held still by those using a dropped run fits the bound; the newest stays unless
        work in flight needs its room. Called under the lock; returns whether anything was
        dropped (whose memory the caller then releases)."""
        total = self._total()
        keep = 0 if self._reserved else 1
        dropped = False
        while total > self.max_bytes and len(self._entries) > keep:
            entry = self._entries.popitem(last=False)[1]
            self._dropped.append(weakref.ref(entry))
            del entry  # a callback still building its view, or a zoom, may hold it on
            total = self._total()
            dropped = True
        return dropped


class Kept:
    """The latest ``size`` values put, by key (the fitted traces); thread-safe."""

    def __init__(self, size: int = FITS_KEPT) -> None:
        self.size = size
        self._values: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        """The value kept under ``key``, or None (never put, or evicted since)."""
        with self._lock:
            if not isinstance(key, str) or key not in self._values:
                return None
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def __len__(self) -> int:
        return len(self._values)


def release_memory(dropped: bool = True) -> None:
    """Free dropped runs and hand their memory back to the system, outside the cache's lock:
    a run's figures hold reference cycles, which only the cyclic collector frees, and the
    allocator keeps freed heap pages unless trimmed."""
    if not dropped:
        return
    gc.collect()
    allocator.trim()


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**29 else f"{nbytes / 2**20:.0f} MiB"


def _owner(array: np.ndarray) -> np.ndarray:
    """The array that owns a view's memory."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _arrays_bytes(value: Any, counted: set[int], seen: set[int] | None = None) -> int:
    """Bytes of the arrays ``value`` holds (figures keep their full-resolution data), each
    memory block once: blocks in ``counted`` (the Dataset's) are not counted again, and the
    blocks found are added to it."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, pd.Index | pd.Series):
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        owner = _owner(value)
        if id(owner) in counted:
            return 0
        counted.add(id(owner))
        # an object array (hover texts) holds pointers: count the objects too, as short strings
        return owner.nbytes + (owner.size * OBJECT_BYTES if owner.dtype.kind == "O" else 0)
    if isinstance(value, dict):
        return sum(_arrays_bytes(v, counted, seen) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_arrays_bytes(v, counted, seen) for v in value)
    hf = getattr(value, "_hf_data", None)  # plotly-resampler: each trace's full data
    return _arrays_bytes(hf, counted, seen) if isinstance(hf, dict) else 0
