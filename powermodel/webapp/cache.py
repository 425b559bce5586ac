"""The dashboard's inputs (simulated runs, uploaded sweep results, fitted traces), with
everything the views built from them, in bounded memory and bounded time.

The bound counts what is kept (each input's arrays, a text array's strings among them, and the
arrays each view holds beside them, every memory block once) and the work in flight: a
simulation starts only when the memory it will take (:func:`powermodel.simulate.memory_estimate`)
fits beside the work in flight and the runs still in use, evicting the least recently used
inputs to make room (with ``simulations`` above 1, a run waits until the others leave it room),
and so does reading an upload (:data:`RESULTS_BYTES_PER_CELL`, :data:`FIT_BYTES`) and building a
view (figures and rule checks: :data:`VIEW_BYTES_PER_STEP`; a sweep's bands:
:data:`BANDS_BYTES_PER_RUN`). Work that alone needs more than the bound is refused with what it
needs. A view's Python objects (a figure's layout, a rule check's tables) are not counted: under
1 MB a view. At most ``simulations`` run at once, the others wait in a first-come queue of
bounded length whose positions the page shows. Views and uploads are built in
:data:`VIEW_BUILDS` slots for heavy work and :data:`CHEAP_BUILDS` more that only the cheap views
(the summary's measures, the power view) take, so that heavy builds never hold every slot; each
build has a deadline in proportion to its input (:func:`deadline_of`), past which it stops at
its next check (:mod:`powermodel.deadline`) and the request is told why. The server's memory as
a whole, measured under load by ``bench/load_dashboard.py``, stays within 1.25 times the bound
and the idle server's: at most 3.3 GiB against 4.1 GiB (a 3-GiB bound), with 20 users editing
and 8 asking for charts of 4 M-value results files on 2 cores.
"""

from __future__ import annotations

import gc
import hashlib
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from plotly.basedatatypes import BaseFigure

from powermodel import allocator, deadline
from powermodel.errors import PowerModelError
from powermodel.scenario import Scenario
from powermodel.simulate import held_arrays, memory_estimate, memory_fix, simulate

DEFAULT_BYTES = 3 * 2**30  # a 54-day 1-s run peaks at 1.5 GB simulating, its views at 0.6 GB
SCENARIOS_KEPT = 1000
SIMULATIONS = 1  # at once: on a 2-core machine a second one only slows the first
QUEUE = 32  # simulations waiting; beyond, a request is told the server is busy
VIEW_BUILDS = 2  # heavy views (and uploads) built at once: the others wait, or find it built
CHEAP_BUILDS = 1  # slots beside those that only cheap views take: one user's heavy views
# (grid rules, grid events, sweep bands, compare, mitigation) never make another's summary wait
SLOT_WAIT = 30.0  # s a build waits for a slot before the request is told to come back
# Peak memory of building a view, per step of its run [B]: measured with tracemalloc on 7 days
# at 1 s, the thermal view 95 B and the grid view with five rules 93 B (the largest), rounded up
VIEW_BYTES_PER_STEP = 128
# Peak of sweep.bands per run of the results [B]: tracemalloc measured 48 B on 2 M runs (10 x 10
# points x 19,900 seeds, every run drawn) and 33 B on 2 M runs of which 24,000 drawn
BANDS_BYTES_PER_RUN = 64
# Peak of reading a results file per value its header counts [B]: tracemalloc measured 12 B on
# three files of 4 M values (floats, and text errors decoded to str), 8 B of them kept
RESULTS_BYTES_PER_CELL = 16
# Peak of reading and fitting a trace [B]: tracemalloc measured 94-107 MB fitting nvidia-smi
# logs of 1.3-5.2 MB (35,000-141,000 rows), their reading 11 B per byte of the upload
FIT_BYTES = (128 * 2**20, 16)  # a fixed part, and per byte of the upload
# Peak of a fit's prediction (its fresh run, powermodel.fit_report.predict) per step [B]:
# tracemalloc measured 404 B a step more on 18,000 steps than on 4,500, rounded up
PREDICTION_BYTES_PER_STEP = 512
# A build's deadline: a floor, and per unit of its input [s]. Measured (two cores shared, the
# views of 7 days at 1 s): 0.5 s the power view, 1.0 s the grid view with five rules (1.6 us a
# step); sweep bands 0.3 s on 2 M runs; a fit 1.4-4.8 s; the grid-events view 2-4 s with 2 to
# 1,000 sags (1-ms close-up and its fit). Each rate is ten times the slowest seen or more.
DEADLINE_FLOOR = 20.0
SECONDS_PER_STEP = 2e-5
SECONDS_PER_RUN = 2e-6
SECONDS_PER_UPLOAD_BYTE = 1e-5
SECONDS_PER_DISTURBANCE = 0.05


