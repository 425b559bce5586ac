"""The ``[workload]`` keys of the fitted scenario (:func:`_workload_keys`): the step,
phases, compute level and trough depth as folded (or, the step unresolved, set to the running
mean), the edge rate, the step-to-step variation and the start-up ramp, each level checked
drawable by the written GPU (:func:`_drawable`) and less the die's leakage
(:mod:`powermodel.fit.leakage`). Called by :func:`powermodel.fit.scenario_toml.fitted_toml`.
"""

from __future__ import annotations

import math

import numpy as np

from powermodel.durations import format_duration
from powermodel.errors import PowerModelError
from powermodel.fit.leakage import LEAKED, _less_leakage
from powermodel.fit.result import Fit
from powermodel.fit.running import _mean_levels, short_step_edge_rate
from powermodel.fit.states import EDGE_SHARE
from powermodel.scenario import Scenario
from powermodel.scenario.job import Workload

MIN_SPREAD = 0.002  # a step-to-step spread below this is written as none (variation off)


def _drawable(watts: float, what: str, base: Scenario) -> float:
    """``watts`` as a fraction of the written GPU's TDP (the preset's, ``--gpu``'s or the one
    built from a GPU trace, whose TDP spans its levels), refused outside what a board draws
    (``workload.compute_power``'s bounds): a level that GPU cannot reach says the trace was read
    with the wrong GPU, GPUs per channel, unit or preset, which clipping would hide."""
    bounds = Workload.model_fields["compute_power"].metadata
    low = next(m.ge for m in bounds if hasattr(m, "ge"))
    top = next(m.le for m in bounds if hasattr(m, "le"))
    gpu = base.gpu
    if not low * gpu.tdp <= watts <= top * gpu.tdp:
        rest = " (a meter's node draws less than the preset's rest of node)" if watts < 0 else ""
        raise PowerModelError(
            f"the fitted {what} is {watts:,.1f} W per GPU{rest}, {watts / gpu.tdp:.3g} x the "
            f"{gpu.name}'s {gpu.tdp:,.0f} W TDP, outside the {low:g} to {top:g} x a board "
            "draws: check --gpus-per-node and the trace's unit, or give --gpu of this GPU (or "
            "none, to build it from a GPU trace), or fit with a preset of this GPU and node "
            "(--preset)"
        )
    return watts / gpu.tdp


def _share_at_least(watts: float, tdp: float) -> float:
    """``watts`` as a share of ``tdp`` to four places, rounded up: never below ``watts``."""
    return math.ceil(watts / tdp * 1e4) / 1e4


def _depth_floor(depth: float) -> float:
    """A trough depth to four places, rounded down: its trough never lower than ``depth``'s."""
    return math.floor(depth * 1e4) / 1e4


def _workload_keys(result: Fit, base: Scenario, put, keep, idle: float) -> None:
    """Step time, phase shares and levels, edge rate and start-up ramp; no phase is written
    under ``idle`` [W], the idle the scenario holds (a working GPU draws at least that: a
    deeper trough is bounded, and says so)."""
    step, share = result.value("step time"), result.value("compute share")
    high, low = result.value("compute level"), result.value("communication level")
    edges = None  # the edge rate an unresolved step written short needs (short_step_edge_rate)
    if step is not None and share is not None and high is not None and low is not None:
        _folded_keys(result, base, put, idle)
    else:
        edges = _unfolded_keys(result, base, put, keep, idle)
    _edge_key(result, base, put, keep, edges)
    _variation_keys(result, put, keep)
    par = base.workload.parallelism
    tdp = base.gpu.tdp
    if par is not None and par.sync_power is not None and par.sync_power * tdp < idle:
        # the preset's wait at the barrier under the idle the trace shows would not load
        put(
            "workload.parallelism.sync_power",
            _share_at_least(idle, tdp),
            f"the preset's wait at the barrier ({par.sync_power * tdp:,.0f} W) raised to the "
            "idle the scenario holds",
        )
    ramp = result.value("start-up ramp")
    if ramp is not None:
        put("workload.startup_ramp", format_duration(round(ramp, 2)), "fitted rise into running")
    else:
        keep("workload.startup_ramp", result.quantities["start-up ramp"].how)


def _folded_keys(result: Fit, base: Scenario, put, idle: float) -> None:
    """The folded step: its time, its two phases' shares, the compute level (less the die's
    leakage, :func:`~powermodel.fit.leakage._less_leakage`) and the trough depth, bounded so
    that no phase draws under ``idle`` [W]."""
    step, share = result.value("step time"), result.value("compute share")
    high, low = result.value("compute level"), result.value("communication level")
    put("workload.step_time", format_duration(round(step, 4)), "folded step time")
    _drawable(high, "compute level", base)
    phases = [
        {"name": "compute", "kind": "compute", "share": round(share, 4)},
        {"name": "communication", "kind": "communication", "share": round(1 - share, 4)},
    ]
    note = "1 - communication / compute level"

    def folded(extra: float) -> dict:  # the folded levels, less the die's leakage
        top, bottom = high - extra, low - extra
        depth = min(max(1.0 - bottom / top, 0.0), 0.99)
        if top * (1.0 - depth) < idle:  # no phase under the idle the scenario holds
            depth = max(1.0 - idle / top, 0.0)
        return {
            "workload.step_time": format_duration(round(step, 4)),
            "workload.phases": phases,
            "workload.compute_power": round(_drawable(top, "compute level", base), 4),
            "workload.trough_depth": _depth_floor(depth) if depth < 0.99 else 0.99,
        }

    extra = _less_leakage(result, base, folded)
    keys = folded(extra)
    if (high - extra) * (1.0 - min(max(1.0 - low / high, 0.0), 0.99)) < idle:
        note += (
            f", bounded: the folded communication level, {low:,.1f} W, is under the "
            f"{idle:g}-W idle the scenario holds, which a working GPU draws at least"
        )
    put(
        "workload.compute_power",
        keys["workload.compute_power"],
        f"compute level / TDP, less the {extra:+.3g} W {LEAKED}",
    )
    put("workload.trough_depth", keys["workload.trough_depth"], note)
    put("workload.phases", phases, "compute share of the folded step")


