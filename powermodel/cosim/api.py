"""``cosimulate``: scenarios and a network in, one ``xarray.Dataset`` over the grid steps out
(see :mod:`powermodel.cosim` for the model and its approximations)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from powermodel.cosim.controllers import LEVERS, Controller
from powermodel.cosim.loop import (
    Site,
    Trace,
    attached,
    check_carried,
    grid_factor,
    site_runs,
    step_loop,
)
from powermodel.errors import PowerModelError
from powermodel.network import Network
from powermodel.scenario import Scenario, load_scenario

# OpenDSS's own default, 1e-4 pu, leaves a carried solve 1e-5 pu from the same injections and
# taps solved from a cold start (measured on ieee123); at 1e-7 they agree within 2e-8 pu, at no
# measurable cost a step
TOLERANCE = 1e-7
APPROXIMATION = (
    "a cap engaged at a grid step makes that step's site power, reactive power and throughput "
    "those of the same scenario simulated with the cap throughout (same seed: the same "
    "failures, restarts and checkpoint times; the capped run's iteration phase is its own): "
    "firmware caps act within about a second, faster than the grid step; a controller acts "
    "one grid step after the voltage it reads"
)


def cosimulate(
    scenarios: Scenario | str | Path | Sequence[Scenario | str | Path],
    network: Network | str | Path,
    buses: str | Sequence[str],
    controllers: Sequence[Controller] = (),
    *,
    grid_step: float | None = None,
    scale: float = 1.0,
    record_taps: bool = False,
    tolerance: float = TOLERANCE,
) -> xr.Dataset:
    """Co-simulate sites and a power-flow network, step by step, with controllers between.

    Parameters
    ----------
    scenarios
        One scenario (preset name, TOML path or Scenario) a site, all on the same time grid.
    network
        A shipped network's name (``ieee123``), a ``.dss`` / ``.json`` file, or a freshly
        loaded :class:`~powermodel.network.Network` with no site attached.
    buses
        The bus each site attaches at (``site1`` at the first, ...).
    controllers
        :class:`~powermodel.cosim.controllers.Controller` objects; none: the open loop, whose
        site outputs are the runs' own, bit for bit.
    grid_step
        The power flow's step, a whole number of the scenarios' ``dt``; each grid step's P and
        Q are the interval's means (its exact energy). The scenarios' ``dt`` by default. [s]
    scale
        The network's size: the feeder's topology and per-unit impedances at ``scale`` times
        its power (every load, rating and admittance times ``scale``), solved exactly as the
        network as shipped with the sites' power ÷ ``scale`` (voltages in pu and loadings as
        fractions are the same). [1]
    record_taps
        Record the regulators' taps each step (``tap``; OpenDSS), to solve a step again.
    tolerance
        OpenDSS's convergence tolerance (``Set Tolerance``). [pu]

    Returns
    -------
    xarray.Dataset
        On ``time`` (grid steps, by their start) and ``site``: ``grid_power`` [MW] and
        ``grid_reactive_power`` [Mvar] at the connection after every lever, ``site_voltage``
        (lowest phase) [pu], ``throughput`` [token/s], ``grid_power_open_loop`` [MW]; on
        ``time``: ``feeder_vmin`` [pu] and ``feeder_vmin_bus``, ``line_loading_max``
        [fraction] and ``line_loading_max_line``; on ``controller``: ``engaged``,
        ``battery_power`` [MW], ``battery_soc``.
        Attributes: ``tokens``, ``tokens_open_loop``, ``tokens_lost`` (a site each) [token].
    """
    runs, buses = _inputs(scenarios, buses, controllers, scale)
    n = grid_factor(runs[0], grid_step)
    net, names = attached(network, buses, tolerance)
    if record_taps and not hasattr(net, "tap_positions"):
        raise PowerModelError(f"record_taps: network {net.name} ({net.engine}) has no taps to read")
    sites, opens = [], []
    for i, (scenario, name, bus) in enumerate(zip(runs, names, buses, strict=True)):
        site, open_loop = site_runs(scenario, name, bus, controllers, i, n)
        sites.append(site)
        opens.append(open_loop)
    _same_grid(opens)
    check_carried(net, sites, scale)
    order = [c for c in controllers if c.lever is not None]
    order += [c for c in controllers if c.lever is None]
    dt = runs[0].simulation.dt * n
    trace = step_loop(net, sites, order, dt, scale, record_taps)
    ds = _dataset(net, sites, order, trace, opens[0].time.values[::n], dt, scale)
    ds.attrs["tolerance"] = float(tolerance) if net.engine == "opendss" else np.nan
    return ds


def _inputs(scenarios, buses, controllers, scale) -> tuple[list[Scenario], list[str]]:
    """The scenarios loaded and the buses, controllers and scale checked."""
    many = isinstance(scenarios, Sequence) and not isinstance(scenarios, str)
    runs = [load_scenario(s) for s in (scenarios if many else [scenarios])]
    buses = [buses] if isinstance(buses, str) else list(buses)
    if not runs or len(buses) != len(runs):
        raise PowerModelError(
            f"cosimulate: give one bus a scenario ({len(runs)} scenarios, {len(buses)} buses)"
        )
    if not (isinstance(scale, int | float) and np.isfinite(scale) and scale > 0):
        raise PowerModelError(f"cosimulate: scale must be a positive number, not {scale!r}")
    for c in controllers:
        if not isinstance(c, Controller):
            raise PowerModelError(f"controller {c!r} lacks the Controller interface")
        if not 0 <= c.site < len(runs):
            raise PowerModelError(f"controller {c.name}: site {c.site} of {len(runs)} sites")
        if c.lever is not None and c.lever not in LEVERS:
            raise PowerModelError(f"controller {c.name}: lever {c.lever!r}, one of {LEVERS}")
    if len({c.name for c in controllers}) < len(controllers):
        raise PowerModelError("cosimulate: give each controller its own name")
    return runs, buses


def _same_grid(opens: list[xr.Dataset]) -> None:
    first = opens[0].time.values
    for ds in opens[1:]:
        if not np.array_equal(ds.time.values, first):
            raise PowerModelError(
                "cosimulate: the scenarios must share one time grid (simulation.start, "
                "duration and dt)"
            )


def _gather(values: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Each step's value from the run in force then: ``values[run[k], k]``."""
    return values[run, np.arange(values.shape[1])]