class Busy(PowerModelError):
    """The server has more work waiting than it queues: try again shortly."""


def scenario_key(scenario: Scenario) -> str:
    """The fingerprint of a scenario (SHA-256 of its JSON): equal scenarios, equal keys, and
    no two scenarios one key (download links and shared caches are looked up by it)."""
    return hashlib.sha256(scenario.to_json().encode()).hexdigest()


@dataclass(frozen=True)
class Work:
    """What building something takes: room for its temporaries, a deadline, and how to say it.

    ``what`` names it ("the grid view"), ``size`` its input in words ("604,800 steps"), ``fix``
    what makes it smaller."""

    nbytes: int  # [B]
    seconds: float  # [s]
    size: str
    fix: str
    what: str = ""

    def past(self) -> str:
        """The message once its deadline has passed."""
        return f"{self.what} took over {self.seconds:.0f} s to build ({self.size}): {self.fix}"


def deadline_of(units: float, per_unit: float) -> float:
    """A build's deadline: :data:`DEADLINE_FLOOR` and ``per_unit`` for each unit of its
    input. [s]"""
    return DEADLINE_FLOOR + units * per_unit


def run_work(ds: xr.Dataset, scenario: Scenario) -> Work:
    """What a view of a run takes: :data:`VIEW_BYTES_PER_STEP` and :data:`SECONDS_PER_STEP`."""
    steps = ds.sizes["time"]
    return Work(
        steps * VIEW_BYTES_PER_STEP,
        deadline_of(steps, SECONDS_PER_STEP),
        f"{steps:,} steps",
        memory_fix(scenario),
    )


@dataclass
class Entry:
    """One input of the views (a simulated scenario, an uploaded sweep's results, a fitted
    trace: ``ds``) and what the views built from it (figures, rule checks, bands ...).

    ``scenario`` is the run's, None for an upload; ``work`` what one of its views takes (a
    run's by default)."""

    scenario: Scenario | None
    ds: Any
    views: dict[str, Any] = field(default_factory=dict)
    nbytes: int = 0
    building: dict[str, Future] = field(default_factory=dict)  # views being built, by name
    buffers: set[int] = field(default_factory=set)  # ids of the arrays counted in nbytes
    work: Work | None = None

    def __post_init__(self) -> None:
        if self.work is None and self.scenario is not None:
            self.work = run_work(self.ds, self.scenario)


