"""A site designed from its grid connection: the largest site of a preset's kind whose design
peak at the connection stays within the connection's rating.

"Of its kind": a single-job preset grows or shrinks its GPU count in whole nodes; a campus
preset scales every workload's count by one factor (each to whole nodes). A site is built for
its job: a count whose job would leave GPUs idle (not whole replicas of the layout) is stepped
down to the nearest the job takes whole, whole nodes at a time, by asking the scenario.

The design peak at the connection is what the model predicts for the worst of a design year:
the larger of

- the ASHRAE 0.4 % cooling design day's plant and electrical chain
  (:func:`powermodel.engine.facility.design_day`) carrying the site's own peak IT power, as
  simulated (the iterations' peaks, every GPU the job runs; a campus: each hall's plant at its
  workloads' coincident peak), and
- the simulated grid peak of the design week (the scenario's own period from its start, at most
  a week, at its own step: the disturbances, restarts and recharges in it).

The nameplate figure (every GPU at TDP, fans at top speed, on the design day) is reported
beside it: it is what the plant and chain are sized for, 4 to 16 % above what the presets'
jobs draw (16,384 H100: 24.93 against 21.8 MW), and as the binding figure it would leave that
much of the connection unused.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w
import xarray as xr

from powermodel._version import __version__
from powermodel.engine.facility import design_conditions, design_day, design_it_power
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.output import write_text
from powermodel.scenario import (
    Scenario,
    format_duration,
    load_scenario,
    parse_overrides,
    presets,
    shorten,
)
from powermodel.simulate import simulate

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = ["connection_mw", "DESIGN_WEEK", "Design", "design", "scenario_toml", "write"]

DESIGN_WEEK = 7 * 86400.0  # s: the design run is the scenario's period, at most its first week
MAX_GPUS = 1_000_000  # the largest site designed (issue 28's largest count)
MAX_GRID_MW = 1e7  # the largest rating taken [MW]: ten TW; a 1,000,000-GPU site draws ~2,000
STEP_DOWN = 64  # whole nodes tried below a count for one the preset accepts (a replica: 16 to 18)
MAX_SIMULATIONS = 30  # design runs one design may take (a near-linear search takes 4 to 8)
LEVEL = 0.4  # % of the year's hours above the design day's dry-bulb (ASHRAE)
CHOSEN = ("cluster.n_gpus", "campus")


@dataclass(frozen=True)
class Design:
    """A site designed from its connection (:func:`design`). Powers in MW."""

    preset: str  # the preset whose kind of site this is
    grid_mw: float  # the connection's rating [MW]
    n_gpus: int  # GPUs on the site (a campus: every workload's)
    counts: dict[str, int]  # GPUs by workload (a single job: its one entry)
    overrides: dict[str, Any]  # the scenario's keys over the preset (what the file writes)
    design_peak_mw: float  # the binding figure: the larger of the two below
    design_day_mw: float  # ASHRAE design day's plant at the simulated IT peak (NaN: no design day)
    simulated_peak_mw: float  # the design week's simulated grid peak
    it_peak_mw: float  # the design week's simulated IT peak
    nameplate_mw: float  # ASHRAE design day at nameplate IT, every GPU at TDP (NaN: none)
    binds: str  # what limits the site, in words
    next_gpus: int | None  # the next size of the kind up (None: none accepted)
    next_peak_mw: float | None  # its design peak (over the connection)
    notes: tuple[str, ...] = ()  # what the site's loading chose (the job and idle GPUs ...)
    simulations: int = 0  # design runs simulated
    design_period: str = "7d"  # the design run's length

    @property
    def margin_mw(self) -> float:
        """What the connection has left at the design peak. [MW]"""
        return self.grid_mw - self.design_peak_mw

    @property
    def margin(self) -> float:
        """The margin as a share of the connection."""
        return self.margin_mw / self.grid_mw

    def summary(self) -> list[tuple[str, str]]:
        """The design as (label, value) rows, as the command line and the dashboard show it."""

        def mw(value: float) -> str:
            return f"{value:.2f} MW" if np.isfinite(value) else "none (no ASHRAE design day)"

        rows = [
            ("GPUs", f"{self.n_gpus:,}"),
            *(
                (f"  {name}", f"{count:,}")
                for name, count in self.counts.items()
                if len(self.counts) > 1
            ),
            ("connection", f"{self.grid_mw:g} MW"),
            ("design peak at the connection", mw(self.design_peak_mw)),
            ("margin", f"{self.margin_mw:.2f} MW ({100 * self.margin:.1f} % of the connection)"),
            ("  design day at the simulated IT peak", mw(self.design_day_mw)),
            (f"  simulated peak, first {self.design_period}", mw(self.simulated_peak_mw)),
            ("  simulated IT peak", mw(self.it_peak_mw)),
            ("  design day at nameplate IT (TDP)", mw(self.nameplate_mw)),
            ("binds", self.binds),
        ]
        return rows + [("note", note) for note in self.notes]


@dataclass
class _Kind:
    """How a preset's site grows: the lead workload's nodes ``m`` set every count."""

    preset: str
    given: dict[str, Any]  # the user's keys over the preset (its site, weather, plant ...)
    base: Scenario
    lead: int  # index of the workload whose nodes are the size (a single job: 0)
    parts: list[Scenario]
    workloads: list[dict] | None  # a campus's workloads as its file gives them
    cache: dict[int, tuple[dict[str, Any], dict[str, int]] | None] = field(default_factory=dict)
    canon: dict[int, int | None] = field(default_factory=dict)

    @classmethod
    def of(cls, preset: str, given: dict[str, Any]) -> _Kind:
        base = load_scenario(preset, given)
        if base.campus is None:
            return cls(preset, given, base, 0, [base], None)
        parts = base.parts
        workloads = [_plain(w) for w in base.to_dict()["campus"]["workloads"]]
        lead = int(np.argmax([p.cluster.n_gpus for p in parts]))
        return cls(preset, given, base, lead, parts, workloads)

    @property
    def nodes(self) -> int:
        """The preset's own size: its lead workload's nodes."""
        lead = self.parts[self.lead].cluster
        return lead.n_gpus // lead.gpus_per_node

    def names(self) -> list[str]:
        if self.workloads is None:
            return [self.base.name or self.preset]
        return [w["name"] for w in self.workloads]

    def lead_nodes(self, m: int) -> int | None:
        """The largest size at or below ``m`` the lead workload accepts (None: none)."""
        if m not in self.canon:
            lead = self.parts[self.lead]
            found = _accepted(lead, m, lead.cluster.gpus_per_node) if m > 0 else None
            self.canon[m] = (
                None if found is None else found["cluster.n_gpus"] // lead.cluster.gpus_per_node
            )
        return self.canon[m]

    def site(self, m: int) -> tuple[dict[str, Any], dict[str, int]] | None:
        """The overrides and counts of size ``m`` (a size the lead accepts: every other count
        the largest its workload accepts at or below its share), or None where a workload has
        none."""
        if m not in self.cache:
            self.cache[m] = self._site(m)
        return self.cache[m]

    def _site(self, m: int) -> tuple[dict[str, Any], dict[str, int]] | None:
        lead = self.parts[self.lead].cluster
        factor = m * lead.gpus_per_node / lead.n_gpus
        chosen = []
        for part in self.parts:
            per = part.cluster.gpus_per_node
            nodes = math.floor(factor * part.cluster.n_gpus / per + 1e-9)
            found = _accepted(part, nodes, per) if nodes > 0 else None
            if found is None:
                return None
            chosen.append(found)
        names = self.names()
        counts = {n: int(c["cluster.n_gpus"]) for n, c in zip(names, chosen, strict=True)}
        if self.workloads is None:
            overrides = dict(chosen[0])
        else:
            workloads = copy.deepcopy(self.workloads)
            for w, keys in zip(workloads, chosen, strict=True):
                w["set"] = {**w.get("set", {}), **keys}
            overrides = {"campus.workloads": workloads}
            try:
                load_scenario(self.preset, {**self.given, **overrides})
            except ScenarioError:
                return None
        return overrides, counts

    def down(self, m: int) -> int | None:
        """The largest size at or below ``m`` whose site the preset accepts (None: none)."""
        floor = m - STEP_DOWN
        m = self.lead_nodes(m)
        while m is not None and m > floor and self.site(m) is None:
            m = self.lead_nodes(m - 1)
        return m if m is not None and m > floor else None

    def up(self, m: int, limit: int = STEP_DOWN) -> int | None:
        """The smallest size above ``m`` whose site the preset accepts (None: none within
        ``limit`` nodes)."""
        lead = self.parts[self.lead]
        for n in range(m + 1, m + 1 + limit):
            if n not in self.canon and _accepted(lead, n, lead.cluster.gpus_per_node, 1) is None:
                continue  # the lead refuses n itself (its size below, whatever it is, is not n)
            if self.lead_nodes(n) == n and self.site(n) is not None:
                return n
        return None


def _plain(value: Any) -> Any:
    """A workload's table as TOML writes it: no None (TOML has none)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _accepted(part: Scenario, nodes: int, per: int, steps: int = STEP_DOWN) -> dict | None:
    """The keys of the largest count of whole nodes at or below ``nodes`` that the workload
    ``part`` runs whole: its job takes every GPU (a hall built for the job leaves none idle:
    whole replicas where the layout has them); None if none is within ``steps`` nodes."""
    for n in range(nodes, max(nodes - steps, 0), -1):
        keys: dict[str, Any] = {"cluster.n_gpus": n * per}
        try:
            if load_scenario(part, keys).cluster.idle_gpus == 0:
                return keys
        except ScenarioError:
            continue
    return None


