"""Co-simulation: sites and a power-flow network stepped together, controllers between them
(issue 31). Above the engine (:mod:`powermodel.simulate`) and the networks
(:mod:`powermodel.network`), below the CLI and the dashboard.

    from powermodel.cosim import VoltageCap, cosimulate
    ds = cosimulate("llama3-405b-16k-h100", "ieee123", "67",
                    [VoltageCap(450.0, v_on=0.95, v_off=0.97, delay=5.0)], scale=20.0)
    ds.site_voltage, ds.throughput, ds.attrs["tokens_lost"]

How a step goes. Each site's scenario is simulated once as given (the open loop: with no
controller the co-simulation's site outputs are this run's, bit for bit) and once more per
distinct cap setting its controllers use. Then, each grid step ``k``: the caps decide from the
voltages of step ``k - 1`` (one step of delay) and a site whose cap is engaged takes that step's
power, reactive power and throughput from its capped run; batteries add their power; the network
is solved once with every site's draw, from the state the step before left (regulator taps move
as in a time series); its voltages go to the next step.

Approximations, stated: a cap's effect is its whole-run simulation's at that step (firmware
caps act within about a second, faster than a grid step; the capped run keeps the same seed, so
the same failures, restarts and checkpoint times, but its iteration phase is its own, as its
step time is longer). The networks shipped have no frequency: controllers read voltage only.
``scale`` sizes the network: the feeder's topology and per-unit impedances at ``scale`` times its
power, solved as the feeder as shipped with the sites' power ÷ ``scale`` (the same per-unit
solution), so a 100-MW site on the 4.16-kV IEEE 123-bus feeder (about 3.5 MW of its own load) is
``scale=40`` or so. A site the network cannot carry at all is refused before the loop, naming
the most it carries. :func:`resolve` solves steps again on fresh networks (the check that the
loop's voltages are the power flow's). OpenDSS networks must be solved from the main thread
(:mod:`powermodel.network.opendss`).
"""

from powermodel.cosim.api import cosimulate
from powermodel.cosim.controllers import (
    Action,
    Controller,
    Measured,
    RampBattery,
    VoltageBattery,
    VoltageCap,
)
from powermodel.cosim.verify import resolve

__all__ = [
    "Action",
    "Controller",
    "Measured",
    "RampBattery",
    "VoltageBattery",
    "VoltageCap",
    "cosimulate",
    "resolve",
]