def _unfolded_keys(result: Fit, base: Scenario, put, keep, idle: float) -> float | None:
    """A step the trace does not resolve: the step written (``fit.running._unresolved_step``),
    the trough at most the bounded one (:func:`_mean_depth`), and the compute level at which the
    preset's phases average the measured running mean, less the die's leakage. Returns the edge
    rate the written step needs (:func:`~powermodel.fit.running.short_step_edge_rate`), None
    when it keeps the preset's."""
    written = result.quantities["step time"]
    if written.value is not None:  # the step the trace allows (fit._unresolved_step)
        put("workload.step_time", format_duration(round(written.value, 6)), written.how)
    else:
        keep("workload.step_time", written.how)
    mean = result.value("running mean")
    if mean is None:
        return None
    tdp = base.gpu.tdp
    depth, note = _mean_depth(result, base, idle, mean)
    if depth != base.workload.trough_depth:
        put("workload.trough_depth", round(depth, 4), note)

    def averaged(extra: float) -> dict:  # the phases at the mean, less the leakage
        compute = float(_mean_levels(base, np.array([depth]), mean - extra)[0][0])
        level = _drawable(compute * tdp, "compute level", base)
        return {"workload.trough_depth": depth, "workload.compute_power": round(level, 4)}

    averaged(0.0)  # a level no board draws is refused as measured
    extra = _less_leakage(result, base, averaged)
    put(
        "workload.compute_power",
        averaged(extra)["workload.compute_power"],
        "so that the preset's phases average the measured running mean, less the "
        f"{extra:+.3g} W {LEAKED}",
    )
    if written.value is not None:
        return short_step_edge_rate(base, written.value, mean)
    return None


def _mean_depth(result: Fit, base: Scenario, idle: float, mean: float) -> tuple[float, str | None]:
    """The trough depth written with the preset's phases at the running ``mean`` [W], and its
    note (None: the preset's, unbounded): the deepest, at most the trace's bound (``trough
    depth``, :func:`~powermodel.fit.running._bound_trough`) or the preset's, whose lowest phase
    draws at least ``idle`` [W] and whose compute phases stay within the cap."""
    tdp = base.gpu.tdp
    bound = result.quantities.get("trough depth")
    depth = base.workload.trough_depth if bound is None else bound.value
    note = None if bound is None else bound.how
    # the deepest trough, at most that, whose lowest phase draws at least idle and
    # whose compute phases, at the measured mean, stay within the cap: a GPU built
    # from a trace whose step it does not resolve has its TDP at that mean (issue 27:
    # a 250-W board's trace was refused with its compute level at 1.23 x its TDP)
    depths = np.linspace(0.0, depth, 101)
    compute, levels = _mean_levels(base, depths, mean)
    lowest = levels.min(axis=1) * tdp
    floored = float(depths[(lowest >= idle) & (compute <= 1.0)].max(initial=0.0))
    if floored < depth:
        note = (
            f"{note + '; ' if note else ''}bounded so that, at the measured running "
            f"mean, the lowest phase draws at least the {idle:g}-W idle the scenario "
            f"holds and the compute phases at most the {tdp:g}-W TDP"
        )
        depth = _depth_floor(floored)
    return depth, note


def _edge_key(result: Fit, base: Scenario, put, keep, edges: float | None) -> None:
    """The edge rate: the folded edge's, or the rate ``edges`` [fraction of TDP per s] an
    unresolved step written short needs where it is above the preset's."""
    edge = result.value("edge duration")
    high, low = result.value("compute level"), result.value("communication level")
    if edge is not None and high is not None and low is not None and edge > 0:
        put("workload.edge_rate", round((high - low) / (edge * base.gpu.tdp), 4), "folded edge")
    elif edges is not None and edges > base.workload.edge_rate:
        written = result.quantities["step time"]
        put(
            "workload.edge_rate",
            edges,
            f"unresolved: the preset's edges would outlast the {written.value:.3g}-s step "
            f"written; each made {EDGE_SHARE:g} of it",
        )
    else:
        keep("workload.edge_rate", result.quantities["edge duration"].how)


def _variation_keys(result: Fit, put, keep) -> None:
    """The step-to-step spread of the steps' lengths and levels, where one is measured."""
    cv, level_cv = result.value("step-time spread"), result.value("step-level spread")
    if cv is not None and level_cv is not None and max(cv, level_cv) >= MIN_SPREAD:
        put("workload.variation.step_cv", round(cv, 4), "spread of the step lengths")
        put("workload.variation.level_cv", round(level_cv, 4), "spread of the steps' levels")
    else:
        why = (
            f"no step-to-step spread above {MIN_SPREAD:g} measured"
            if cv is not None
            else result.quantities["step-time spread"].how
        )
        keep("workload.variation", why)
