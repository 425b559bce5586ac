"""The job a hall holds and the step of its parallel layout: the arithmetic the scenario derives.

Pure functions of numbers and of what they read of the layout and the job
(:class:`ParallelLayout`, :class:`TrainingJob`: a :class:`~powermodel.scenario.job.Parallelism`,
a :class:`~powermodel.scenario.job.Workload`); they import nothing of the scenario. The
validators of :class:`~powermodel.scenario.root.Scenario` call them and set what they return
(docs/model/workload.md, "parallel layout"). Stage: loading, after the tables are validated one
by one and before the checks across them.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol

import numpy as np

from powermodel.errors import ScenarioError
from powermodel.models.workload import (
    StepTimes,
    data_parallel_time,
    derived_step_time,
    layout_step,
    layout_work,
    sync_time,
)


class ParallelLayout(Protocol):
    """What the arithmetic reads of a parallel layout (``workload.parallelism``, a
    :class:`~powermodel.scenario.job.Parallelism`)."""

    reference_gpus: int
    reference_tokens: float | None
    tp: int
    pp: int
    cp: int
    virtual_stages: int
    microbatch_tokens: float
    bandwidth: float
    bytes_per_param: float
    overlap: float
    sync_time: float
    sync_per_doubling: float


# Bytes of training state a parameter in mixed-precision Adam: BF16 weights and gradients (2 + 2)
# and FP32 master weights, momentum and variance (12) [P, rajbhandari]
TRAINING_STATE_BYTES = 16.0
WEIGHT_BYTES = 2.0  # BF16 weights alone: what a job training adapters (LoRA) must hold


class Layout(NamedTuple):
    """A step of the parallel layout at ``cluster.n_gpus`` (:meth:`Scenario.layout
    <powermodel.scenario.root.Scenario.layout>`)."""

    step_time: float  # before a clock lock [s]
    shares: np.ndarray  # of each phase [1]
    dp: int  # data-parallel replicas [1]
    microbatches: float  # a replica runs each step [1]
    times: StepTimes  # work, bubble, exposed communication [s]
    inner: float  # low-power time inside the work [s]
    wait: np.ndarray  # share of the step each phase spends waiting at the barrier [1]


def fitting_layout(par: ParallelLayout, gpus: int) -> tuple[int, int, int]:
    """The largest layout within ``par``'s degrees that ``gpus`` GPUs hold, as (tp, pp, cp):
    tensor parallelism first (inside a node), then pipeline stages, then context
    parallelism."""
    tp = math.gcd(par.tp, gpus)
    pp = math.gcd(par.pp, gpus // tp)
    cp = math.gcd(par.cp, gpus // tp // pp)
    return tp, pp, cp


def whole_replicas(par: ParallelLayout, gpus: int, key: str, tokens: float, per_gpu: float) -> int:
    """Data-parallel replicas of ``gpus`` GPUs, refused unless whole: the job runs on whole
    replicas, and GPUs left over are not in it (docs/model/workload.md, "parallel layout").
    A refusal names a fix that runs: where the global batch ``tokens`` would give a replica less
    than one micro-batch, with a batch of ``per_gpu`` tokens a GPU (the reference's), at least
    one micro-batch a replica."""
    size = par.tp * par.pp * par.cp

    def batch(n: int, replicas: int) -> str:
        tokens = max(per_gpu * n, replicas * par.microbatch_tokens)
        return f"workload.tokens_per_step = {tokens:,.0f}"

    if gpus < size:
        tp, pp, cp = fitting_layout(par, gpus)
        fits = gpus // (tp * pp * cp)
        raise ScenarioError(
            f"{key} = {gpus:,} GPUs is less than one data-parallel replica of tp·pp·cp = "
            f"{par.tp}·{par.pp}·{par.cp} = {size:,} GPUs: take at least {size:,} GPUs, or give "
            f"a layout that fits, e.g. workload.parallelism.tp = {tp}, pp = {pp}"
            + (f", cp = {cp}" if par.cp > 1 else "")
            + f" ({fits:,} replica{'s' if fits > 1 else ''} of {tp * pp * cp:,} GPUs), with "
            f"{batch(gpus, fits)} (the batch in proportion)"
        )
    if gpus % size:
        below, above = gpus // size, gpus // size + 1
        short = below * par.microbatch_tokens > tokens  # a replica under a micro-batch
        raise ScenarioError(
            f"{key} = {gpus:,} GPUs is not a whole number of data-parallel replicas of "
            f"tp·pp·cp = {par.tp}·{par.pp}·{par.cp} = {size:,} GPUs: take "
            f"{below * size:,} or {above * size:,} GPUs (a cluster's spare GPUs are not in the "
            "job)"
            + (f", with {batch(below * size, below)}" if short else "")
            + ", or change workload.parallelism's tp, pp or cp"
        )
    return gpus // size


class JobFit(NamedTuple):
    """The job a hall holds (:func:`fit_job`): what changes, what the user gave, and why."""

    changes: dict[str, Any]
    """New values by dotted key, in the order they are set."""
    given: dict[str, Any]
    """The user's values of those keys (None: unset)."""
    idle_gpus: int
    """GPUs of the hall outside the job. [1]"""
    notes: list[str]
    """Each choice, a line in the user's terms."""


def fit_job(
    hall: int,
    per_node: int,
    par: ParallelLayout | None,
    scope: str,
    replica_gpus: int | None,
    tokens: float,
) -> JobFit:
    """The job ``hall`` GPUs in nodes of ``per_node`` hold; the rest of the hall idle.

    The job is the largest count of whole data-parallel replicas (tp·pp·cp GPUs of ``par``;
    with ``scope = "replica"``, whole replicas of ``replica_gpus`` too, the given one or else
    tp·pp·cp) in whole nodes within the hall. Below one replica the layout shrinks
    (:func:`fitting_layout`) and the global batch of ``tokens`` follows the GPUs
    (:func:`_batch_of`). Fewer than two replicas of a fault-tolerant job fail as one job
    (scope 'job').
    """
    changes: dict[str, Any] = {}
    given: dict[str, Any] = {}
    notes: list[str] = []
    unit, size, shrunk = per_node, None, False
    if par is not None:
        size = par.tp * par.pp * par.cp
        unit = math.lcm(size, per_node)
        if hall < unit:  # below one replica in whole nodes: the layout shrinks
            size = _shrink(par, hall, per_node, changes, given, notes)
            shrunk = True
            unit = math.lcm(size, per_node)
    replica = None if scope == "job" else replica_gpus if replica_gpus is not None else size
    if scope == "replica" and replica is not None and replica % per_node == 0:
        both = math.lcm(unit, replica)
        if hall // both >= 2:
            unit = both
        else:
            notes.append(
                f"cluster.n_gpus = {hall:,} holds fewer than two replicas of {replica:,} "
                "GPUs: a failure stops the whole job (reliability.scope = 'job')"
            )
            given["reliability.scope"], changes["reliability.scope"] = scope, "job"
    job = hall // unit * unit
    if job < hall:
        given["cluster.n_gpus"], changes["cluster.n_gpus"] = hall, job
        notes.append(_idle_note(hall, job, per_node, size))
    if par is not None:
        _batch_of(par, job, job // size, shrunk, tokens, changes, given, notes)
    return JobFit(changes, given, hall - job, notes)


def _shrink(
    par: ParallelLayout,
    hall: int,
    per_node: int,
    changes: dict[str, Any],
    given: dict[str, Any],
    notes: list[str],
) -> int:
    """The layout a hall below one replica in whole nodes runs (:func:`fitting_layout`):
    tensor parallelism kept first (inside a node), then pipeline stages, then context
    parallelism. Its tp·pp·cp GPUs. [1]"""
    tp, pp, cp = fitting_layout(par, hall // per_node * per_node)
    notes.append(
        f"cluster.n_gpus = {hall:,} holds less than one data-parallel replica of "
        f"tp·pp·cp = {par.tp}·{par.pp}·{par.cp} = {par.tp * par.pp * par.cp:,} GPUs in whole "
        f"nodes of {per_node}: the job runs workload.parallelism.tp = {tp}, pp = {pp}"
        + (f", cp = {cp}" if par.cp > 1 else "")
    )
    for key, new in (("tp", tp), ("pp", pp), ("cp", cp)):
        if getattr(par, key) != new:
            given[f"workload.parallelism.{key}"] = getattr(par, key)
            changes[f"workload.parallelism.{key}"] = new
    return tp * pp * cp


def _idle_note(hall: int, job: int, per_node: int, size: int | None) -> str:
    """The line saying the job within the hall and the GPUs idle beside it."""
    what = f"whole nodes of {per_node}"
    if size is not None:
        what = f"whole replicas of {size:,} GPUs (tp·pp·cp) in {what}"
    part = hall % per_node
    return (
        f"job {job:,} GPUs, {hall - job:,} idle in the hall: the largest job of {what} "
        f"within cluster.n_gpus = {hall:,}; the idle GPUs draw their idle power with "
        "their nodes' idle rest-of-node power through the supplies"
        + (f" ({part} GPU{'s' if part > 1 else ''} of a part node, pro rata)" if part else "")
    )


def _batch_of(
    par: ParallelLayout,
    job: int,
    dp: int,
    shrunk: bool,
    tokens: float,
    changes: dict[str, Any],
    given: dict[str, Any],
    notes: list[str],
) -> None:
    """The global batch of a job of ``job`` GPUs in ``dp`` replicas: where the layout shrank,
    or ``tokens`` would give a replica less than one micro-batch, the reference's tokens a GPU
    at the job's GPUs, at least one micro-batch a replica, as a job scaled out does [A]; the
    reference's batch kept where it was unset (the step and shares hold at it)."""
    if not shrunk and tokens >= dp * par.microbatch_tokens:
        return
    d0 = par.reference_tokens or tokens
    new = float(max(round(d0 / par.reference_gpus * job), dp * par.microbatch_tokens))
    if new == tokens:
        return
    if par.reference_tokens is None:  # the step and shares still hold at d0
        given["workload.parallelism.reference_tokens"] = None
        changes["workload.parallelism.reference_tokens"] = d0
    notes.append(
        f"workload.tokens_per_step {tokens:,.0f} becomes "
        f"{new:,.0f}: the global batch follows the job's {job:,} GPUs (the "
        f"{d0 / par.reference_gpus:,.4g} tokens a GPU of the reference's "
        f"{par.reference_gpus:,}), at least one micro-batch of "
        f"{par.microbatch_tokens:,.0f} tokens for "
        + ("its one replica" if dp == 1 else f"each of its {dp:,} replicas")
    )
    given["workload.tokens_per_step"], changes["workload.tokens_per_step"] = tokens, new


def memory_warnings(
    gpu: str, memory: float, gpus: int, per_node: int, model_params: float, adapters: bool
) -> list[str]:
    """A warning where a job's training state cannot fit the memory of its ``gpus`` GPUs of
    ``memory`` GB each, sharded over every GPU of the job at best (activations and buffers left
    out): weights, gradients and Adam's states in mixed precision, 16 bytes a parameter
    [P, rajbhandari]; the BF16 weights alone, 2 bytes, where no gradient of the weights moves
    (``adapters``: ``workload.parallelism.bytes_per_param = 0``, adapters trained, as LoRA). The
    run still shows what the layout draws at that size; no real job of that model would."""
    per = WEIGHT_BYTES if adapters else TRAINING_STATE_BYTES
    need = per * model_params / 1e9  # GB
    have = gpus * memory
    if need <= have:
        return []
    what = (
        "its BF16 weights (2 bytes a parameter; adapters trained)"
        if adapters
        else "16 bytes a parameter (weights, gradients and Adam's states in mixed precision)"
    )
    nodes = need / memory / per_node  # past any count where gpu.memory is all but zero
    more = f"{math.ceil(nodes) * per_node:,} GPUs or more" if nodes < 1e15 else "larger GPUs"
    return [
        f"the job's {gpus:,} {gpu} hold {have:,.0f} GB, and training "
        f"workload.model_params = {model_params:.3g} needs about {need:,.0f} GB for "
        f"{what}: no such job fits; the run shows what its layout would draw. Give a model "
        f"of at most workload.model_params = {have * 1e9 / per:.2g}, or {more}"
    ]


class TrainingJob(Protocol):
    """What the layout's step reads of a job (``workload``, a
    :class:`~powermodel.scenario.job.Workload`)."""

    phases: list[Any]  # each with a kind and a share
    parallelism: ParallelLayout
    tokens_per_step: float
    step_time: float | None
    model_params: float
    mfu: float


def layout_at(
    wl: TrainingJob, ref: ParallelLayout, n: int, hall_gpus: int, peak_flops: float
) -> Layout:
    """The step of the job ``wl``'s layout at ``n`` GPUs (of a hall of ``hall_gpus``), its
    reference ``ref`` the layout as the user gave it, on GPUs of ``peak_flops``.

    The step time (given, or 6·N·D at the MFU) and the phases' shares hold at the layout's
    ``reference_gpus`` and ``reference_tokens``. There they fix the work of a step and the
    low-power time inside it (the calibration, [C]); elsewhere the work scales with the
    tokens a GPU computes, while the pipeline bubble and the data-parallel communication
    follow the layout (docs/model/workload.md). Where they were measured, the step and the
    shares are returned as given.
    """
    par = wl.parallelism
    kinds = np.array([p.kind for p in wl.phases])
    given = np.array([p.share for p in wl.phases])
    n0 = par.reference_gpus
    d0, d = par.reference_tokens or wl.tokens_per_step, wl.tokens_per_step
    t0 = wl.step_time
    if t0 is None:
        t0 = derived_step_time(wl.model_params, d0, n0, peak_flops, wl.mfu)
    per_gpu, params = d0 / n0, wl.model_params  # the reference's tokens a GPU
    _, m0, c0 = replica_step(ref, n0, d0, "workload.parallelism.reference_gpus", per_gpu, params)
    dp, m, c = replica_step(par, n, d, "cluster.n_gpus", per_gpu, params)
    # the wait at the barrier lasts the same however few tokens a GPU computes
    sync0 = sync_time(n0, par.sync_time, par.sync_per_doubling)
    sync = sync_time(n, par.sync_time, par.sync_per_doubling)
    work0 = layout_work(t0 - sync0, m0, ref.pp, c0, par.virtual_stages, par.overlap)
    anchor = layout_step(work0, m0, ref.pp, c0, par.virtual_stages, par.overlap)
    low = given[kinds == "communication"].sum()
    inner = low * t0 - anchor.bubble - anchor.exposed - sync0  # low-power work time [C]
    comm = given / (low or 1.0) * (kinds == "communication")  # how they share the wait
    if sync0 > low * t0:
        raise ScenarioError(
            f"at {n0:,} GPUs the wait at the barrier (workload.parallelism.sync_time and "
            f"sync_per_doubling: {sync0:.3g} s) is longer than the communication phases' "
            f"{low * t0:.3g} s of the {t0:.3g} s step: lower it, or raise their share"
        )
    if n == n0 and d == d0:  # where they were measured: the step and shares as given
        return Layout(t0, given, dp, m, anchor, inner, comm * sync0 / t0)
    if inner < 0 or par.overlap * c0 > work0:
        raise ScenarioError(
            f"the layout cannot carry the step to cluster.n_gpus = {hall_gpus:,}: "
            f"at {n0:,} GPUs the layout's pipeline bubble ({anchor.bubble:.3g} s) and exposed "
            f"communication ({anchor.exposed:.3g} s)"
            + (f", with the wait at the barrier ({sync0:.3g} s)," if sync0 else "")
            + f" exceed the communication phases' {low * t0:.3g} s of the {t0:.3g} s step: "
            "raise their share, or workload.parallelism's virtual_stages, bandwidth or overlap"
            + (", or lower its sync_time" if sync0 else "")
        )
    scale = n0 / n * d / d0  # the tokens a GPU computes, against the reference
    times = layout_step(work0 * scale, m, par.pp, c, par.virtual_stages, par.overlap)
    step = times.step + sync
    # compute and other phases are work; communication phases share the low-power time
    shares = np.where(
        kinds == "communication",
        comm * (inner * scale + times.bubble + times.exposed + sync) / step,
        given * t0 * scale / step,
    )
    return Layout(step, shares, dp, m, times, inner * scale, comm * sync / step)


def replica_step(
    par: ParallelLayout, gpus: int, tokens: float, key: str, per_gpu: float, model_params: float
) -> tuple[int, float, float]:
    """Data-parallel replicas, the micro-batches each runs and the time of their collectives
    [s], at ``gpus`` GPUs and a global batch of ``tokens``, in the layout ``par`` of a model
    of ``model_params`` parameters; ``per_gpu`` the reference's tokens a GPU (for the fix
    :func:`whole_replicas` names), ``key`` the key a refusal names."""
    dp = whole_replicas(par, gpus, key, tokens, per_gpu)
    microbatches = tokens / (dp * par.microbatch_tokens)
    if microbatches < 1:
        raise ScenarioError(
            f"at {key} = {gpus:,} the {dp:,} data-parallel replicas get "
            f"{microbatches:.3g} micro-batches of {par.microbatch_tokens:g} tokens each: grow "
            f"the global batch to at least {dp * par.microbatch_tokens:.4g} tokens "
            "(workload.tokens_per_step, or reference_tokens), or raise tp, pp or cp"
        )
    group = dp * par.cp
    time = data_parallel_time(
        model_params, par.bytes_per_param, par.tp, par.pp, group, par.bandwidth * 1e9
    )
    return dp, microbatches, time
