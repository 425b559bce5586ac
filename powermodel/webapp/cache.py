"""Simulations kept by scenario, with everything the views built from them, in bounded memory."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from powermodel.scenario import Scenario
from powermodel.simulate import simulate

DEFAULT_BYTES = 3 * 2**30  # a 54-day 1-s run is about 0.6 GB with its views
SCENARIOS_KEPT = 1000


def scenario_key(scenario: Scenario) -> str:
    """A short fingerprint of a scenario: equal scenarios, equal keys."""
    return hashlib.sha1(scenario.to_json().encode()).hexdigest()[:16]


@dataclass
class Entry:
    """One simulated scenario and what the views built from it (figures, rule checks ...)."""

    scenario: Scenario
    ds: xr.Dataset
    views: dict[str, Any] = field(default_factory=dict)
    nbytes: int = 0
    building: dict[str, threading.Lock] = field(default_factory=dict)


class SimulationCache:
    """Least recently used simulations, up to ``max_bytes`` of Datasets and view arrays.

    Safe to share between the server's threads: a scenario asked for by several callbacks at
    once is simulated once, the others wait for it.
    """

    def __init__(self, max_bytes: int = DEFAULT_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
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

    def get(self, scenario: Scenario) -> Entry:
        """The entry of ``scenario``, simulating it if it is not kept."""
        key = self.remember(scenario)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._entries:
                    return self._entries[key]
            ds = simulate(scenario)
            entry = Entry(scenario, ds, nbytes=int(ds.nbytes))
            with self._lock:
                self._entries[key] = entry
                self._building.pop(key, None)
                self._evict()
        return entry

    def view(self, entry: Entry, name: str, build: Callable[[Entry], Any]) -> Any:
        """What ``build(entry)`` returns, built once per entry (a second caller waits for the
        first) and counted in its size."""
        if name in entry.views:
            return entry.views[name]
        with self._lock:
            building = entry.building.setdefault(name, threading.Lock())
        with building:
            if name not in entry.views:
                value = build(entry)
                entry.views[name] = value
                with self._lock:
                    entry.nbytes += _arrays_bytes(value)
                    self._evict()
        return entry.views[name]

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self) -> None:
        """Drop the least recently used entries over the bound; the newest always stays."""
        total = sum(e.nbytes for e in self._entries.values())
        while total > self.max_bytes and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            total -= dropped.nbytes


def _arrays_bytes(value: Any, seen: set[int] | None = None) -> int:
    """Bytes of the numpy arrays a view holds (figures keep their full-resolution data)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return 0 if value.base is not None else value.nbytes
    if isinstance(value, dict):
        return sum(_arrays_bytes(v, seen) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_arrays_bytes(v, seen) for v in value)
    hf = getattr(value, "_hf_data", None)  # plotly-resampler: each trace's full data
    return _arrays_bytes(hf, seen) if isinstance(hf, dict) else 0
