"""The GPU a fit writes (:func:`choose_gpu`): the one named (``--gpu``, :func:`with_gpu`),
the preset's (a meter's, or a GPU trace's within its idle to TDP), or one built from the trace's
levels, the rest scaled from the preset's GPU by TDP. The last stage of
:func:`powermodel.fit.fit_cells`, on the fitted quantities.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

import numpy as np

from powermodel.durations import format_duration
from powermodel.errors import DataFileError, PowerModelError
from powermodel.fit.result import GpuChoice, Quantity
from powermodel.fit.sensor import StepResponse
from powermodel.scenario import Scenario, gpu_catalogue, load_scenario
from powermodel.scenario.catalogues import NODE_KEYS

# A GPU trace's highest sustained level is the top of its rolling mean over this long (and at
# least two sensor windows): a poll's spike is no level a board holds
SUSTAIN = 2.0  # s
SUSTAIN_QUANTILE = 0.99  # of the rolling means: the 1 % above it are the spikes it leaves out
# The preset's GPU is kept for a GPU trace whose lowest held level is at least this share of
# its idle (the H100's is 60-100 W, the catalogue's 80 W midpoint unconfirmed) and whose highest
# sustained level is at most this multiple of its TDP (NVML's average reads a little over TDP)
KEEP_IDLE = 0.5
KEEP_TDP = 1.1
MAX_BOARD = 10e3  # W: a sustained level above this is no board (gpu.tdp's bound)


def with_gpu(scenario: Scenario, gpu: str | None) -> Scenario:
    """``scenario`` on the catalogue GPU ``gpu`` (``cluster.gpu``; unchanged for None), refused
    in one line naming the catalogue when it has no such entry."""
    if gpu is None or gpu == scenario.cluster.gpu:
        return scenario
    entries = gpu_catalogue()
    if gpu not in entries:
        close = difflib.get_close_matches(gpu, entries, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PowerModelError(
            f"--gpu {gpu!r}: no such GPU in the catalogue{hint}; it has {', '.join(entries)}. "
            "Leave --gpu out to build the GPU from the trace"
        )
    # the trace's node and plant stay: only the board is another (a swap would bring the
    # catalogue GPU's node, presets/gpus.toml)
    cl = scenario.cluster
    kept = {f"cluster.{key}": _node_value(cl, key) for key in NODE_KEYS}
    return load_scenario(
        scenario, {"cluster.gpu": gpu, **kept, "cooling.plant": scenario.cooling.plant}
    )


def _node_value(cluster: Any, key: str) -> Any:
    """A cluster's value at a dotted node key (``fans.power``)."""
    for part in key.split("."):
        cluster = getattr(cluster, part)
    return cluster


def _sustained(
    times: np.ndarray, x: np.ndarray, response: StepResponse
) -> tuple[float, float, float]:
    """The highest and lowest levels a signal sustains [W]: the :data:`SUSTAIN_QUANTILE` and
    its complement of its rolling mean over :data:`SUSTAIN` (two sensor windows at least), and
    that window [s]."""
    period = float(times[1] - times[0])
    window = max(SUSTAIN, 2.0 * response.window, period)
    n = min(max(1, round(window / period)), x.size)
    c = np.concatenate(([0.0], np.cumsum(x)))
    means = (c[n:] - c[:-n]) / n
    top, bottom = np.quantile(means, (SUSTAIN_QUANTILE, 1.0 - SUSTAIN_QUANTILE))
    return float(top), float(bottom), n * period


def choose_gpu(
    times: np.ndarray,
    x: np.ndarray,
    q: dict[str, Quantity],
    response: StepResponse,
    scenario: Scenario,
    kind: str,
    named: bool,
    source: str,
) -> tuple[GpuChoice, list[str]]:
    """The GPU the fitted scenario is written for, and what to tell the user of it (the
    quantity ``GPU TDP``, added to ``q``, says which and why; resolved only when built).

    The scenario's GPU is kept where it was given (``named``), for a meter (whose per-GPU level
    comes through the preset's node), and for a GPU trace whose levels lie within the GPU's
    range: its lowest held level (the idle level, else the lowest sustained one) at least
    :data:`KEEP_IDLE` of the GPU's idle and its highest sustained level (:func:`_sustained`) at
    most :data:`KEEP_TDP` of its TDP. Otherwise the GPU is built from the trace: its TDP the
    highest sustained level (or the compute level, if higher), its idle and stalled levels the
    fitted ones, and what a trace cannot show (lowest cap, leakage, thermal resistance) scaled
    from the scenario's GPU by TDP.
    """
    gpu = scenario.gpu
    top, bottom, window = _sustained(times, x, response)
    idle_q = q["idle level"]
    lowest = idle_q.value if idle_q.resolved else bottom
    span = (
        f"{lowest:,.0f} W ({'idle' if idle_q.resolved else 'lowest sustained'}) to {top:,.0f} W "
        f"(highest sustained: the {SUSTAIN_QUANTILE:.0%} quantile of the "
        f"{format_duration(round(window, 3))} rolling mean, which a spike does not reach)"
    )
    own = f"the {gpu.name}'s idle {gpu.idle:g} W and TDP {gpu.tdp:g} W"
    if named or kind == "meter" or _spans(lowest, top, gpu.idle, gpu.tdp):
        how = _why_kept(gpu.name, own, span, named, kind)
        # the catalogue's TDP, not the trace's: reported, not resolved
        q["GPU TDP"] = Quantity("GPU TDP", gpu.tdp, "W", False, how)
        return GpuChoice(gpu.name, {}, named, how), []
    if top > MAX_BOARD:
        raise DataFileError(
            f"{source}: the highest sustained level is {top:,.0f} W per GPU, more than the "
            f"{MAX_BOARD:,.0f} W any board draws: check the trace's power unit (and, for a "
            "node's power logged as a GPU's, read it as a meter with --gpus-per-node)"
        )
    scaled = f"the {gpu.name}'s, scaled by TDP (an assumption: the trace does not show it)"
    table = _built_gpu(q, scenario, top, bottom, scaled)
    tdp, idle = table["tdp"][0], table["idle"][0]
    hint = _catalogue_hint(lowest, top)
    how = (
        f"built from the trace: its levels, {span}, lie outside {own}; TDP the highest "
        f"sustained level{' (the compute level, higher)' if tdp > math.ceil(top * 10) / 10 else ''}"
        f", the rest {scaled}{hint}"
    )
    q["GPU TDP"] = Quantity("GPU TDP", tdp, "W", True, how, "gpu.tdp")
    said = (
        f"GPU built from the trace: idle {idle:g} W, TDP {tdp:g} W (highest sustained level); "
        f"its levels lie outside {own}{hint}"
    )
    return GpuChoice(gpu.name, table, False, how), [said]


