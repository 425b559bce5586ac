"""Dynamic-model parameters for the utility: fit the aggregate models planners use to a site's
simulated response, write them as PSS/E .dyr and PowerWorld .aux text, and compare.

Two models (:mod:`powermodel.models.loadmodel`): a PERC1-style ceasing and reconnecting load,
fitted to a voltage sag's P and Q, and RATLLE's square load oscillation, fitted to a periodic
power series. What the syntax of each file rests on, and what it cannot say, is in the file's
own comment lines and in ``docs/model/dynamic-model.md``.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

import numpy as np
import pandas as pd

from powermodel import deadline
from powermodel.errors import PowerModelError
from powermodel.models.loadmodel import (
    Oscillation,
    Perc1,
    Perc1Fit,
    fit_oscillation,
    fit_perc1,
    uniform_step,
)

__all__ = [
    "PERC1_FIELDS",
    "RATLLE_CONS",
    "SiteFit",
    "fit_site",
    "write_aux",
    "write_dyr",
    "write_oscillation_dyr",
]

# The order in which the writers list the parameters: this module's, not PowerWorld's (its
# PERC1 parameter table was not read).
PERC1_FIELDS = tuple(field.name for field in fields(Perc1))

CANNOT_EXPRESS = (
    "What these records cannot express (powermodel models or reports them; the formats do not):",
    "- a UPS that locks out after repeated sags (e.g. three in a minute) and stays on battery;",
    "- a return to the grid by hand, hours later, after such a lockout;",
    "- the battery recharge drawn on top of the load after the return;",
    "- per-phase response to an unbalanced fault (these are positive-sequence records);",
    "- different shares ceasing at different voltages (one PERC1 has one path: use several);",
    "- the training job's own power swing during and after the event (see the oscillation record).",
)


def _number(x: float) -> str:
    """A number as text that reads back to the same float to ten significant digits."""
    return f"{float(x):.10g}"


def _check_site(bus: int, load_id: str) -> None:
    if not (isinstance(bus, int | np.integer) and 0 < bus < 1_000_000):
        raise PowerModelError(f"bus must be a positive bus number below 1000000, got {bus!r}")
    if not (isinstance(load_id, str) and 0 < len(load_id) <= 2 and load_id.isalnum()):
        raise PowerModelError(f"load id must be 1-2 letters or digits, as PSS/E's, got {load_id!r}")


def write_dyr(params: Perc1, bus: int, load_id: str) -> str:
    """A PERC1-style load as a PSS/E dynamic-data (.dyr) record, in a generic form.

    Parameters
    ----------
    params
        The fitted model.
    bus
        Bus number of the load.
    load_id
        The load's identifier (1-2 characters).

    Returns
    -------
    str
        ``bus 'PERC1' 'id' con1 … con12 /`` followed by ``//`` comment lines.

    Notes
    -----
    The record syntax is the one PSS/E dynamic-data files use for library models: bus number,
    model name in single quotes, identifier, the model's constants, ``/`` closing the record
    (as in RATLLE's files read by PSS/E [ratlle]). PSS/E has no PERC1 model and PowerWorld's
    reading of a PERC1 .dyr record was not verified: the constants follow
    :data:`PERC1_FIELDS`, this module's order, and the comment lines say so. ``//`` comment
    lines follow the record as in RATLLE's ``Load_FO_Model.dyr``.
    """
    _check_site(bus, load_id)
    values = " ".join(_number(x) for x in astuple(params))
    comments = (
        "// powermodel: PERC1-style load, GENERIC FORM (not a verified PSS/E or PowerWorld record)",
        "// syntax: PSS/E dynamic data, bus 'MODEL' 'ID' constants /",
        f"// constants in powermodel's order: {' '.join(PERC1_FIELDS)}",
        "// Fcease Frecon Tap Tbp Taq Tbq Dbfl Dbfh are PowerWorld PERC1 names;",
        "// v_cease [pu] t_cease t_recon t_ramp [s] are generic (PowerWorld names not verified);",
        "// Dbfl Dbfh in Hz about the pre-event frequency",
        *(f"// {line}" for line in CANNOT_EXPRESS),
    )
    return f"{bus} 'PERC1' '{load_id}' {values} /\n" + "\n".join(comments) + "\n"


def write_aux(params: Perc1, bus: int, load_id: str) -> str:
    """A PERC1-style load as a PowerWorld auxiliary-file (.aux) DATA section, generic form.

    Parameters
    ----------
    params
        The fitted model.
    bus
        Bus number of the load.
    load_id
        The load's identifier.

    Returns
    -------
    str
        ``//`` comment lines, then ``DATA (LoadCharacteristic_PERC1, [BusNum, LoadID, …])``
        and the values in braces, one object per line.

    Notes
    -----
    The syntax is the auxiliary file's DATA section [powerworld_aux]: ``DATA (object_type,
    [list_of_fields])``, then the values of each object on its own line between ``{`` and a
    ``}`` on its own line, strings in double quotes, ``//`` starting a comment. The object type
    follows PowerWorld's naming of load characteristics (``LoadCharacteristic_LDELEC``,
    ``LoadCharacteristic_CMPLDW``, … as its object list shows); ``LoadCharacteristic_PERC1``
    itself and the parameter field names were not verified: the verified PERC1 names are used
    as field names, and the unverified parameters keep this module's generic names.
    """
    _check_site(bus, load_id)
    values = " ".join(_number(x) for x in astuple(params))
    comments = (
        "// powermodel: PERC1-style load, GENERIC FORM (field names not verified in Simulator)",
        "// syntax: PowerWorld auxiliary file, DATA (object_type, [list_of_fields]) { values }",
        "// Fcease Frecon Tap Tbp Taq Tbq Dbfl Dbfh are PowerWorld PERC1 names;",
        "// v_cease [pu] t_cease t_recon t_ramp [s] are generic (PowerWorld names not verified)",
        *(f"// {line}" for line in CANNOT_EXPRESS),
    )
    header = f"DATA (LoadCharacteristic_PERC1, [BusNum, LoadID, {', '.join(PERC1_FIELDS)}])"
    return "\n".join((*comments, header, "{", f'{bus} "{load_id}" {values}', "}")) + "\n"


# RATLLE's user-defined load-oscillation record, copied from its README's examples: the model
# name and the seven integers after it as they are, then 4 ICONs and 8 CONs [ratlle].
RATLLE_HEADER = "'USRLOD', '{id}', 'LINJBL', 12 1 4 8 0 5 0"
RATLLE_CONS = ("X", "D", "D_Fast", "Freq", "Fast_Freq", "NC", "Amp", "Amp1")


def write_oscillation_dyr(osc: Oscillation, bus: int, load_id: str, cycles: int) -> str:
    """RATLLE's PSS/E load-oscillation record (its user-defined model ``LINJBL``) [ratlle].

    Parameters
    ----------
    osc
        The fitted square oscillation.
    bus
        Bus number; RATLLE puts the oscillation on a load of its own with zero P and Q in the
        power flow, the site's base staying in the site's load record.
    load_id
        Identifier of that oscillating load.
    cycles
        Number of cycles the oscillation lasts (NC).

    Returns
    -------
    str
        The record (``Flag1..Flag4``: constant-power P and Q, monoperiodic, on P) and comments.
    """
    _check_site(bus, load_id)
    if not (isinstance(cycles, int | np.integer) and cycles > 0):
        raise PowerModelError(f"cycles must be a positive whole number, got {cycles!r}")
    cons = (osc.start, osc.duty, 0.0, osc.frequency, 0.0, cycles, osc.amplitude, 0.0)
    comments = (
        "// RATLLE load-oscillation UDM (pnnl/LL-risk-assessment, UDM/README.md)",
        "// ICONs: Flag1 Flag2 (P, Q: 0 constant power) Flag3 (0 monoperiodic) Flag4 (0 on P)",
        f"// CONs: {' '.join(RATLLE_CONS)}; Amp peak to peak in MW, on a load with zero base",
        f"// the site's own load carries the base, {_number(osc.base)} MW",
    )
    record = (
        f"{bus} {RATLLE_HEADER.format(id=load_id)}\n  0 0 0 0\n  "
        + " ".join(_number(x) for x in cons)
        + " /\n"
    )
    return record + "\n".join(comments) + "\n"


@dataclass(frozen=True)
class SiteFit:
    """Everything :func:`fit_site` found.

    Attributes
    ----------
    perc1, perc1_fit
        The fitted PERC1-style parameters and how well they reproduce the sag.
    oscillation, oscillation_rmse
        The fitted square oscillation and its re-simulation error [MW]; None without a swing.
    comparison
        One row per check: the quantity, its RMSE [MW or Mvar] and as a share of pre-event P.
    dyr, aux
        The files' text (the .dyr includes the oscillation record when there is one).
    """

    perc1: Perc1
    perc1_fit: Perc1Fit
    oscillation: Oscillation | None
    oscillation_rmse: float | None
    comparison: pd.DataFrame
    dyr: str
    aux: str


def fit_site(
    t: np.ndarray,
    v: np.ndarray,
    f: np.ndarray,
    p: np.ndarray,
    q: np.ndarray,
    swing: np.ndarray | None = None,
    bus: int = 1,
    load_id: str = "1",
    swing_dt: float | None = None,
) -> SiteFit:
    """Fit the planners' models to a site's disturbance response and write their files.

    Parameters
    ----------
    t, v, f
        Uniform time [s], voltage [pu] and frequency [Hz] at the connection; the first sample
        is before the event.
    p, q
        The site's active [MW] and reactive [Mvar] power over the event.
    swing
        Optional: the site's power in normal operation, at least two periods of its swing
        [MW], for the oscillation model.
    bus, load_id
        Where the records put the load.
    swing_dt
        The swing's step [s]; by default the event's.

    Returns
    -------
    SiteFit
    """
    t = np.asarray(t, dtype=float)
    dt = uniform_step(t)
    p0, q0 = float(np.asarray(p)[0]), float(np.asarray(q)[0])
    perc1, report = fit_perc1(t, v, f, p, q, p0, q0, check=deadline.check)
    rows = [
        ("P after the sag", report.rmse_p * p0, report.rmse_p),
        ("Q after the sag", report.rmse_q * p0, report.rmse_q),
    ]
    dyr = write_dyr(perc1, bus, load_id)
    osc, osc_rmse = None, None
    if swing is not None:
        swing_dt = dt if swing_dt is None else swing_dt
        osc, osc_rmse = fit_oscillation(swing, swing_dt)
        rows.append(("P swing (square oscillation)", osc_rmse, osc_rmse / p0))
        cycles = max(int(np.floor(len(swing) * swing_dt * osc.frequency)), 1)
        dyr += write_oscillation_dyr(osc, bus, "OS" if load_id != "OS" else "O2", cycles)
    comparison = pd.DataFrame(rows, columns=["quantity", "rmse", "rmse_share_of_p0"])
    return SiteFit(perc1, report, osc, osc_rmse, comparison, dyr, write_aux(perc1, bus, load_id))
