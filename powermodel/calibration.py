"""Calibrated coefficients: how each is recomputed from the figure it was fitted to."""

from __future__ import annotations

import numpy as np

from powermodel.analysis import diurnal_swing
from powermodel.engine.derive import derive
from powermodel.engine.timeline import recoveries, startup
from powermodel.models import electrical, events
from powermodel.scenario import Scenario, load_scenario
from powermodel.simulate import simulate


def exposure_gpu_hours(scenario: Scenario) -> float:
    """Running GPU-hours over which the scenario's interruption counts were observed.

    The published counts (e.g. Llama 3 Table 5: 419 unexpected and 47 planned in 54 days) were seen
    in wall-clock time that includes every recovery. Rates per *running* GPU-hour need the up time:
    ``up = duration − start-up − Σ count·down time`` (renewal balance), with the scenario's own
    recovery times. The result goes into ``reliability.exposure_gpu_hours``.
    """
    derived = derive(scenario)
    rel = scenario.reliability
    counts = np.array([c.count for c in rel.causes] + [rel.planned_count])
    downtimes = np.array([r.duration for r in recoveries(scenario, derived)])
    start = sum(d for _, d in startup(scenario, derived))
    up = events.expected_up_time(scenario.simulation.duration, start, counts, downtimes)
    return scenario.cluster.n_gpus * up / 3600.0


# Llama 3 paper [P, llama3] §3.3.4: "a diurnal 1-2% throughput variation based on time-of-day".
DIURNAL_SWING_TARGET = 0.015  # the middle of 1-2 %
# A July week at the reference site, at the plant's step; failures off so that the fit is smooth
# in the coefficient (the hour-of-day means over running time do not depend on them).
CALIBRATION_WEEK = {
    "simulation.start": "2024-07-08T04:00:00",  # local midnight, EDT
    "simulation.duration": "7d",
    "simulation.dt": "1min",
    "reliability.rate_scale": 0.0,
}


def diurnal_swing_with(scenario: Scenario, coefficient: float) -> float:
    """Hour-of-day swing of throughput over the calibration week with a leakage coefficient."""
    week = load_scenario(scenario, {**CALIBRATION_WEEK, "gpu.leakage_coefficient": coefficient})
    return diurnal_swing(simulate(week))[0]


def leakage_coefficient(scenario: Scenario, target: float = DIURNAL_SWING_TARGET) -> float:
    """The leakage temperature coefficient [1/K] that gives the Llama 3 diurnal throughput swing.

    Solves ``swing(k) = target`` for the scenario's site, plant and GPUs over a July week; the
    result goes into the GPU catalogue as ``leakage_coefficient`` (a calibrated coefficient).
    """
    from scipy.optimize import brentq  # noqa: PLC0415 - scipy's import is paid by what uses it

    return float(brentq(lambda k: diurnal_swing_with(scenario, k) - target, 0.0, 0.08, xtol=1e-5))


# Meta's fleet PUE [S, meta_datacenters]: 1.08; 1.07-1.09 by site, for the reference plant's fans.
PUE_TARGET = 1.08
CALIBRATION_YEAR = {
    "simulation.start": "2024-01-01T00:00:00",
    "simulation.duration": "365d",
    "simulation.dt": "1min",
}


def annual_pue_with(scenario: Scenario, fan_fraction: float) -> float:
    """Annual PUE of the scenario's site and plant with a given air-mover fraction."""
    year = load_scenario(scenario, {**CALIBRATION_YEAR, "cooling.fan_fraction": fan_fraction})
    ds = simulate(year)
    return float(ds["facility_power"].sum() / ds["it_power"].sum())


def fan_fraction(scenario: Scenario, target: float = PUE_TARGET) -> float:
    """Air-mover power at design over design heat [1] that gives the target annual PUE.

    The outside-air plant has no chillers: beyond the electrical chain, its overhead is mostly its
    fans, the one plant figure no source gives. Calibrated on Meta's published fleet PUE.
    """
    from scipy.optimize import brentq  # noqa: PLC0415 - scipy's import is paid by what uses it

    return float(brentq(lambda f: annual_pue_with(scenario, f) - target, 0.0, 0.3, xtol=1e-5))


# 80 PLUS Titanium, 230 V internal redundant [P, titanium_80plus]: the least a certified supply
# does at 10 / 20 / 50 / 100 % load.
TITANIUM_LOAD = (0.1, 0.2, 0.5, 1.0)
TITANIUM_EFFICIENCY = (0.90, 0.94, 0.96, 0.91)