def _spans(lowest: float, top: float, idle: float, tdp: float) -> bool:
    """Whether a GPU of ``idle`` and ``tdp`` [W] spans a trace's levels, ``lowest`` to ``top``
    [W]: the lowest at least :data:`KEEP_IDLE` of its idle, the top at most :data:`KEEP_TDP` of
    its TDP."""
    return lowest >= KEEP_IDLE * idle and top <= KEEP_TDP * tdp


def _why_kept(name: str, own: str, span: str, named: bool, kind: str) -> str:
    """Why the scenario's GPU ``name`` (``own``: its idle and TDP) is kept: named, a meter's,
    or spanning the trace's levels (``span``)."""
    if named:
        return f"--gpu {name}: the catalogue's, {own}"
    if kind == "meter":
        return (
            f"the preset's {name} ({own}): a meter's per-GPU level comes through the "
            "preset's node, so its GPU is kept (--gpu names another)"
        )
    return (
        f"the preset's {name} ({own}) is kept: the trace's levels, {span}, lie "
        f"within {KEEP_IDLE:g} x its idle to {KEEP_TDP:g} x its TDP"
    )


def _built_gpu(
    q: dict[str, Quantity], scenario: Scenario, top: float, bottom: float, scaled: str
) -> dict[str, tuple[object, str]]:
    """The ``[gpu]`` keys of a GPU built from a trace whose highest and lowest sustained levels
    are ``top`` and ``bottom`` [W], each ``(value, note)``: its TDP the highest of those, the
    compute level and the running mean; its idle and stalled levels the fitted ones (else the
    scenario's GPU's shares of TDP); the rest the scenario's GPU's scaled by TDP (``scaled``
    their note)."""
    gpu = scenario.gpu
    high = q["compute level"].value if q["compute level"].resolved else top
    mean = q["running mean"].value if q["running mean"].resolved else top
    tdp = float(math.ceil(max(top, high, mean) * 10.0) / 10.0)
    ratio = tdp / gpu.tdp
    idle_q = q["idle level"]
    if idle_q.resolved:
        idle, idle_note = idle_q.value, "median idle level"
    else:
        idle = min(bottom, gpu.idle * ratio)
        idle_note = f"the lower of the lowest sustained level and the {gpu.name}'s idle share"
    idle = round(min(max(idle, 1.0), tdp), 1)
    stall_q = next(
        (q[n] for n in ("checkpoint stall level", "teardown level") if q[n].resolved), None
    )
    stalled = stall_q.value if stall_q is not None else gpu.stalled * ratio
    stall_note = "median stalled level" if stall_q else f"the {gpu.name}'s stalled share of TDP"
    return {
        "tdp": (tdp, "highest sustained level (GPU built from the trace)"),
        "idle": (idle, idle_note),
        "stalled": (round(min(max(stalled, idle), tdp), 1), stall_note),
        "power_cap_min": (round(max(gpu.power_cap_min * ratio, 1.0), 1), scaled),
        "leakage_ref": (round(gpu.leakage_ref * ratio, 1), scaled),
        # the die rises as much at this TDP as the model's GPU at its own
        "thermal_resistance": (round(gpu.thermal_resistance / ratio, 5), scaled),
    }


def _catalogue_hint(lowest: float, top: float) -> str:
    """A hint naming the catalogue's smallest GPU that spans a trace's levels, ``lowest`` to
    ``top`` [W] (:func:`_spans`); '' where none does."""
    nearest = [
        name
        for name, entry in sorted(gpu_catalogue().items(), key=lambda e: e[1]["tdp"])
        if _spans(lowest, top, entry["idle"], entry["tdp"])
    ]
    if not nearest:
        return ""
    return (
        f"; the catalogue's {nearest[0]} spans these levels: if it is that GPU, --gpu "
        f"{nearest[0]} uses it"
    )