@dataclass
class _Peaks:
    design_peak: float
    design_day: float
    simulated: float
    it_peak: float


def _peaks(
    kind: _Kind,
    overrides: Mapping[str, Any],
    period: float,
    simulator: Callable[[Scenario], xr.Dataset],
) -> _Peaks:
    """The design figures of a site: simulated over the design period, its IT peak carried
    through the design day's plant."""
    scenario = load_scenario(
        kind.preset, {**kind.given, **overrides, "simulation.duration": format_duration(period)}
    )
    ds = simulator(scenario)
    simulated = float(ds["grid_power"].max())  # [MW]
    it_peak = float(ds["it_power"].max())
    if design_conditions(scenario) is None:
        day = float("nan")
    elif scenario.campus is not None and scenario.halls:
        it = ds["workload_it_power"]  # [MW] by workload: a hall's coincident peak
        day = sum(
            design_day(hall, LEVEL, 1e6 * float(it.isel(workload=members).sum("workload").max()))[
                "peak_facility_mw"
            ]
            for hall, members in scenario.hall_members()
        )
    else:
        day = design_day(scenario, LEVEL, 1e6 * it_peak)["peak_facility_mw"]
    return _Peaks(float(np.nanmax([day, simulated])), day, simulated, it_peak)


def connection_mw(value: Any) -> float:
    """A connection's rating as a design takes it [MW]: a finite number above zero and at most
    :data:`MAX_GRID_MW`; anything else (text, a bool, NaN, an integer too large for a float)
    refused, naming it."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    try:
        rating = float(value) if number else math.nan
    except OverflowError:  # an integer beyond any float
        rating = math.inf
    if not math.isfinite(rating) or not 0 < rating <= MAX_GRID_MW:
        shown = shorten(value) if not number or not math.isfinite(rating) else f"{rating:g}"
        raise PowerModelError(
            f"a connection of {shown} MW: give its rating as a positive number of MW, at most "
            f"{MAX_GRID_MW:,.0f}"
        )
    return rating


def design(
    preset: str,
    grid_mw: float,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
    simulator: Callable[[Scenario], xr.Dataset] = simulate,
) -> Design:
    """The largest site of ``preset``'s kind whose design peak at the connection stays
    within ``grid_mw``.

    Parameters
    ----------
    preset
        A shipped preset (:func:`powermodel.scenario.presets`): a single job grows in whole
        nodes, a campus scales every workload by one factor.
    grid_mw
        The connection's rating: the most active power the site may draw there. [MW]
    overrides
        The user's keys over the preset, as :func:`powermodel.scenario.load_scenario` takes
        them (``{"site.weather": "tampa"}``, ``["cooling.plant=liquid-tower"]``): the site
        designed is the preset's kind with them; written into the file. Not the counts the
        design chooses (``cluster.n_gpus``, ``campus.workloads``).
    progress
        Called with a line before each design run.
    simulator
        Runs a design run (by default :func:`powermodel.simulate.simulate`; the dashboard's
        goes through its queue and memory bound).

    Returns
    -------
    Design
        The GPU count, the design peak, the figures it is the larger of, the margin, what
        binds and the scenario's keys (:func:`scenario_toml` writes them over the preset).

    Raises
    ------
    PowerModelError
        Not a preset; a rating that is not a positive number, below one node's draw, below
        the smallest site the preset accepts, or above :data:`MAX_GPUS` of the kind.

    Notes
    -----
    The design peak is the larger of the ASHRAE 0.4 % design day's facility power at the
    site's simulated IT peak and the design week's simulated grid peak (the module's text says
    why not nameplate). The search is a secant search on the lead workload's nodes, bracketed
    (the peak grows with the size, near proportionally), that ends with the size within the
    rating and the next size up over it, both simulated: 4 to 9 runs of the design week (1 to
    8 s for the presets at 50 MW).
    """
    grid_mw, kind, period = _checked(preset, grid_mw, overrides)
    runs = _DesignRuns(kind, grid_mw, period, simulator, progress)
    smallest = _smallest(kind, grid_mw, runs)
    nameplate = _nameplate(kind.base)
    guess, cap = _first_guess(kind, grid_mw, runs, smallest, nameplate)
    lo, hi = _search(kind, grid_mw, runs, smallest, guess, cap)
    return _design(kind, grid_mw, lo, hi, runs.made, nameplate, format_duration(period))


def _checked(
    preset: str, grid_mw: float, overrides: Mapping[str, Any] | Iterable[str] | None
) -> tuple[float, _Kind, float]:
    """The rating [MW], the preset's kind with the user's keys and the design run's period
    [s], refused before any run where the preset is unknown or one node draws more than the
    rating."""
    if preset not in presets():
        raise PowerModelError(
            f"unknown preset {preset!r}: design starts from one of {', '.join(presets())}"
        )
    grid_mw = connection_mw(grid_mw)
    kind = _Kind.of(preset, _given(overrides))
    period = min(kind.base.simulation.duration, DESIGN_WEEK)
    node_mw = _one_node(kind)
    if np.isfinite(node_mw) and grid_mw < node_mw:
        raise PowerModelError(
            f"a connection of {grid_mw:g} MW is below one node's draw there, {node_mw:.4g} MW "
            f"({_node_words(kind)} on the design day, nameplate): give at least {node_mw:.4g} MW"
        )
    return grid_mw, kind, period


@dataclass
class _DesignRuns:
    """The design runs one design makes, by the lead workload's size: each size simulated once,
    at most :data:`MAX_SIMULATIONS` of them."""

    kind: _Kind
    grid_mw: float  # the rating, for the refusal [MW]
    period: float  # the design run's period [s]
    simulator: Callable[[Scenario], xr.Dataset]
    progress: Callable[[str], None] | None
    made: dict[int, _Peaks] = field(default_factory=dict)

    def peak(self, m: int) -> float:
        """The design peak of the site at lead size ``m`` [MW], simulated the first time."""
        if m not in self.made:
            if len(self.made) >= MAX_SIMULATIONS:
                raise PowerModelError(
                    f"design of {self.kind.preset} for {self.grid_mw:g} MW did not settle in "
                    f"{MAX_SIMULATIONS} runs (a defect: please report it)"
                )
            keys, counts = self.kind.site(m)
            if self.progress is not None:
                self.progress(f"simulating {sum(counts.values()):,} GPUs")
            self.made[m] = _peaks(self.kind, keys, self.period, self.simulator)
        return self.made[m].design_peak


def _smallest(kind: _Kind, grid_mw: float, runs: _DesignRuns) -> int:
    """The smallest size the preset takes (a campus: each workload one replica), simulated:
    refused where even it peaks over the rating."""
    preset = kind.preset
    smallest = kind.up(0, kind.nodes)
    if smallest is None:
        raise PowerModelError(f"{preset} accepts no size of its kind: a defect, please report it")
    if runs.peak(smallest) > grid_mw:
        gpus = sum(kind.site(smallest)[1].values())
        raise PowerModelError(
            f"a connection of {grid_mw:g} MW: the smallest site {preset} takes today, "
            f"{gpus:,} GPUs, peaks at {runs.made[smallest].design_peak:.4g} MW at the "
            f"connection: give at least {runs.made[smallest].design_peak:.4g} MW (or a preset "
            "of smaller jobs)"
        )
    return smallest


def _first_guess(
    kind: _Kind, grid_mw: float, runs: _DesignRuns, smallest: int, nameplate: float
) -> tuple[int, int]:
    """The first size to simulate, from the nameplate design day (``nameplate`` [MW]; NaN: the
    smallest site's simulated peak, per node), and the largest size designed (:func:`_cap`):
    refused where the guess is over it."""
    per_node = nameplate / kind.nodes
    if not np.isfinite(per_node):  # no design day: the smallest site's simulated peak
        per_node = runs.made[smallest].design_peak / smallest
    guess = max(int(grid_mw / per_node), smallest)
    cap = _cap(kind)
    if guess > cap:
        raise PowerModelError(
            f"a connection of {grid_mw:g} MW: more than the {MAX_GPUS:,} GPUs powermodel designs "
            f"(about {cap * per_node:,.0f} MW of {kind.preset}'s kind): design the site in parts"
        )
    return guess, cap


def _search(
    kind: _Kind, grid_mw: float, runs: _DesignRuns, smallest: int, guess: int, cap: int
) -> tuple[int, int | None]:
    """The largest size within the rating and the next size up over it (None: no size of the
    kind above it), both simulated."""
    lo, hi = smallest, None
    # the first guess from the nameplate design day, then secant steps on the simulated peaks
    # inside the bracket, a halving where a secant step did not halve it (the peak is near
    # proportional to the size, but a disturbance's recharge or a restart can bend it)
    width = math.inf
    while hi is None or kind.up(lo) != hi:
        m = kind.down(min(guess, cap))
        if m is None and hi is None and guess > lo:
            cap = _largest(kind, lo, min(guess, cap))  # the preset takes no site that large
            m = kind.down(cap)
        if hi is not None and (m is None or not lo < m < hi):
            m = kind.down((lo + hi) // 2)
            if m is None or not lo < m < hi:
                m = kind.up(lo)  # nothing the preset accepts between: the next size up
        elif hi is None and (m is None or m <= lo):
            m = kind.up(lo)  # the line meets the rating at lo: the next size up
        if m is None or m <= lo or (hi is not None and m >= hi):
            break  # no size of the kind above lo (within the cap)
        if runs.peak(m) <= grid_mw:
            lo = m
        else:
            hi = m
        now = math.inf if hi is None else hi - lo
        guess = _secant(runs.made, lo, hi, grid_mw) if now <= width / 2 else (lo + hi) // 2
        width = now
    return lo, hi


def _largest(kind: _Kind, lo: int, top: int) -> int:
    """The largest size the preset takes between ``lo`` (taken) and ``top`` (none taken within
    :data:`STEP_DOWN` nodes below it): a preset's layout that takes counts only up to some
    size (a batch too small for more replicas) bounds the site there, found by bisection."""
    while top - lo > 1:
        mid = (lo + top) // 2
        if kind.down(mid) is None:
            top = mid
        else:
            lo = mid
    return kind.down(lo)


def _given(overrides: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    """The user's keys, refused where they are what the design chooses or cannot be written
    into a file's tables."""
    given = parse_overrides(overrides)
    for key in given:
        if key in CHOSEN or key.startswith(tuple(f"{k}." for k in CHOSEN)):
            raise PowerModelError(
                f"{key}: design chooses the counts (cluster.n_gpus, campus.workloads): leave "
                "it out, or give a preset of that kind"
            )
        if any(part.isdigit() for part in key.split(".")):
            raise PowerModelError(
                f"{key}: a list item cannot be set over a preset in a file: give the whole "
                "list in a scenario file and design from its preset, or set it after"
            )
    return given


def _secant(runs: dict[int, _Peaks], lo: int, hi: int | None, grid_mw: float) -> int:
    """The size at which the line through two runs meets the rating: the bracket's ends, or
    before there is one the two largest sizes simulated."""
    a, b = (lo, hi) if hi is not None else sorted(runs)[-2:] if len(runs) > 1 else (0, lo)
    pa = runs[a].design_peak if a in runs else 0.0
    pb = runs[b].design_peak
    if pb <= pa:
        return 2 * lo if hi is None else (lo + hi) // 2
    return int(a + (grid_mw - pa) * (b - a) / (pb - pa))


def _cap(kind: _Kind) -> int:
    """The largest lead size at which the site has at most :data:`MAX_GPUS`."""
    total = sum(p.cluster.n_gpus for p in kind.parts)
    return max(int(kind.nodes * MAX_GPUS / total), 1)


def _nameplate(scenario: Scenario) -> float:
    """The design day at nameplate IT [MW]; NaN where the weather has no design day."""
    if design_conditions(scenario) is None:
        return float("nan")
    return design_day(scenario, LEVEL)["peak_facility_mw"]


def _one_node(kind: _Kind) -> float:
    """One node of the lead workload at nameplate on the design day [MW] (NaN: no design
    day): no site of the kind draws less."""
    part = kind.parts[kind.lead]
    if design_conditions(kind.base) is None:
        return float("nan")
    node = design_it_power(part) / part.cluster.n_nodes
    return design_day(part, LEVEL, node)["peak_facility_mw"]


def _node_words(kind: _Kind) -> str:
    cl = kind.parts[kind.lead].cluster
    return f"a node of {cl.gpus_per_node} {cl.gpu}"


def _design(
    kind: _Kind,
    grid_mw: float,
    lo: int,
    hi: int | None,
    runs: dict[int, _Peaks],
    nameplate_mw: float,
    period: str,
) -> Design:
    overrides, counts = kind.site(lo)
    at = runs[lo]
    n = sum(counts.values())
    scale = n / sum(p.cluster.n_gpus for p in kind.parts)
    site = load_scenario(kind.preset, {**kind.given, **overrides})
    site_nameplate = _nameplate(site)
    notes: tuple[str, ...] = tuple(site.notes)  # what loading chose: the job, the idle GPUs
    if at.design_day >= at.simulated:
        what = f"the design day's plant at the site's {at.it_peak:.2f} MW IT peak"
    else:
        what = f"the simulated peak of the first {period}"
    if hi is None:
        binds = f"{what}; {_refused_above(kind, lo)}"
        next_gpus = next_peak = None
    else:
        next_gpus = sum(kind.site(hi)[1].values())
        next_peak = runs[hi].design_peak
        binds = (
            f"{what}: the next size up, {next_gpus:,} GPUs, would peak at {next_peak:.2f} MW, "
            f"over the {grid_mw:g} MW connection"
        )
    if not np.isfinite(at.design_day):
        notes = (
            *notes,
            f"weather {kind.base.site.weather!r} quotes no ASHRAE design day: the design peak is "
            f"the simulated first {period} alone, not the worst of a year (give an EPW with "
            "design conditions for that)",
        )
    name = f"{kind.preset}-{grid_mw:g}mw"
    described = (
        f"A site of {kind.preset}'s kind sized for a {grid_mw:g} MW connection: {n:,} GPUs "
        f"({scale:.3g} times the preset's), design peak {at.design_peak:.2f} MW "
        "(powermodel design)"
    )
    return Design(
        preset=kind.preset,
        grid_mw=grid_mw,
        n_gpus=n,
        counts=counts,
        overrides={"name": name, "description": described, **kind.given, **overrides},
        design_peak_mw=at.design_peak,
        design_day_mw=at.design_day,
        simulated_peak_mw=at.simulated,
        it_peak_mw=at.it_peak,
        nameplate_mw=site_nameplate if np.isfinite(site_nameplate) else nameplate_mw * scale,
        binds=binds,
        next_gpus=next_gpus,
        next_peak_mw=next_peak,
        notes=notes,
        simulations=len(runs),
        design_period=period,
    )


def _refused_above(kind: _Kind, m: int) -> str:
    """Why the site does not grow past size ``m``: the preset's own words at the next count."""
    if sum(kind.site(m)[1].values()) >= MAX_GPUS * 0.999:
        return f"the {MAX_GPUS:,} GPUs powermodel designs"
    # in the preset's words at twice the site (a count its layout's replicas divide, as they
    # divide the site's: the refusal is of the size, not of the count's remainder)
    lead = kind.parts[kind.lead]
    try:
        load_scenario(lead, {"cluster.n_gpus": 2 * m * lead.cluster.gpus_per_node})
    except ScenarioError as exc:
        said = exc if kind.workloads is None else f"{kind.names()[kind.lead]}: {exc}"
        return f"the preset takes no larger site of its kind today ({said})"
    return "the preset takes no larger site of its kind today"


def scenario_toml(result: Design) -> str:
    """The designed site as a scenario file: ``extends`` the preset, with the keys chosen and
    the design in comments (what ``powermodel run`` loads)."""
    nested: dict[str, Any] = {}
    for key, value in result.overrides.items():
        *tables, last = key.split(".")
        table = nested
        for t in tables:
            table = table.setdefault(t, {})
        table[last] = value
    head = [
        f"# Designed by powermodel {__version__}: powermodel design {result.preset} "
        f"--grid-mw {result.grid_mw:g}",
        *(f"# {label.strip()}: {value}" for label, value in result.summary()),
    ]
    body = tomli_w.dumps({"extends": result.preset, **nested})
    return "\n".join(head) + "\n" + body


def write(result: Design, path: str | Path) -> Path:
    """Write :func:`scenario_toml` to ``path`` whole or not at all (a temporary file beside
    it, renamed); returns the path."""
    return write_text(path, scenario_toml(result))
