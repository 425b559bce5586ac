"""The fit on node meter traces in the shapes real ones come in (issue 27, acceptance 3): AC
meters read every 1-2 s through an averaging window, nodes of 4 or 8 GPUs, logs that begin
mid-run (no idle seen) and nodes whose rest of node differs from the preset's while they load
or idle (MLPerf's SMC node loads at 2.5 kW AC where the preset's rest alone is 2.6 kW DC).

Each trace is written from KNOWN levels through the model's own node: the GPUs' and the rest
of node's DC power through the preset's supply curve (``cluster.psu``), seen through a 1-s
average (``sensors.read``), sampled every ``step`` and written in a tool's format; the truth
each test compares with is those levels.
"""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pandas as pd
import pytest
from synthetic_telemetry import write

from powermodel.fit import fit_cells, fitted_toml
from powermodel.fit.running import _step_spread
from powermodel.fit_report import fit_trace
from powermodel.models import sensors
from powermodel.models.events import State
from powermodel.scenario import load_scenario
from powermodel.simulate import rest_power

START = np.datetime64(
    "2024-07-01T00:00:00", "ns"
)  # the engine run's own start (the preset's): a trace is stamped when it was made
FINE = 0.05  # s: the grid the node's power is drawn on before the meter averages it
NOISE = 15.0  # W of AC: a meter's reading noise

# (preset, GPUs a node, the meter's step [s], the file's format): the shapes of the real logs
# (MLPerf's 2-s node logs of 8-GPU H100 nodes; a 1-s meter CSV; a 4-GPU compute tray)
NODES = [
    pytest.param(("llama3-405b-16k-h100", 8, 2.0, "mlperf-power"), id="h100x8-2s-mlperf"),
    pytest.param(("llama2-70b-lora-h100", 8, 1.0, "meter"), id="h100x8-lora-1s-meter"),
    pytest.param(("gb200-nvl72-100k-campus", 4, 1.0, "meter"), id="gb200x4-1s-meter"),
]


def node_trace(tmp_path, preset: str, gpus: int, step: float, fmt: str, spells, seed: int = 0):
    """A node meter's file of ``spells`` (seconds, W a GPU, rest of node [W DC]), its AC power
    through the preset's supplies and a 1-s average, every ``step`` s; returns its path."""
    psu = load_scenario(preset).cluster.psu
    n = np.round(np.array([s[0] for s in spells]) / FINE).astype(int)
    dc = np.repeat([gpus * s[1] + s[2] for s in spells], n)
    at = np.arange(step, n.sum() * FINE - step, step)
    rng = np.random.default_rng(seed)
    ac = sensors.read(psu.input_power(dc), FINE, "nvml", at=at, held_before=True)
    ac = ac + rng.normal(0.0, NOISE, at.size)
    frame = pd.DataFrame(
        {
            "time": START + (at * 1e9).astype("timedelta64[ns]"),
            "channel": "node_0",
            "power": ac,
        }
    )
    return write(frame, tmp_path / f"node_0.{'txt' if fmt == 'mlperf-power' else 'csv'}", fmt)


def _levels(preset: str) -> tuple[float, float, float, float, float]:
    """The preset's GPU idle and TDP and its rest of node idle and active [W], and a running
    level (0.8 of TDP) [W]."""
    sc = load_scenario(preset)
    cl = sc.cluster
    return sc.gpu.idle, sc.gpu.tdp, cl.rest_power_idle, cl.rest_power_active, 0.8 * sc.gpu.tdp


def _toml(run) -> dict:
    return tomllib.loads(run.text)


# --- a log that begins mid-run: no idle seen -------------------------------------------------

