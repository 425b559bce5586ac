"""A co-simulation's step solved again, independently: a network loaded afresh from the same
source, the regulators' control off and their taps set where the loop had them at that step
(``cosimulate(..., record_taps=True)``), the sites drawing what the loop says they drew ÷ its
scale. Its voltages against the loop's are the check of acceptance 2 (within 1e-6 pu).

Capacitors are solved as the file sets them: the shipped feeders have none a control switches
(no ``CapControl``); a network with some would need their states recorded too."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from powermodel.errors import PowerModelError
from powermodel.network import load_network


def resolve(ds: xr.Dataset, source: str | Path, steps: Sequence[int]) -> dict[str, np.ndarray]:
    """Steps of a co-simulation solved again by fresh networks.

    Parameters
    ----------
    ds
        A :func:`~powermodel.cosim.cosimulate` result with ``tap`` (``record_taps=True``).
    source
        The network's source, as ``load_network`` takes it (the loop's own).
    steps
        The grid steps to solve again.

    Returns
    -------
    dict
        ``site_voltage`` (steps, sites) and ``feeder_vmin`` (steps,) of the fresh solves, and
        ``deviation``, their largest difference from the loop's at each step. [pu]
    """
    if "tap" not in ds:
        raise PowerModelError("resolve needs the loop's taps: cosimulate(..., record_taps=True)")
    scale, sites = float(ds.attrs["scale"]), [str(s) for s in ds.site.values]
    site_v, feeder = np.full((len(steps), len(sites)), np.nan), np.full(len(steps), np.nan)
    for row, k in enumerate(steps):
        net = load_network(source)
        net.command("Set ControlMode=OFF")
        net.command(f"Set Tolerance={float(ds.attrs['tolerance'])!r}")
        for winding, tap in zip(ds.winding.values, ds.tap.values[k], strict=True):
            transformer, w = str(winding).rsplit(".", 1)
            net.command(f"Transformer.{transformer}.wdg={w} Tap={float(tap)!r}")
        for site, bus in zip(sites, ds.bus.values, strict=True):
            net.attach(site, str(bus))
        p, q = ds.grid_power.values[k] / scale, ds.grid_reactive_power.values[k] / scale
        solution = net.solve({s: (p[i], q[i]) for i, s in enumerate(sites)})
        site_v[row] = list(solution.site_voltage.values())
        feeder[row] = min(v for v in solution.vmin.values() if v > 0)
    loop_v = ds.site_voltage.values[list(steps)]
    deviation = np.maximum(
        np.abs(site_v - loop_v).max(axis=1), np.abs(feeder - ds.feeder_vmin.values[list(steps)])
    )
    return {"site_voltage": site_v, "feeder_vmin": feeder, "deviation": deviation}