class SimulationCache:
    """Least recently used inputs (simulated runs, uploads) with their views, up to
    ``max_bytes`` of what they hold and of the work in flight.

    Safe to share between the server's threads: an input asked for by several callbacks at
    once is built once (a scenario simulated once), the others wait for it.

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
        self._building: dict[str, Future] = {}  # key -> the entry its build gives
        self._turns = threading.Condition(self._lock)
        self._waiting: list[str] = []  # keys waiting for a turn, first come first
        self._running = 0
        self._reserved = 0  # bytes held for simulations and builds in flight
        self._dropped: list[weakref.ref] = []  # inputs dropped while a request still held them
        self._slots = threading.Condition()
        self._builds = [0, 0]  # builds under way: heavy, cheap
        self._in_build = threading.local()  # set while this thread builds
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

        def simulated() -> Entry:
            with self._turn(key, self.admit(scenario)) as keep:
                ds = simulate(scenario)
                counted: set[int] = set()
                nbytes = _arrays_bytes(held_arrays(ds), counted)  # lazy ones unexpanded
                return keep(Entry(scenario, ds, nbytes=nbytes, buffers=counted))

        return self._once(key, simulated, lambda entry: entry.scenario == scenario)

    def upload(self, key: str, build: Callable[[], tuple[Any, Work]], work: Work) -> Entry:
        """The entry of an upload: kept under ``key``, or what ``build()`` reads from it (the
        input, and what a view of it takes), built once (a caller that finds it under way
        waits for it) as a heavy view is built: in a slot, with ``work`` reserved and under
        its deadline; then kept, counted by what it holds.

        Raises
        ------
        Busy
            No slot came free within :data:`SLOT_WAIT`.
        PowerModelError
            The upload does not read; it needs more memory than the bound; past its deadline.
        """

        def read() -> Entry:
            self._refuse(work, 0)
            with self._view_slot(work, cheap=False) as keep:
                value, views = build()
                counted: set[int] = set()
                nbytes = _arrays_bytes(value, counted)
                return keep(key, Entry(None, value, nbytes=nbytes, buffers=counted, work=views))

        return self._once(key, read, lambda entry: entry.scenario is None)

    def find(self, key: Any) -> Entry | None:
        """The entry kept under ``key`` (an upload's), or None: never made, or evicted."""
        with self._lock:
            entry = self._entries.get(key) if isinstance(key, str) else None
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def _once(self, key: str, build: Callable[[], Entry], same: Callable[[Entry], bool]) -> Entry:
        """The entry kept under ``key`` if ``same`` holds for it, else ``build()``'s, built by
        the first caller while those who come meanwhile wait for it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and same(entry):
                self._entries.move_to_end(key)
                return entry
            result = self._building.get(key)
            mine = result is None
            if mine:
                result = self._building[key] = Future()
        if not mine:
            return result.result()
        return self._deliver(self._building, key, result, build)

    def _deliver(self, building: dict, key: str, built: Future, build: Callable[[], Any]) -> Any:
        """``build()``'s result, given to those waiting on ``built`` (its exception, if it
        raises), then ``key`` out of ``building``: the first caller's work, done once."""
        try:
            value = build()
        except BaseException as exc:
            built.set_exception(exc)
            raise
        else:
            built.set_result(value)
            return value
        finally:
            with self._lock:
                building.pop(key, None)

    def position(self, scenario: Scenario) -> int | None:
        """Where a scenario's simulation stands: its place in the queue (1 is next), 0 while it
        runs or when it is kept, None when nobody asked for it."""
        key = scenario_key(scenario)
        with self._lock:
            if key in self._waiting:
                return self._waiting.index(key) + 1
            return 0 if key in self._building or key in self._entries else None

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
        with self._reserving(need) as keep:
            try:
                yield lambda entry: keep(key, entry)
            finally:
                with self._turns:
                    self._running -= 1
                    self._turns.notify_all()

    @contextmanager
    def _reserving(self, need: int) -> Iterator[Callable[[str, Entry], Entry]]:
        """Hold ``need`` bytes under the bound (evicting to make room) while the block runs;
        yields ``keep(key, entry)``, which stores an entry and gives the room back in one
        step. What was not given back is at the block's end."""
        with self._turns:
            self._reserved += need
            dropped = self._evict()
        release_memory(dropped)
        held = [need]

        def keep(key: str, entry: Entry) -> Entry:
            return self._store(key, entry, freed=held.pop())

        try:
            yield keep
        finally:
            with self._turns:
                self._reserved -= sum(held)  # a build that failed gives its room back here
                self._turns.notify_all()  # a run waiting for room may start

    def view(
        self,
        entry: Entry,
        name: str,
        build: Callable[[Entry], Any],
        cheap: bool = False,
        work: Work | None = None,
    ) -> Any:
        """What ``build(entry)`` returns, built once per entry (a second caller waits for the
        first) and counted in its size: the arrays it holds that the input does not.

        A build takes a slot (a ``cheap`` one any free slot, another one of the
        :data:`VIEW_BUILDS` for heavy work); holds room for its temporaries under the bound;
        and must end within its deadline. A request for a view another request is building
        waits for that build's view (or its refusal) holding no slot, so that requests for one
        slow view never take the slots other views need. ``work`` says what it
        takes, by default what the entry says a view of it takes. A view built inside another's
        build (a figure's rule check) uses that build's slot, room and deadline.

        Raises
        ------
        Busy
            No slot came free within :data:`SLOT_WAIT`.
        PowerModelError
            Its temporaries and its input need more than the bound; past its deadline
            (:class:`powermodel.deadline.PastDeadline`).
        """
        if name in entry.views:
            return entry.views[name]
        work = work or entry.work
        if work is None:
            raise PowerModelError(f"{name}: an input without its views' work (a bug)")
        work = work if work.what else replace(work, what=f"the {name.partition(':')[0]} view")
        self._refuse(work, entry.nbytes)
        with self._lock:
            built = entry.building.get(name)
        if built is None:
            with self._view_slot(work, cheap):
                # registered only with a slot held: a build nested in another's (which holds
                # one) never waits for a request still waiting for a slot
                with self._lock:
                    if name in entry.views:
                        return entry.views[name]
                    built = entry.building.get(name)
                    mine = built is None
                    if mine:
                        built = entry.building[name] = Future()
                if mine:
                    kept = lambda: self._kept(entry, name, build(entry))  # noqa: E731
                    return self._deliver(entry.building, name, built, kept)
        return built.result()  # another request's build: its view, waited for with no slot

    def _kept(self, entry: Entry, name: str, view: Any) -> Any:
        """A view built, kept with its entry and counted in its size."""
        with self._lock:
            entry.views[name] = view
            entry.nbytes += _arrays_bytes(view, entry.buffers)
            dropped = self._evict()
        release_memory(dropped)
        return view

    def _refuse(self, work: Work, beside: int) -> None:
        """Refuse work whose temporaries, beside ``beside`` bytes of its input, the bound
        cannot hold."""
        if work.nbytes + beside > self.max_bytes:
            what = work.what[:1].upper() + work.what[1:]
            held = f" beside its input's {_size(beside)}" if beside else ""
            raise PowerModelError(
                f"{what} needs about {_size(work.nbytes)}{held}, more than the dashboard keeps "
                f"({_size(self.max_bytes)}): {work.fix}"
            )

    @contextmanager
    def _view_slot(self, work: Work, cheap: bool) -> Iterator[Callable[[str, Entry], Entry]]:
        """A build's slot, room and deadline; yields :meth:`_reserving`'s ``keep``."""
        if getattr(self._in_build, "active", False):
            yield self._store  # in a build that holds a slot, its room and deadline
            return
        kind = int(cheap)
        with self._slots:
            free = self._slots.wait_for(
                lambda: (
                    sum(self._builds) < VIEW_BUILDS + CHEAP_BUILDS
                    and (cheap or self._builds[0] < VIEW_BUILDS)
                ),
                timeout=SLOT_WAIT,
            )
            if not free:
                raise Busy("the server is busy building other views: try again shortly")
            self._builds[kind] += 1
        self._in_build.active = True
        try:
            with self._reserving(work.nbytes) as keep, deadline.within(work.seconds, work.past()):
                yield keep
        finally:
            self._in_build.active = False
            with self._slots:
                self._builds[kind] -= 1
                idle = not any(self._builds)
                self._slots.notify_all()
            if idle:  # what the builds freed goes back to the system, not only to the heap
                allocator.trim()

    def _store(self, key: str, entry: Entry, freed: int = 0) -> Entry:
        """Keep ``entry`` under ``key``, giving back ``freed`` bytes of room held for it in
        the same step (what it held is now a kept entry, which may go), and evict to the
        bound."""
        with self._turns:
            self._reserved -= freed
            self._entries[key] = entry
            dropped = self._evict()
            self._turns.notify_all()
        release_memory(dropped)
        return entry

    @property
    def nbytes(self) -> int:
        """Bytes kept, held for work in flight, and of dropped inputs still in use."""
        with self._lock:
            return self._total()

    def _total(self) -> int:
        return sum(e.nbytes for e in self._entries.values()) + self._held()

    def _held(self) -> int:
        """What no eviction frees: room held for work in flight, and inputs dropped while a
        request still uses them."""
        self._dropped = [ref for ref in self._dropped if ref() is not None]
        return self._reserved + sum(getattr(ref(), "nbytes", 0) for ref in self._dropped)

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self) -> bool:
        """Drop the least recently used entries until what is kept, held for work in flight
        and held still by those using a dropped input fits the bound; the newest stays unless
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


PLAIN = (str, int, float, type(None))  # values that hold no array


def _arrays_bytes(value: Any, counted: set[int], seen: set[int] | None = None) -> int:
    """Bytes of the arrays ``value`` holds (a Dataset's, a frame's columns, a figure's traces
    and full-resolution data, a dataclass's fields), each memory block once, an object array's
    objects too: blocks in ``counted`` (the input's) are not counted again, and the blocks
    found are added to it."""
    if isinstance(value, PLAIN):  # a table row's cells
        return 0
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, pd.RangeIndex):
        return 0  # its numbers are made when read
    if isinstance(value, xr.Dataset):
        value = held_arrays(value)
    elif isinstance(value, pd.DataFrame):
        value = [value.index, *(value.iloc[:, i] for i in range(value.shape[1]))]
    elif isinstance(value, pd.Index | pd.Series):
        value = value.to_numpy()
    elif is_dataclass(value) and not isinstance(value, type):
        value = [getattr(value, f.name) for f in fields(value)]
    if isinstance(value, np.ndarray):
        owner = _owner(value)
        if id(owner) in counted:
            return 0
        counted.add(id(owner))
        return owner.nbytes + (_objects_bytes(owner) if owner.dtype.kind == "O" else 0)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):  # a table's rows: their cells skipped at once
        return sum(_arrays_bytes(v, counted, seen) for v in value if not isinstance(v, PLAIN))
    if isinstance(value, BaseFigure):  # the traces as sent, and plotly-resampler's full data
        return _arrays_bytes([value._data, getattr(value, "_hf_data", None)], counted, seen)
    return 0


def _objects_bytes(array: np.ndarray) -> int:
    """Bytes of the distinct objects an object array points to (an xarray text array's
    strings, a figure's hover texts): Python's own size of each, once however often it is
    pointed to. [B]"""
    flat = array.ravel()
    ids = pd.Index(np.fromiter(map(id, flat), dtype=np.int64, count=flat.size))
    return sum(map(sys.getsizeof, flat[~ids.duplicated()]))
