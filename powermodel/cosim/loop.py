"""The co-simulation loop: sites simulated by the engine, a power-flow network solved each grid
step with their draw, controllers reading its voltages and moving the sites' levers for the next
step (docs in :mod:`powermodel.cosim`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from powermodel.cosim.controllers import Controller, Measured
from powermodel.errors import PowerModelError
from powermodel.network import Network, load_network
from powermodel.scenario import Scenario, load_scenario
from powermodel.simulate import simulate

# what a site's run gives the loop, on the grid steps: the draw [MW], [Mvar] and the job's rate
RUN_VARIABLES = ("grid_power", "grid_reactive_power", "throughput")


@dataclass
class Site:
    """One site's runs on the grid steps: row 0 the scenario as given, then one row a lever
    setting its controllers use (``runs[(lever, level)]`` the row)."""

    name: str
    bus: str
    p: np.ndarray  # (runs, steps) [MW]
    q: np.ndarray  # (runs, steps) [Mvar]
    throughput: np.ndarray  # (runs, steps) [token/s]
    runs: dict[tuple[str, float], int]


def block_means(values: np.ndarray, n: int) -> np.ndarray:
    """Means over consecutive blocks of ``n`` steps (the interval's exact energy); the values
    themselves when ``n`` is 1."""
    return values if n == 1 else values.reshape(-1, n).mean(axis=1)


def grid_factor(scenario: Scenario, grid_step: float | None) -> int:
    """How many of the scenario's steps one grid step spans, checked."""
    dt = scenario.simulation.dt
    if grid_step is None:
        return 1
    n = round(grid_step / dt)
    steps = round(scenario.simulation.duration / dt)
    if n < 1 or not math.isclose(n * dt, grid_step, rel_tol=1e-9) or steps % n:
        raise PowerModelError(
            f"grid_step {grid_step!r} s: give a whole number of the scenario's steps ({dt:g} s) "
            f"that divides its {steps} steps (e.g. {dt:g}, {60 * dt:g})"
        )
    return n


def site_runs(
    scenario: Scenario, name: str, bus: str, controllers: Sequence[Controller], index: int, n: int
) -> tuple[Site, xr.Dataset]:
    """The site's open-loop run and one run a distinct lever setting of its caps: the same
    scenario (same seed, so the same failures, restarts and checkpoints' times) with
    ``mitigation.<lever> = level``."""
    open_loop = simulate(scenario)
    runs, rows = {}, [open_loop]
    for c in controllers:
        if c.site != index or c.lever is None or (c.lever, float(c.level)) in runs:
            continue
        runs[c.lever, float(c.level)] = len(rows)
        rows.append(simulate(load_scenario(scenario, {f"mitigation.{c.lever}": c.level})))
    stacked = {v: np.stack([block_means(ds[v].values, n) for ds in rows]) for v in RUN_VARIABLES}
    site = Site(name, bus, stacked["grid_power"], stacked["grid_reactive_power"],
                stacked["throughput"], runs)  # fmt: skip
    return site, open_loop


def attached(
    network: Network | str, buses: Sequence[str], tolerance: float
) -> tuple[Network, list[str]]:
    """The network (loaded when given by name or file) with a site attached at each bus, an
    OpenDSS one solved to ``tolerance`` [pu]."""
    net = network if isinstance(network, Network) else load_network(network)
    if net.sites:
        raise PowerModelError(
            f"network {net.name} has sites attached already ({', '.join(net.sites)}): pass a "
            "freshly loaded network (or its name); the co-simulation attaches its own"
        )
    if net.engine == "opendss":
        if not (isinstance(tolerance, float | int) and 0 < tolerance < 0.01):
            raise PowerModelError(f"tolerance {tolerance!r}: a number of pu in (0, 0.01)")
        net.command(f"Set Tolerance={float(tolerance)!r}")
    names = [f"site{i + 1}" for i in range(len(buses))]
    for name, bus in zip(names, buses, strict=True):
        net.attach(name, bus)
    return net, names


def check_carried(net: Network, sites: list[Site], scale: float) -> None:
    """Refuse, before the loop, sites the network cannot carry at all: each site at its own
    peak draw solved at once; when that collapses, the largest share of it that solves is
    named (bisection, 12 solves) with the scale that would carry it."""
    peak = np.array([s.p[0].argmax() for s in sites])
    p = np.array([s.p[0, k] for s, k in zip(sites, peak, strict=True)]) / scale
    q = np.array([s.q[0, k] for s, k in zip(sites, peak, strict=True)]) / scale
    if net.solve_many(p[None], q[None], strict=False).converged[0]:
        return
    low, high = 0.0, 1.0
    for _ in range(12):
        mid = (low + high) / 2
        ok = net.solve_many(mid * p[None], mid * q[None], strict=False).converged[0]
        low, high = (mid, high) if ok else (low, mid)
    where = ", ".join(f"{s.name} at bus {s.bus}: {s.p[0].max():.4g} MW" for s in sites)
    carried = ", ".join(f"{low * s.p[0].max():.4g} MW" for s in sites)
    raise PowerModelError(
        f"network {net.name} cannot carry these sites at all ({where} at their peak, scale "
        f"{scale:g}): the power flow collapses; it carries at most {carried} there. Make the "
        f"sites smaller, attach them at stronger buses, or pass scale={scale / max(low, 1e-6):.3g} "
        "or more (the feeder's topology and per-unit impedances at that many times its power)"
    )


@dataclass
class Trace:
    """What the loop records each grid step (arrays over the steps)."""

    run: np.ndarray  # (steps, sites) the row of each site's runs in force
    battery: np.ndarray  # (steps, controllers) [MW] into the connection
    engaged: np.ndarray  # (steps, controllers)
    soc: np.ndarray  # (steps, controllers) [fraction]
    v_site: np.ndarray  # (steps, sites) [pu]
    v_min: np.ndarray  # (steps,) [pu]
    v_min_at: np.ndarray  # (steps,) bus index
    loading: np.ndarray  # (steps,) [fraction], the highest line's
    loading_at: np.ndarray  # (steps,) that line's index
    taps: np.ndarray | None  # (steps, windings) [pu]


def new_trace(steps: int, sites: int, controllers: int, windings: int | None) -> Trace:
    nan = np.full
    return Trace(
        np.zeros((steps, sites), int), np.zeros((steps, controllers)),
        np.zeros((steps, controllers), bool), nan((steps, controllers), np.nan),
        nan((steps, sites), np.nan), nan(steps, np.nan), np.zeros(steps, int), nan(steps, np.nan),
        np.zeros(steps, int), None if windings is None else nan((steps, windings), np.nan),
    )  # fmt: skip


def step_loop(
    net: Network, sites: list[Site], order: list[Controller], dt: float, scale: float, taps: bool
) -> Trace:
    """Step the sites and the network: each step the caps choose each site's run, the other
    controllers (batteries) add their power, the network is solved once with the sites' draw
    ÷ ``scale`` from the state the step before left (regulator taps move as in a time series),
    and its voltages are what the controllers read at the next step."""
    steps, n_caps = sites[0].p.shape[1], sum(c.lever is not None for c in order)
    windings = len(net.tap_positions()) if taps else None
    trace = new_trace(steps, len(sites), len(order), windings)
    for c in order:
        c.start(dt)
    rows = [sites[c.site].runs[c.lever, float(c.level)] for c in order[:n_caps]]
    at = [net.buses.index(b) for b in (s.bus for s in sites)]
    v_prev, p_prev = [math.nan] * len(sites), [math.nan] * len(sites)
    vf_prev, live = math.nan, None
    ps, qs = [s.p for s in sites], [s.q for s in sites]
    for k in range(steps):
        t, run = k * dt, [0] * len(sites)
        for j, c in enumerate(order[:n_caps]):
            i = c.site
            action = c.decide(k, t, Measured(v_prev[i], vf_prev, p_prev[i], ps[i][run[i], k]))
            trace.engaged[k, j] = action.engaged
            if action.engaged and not run[i]:
                run[i] = rows[j]  # of several caps engaged on one site, the first listed
        grid = [p[r, k] for p, r in zip(ps, run, strict=True)]
        for j, c in enumerate(order[n_caps:], n_caps):
            i = c.site
            action = c.decide(k, t, Measured(v_prev[i], vf_prev, p_prev[i], grid[i]))
            grid[i] -= action.battery_mw
            trace.engaged[k, j], trace.battery[k, j] = action.engaged, action.battery_mw
            trace.soc[k, j] = action.soc
        q = [q[r, k] for q, r in zip(qs, run, strict=True)]
        batch = net.solve_many(
            np.divide([grid], scale), np.divide([q], scale), strict=False, carry=True,
            resume=k > 0,
        )  # fmt: skip
        vmin = batch.vmin[0]
        if not batch.converged[0]:
            raise not_solved(net, sites, grid, k, dt, scale)
        live = vmin > 0 if live is None else live  # a bus at 0 is not energised (open point)
        lowest = int(np.argmin(np.where(live, vmin, np.inf)))
        v_prev, vf_prev, p_prev = vmin[at].tolist(), float(vmin[lowest]), grid
        trace.run[k], trace.v_site[k], trace.v_min[k], trace.v_min_at[k] = (
            run,
            v_prev,
            vf_prev,
            lowest,
        )
        if batch.line_loading.size:
            trace.loading_at[k] = at_most = int(np.argmax(batch.line_loading[0]))
            trace.loading[k] = batch.line_loading[0, at_most]
        if taps:
            trace.taps[k] = list(net.tap_positions().values())
    return trace


def not_solved(net: Network, sites: list[Site], grid: list[float], k: int, dt: float, scale: float):
    """The error for a step whose power flow did not converge (or collapsed)."""
    drawn = ", ".join(
        f"{s.name} at bus {s.bus}: {p:.4g} MW" for s, p in zip(sites, grid, strict=True)
    )
    return PowerModelError(
        f"network {net.name}: the power flow of grid step {k} ({k * dt:g} s in; {drawn}, scale "
        f"{scale:g}) did not converge or collapsed: the sites draw more than it can carry "
        "there; make them smaller, attach them at stronger buses or pass a larger scale"
    )
