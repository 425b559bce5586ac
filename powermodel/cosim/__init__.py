"""Co-simulation: sites and a power-flow network stepped together, controllers between them
(issue 31). Above the engine (:mod:`powermodel.simulate`) and the networks
(:mod:`powermodel.network`), below the CLI and the dashboard.

    from powermodel.cosim import VoltageCap, cosimulate
    site = load_scenario("llama3-405b-8k-h100", {"simulation.duration": "1h",
                                                 "cluster.n_gpus": 65536})   # 81 MW
    ds = cosimulate(site, "ieee123", "57",
                    [VoltageCap(400.0, v_on=0.956, v_off=0.965, hold=60.0)], scale=12.0)
    ds.site_voltage, ds.throughput, ds.attrs["tokens_lost"]   # 3 s here, with the imports

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
solution). An 81-MW site at bus 57 of the 4.16-kV IEEE 123-bus feeder (3.5 MW of its own load)
runs at ``scale=12``, 6.8 MW of the feeder as shipped (tests/test_cosim.py); at ``scale=1`` it is
refused before the loop, naming the most the bus carries (15.7 MW there) and the scale that
would carry it. :func:`resolve` solves steps again on fresh networks (the check that the loop's
voltages are the power flow's).

Engines: the network's own. The shipped feeders (IEEE 13, 34, 123) are OpenDSS's: unbalanced
and per phase, with regulators whose taps a time series carries, about 0.3 ms a step on the
123-bus feeder here; pandapower's (CIGRE MV, IEEE 39, 118) are balanced, 9-18 ms a step, for a
coarser ``grid_step``. OpenDSS networks must be solved from the main thread
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