# Where the log begins and ends: (a first spell, cut by the log's start, as a share of the
# running level, and its length [s]; the same of a last spell, cut by the end, or None)
CUT = {
    "starts in a warm-up dip": ((0.55, 14.0), None),
    "starts in an evaluation": ((0.35, 40.0), None),
    "starts and ends in a pause": ((0.45, 20.0), (0.45, 30.0)),
    "starts running": (None, None),
}


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("cut", list(CUT))
def test_a_log_begun_mid_run_keeps_the_gpus_idle_and_counts_its_pauses(tmp_path, node, cut):
    """No idle in the log: its lowest held level is a pause of the job, not the GPUs' idle
    (before the fix: the pause taken for idle, 3-4 x the GPU's idle, and a phase written
    under it, refused). The GPU's idle stays the preset's (not written), the whole pauses are
    counted, the running level is the truth's, and the scenario loads."""
    preset, gpus, step, fmt = node
    idle, tdp, _, active, run = _levels(preset)
    first, last = CUT[cut]
    pause = (0.4 * run, active)  # a 30-s evaluation between the training blocks
    spells = [(first[1], first[0] * run, active)] if first else []
    spells += [(240.0, run, active), (30.0, *pause), (240.0, run, active), (30.0, *pause)]
    spells += [(240.0, run, active)] + ([(last[1], last[0] * run, active)] if last else [])
    path = node_trace(tmp_path, preset, gpus, step, fmt, spells)
    out = fit_trace(path, tmp_path / "fit.toml", gpus_per_node=gpus, preset=preset)
    q = out.result.quantities
    assert not q["idle level"].resolved
    assert "gpu" not in _toml(out) or "idle" not in _toml(out)["gpu"]
    assert out.scenario.gpu.idle == idle  # the preset's
    if first is not None:
        assert q["idle level"].how.startswith("no idle seen")
        assert any(w.startswith("no idle seen") for w in out.result.warnings)
    assert out.result.value("checkpoint count") == 2  # the two whole pauses; cut ones not
    assert out.result.value("running mean") == pytest.approx(run, rel=0.01)
    assert out.result.value("checkpoint stall level") == pytest.approx(pause[0], rel=0.03)
    _, watts = out.scenario.phase_powers(capped=False, locked=False)
    assert watts.min() >= out.scenario.gpu.idle  # no phase under idle


@pytest.mark.parametrize("node", NODES)
def test_a_log_with_its_idle_still_fits_the_idle(tmp_path, node):
    """The other side of the line: idle before and after the job, at 1.5 x the GPU's idle
    (SMC's H100 nodes idle at 2.2 x the preset's split), is idle, fitted to its level."""
    preset, gpus, step, fmt = node
    idle, _, rest_idle, active, run = _levels(preset)
    spells = [(60.0, 1.5 * idle, rest_idle), (400.0, run, active), (25.0, 0.4 * run, active)]
    spells += [(400.0, run, active), (60.0, 1.5 * idle, rest_idle)]
    out = fit_trace(
        node_trace(tmp_path, preset, gpus, step, fmt, spells),
        tmp_path / "fit.toml",
        gpus_per_node=gpus,
        preset=preset,
    )
    assert out.result.value("idle level") == pytest.approx(1.5 * idle, abs=0.02 * idle + 4.0)
    assert out.result.value("checkpoint count") == 1
    assert not any(w.startswith("no idle seen") for w in out.result.warnings)


# --- a node whose rest of node is not the preset's ------------------------------------------

# the rest of node [W DC] while the job loads, as a share of the way from the preset's idle
# rest to its active one (SMC's BERT node: 2.5 kW AC loading, 0.4 kW over its idle, about 0.3
# of the way under the preset's 1.3 and 2.6 kW)
LOADING_REST = (0.3, 0.5, 0.75)


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("share", LOADING_REST)
def test_a_start_up_under_the_presets_rest_of_node_is_inferred(tmp_path, node, share):
    """A start-up whose node draws less than the preset's active rest of node with its GPUs
    at idle (before the fix: a start-up level of -23 to 0.4 x idle a GPU, refused below 0,
    written at the GPU's idle above): the GPUs are taken at their idle, the start-up's rest of
    node is inferred from the trace (the node's DC less its GPUs at idle: exact), reported,
    and said in a warning; the scenario loads with the start-up at idle."""
    preset, gpus, step, fmt = node
    idle, _, rest_idle, active, run = _levels(preset)
    loading = rest_idle + share * (active - rest_idle)
    spells = [(60.0, idle, rest_idle), (90.0, idle, loading), (500.0, run, active)]
    spells += [(25.0, 0.4 * run, active), (500.0, run, active), (60.0, idle, rest_idle)]
    out = fit_trace(
        node_trace(tmp_path, preset, gpus, step, fmt, spells),
        tmp_path / "fit.toml",
        gpus_per_node=gpus,
        preset=preset,
    )
    q = out.result.quantities
    assert q["idle level"].value == pytest.approx(idle, abs=3.0)
    assert q["start-up level"].value == pytest.approx(q["idle level"].value, abs=1e-9)
    inferred = q["start-up rest of node"]
    # the node's DC while loading, gpus x idle + loading, less its GPUs at the fitted idle
    truth = gpus * idle + loading - gpus * q["idle level"].value
    assert inferred.value == pytest.approx(truth, abs=0.01 * active)
    assert inferred.key is None and not inferred.resolved  # reported: one active rest
    assert any(w.startswith("start-up rest of node inferred") for w in out.result.warnings)
    assert out.scenario.workload.startup_power * out.scenario.gpu.tdp >= out.scenario.gpu.idle
    assert out.result.value("start-up time") == pytest.approx(90.0, abs=2 * step + 1.0)


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("gpu_idle_share", (0.2, 0.45))
def test_a_node_idling_under_the_presets_rest_of_node_writes_its_idle_rest(
    tmp_path, node, gpu_idle_share
):
    """A node idling lower than the preset's idle rest of node allows (its GPUs would draw
    under half their idle, or below 0: refused before the fix): the GPUs are taken at half the
    GPU's idle (the catalogue's range), the rest of node at idle is what the node draws beyond
    them, written (``cluster.rest_power_idle``), so the fitted node idles at the trace's
    power."""
    preset, gpus, step, fmt = node
    idle, _, rest_idle, active, run = _levels(preset)
    # the GPUs idle at 0.45-0.2 x the catalogue's, the rest of node at 0.6 x the preset's
    low = (gpu_idle_share * idle, 0.6 * rest_idle)
    spells = [(90.0, *low), (900.0, run, active), (90.0, *low)]
    out = fit_trace(
        node_trace(tmp_path, preset, gpus, step, fmt, spells),
        tmp_path / "fit.toml",
        gpus_per_node=gpus,
        preset=preset,
    )
    sc = out.scenario
    assert sc.gpu.idle == pytest.approx(0.5 * idle, abs=0.1)
    assert _toml(out)["cluster"]["rest_power_idle"] == sc.cluster.rest_power_idle
    node_idle = gpus * sc.gpu.idle + rest_power(sc.cluster)[State.FAILED_IDLE]
    assert node_idle == pytest.approx(gpus * low[0] + low[1], abs=0.01 * rest_idle)
    assert out.result.value("running mean") == pytest.approx(run, rel=0.01)


