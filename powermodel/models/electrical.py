"""Power conversion: server power supplies, UPS, transformers."""

from __future__ import annotations

import numpy as np


def input_power(
    output: np.ndarray,
    capacity: float,
    load: np.ndarray,
    efficiency: np.ndarray,
) -> np.ndarray:
    """Input power of a converter (server PSU, UPS, transformer) delivering ``output``.

    Parameters
    ----------
    output
        Power delivered. [W, or any unit shared with ``capacity``]
    capacity
        Installed, load-sharing capacity (a server's supplies, a UPS system, a transformer).
    load
        Published load points, fraction of capacity, increasing. [1]
    efficiency
        Published efficiency (output / input) at each load point. [1]

    Returns
    -------
    numpy.ndarray
        Input power, in the unit of ``output``.

    Notes
    -----
    The loss ``x·(1/η − 1)`` (fraction of capacity at output fraction ``x``) is interpolated
    linearly between the published points and extrapolated along the end segments. The curve passes
    through every published point; below the lowest one the extrapolated loss tends to a no-load
    loss (about 1 % of capacity for 80 PLUS Titanium), where interpolating η itself would hold it
    flat and understate light-load losses.
    """
    load = np.asarray(load, dtype=float)
    loss = load * (1.0 / np.asarray(efficiency, dtype=float) - 1.0)
    x = np.asarray(output, dtype=float) / capacity
    frac = np.asarray(np.interp(x, load, loss))
    # the end segments only where the load lies beyond the published points
    low, high = x < load[0], x > load[-1]
    frac[low] = loss[0] + (x[low] - load[0]) * (loss[1] - loss[0]) / (load[1] - load[0])
    frac[high] = loss[-1] + (x[high] - load[-1]) * (loss[-1] - loss[-2]) / (load[-1] - load[-2])
    np.maximum(frac, 0.0, out=frac)
    frac *= capacity
    return output + frac