def psu_loss_scale(
    node_dc: np.ndarray,
    node_ac: np.ndarray,
    capacity: float,
    load: tuple[float, ...] = TITANIUM_LOAD,
    efficiency: tuple[float, ...] = TITANIUM_EFFICIENCY,
) -> float:
    """Scale on a supply curve's losses that gives measured AC and DC node power [1].

    Parameters
    ----------
    node_dc, node_ac
        Mean node power on the DC and the AC side of the supplies, one value per measured
        condition (each weighted alike). [W]
    capacity
        Installed, load-sharing supply capacity per node. [W]
    load, efficiency
        The curve whose shape is kept (80 PLUS Titanium by default).

    Notes
    -----
    The loss of :func:`powermodel.models.electrical.input_power` is linear in a scale ``k`` on
    every point's loss ``x·(1/η − 1)``, so ``k = Σ(AC − DC) / Σ loss(DC)``. The reference's
    ``cluster.psu.efficiency`` is :func:`scaled_efficiency` of the Titanium points with ``k``
    from the MLPerf Training v4.0 AC and DC logs [D, mlperf_training_v4_smc].
    """
    dc = np.asarray(node_dc, dtype=float)
    loss = electrical.input_power(dc, capacity, np.array(load), np.array(efficiency)) - dc
    return float(np.sum(np.asarray(node_ac, dtype=float) - dc) / np.sum(loss))


def scaled_efficiency(
    scale: float,
    load: tuple[float, ...] = TITANIUM_LOAD,
    efficiency: tuple[float, ...] = TITANIUM_EFFICIENCY,
) -> np.ndarray:
    """Efficiency at each load point with every loss scaled by ``scale``:
    ``x / (x + scale·x·(1/η − 1))`` [1]."""
    x, eta = np.asarray(load, dtype=float), np.asarray(efficiency, dtype=float)
    return x / (x + scale * x * (1.0 / eta - 1.0))


# The node's own meter: MLPerf's node logs read the node, not the fabric or the storage; a steady
# running window, the die already at its running temperature (no start-up to cool it).
NODE_METER = {
    "simulation.duration": "5min",
    "reliability.rate_scale": 0.0,
    "workload.startup_time": "0s",
    "workload.startup_ramp": "0s",
    "cluster.network_power": 0.0,
    "cluster.storage_power_per_gpu": 0.0,
}


def running_node_power(scenario: Scenario, overrides: dict | None = None) -> float:
    """Mean AC power of one node while the job runs, as its own meter reads it [W]."""
    sc = load_scenario(scenario, {**NODE_METER, **(overrides or {})})
    ds = simulate(sc)
    running = ds["job_state"].values == events.State.RUNNING
    return float(ds["it_power"].values[running].mean()) * 1e6 / sc.cluster.n_nodes