def _dataset(net, sites: list[Site], order, trace: Trace, time, dt, scale) -> xr.Dataset:
    site_of = np.array([c.site for c in order], int)
    p = np.stack([_gather(s.p, trace.run[:, i]) for i, s in enumerate(sites)], axis=1)
    for j in np.flatnonzero([c.lever is None for c in order]):
        p[:, site_of[j]] -= trace.battery[:, j]
    q = np.stack([_gather(s.q, trace.run[:, i]) for i, s in enumerate(sites)], axis=1)
    rate = np.stack([_gather(s.throughput, trace.run[:, i]) for i, s in enumerate(sites)], 1)
    tokens = rate.sum(axis=0) * dt
    # summed in the same layout as the loop's, so a site no lever moved loses exactly nothing
    tokens_open = np.stack([s.throughput[0] for s in sites], axis=1).sum(axis=0) * dt
    data = {
        "grid_power": (("time", "site"), p, {"units": "MW"}),
        "grid_reactive_power": (("time", "site"), q, {"units": "Mvar"}),
        "grid_power_open_loop": (("time", "site"), np.stack([s.p[0] for s in sites], 1),
                                 {"units": "MW"}),
        "throughput": (("time", "site"), rate, {"units": "token/s"}),
        "site_voltage": (("time", "site"), trace.v_site, {"units": "pu"}),
        "feeder_vmin": ("time", trace.v_min, {"units": "pu"}),
        "feeder_vmin_bus": ("time", np.asarray(net.buses)[trace.v_min_at]),
        "line_loading_max": ("time", trace.loading, {"units": "1"}),
        "line_loading_max_line": ("time", np.asarray(net.lines or ("",))[trace.loading_at]),
        "engaged": (("time", "controller"), trace.engaged),
        "battery_power": (("time", "controller"), trace.battery, {"units": "MW"}),
        "battery_soc": (("time", "controller"), trace.soc, {"units": "1"}),
    }  # fmt: skip
    if trace.taps is not None:
        data["tap"] = (("time", "winding"), trace.taps, {"units": "pu"})
    coords = {
        "time": time,
        "site": [s.name for s in sites],
        "bus": ("site", [s.bus for s in sites]),
        "controller": [c.name for c in order],
        "controller_site": ("controller", [sites[i].name for i in site_of]),
    }
    if trace.taps is not None:
        coords["winding"] = [f"{t}.{w}" for t, w in net.tap_positions()]
    attrs = {
        "network": net.name, "engine": net.engine, "scale": float(scale), "grid_step": dt,
        "tokens": tokens.tolist(), "tokens_open_loop": tokens_open.tolist(),
        "tokens_lost": (tokens_open - tokens).tolist(), "approximation": APPROXIMATION,
    }  # fmt: skip
    return xr.Dataset(data, coords, attrs)