# --- the step's spread where the running samples cross its midpoint seldom or never --------


def _swing(crossings: int, segments: int = 1) -> tuple[np.ndarray, ...]:
    """Running samples every 0.1 s about a midpoint of 0, ``crossings`` rising ones in all,
    spread over ``segments`` segments (their phase origins)."""
    t = np.arange(0.0, 60.0, 0.1)
    x = np.full(t.size, -5.0 if crossings else 5.0)  # none: above the midpoint throughout
    x[np.linspace(0, t.size - 1, crossings + 2)[1:-1].astype(int)] = 5.0  # one sample up each
    origin = np.repeat(np.linspace(0.0, 60.0, segments, endpoint=False), t.size // segments)
    return t, x, origin[: t.size]


@pytest.mark.parametrize("crossings, segments", [(0, 1), (0, 3), (1, 1), (2, 2), (4, 1)])
def test_the_step_spread_of_too_few_crossings_is_none(crossings, segments):
    """With fewer than five whole steps between rising crossings (none at all: before the fix
    an IndexError, a mask of one on no crossing), the step spreads are not resolved (NaN)."""
    t, x, origin = _swing(crossings, segments)
    assert all(math.isnan(v) for v in _step_spread(t, x, origin, 6.0, 0.0, 1.0, 10.0))


def test_the_step_spread_of_a_regular_swing_is_its_noise_free_spread():
    """The class's other side: a square swing of a 2-s step, 30 crossings, spreads 0."""
    t = np.arange(0.0, 60.0, 0.1)
    x = np.where((t % 2.0) < 1.0, 110.0, 90.0)
    length_cv, level_cv = _step_spread(t, x, np.zeros(t.size), 2.0, 100.0, 0.0, 10.0)
    assert length_cv == pytest.approx(0.0, abs=1e-6) and level_cv == pytest.approx(0.0, abs=1e-6)


# --- levels written: no phase under the idle the scenario holds -----------------------------


@pytest.mark.parametrize("idle_rest, trough", [(1900.0, 130.0), (2100.0, 150.0), (2300.0, 120.0)])
def test_a_folded_trough_under_the_idle_fitted_is_bounded_by_it(tmp_path, idle_rest, trough):
    """A node idling over the preset's rest of node (SMC's idle at 2.2 x the H100's idle, as
    the fit reads it) whose iteration's communication trough, resolved (a 20-s step read every
    second), lies under that idle: the trough is written at the idle fitted (before the fix:
    under it, and the scenario refused, 'phase would draw under idle'), and says so; the
    step and compute level stay the trace's."""
    preset = "llama3-405b-16k-h100"
    idle, _, _, active, _ = _levels(preset)
    compute, step = 560.0, 20.0
    spells = [(120.0, idle, idle_rest)]
    spells += [(14.0, compute, active), (6.0, trough, active)] * 30
    spells += [(120.0, idle, idle_rest)]
    out = fit_trace(
        node_trace(tmp_path, preset, 8, 1.0, "meter", spells),
        tmp_path / "fit.toml",
        gpus_per_node=8,
        preset=preset,
    )
    q = out.result.quantities
    fitted_idle = idle + (idle_rest - load_scenario(preset).cluster.rest_power_idle) / 8
    assert q["idle level"].value == pytest.approx(fitted_idle, abs=3.0)
    assert q["communication level"].value < q["idle level"].value  # what the fold sees
    sc = out.scenario
    _, watts = sc.phase_powers(capped=False, locked=False)
    assert watts.min() == pytest.approx(sc.gpu.idle, abs=0.1)  # bounded at the idle written
    assert "bounded: the folded communication level" in out.text
    assert sc.workload.step_time == pytest.approx(step, rel=0.01)
    assert q["compute level"].value == pytest.approx(compute, rel=0.03)


# --- the job's end, where the log runs on into the next job ---------------------------------

# after the training: (spells, whether the job ended); a node's log runs on past its job
AFTER = {
    "idle to the log's end": ([(60.0, "idle")], True),
    "idle, then the next job's start-up cut by the end": (
        [(35.0, "idle"), (25.0, "loading")],
        True,
    ),
    "idle, a start-up and training again (a restart)": (
        [(35.0, "idle"), (60.0, "loading"), (200.0, "run")],
        False,
    ),
}


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("after", list(AFTER))
def test_the_job_end_is_the_last_training_whatever_follows_it_untrained(tmp_path, node, after):
    """The job's end is where its last training ends when only idle, or idle and a start-up
    that trains nothing the log shows (the next job's initialisation: MLPerf's BERT log), follow
    (before the fix: a log ending in a start-up was read as training to its end); a start-up
    that goes on to train is a restart, no end."""
    preset, gpus, step, fmt = node
    idle, _, rest_idle, active, run = _levels(preset)
    rest_loading = rest_idle + 0.5 * (active - rest_idle)
    levels = {
        "idle": (idle, rest_idle),
        "loading": (idle, rest_loading),
        "run": (run, active),
    }
    spells = [(60.0, idle, rest_idle), (60.0, idle, rest_loading), (300.0, run, active)]
    spells += [(25.0, 0.4 * run, active), (300.0, run, active)]
    last = sum(s[0] for s in spells)  # the truth: the last training's end [s]
    tail, ended = AFTER[after]
    spells += [(seconds, *levels[what]) for seconds, what in tail]
    out = fit_trace(
        node_trace(tmp_path, preset, gpus, step, fmt, spells),
        tmp_path / "fit.toml",
        gpus_per_node=gpus,
        preset=preset,
    )
    end = out.result.value("job end")
    if ended:
        assert end == pytest.approx(last - step, abs=2.0 * step + 1.0)  # the log's first sample
    else:
        assert end is None
    assert out.result.value("checkpoint count") == 1


@pytest.mark.parametrize("pause", (0.45, 0.6))
@pytest.mark.parametrize("step", (0.1, 1.0))
def test_a_gpu_log_begun_in_a_pause_keeps_the_gpus_idle(pause, step):
    """The GPU-trace side of the class (nvidia-smi polled mid-run, NVML's 1-s average): a log
    that begins in an evaluation at 250-340 W a GPU (over 3 x the H100's idle) shows no idle;
    its pauses are stalls, the idle is the catalogue's (before the fix: the first pause taken
    for idle, written as gpu.idle)."""
    dt, run = 0.05, 560.0
    spells = [(30.0, pause * run), (240.0, run), (30.0, pause * run), (240.0, run)]
    spells += [(30.0, pause * run), (240.0, run)]
    n = np.round(np.array([s[0] for s in spells]) / dt).astype(int)
    board = np.repeat([s[1] for s in spells], n)
    at = np.arange(step, n.sum() * dt - step, step)
    rng = np.random.default_rng(5)
    cells = sensors.read(np.tile(board, (4, 1)), dt, "nvml", at=at, held_before=True)
    cells = cells + rng.normal(0.0, 2.0, cells.shape)
    scenario = load_scenario("llama3-405b-16k-h100")
    result = fit_cells(at - at[0], cells, 4, {"source": "mid-run"}, "nvml", scenario)
    assert not result.quantities["idle level"].resolved
    assert result.quantities["idle level"].how.startswith("no idle seen")
    assert result.value("checkpoint count") == 2
    assert result.value("checkpoint stall level") == pytest.approx(pause * run, rel=0.02)
    assert "\nidle = " not in fitted_toml(result, "llama3-405b-16k-h100", "mid-run")  # kept