def sync_law(tokens_per_gpu: np.ndarray, n_gpus: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Work, wait at the barrier on one GPU and what a doubling adds to it, from measured steps.

    Parameters
    ----------
    tokens_per_gpu
        Tokens each GPU computes a step, one value per measured job; the first is the reference.
    n_gpus
        GPUs of each job. [1]
    steps
        Measured step of each job. [s]

    Returns
    -------
    numpy.ndarray
        ``(work, base, per_doubling)`` [s]: the work of a step at the first job's tokens a GPU,
        and :func:`~powermodel.models.workload.sync_time`'s coefficients.

    Notes
    -----
    Least squares on ``t = λ·work + base + per_doubling·log2 n``, ``λ`` the tokens a GPU computes
    against the first job's; exact with three jobs. For NeMo's Llama 2 70B LoRA on 1, 8 and 64
    nodes [D, mlperf_training_v4_smc] the preset ``llama2-70b-lora-h100`` carries the result.
    """
    tokens = np.asarray(tokens_per_gpu, dtype=float)
    design = np.c_[tokens / tokens[0], np.ones(tokens.size), np.log2(np.asarray(n_gpus, float))]
    return np.linalg.lstsq(design, np.asarray(steps, dtype=float), rcond=None)[0]


def wait_levels(
    scenario: Scenario, sizes: list[dict], node_ac: np.ndarray, start: tuple[float, float]
) -> np.ndarray:
    """Trough depth and the wait's level [fraction of TDP] that give two measured running node
    powers (:func:`running_node_power`, ``sizes`` the overrides of each job, ``node_ac`` [W]).

    Newton's method from ``start`` on the two unknowns, in which the running power is affine but
    for the supplies' curve: three steps reach 1e-6 W.
    """
    target = np.asarray(node_ac, dtype=float)

    def power(x: np.ndarray) -> np.ndarray:
        keys = {"workload.trough_depth": x[0], "workload.parallelism.sync_power": x[1]}
        return np.array([running_node_power(scenario, {**size, **keys}) for size in sizes])

    x, h = np.array(start, dtype=float), 1e-3
    for _ in range(3):
        now = power(x)
        jacobian = np.c_[(power(x + [h, 0.0]) - now) / h, (power(x + [0.0, h]) - now) / h]
        x = x + np.linalg.solve(jacobian, target - now)
    return x


# NLR's profiles of MLCommons' reference LoRA job [S, vercellino_genai]: job power (the GPUs'
# NVML power and the CPUs' RAPL power) at 0.2 s, from launch; the preset
# llama2-70b-lora-zero3-h100 is calibrated on the 16-node run (tests/test_scale_laws.py)
ZERO3 = "llama2-70b-lora-zero3-h100"
NLR_DT = 0.2  # s: the profiles' aggregation step
# W a GPU: the CPUs' share of the job power (their RAPL power as the source sums it), taken as
# constant: the 16-node run's 95th percentile (751.9 W a GPU) less the model's GPU in the
# backward (708.9 W, which holds the engine's warm-die leakage over the cap) [C]
NLR_CPUS = 43.0
# The job's end, after its last step: 20 s at 188.5 W a GPU with the CPUs, 145.5 W without
# (the adapters saved, the processes exiting), the 16-node run's last drop [D, vercellino_genai]
NLR_END = (20.0, 145.5)


def nlr_profile(
    nodes: int, seconds: float, startup: float | None = None, overrides: dict | None = None
) -> np.ndarray:
    """The ZeRO-3 LoRA job on ``nodes`` nodes of 4 GPUs (a sequence a GPU a step) from launch
    over ``seconds``, as NLR's profiles measure it: at 0.2 s, per GPU, with the CPUs' share. [W]

    ``startup`` [s] is the launch to the first step, the preset's 312 s if None (the weights'
    read and the ramp into training keep their lengths, the start-up before them gives); the
    last :data:`NLR_END` seconds are the job's end. The run goes to the whole minute the plant's
    step needs and is cut to ``seconds``; failures are off (the profiles' runs had none)."""
    fixed = {"cluster.n_gpus", "cluster.gpus_per_node", "workload.tokens_per_step"}
    fixed |= {"simulation.duration", "simulation.dt", "reliability.rate_scale"}
    if not (isinstance(nodes, (int, np.integer)) and nodes >= 1):
        raise ValueError(f"nlr_profile() needs a whole number of nodes, at least 1, not {nodes!r}")
    if not (np.isfinite(seconds) and seconds >= NLR_END[0] + NLR_DT):
        raise ValueError(
            f"nlr_profile() needs a run of at least {NLR_END[0] + NLR_DT:g} s (its end is "
            f"{NLR_END[0]:g} s), not {seconds!r}"
        )
    if set(overrides or {}) & fixed:
        raise ValueError(f"nlr_profile() sets {', '.join(sorted(fixed))} itself")
    n = 4 * nodes
    sc = load_scenario(
        ZERO3,
        {
            "cluster.n_gpus": n,
            "workload.tokens_per_step": n * 8192,
            "simulation.duration": f"{60 * int(np.ceil(seconds / 60))}s",
            "simulation.dt": f"{NLR_DT * 1000:g}ms",
            "reliability.rate_scale": 0.0,
            **(overrides or {}),
        },
    )
    if startup is not None:
        fixed = sc.workload.startup_ramp + derive(sc).reload_time
        if not (np.isfinite(startup) and startup >= fixed):
            raise ValueError(
                f"nlr_profile()'s startup is launch to the first step, at least the weights' "
                f"read and the ramp into training ({fixed:.4g} s), not {startup!r}"
            )
        sc = load_scenario(sc, {"workload.startup_time": f"{startup - fixed!r}s"})
    gpu = simulate(sc)["gpu_power"].to_numpy()[: round(seconds / NLR_DT)] * 1e6 / n
    gpu[gpu.size - round(NLR_END[0] / NLR_DT) :] = NLR_END[1]
    return gpu + NLR_CPUS
