"""The training iteration: step time, per-GPU power waveform, group offsets, aggregation.

A waveform is a periodic function of the iteration phase ``φ ∈ [0, 1)`` held as the exact mean over
each of ``n_cells`` equal cells. Everything downstream integrates these piecewise-constant cells,
so energy is the same at any output resolution.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

N_CELLS = 4096


def derived_step_time(
    model_params: float,
    tokens_per_step: float,
    n_gpus: int,
    peak_flops: float,
    mfu: float,
) -> float:
    """Time of one training step from the 6·N·D rule.

    Parameters
    ----------
    model_params
        Parameters of the model. [1]
    tokens_per_step
        Tokens in the global batch. [token]
    n_gpus
        GPUs in the job. [1]
    peak_flops
        Dense BF16 peak of one GPU. [FLOP/s]
    mfu
        Model FLOPs utilisation. [1]

    Returns
    -------
    float
        Step time. [s]

    Notes
    -----
    ``t = 6·N·D / (n_gpus · peak · MFU)``: 6 FLOP per parameter per token for the forward and
    backward passes. It leaves out attention's quadratic term, activation recomputation and any
    work the MFU figure does not count; the MFU absorbs pipeline bubbles and exposed communication.

    References
    ----------
    .. [llama3] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024),
       Table 4. https://arxiv.org/abs/2407.21783
    """
    return 6.0 * model_params * tokens_per_step / (n_gpus * peak_flops * mfu)


# Compute-phase power of a training job, fraction of TDP, at two model sizes [1], a default [A]:
# measured runs do not order by model size (docs/model/workload.md). A 405e9-parameter model at
# high MFU holds its GPUs at the power cap [P, choukse]; the low end of the H100 results of MLPerf
# Training v4.0, 0.7 kW a GPU of AC with the rest of the server and the network [D,
# mlperf_training_v4], placed at 1e9 parameters [A], is 686 W DC through the supplies' measured
# 1.02 [D, mlperf_training_v4_smc]; less the rest of an immersion-cooled node without fans
# ((2.6 - 0.6 kW) / 8) and 30 W of network it leaves 406 W a GPU on average, 0.58 of TDP, which
# the reference's iteration (compute 67.5 % of the step, communication 30 % lower: 0.9025 of the
# compute level) reaches with compute at 0.64.
LARGE_MODEL = (405e9, 1.0)
SMALL_MODEL = (1e9, 0.64)


def running_level(model_params: float) -> float:
    """Compute-phase GPU power of a training job of a given model size, fraction of TDP.

    Parameters
    ----------
    model_params
        Parameters of the model. [1]

    Returns
    -------
    float
        Compute-phase power, fraction of TDP, between 0.64 and 1. [1]

    Notes
    -----
    Log-linear in the model size between two anchors, held at either end:

    ``c = c_s + (c_l − c_s) · ln(N / N_s) / ln(N_l / N_s)``, clipped to ``[c_s, c_l]``

    with ``(N_l, c_l) = (405e9, 1)``, the Llama 3 405B job whose compute phases sit at the power
    cap [choukse]_, and ``(N_s, c_s) = (1e9, 0.64)``, the low end of the MLPerf Training v4.0
    H100 power results [mlperf_training_v4]_ less the rest of the node and the network. Which
    benchmark sits at which end is not resolved there: the law in model size between the two is
    an assumption, and the anchors' range (0.64-1) goes under the reference's sensitivity.

    References
    ----------
    .. [choukse] Choukse, E., Warrier, B., Heath, S., et al. (Microsoft, OpenAI, NVIDIA), "Power
       Stabilization for AI Training Datacenters", arXiv:2508.14318 (2025).
       https://arxiv.org/abs/2508.14318
    .. [mlperf_training_v4] MLCommons, "MLPerf Training v4.0 results (power)", MLCommons
       benchmark results (2024). https://mlcommons.org/benchmarks/training/
    """
    (n_l, c_l), (n_s, c_s) = LARGE_MODEL, SMALL_MODEL
    share = np.log(model_params / n_s) / np.log(n_l / n_s)
    return float(np.clip(c_s + (c_l - c_s) * share, c_s, c_l))


class StepTimes(NamedTuple):
    """One training step of a parallel layout, in parts. [s]"""

    work: float  # the micro-batches' work, at compute and at low power
    bubble: float  # pipeline fill and drain
    exposed: float  # data-parallel communication not hidden behind the work

    @property
    def step(self) -> float:
        """Step time. [s]"""
        return self.work + self.bubble + self.exposed


def data_parallel_time(
    model_params: float,
    bytes_per_param: float,
    tp: int,
    pp: int,
    group: int,
    bandwidth: float,
) -> float:
    """Time of a step's data-parallel collectives on the scale-out network.

    Parameters
    ----------
    model_params
        Parameters of the model. [1]
    bytes_per_param
        Bytes each parameter moves over the data-parallel collectives in a step: 4 for FP32
        gradients reduce-scattered plus 2 for BF16 parameters all-gathered in Llama 3's FSDP. [B]
    tp, pp
        Tensor- and pipeline-parallel degrees: a GPU holds ``1/(tp·pp)`` of the parameters. [1]
    group
        GPUs in a data-parallel group (``dp·cp``). [1]
    bandwidth
        Scale-out bandwidth of one GPU, each way. [B/s]

    Returns
    -------
    float
        Time of the collectives if nothing overlapped them. [s]

    Notes
    -----
    ``t = (N · b / (tp·pp)) · (g − 1)/g / B``: a ring reduce-scatter or all-gather of a buffer
    moves ``(g − 1)/g`` of it through every GPU's link, an all-reduce twice that
    (``2 (g − 1)/g``, the bus-bandwidth factor of [nccl_tests]_); ``b`` counts both of FSDP's
    collectives [llama3]_. The latency term is left out: tens of microseconds a hop [llama3]_ over
    a ring of ``g`` GPUs and a few dozen collectives add some tens of milliseconds at ``g`` = 128,
    against 0.38 s for Llama 3's 19 GB a GPU a step at 50 GB/s, and overlap as the rest does.

    References
    ----------
    .. [llama3] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024),
       §3.3.1-3.3.2. https://arxiv.org/abs/2407.21783
    .. [nccl_tests] NVIDIA, "Performance reported by NCCL tests", nccl-tests,
       doc/PERFORMANCE.md (2024). https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
    """
    return model_params * bytes_per_param / (tp * pp) * (group - 1) / group / bandwidth


def layout_step(
    work: float,
    microbatches: float,
    pp: int,
    communication: float,
    virtual_stages: int = 1,
    overlap: float = 0.0,
) -> StepTimes:
    """A training step of a pipelined, data-parallel layout: work, pipeline bubble and exposed
    communication.

    Parameters
    ----------
    work
        Time of the micro-batches' forward and backward passes on one GPU, with no bubble. [s]
    microbatches
        Micro-batches a data-parallel replica runs each step. [1]
    pp
        Pipeline stages. [1]
    communication
        Time of the step's data-parallel collectives (:func:`data_parallel_time`). [s]
    virtual_stages
        Model chunks a pipeline stage holds (interleaved schedule). [1]
    overlap
        Share of the communication hidden behind the work. [1]

    Returns
    -------
    StepTimes
        Work, bubble and exposed communication. [s]

    Notes
    -----
    The bubble is the interleaved schedule's ``(pp − 1)/(v·m)`` of the work [llama3]_
    [narayanan]_; at a fixed global batch ``m`` falls as ``1/dp`` while the work falls as ``1/n``,
    so the bubble lasts the same at any cluster size. The exposed communication is
    ``c − min(o·c, w)``: what overlaps is hidden, but never more than the work it hides behind.

    References
    ----------
    .. [llama3] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024),
       §3.3.2. https://arxiv.org/abs/2407.21783
    .. [narayanan] Narayanan, D., Shoeybi, M., Casper, J., et al., "Efficient Large-Scale
       Language Model Training on GPU Clusters Using Megatron-LM", Proc. SC '21 (2021), §2.2.2.
       https://doi.org/10.1145/3458817.3476209
    """
    bubble = (pp - 1) / (virtual_stages * microbatches) * work
    return StepTimes(work, bubble, communication - min(overlap * communication, work))


def layout_work(
    step_time: float,
    microbatches: float,
    pp: int,
    communication: float,
    virtual_stages: int = 1,
    overlap: float = 0.0,
) -> float:
    """The work of a step whose length is known: :func:`layout_step` solved for ``work``.

    Parameters are those of :func:`layout_step`, with ``step_time`` [s] the step's length.

    Returns
    -------
    float
        Work. [s]

    Notes
    -----
    ``w = (t − (1 − o)·c) / (1 + (pp − 1)/(v·m))``, valid while ``o·c ≤ w`` (the caller checks).
    """
    exposed = (1.0 - overlap) * communication
    return (step_time - exposed) / (1.0 + (pp - 1) / (virtual_stages * microbatches))


def sync_time(n_gpus: int, base: float, per_doubling: float) -> float:
    """Time of a step spent waiting at a barrier, however few tokens a GPU computes.

    Parameters
    ----------
    n_gpus
        GPUs of the job, all of which synchronise every step. [1]
    base
        The wait of one GPU alone. [s]
    per_doubling
        What each doubling of the GPUs adds to it. [s]

    Returns
    -------
    float
        The wait, ``base + per_doubling · log2(n_gpus)``. [s]

    Notes
    -----
    Every step ends at a barrier: host-side launch and scheduling, the optimizer's step, the
    reductions of the gradient norm and of FP8 scales over all GPUs, whose latency grows with the
    rounds of a tree or ring, ``log2 n`` [nccl_tests]_. It does not shrink with the tokens a GPU
    computes, so a job whose batch per GPU falls (strong scaling) spends a growing share of each
    step in it (Amdahl's law), with its GPUs near the level at which they wait in a blocked
    collective. Calibrated [C] on the steps of NeMo's Llama 2 70B LoRA on H100 in MLPerf
    Training v4.0 at 1, 8 and 64 nodes [mlperf_training_v4_smc]_ (``base`` 0.0641 s,
    ``per_doubling`` 0.0204 s: 0.125, 0.186 and 0.247 s of steps of 3.838, 0.651 and 0.712 s); the
    running node power it then predicts is checked against the same runs' power logs
    (tests/test_scale_laws.py).

    References
    ----------
    .. [nccl_tests] NVIDIA, "Performance reported by NCCL tests", nccl-tests,
       doc/PERFORMANCE.md (2024). https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
    .. [mlperf_training_v4_smc] Sustainable Metal Cloud; MLCommons, "MLPerf Training v4.0
       results: smc-ac-power and smc-dc-power submissions",
       github.com/mlcommons/training_results_v4.0 (Apache-2.0) (2024).
       https://github.com/mlcommons/training_results_v4.0
    """
    return base + per_doubling * float(np.log2(n_gpus))


def phase_levels(
    kinds: list[str],
    powers: list[float | None],
    compute_power: float,
    trough_depth: float,
) -> np.ndarray:
    """Per-phase GPU power as a fraction of TDP. [1]

    Compute phases draw ``compute_power``; communication phases
    ``compute_power·(1 − trough_depth)``; other phases their own ``power`` (all as fractions of
    TDP, ``trough_depth`` a share [1]).
    """
    by_kind = {"compute": compute_power, "communication": compute_power * (1.0 - trough_depth)}
    return np.array([by_kind[k] if k in by_kind else p for k, p in zip(kinds, powers, strict=True)])


def iteration_waveform(
    shares: np.ndarray,
    levels: np.ndarray,
    step_time: float,
    edge_rate: float,
    n_cells: int = N_CELLS,
) -> np.ndarray:
    """Per-GPU power over one iteration, as exact cell means.

    Parameters
    ----------
    shares
        Share of the step of each phase, in order; sums to 1. [1]
    levels
        Power of each phase (any unit; TDP fractions here).
    step_time
        Step time. [s]
    edge_rate
        Slope of every edge, in ``levels`` units per second.
    n_cells
        Cells per iteration.

    Returns
    -------
    numpy.ndarray
        Mean power in each of ``n_cells`` cells, in ``levels`` units.

    Notes
    -----
    Each change of level ``ΔL`` at a phase boundary is a linear ramp lasting ``|ΔL| / edge_rate``,
    centred on the boundary, so every phase keeps its energy. Ramps that overlap add up; a phase
    shorter than its edges never reaches its level, as on real hardware. The waveform is periodic:
    boundaries are repeated one period either side.
    """
    levels = np.asarray(levels, dtype=float)
    bounds = np.concatenate(([0.0], np.cumsum(shares)[:-1]))
    steps = levels - np.roll(levels, 1)
    width = np.maximum(np.abs(steps) / edge_rate / step_time, 1e-12)
    if np.any(width >= 1.0):
        raise ValueError(
            f"an edge lasts longer than a step ({step_time:g} s): raise workload.edge_rate"
        )
    cells = np.linspace(0.0, 1.0, n_cells + 1)
    lo, hi = cells[:-1, None, None], cells[1:, None, None]
    centre = bounds[None, :, None] + np.array([-1.0, 0.0, 1.0])[None, None, :]
    w = width[None, :, None]
    ramp_area = w * (
        _ramp_integral((hi - centre) / w + 0.5) - _ramp_integral((lo - centre) / w + 0.5)
    )
    fraction = ramp_area.sum(axis=2) / (hi[:, :, 0] - lo[:, :, 0])
    return levels[-1] + fraction @ steps


def _ramp_integral(u: np.ndarray) -> np.ndarray:
    """Antiderivative of clip(u, 0, 1)."""
    return np.where(u <= 0.0, 0.0, np.where(u >= 1.0, u - 0.5, 0.5 * u * u))


def offset_kernel(
    step_time: float,
    offset_spread: float,
    jitter: float,
    n_cells: int = N_CELLS,
) -> np.ndarray:
    """Fourier coefficients of the distribution of group start offsets over one iteration.

    Groups (pipeline stages, data-parallel replicas) start each phase at offsets spread uniformly
    over ``offset_spread`` (the pipeline schedule) plus Gaussian ``jitter``. The characteristic
    function of that distribution, taken modulo the step, multiplies the waveform's spectrum.
    ``step_time``, ``offset_spread`` and ``jitter`` (a standard deviation) in seconds [s].

    Returns
    -------
    numpy.ndarray
        ``n_cells // 2 + 1`` complex coefficients for :func:`numpy.fft.rfft` of a waveform.
    """
    m = np.arange(n_cells // 2 + 1)
    spread = offset_spread / step_time
    sigma = jitter / step_time
    uniform = np.exp(-1j * np.pi * m * spread) * np.sinc(m * spread)
    return uniform * np.exp(-2.0 * (np.pi * m * sigma) ** 2)


def aggregate(waveform: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Cluster-mean waveform: the per-group waveform convolved with the offset distribution.

    An exact expectation over the offsets in O(n log n), whatever the number of GPUs. Apply every
    per-GPU or per-server transform (caps, floors, PSU curve) to ``waveform`` before this. The
    result is in ``waveform``'s unit; ``kernel`` (:func:`offset_kernel`) is dimensionless [1].
    """
    return np.fft.irfft(np.fft.rfft(waveform) * kernel, n=waveform.size)
