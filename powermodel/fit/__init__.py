"""Calibration from a user's own telemetry: detect a training job's states in a measured trace,
estimate each state's level and the job's timing through the sensor chain that recorded it, and
write a scenario that extends a preset with the fitted values.

A GPU trace (NVML, DCGM) gives each GPU's board power; a node, rack or PDU meter gives the AC
power of the nodes behind it, from which a per-GPU level follows only through the preset's PSU
curve and rest-of-node power (``--gpus-per-node``). Everything is estimated on the *sensor's*
view: a quantity that the chain's averaging hides (a step shorter than about four averaging
windows, an edge faster than a quarter window) is reported as unresolved and left at the preset's
value, while what the averaging keeps exactly (the mean running level) is still fitted.

The stages, one module each, in the order :func:`fit` runs them (``pipeline``, the driver):

- ``trace``: the trace on a uniform grid as per-GPU power; a meter's through the node;
- ``sensor``: the chain the trace was read through, its step response, what it resolves;
- ``timeline``: the job's states as segments, and the samples each holds;
- ``states``: samples into bands, runs into states, the boundaries between them;
- ``idle``: held spells told idle or a pause; a meter's rest of node in each state;
- ``fold``: epoch folding, the two-level step through the chain, the alias test;
- ``running``: the running state's step, shares, levels, edges and spread, or the step
  written where the trace does not resolve it;
- ``timing``: start-up ramps, checkpoints, stalls, failures, start-ups and the job's end;
- ``gpu``: the GPU written: the preset's, the one named, or one built from the trace;
- ``result``: the fitted quantities and the :class:`Fit` they make;
- ``leakage``: the die's leakage over the trace's running, taken off its levels;
- ``workload_keys`` and ``scenario_toml``: the scenario TOML written back.
"""

from powermodel.fit.gpu import choose_gpu, with_gpu
from powermodel.fit.pipeline import REFERENCE, fit, fit_cells
from powermodel.fit.result import Fit, GpuChoice, Quantity, summary
from powermodel.fit.scenario_toml import fitted_toml
from powermodel.fit.sensor import chain_of, step_response
from powermodel.fit.states import detect
from powermodel.fit.timeline import Timeline, well_formed
from powermodel.fit.trace import MAX_CELLS, MAX_CHANNELS, per_gpu_signal

__all__ = [
    "MAX_CELLS",
    "MAX_CHANNELS",
    "REFERENCE",
    "Fit",
    "chain_of",
    "choose_gpu",
    "GpuChoice",
    "Quantity",
    "Timeline",
    "detect",
    "fit",
    "fit_cells",
    "fitted_toml",
    "per_gpu_signal",
    "step_response",
    "summary",
    "well_formed",
    "with_gpu",
]
