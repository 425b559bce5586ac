"""The point of interconnection: reactive power and the voltage change a swing causes."""

from __future__ import annotations

import numpy as np


def reactive_power(
    power: np.ndarray, capacity: float, load: np.ndarray, power_factor: np.ndarray, sign: float
) -> np.ndarray:
    """Reactive power of converters from a power-factor curve over their load.

    Parameters
    ----------
    power
        Active power drawn. [any unit, shared with ``capacity``]
    capacity
        Installed capacity the load fraction is taken over.
    load
        Load points, fraction of capacity, increasing. [1]
    power_factor
        Power factor at each point (held flat outside them). [1]
    sign
        +1 lagging (inductive, absorbs vars), −1 leading (capacitive, as the EMI filters of
        active-PFC server supplies are at light load).

    Returns
    -------
    numpy.ndarray
        ``Q = sign · P · tan(acos(pf))``, in the unit of ``power`` (vars for watts).
    """
    pf = np.interp(np.asarray(power) / capacity, load, power_factor)
    return sign * np.asarray(power) * np.sqrt(1.0 - pf * pf) / pf


def voltage_change(
    delta_p: np.ndarray | float, delta_q: np.ndarray | float, short_circuit: float, x_r: float
) -> np.ndarray:
    """Relative voltage change at the connection for a change of load.

    Parameters
    ----------
    delta_p, delta_q
        Change of active [MW] and reactive [Mvar] power drawn.
    short_circuit
        Short-circuit power of the grid at the connection. [MVA]
    x_r
        X/R ratio of the grid's Thevenin impedance. [1]

    Returns
    -------
    numpy.ndarray
        ``ΔV/V ≈ −(ΔP·R + ΔQ·X)/V² = −(ΔP·cos θ + ΔQ·sin θ)/S_sc``, ``θ = atan(X/R)``. [1]

    Notes
    -----
    The usual first-order estimate of a load step's voltage change (IEC 61000-3-7 style): exact
    enough while the change is small against the short-circuit power.
    """
    theta = np.arctan(x_r)
    return -(np.asarray(delta_p) * np.cos(theta) + np.asarray(delta_q) * np.sin(theta)) / (
        short_circuit
    )


def connection_voltage(
    load: np.ndarray, reactive: np.ndarray, short_circuit: float, x_r: float
) -> np.ndarray:
    """The voltage at the connection [p.u.] with ``load`` [MW] and ``reactive`` power [Mvar]
    drawn through a grid of ``short_circuit`` power [MVA] and X/R ratio ``x_r`` [1]: one plus
    the first-order change :func:`voltage_change`: the run's ``grid_voltage``
    (:func:`powermodel.engine.connection.at_connection`) and a campus part's
    (:func:`powermodel.analysis.part`)."""
    return 1.0 + voltage_change(load, reactive, short_circuit, x_r)
