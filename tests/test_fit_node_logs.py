"""The fit on nvidia-smi logs of a whole node written as the logger writes them, from a job
whose timeline is known (issue 27: the 8 x H100 node training an 8B model with checkpoints every
10-200 steps of a 0.2-s step, and the 2-GPU node of a 250-W GPU with and without power burn).

The logs are made here, not by the engine, so the fit is checked against a truth it did not
render: every GPU's power at 10 ms (a 0.2-s step, three quarters of it at the compute level,
the rest at 0.6 of it, or at the burn floor where that is higher), read through NVML's 1-s
average, printed without ``index`` one line a GPU per 0.1-s poll, each line stamped when its
query completes (a poll's lines spread over 20-90 ms; 1 % of polls are slow, spread over 1-9 s,
and the next poll's first line is then stamped before the last one's). The job: 40 s idle, a
110-s start-up (memory filling), twelve checkpoint stalls drawn from a lognormal (median 35 s,
sigma 0.5: 10-86 s here, a CV of 0.48) with the same training between each, a clean end and
30 s idle.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pytest

from powermodel.fit import detect, step_response
from powermodel.fit_report import fit_trace
from powermodel.iotools.telemetry import TelemetryWarning, read_telemetry
from powermodel.models import sensors
from powermodel.models.events import State

FINE = 0.01  # s: the GPUs' own power, rendered at this
STEP = 0.2  # s: the training step (issue 27's 8B job)
POLL = 0.1  # s: nvidia-smi -lms 100
STALLS = 12
STARTUP = 110.0  # s: loading, before the first step
IDLE_BEFORE, IDLE_AFTER = 40.0, 30.0  # s
# name: GPUs, compute level [W], idle [W], steps between stalls, burn floor (share of compute)
NODES = {
    "h100-8gpu": (8, 640.0, 70.0, 100, 0.0),
    "h100-8gpu-every-10": (8, 640.0, 70.0, 10, 0.0),  # 2 s of training between stalls
    "h100-8gpu-every-1000": (8, 640.0, 70.0, 1000, 0.0),
    "250w-2gpu": (2, 230.0, 17.0, 50, 0.0),
    "250w-2gpu-burn": (2, 230.0, 17.0, 50, 0.7),
}


def _node_log(
    path: Path,
    gpus,
    compute,
    idle,
    steps,
    burn,
    seed: int = 2,
    outside: int = 0,
    crash: float = 0.0,
) -> dict:
    """Write the node's log at ``path``, its last ``outside`` GPUs idle throughout (not in
    the job), and, with ``crash`` [s], the job killed after its sixth stall's training, idle
    that long and started again; the truth it was made from (of the job's GPUs)."""
    rng = np.random.default_rng(seed)
    stalls = rng.lognormal(np.log(35.0), 0.5, STALLS)
    train = steps * STEP
    lengths = np.r_[IDLE_BEFORE, STARTUP, np.column_stack([np.full(STALLS, train), stalls]).ravel()]
    lengths = np.r_[lengths, train, IDLE_AFTER]
    kinds = np.r_[0, 1, np.tile([2, 3], STALLS), 2, 0]  # idle, loading, training, stall
    if crash:  # idle, a start-up and the training again, after the sixth training
        lengths = np.r_[lengths[:13], crash, STARTUP, train, lengths[13:]]
        kinds = np.r_[kinds[:13], 0, 1, 2, kinds[13:]]
    edges = np.r_[0.0, np.cumsum(lengths)]
    t = np.arange(0.0, edges[-1], FINE)
    seg = np.searchsorted(edges, t, side="right") - 1
    kind = kinds[seg]
    phase = ((t - edges[seg]) % STEP) / STEP
    floor = max(0.6, burn) * compute
    level = np.select(
        [kind == 0, kind == 1, kind == 2],
        [idle, 1.6 * idle, np.where(phase < 0.75, compute, floor)],
        burn * compute if burn else 1.9 * idle,
    )
    offset = rng.normal(0.0, 8.0, gpus)  # the boards differ a little
    power = level[None, :] + offset[:, None] * np.where(kind == 2, 1.0, 0.1)
    power[gpus - outside :] = idle + offset[gpus - outside :, None] * 0.1
    power += rng.normal(0.0, 3.0, power.shape)
    width = round(1.0 / FINE)  # NVML's 1-s average
    c = np.cumsum(power, axis=1)
    seen = power.copy()
    seen[:, width:] = (c[:, width:] - c[:, :-width]) / width
    # the GPUs' memory: empty, filling through the start-up, held (a little different a GPU)
    held = 72_000 + rng.integers(0, 900, gpus)
    fill = np.clip((t - edges[seg]) / STARTUP, 0.0, 1.0)  # through each start-up
    memory = np.where((kind == 0)[None, :], 1, held[:, None] * np.where(kind == 1, fill, 1.0))
    memory[gpus - outside :] = 1
    # polls: each line stamped when its query completes
    n = int((edges[-1] - 10.0) / POLL)
    slow = rng.random(n) < 0.01
    spread = np.where(slow, rng.uniform(1.0, 9.0, n), rng.uniform(0.02, 0.09, n))
    # a slow poll holds the next one back: that one's first line comes 5 ms before its last
    begin = np.r_[0.0, np.cumsum(np.where(slow, spread - 0.005, POLL))[:-1]]
    stamp = begin[:, None] + spread[:, None] * (np.arange(gpus) + 1) / gpus
    stamp = stamp[begin < edges[-1] - 10.0]
    at = np.minimum((stamp / FINE).astype(np.int64), t.size - 1)
    gpu = np.broadcast_to(np.arange(gpus), at.shape)
    watts, mib = seen[gpu, at], memory[gpu, at]
    when = np.datetime64("2025-03-04T09:00:00.000") + (stamp * 1e3).astype("timedelta64[ms]")
    text = np.char.replace(np.char.replace(when.ravel().astype(str), "-", "/"), "T", " ")
    lines = [
        f"{s}, {w:.2f} W, {100 if w > 3 * idle else 0} %, {m} MiB"
        for s, w, m in zip(text, watts.ravel(), mib.ravel().astype(int), strict=True)
    ]
    head = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n"
    path.write_text(head + "\n".join(lines) + "\n")
    return {
        "running": float(power[: gpus - outside, kind == 2].mean()),  # not NVML's view
        "stall": float(stalls.mean()),
        "end": float(edges[-2] - IDLE_BEFORE),  # the job's end, from its first rise
    }


@functools.cache
def _fitted(name: str, folder: Path):
    log = folder / f"{name}.csv"
    truth = _node_log(log, *NODES[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(log, folder / f"{name}.toml", holdout=0)
    return truth, run


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("node_logs")


@pytest.mark.parametrize("name", sorted(NODES))
def test_a_node_log_is_fitted_with_its_checkpoints_level_and_start_up(name, folder):
    # issue 27, acceptance 2: the checkpoint count exact, the running level within 5 %, the
    # start-up within 10 %, a clean end fitted as an end; the truth is the log's own making
    truth, run = _fitted(name, folder)
    q = run.result.quantities
    assert run.result.n_gpus == NODES[name][0]  # from memory.used: no index, no --gpus
    assert q["checkpoint count"].value == STALLS
    assert q["running mean"].value == pytest.approx(truth["running"], rel=0.05)
    assert q["start-up time"].value == pytest.approx(STARTUP, rel=0.10)
    assert q["checkpoint stall"].value == pytest.approx(truth["stall"], rel=0.10)
    # the training between stalls, from the spells whose edges no slow poll blurred (a spell
    # with an edge in a slow poll's gap read up to 4.8 s short of 10 s: the median 9.6 s)
    steps = NODES[name][3]
    assert q["checkpoint interval"].value == pytest.approx(steps * STEP, rel=0.03)
    assert "the job's end, not a failure" in q["job end"].how
    assert not q["teardown"].resolved  # a job that ends is no failure


@pytest.mark.parametrize("name", sorted(NODES))
def test_the_step_these_logs_cannot_resolve_stays_unresolved(name, folder):
    # a 0.2-s step under NVML's 1-s average: no step is resolved, so no swing is added (the
    # 20-s and 10-s training between stalls, the fold's spells, were folded as a "step" of
    # their own length: a 574 W / 514 W swing the trace does not have)
    _, run = _fitted(name, folder)
    step = run.result.quantities["step time"]
    assert not step.resolved
    assert run.scenario.workload.step_time < 4 * 1.0  # shorter than four NVML windows


@pytest.mark.parametrize("name", sorted(NODES))
def test_the_fresh_run_and_the_replay_reproduce_the_node_log(name, folder):
    # acceptance 3's bounds on the fresh run; the replay (the trace's own timeline) agrees
    # closer still once it draws the leakage the fit took off the phases (it read 10-13 %
    # over the running level without it)
    _, run = _fitted(name, folder)
    fresh, replay = run.predicted.numbers, run.numbers
    # the stalls are drawn afresh (the fitted spread, CV 0.49): where 10 s of training come
    # between 41-s stalls, the training, most of the energy, is what the stalls leave of the
    # job's span, and the five seeds' energies span 25 % (6.96-8.94 Wh a GPU on the 250-W
    # node, measured here); the measured energy lies in that span, each end widened by 5 %,
    # and within 10 % of the seed the prediction shows
    low, high = fresh["energy_range_wh"]
    assert 0.95 * low <= fresh["energy_measured_wh"] <= 1.05 * high
    assert abs(fresh["energy_error"]) <= 0.10
    assert abs(fresh["running_error"]) <= 0.05
    assert abs(fresh["checkpoint_error"]) <= 1
    assert abs(replay["running_error"]) <= 0.03
    assert abs(replay["energy_error"]) <= 0.03


def test_a_checkpoint_every_step_is_counted_and_its_level_said_unseen(folder):
    # a checkpoint every step (issue 27's 1-1,000 steps): 0.2 s of training between stalls,
    # under NVML's 1-s window, shows as a bump of a fifth of the swing; the stalls are still
    # counted and the energy kept, and the running level is said to be the sensor's view
    truth = _node_log(folder / "every-1.csv", 8, 640.0, 70.0, 1, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(folder / "every-1.csv", folder / "every-1.toml", holdout=0)
    q = run.result.quantities
    assert q["checkpoint count"].value == STALLS
    assert q["start-up time"].value == pytest.approx(STARTUP, rel=0.10)
    assert q["running mean"].value < 0.5 * truth["running"]  # what the sensor shows of it
    assert q["running mean"].how.startswith("the sensor's view, not the GPUs' own level")
    assert abs(run.predicted.numbers["energy_error"]) <= 0.05


def test_gpus_outside_the_job_are_left_out_of_its_fit(folder):
    # a 4-GPU job on an 8-GPU node, the other four idle: the fit took the median and mean of all
    # eight as the job's (a running level of 163 W for 574 W, no checkpoint of the 12)
    log = folder / "half.csv"
    truth = _node_log(log, 8, 640.0, 70.0, 100, 0.0, outside=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(log, folder / "half.toml", holdout=0)
    result = run.result
    assert result.n_gpus == 4
    said = next(w for w in result.warnings if "outside the job" in w)
    assert "4 of 8 GPUs (gpu4, gpu5, gpu6, gpu7)" in said
    assert result.quantities["checkpoint count"].value == STALLS
    assert result.quantities["running mean"].value == pytest.approx(truth["running"], rel=0.05)
    assert result.quantities["idle level"].value == pytest.approx(70.0, abs=2.0)
    # a node whose GPUs all work keeps them all
    assert not any("outside the job" in w for w in _fitted("h100-8gpu", folder)[1].result.warnings)


def test_a_crash_and_restart_is_a_restart(folder):
    # the job killed in its sixth stall's training (no survivors spinning), 60 s idle, a
    # start-up and training again: read as a restart with its wait (it read "no restart after a
    # failure seen"), and the fall's 0.1-s smear through the stalled level as no teardown
    log = folder / "crash.csv"
    _node_log(log, 8, 640.0, 70.0, 100, 0.0, crash=60.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(log, folder / "crash.toml", holdout=0)
    q = run.result.quantities
    assert q["restart wait"].value == pytest.approx(60.0, abs=1.5)
    assert q["teardown"].how.startswith("no teardown seen: the job stopped straight from training")
    assert q["start-up time"].value == pytest.approx(STARTUP, rel=0.10)
    assert q["checkpoint count"].value == STALLS
    assert run.scenario.reliability.restart_time == pytest.approx(60.0, abs=1.5)


def _seen(levels: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``levels`` [W] at FINE read through NVML's 1-s average every POLL, with 1 W of noise."""
    at = np.arange(POLL, levels.size * FINE - POLL, POLL)
    seen = sensors.read(levels, FINE, "nvml", at=at, held_before=True)
    return at, seen + np.random.default_rng(seed).normal(0.0, 1.0, at.size)


def _states(levels: np.ndarray) -> np.ndarray:
    at, seen = _seen(levels)
    line, _ = detect(at - at[0], seen, step_response("nvml", POLL))
    return line.state


def _held(*spells: tuple[float, float]) -> np.ndarray:
    """Levels [W] at FINE holding each (level [W], length [s]) in turn."""
    return np.concatenate([np.full(round(length / FINE), level) for level, length in spells])


def test_stalls_a_burn_floor_holds_up_are_stalls():
    # issue 27's 250-W node with burn: stalls at 0.75 of the running level (a floor), 16-108 s
    # with 10 s of training between; Otsu's threshold fell between idle and both, and the
    # stalls were read as running (0 checkpoints where there were 6)
    stalls = [16.0, 108.0, 40.0, 25.0, 60.0, 33.0]
    spells = [(17.0, 60.0)] + [s for x in stalls for s in ((200.0, 10.0), (150.0, x))]
    state = _states(_held(*spells, (200.0, 10.0), (17.0, 30.0)))
    assert np.count_nonzero(state == State.CHECKPOINT) == len(stalls)


def test_a_throttle_is_no_stall():
    # the running level sinking 8 % over ten minutes (a warm afternoon's clocks) and back: no
    # step between two levels, so no band of its own is split from the running one
    t = np.arange(0.0, 1200.0, FINE)
    running = 600.0 - 48.0 * np.sin(np.pi * t / t[-1])
    state = _states(np.concatenate((_held((70.0, 60.0)), running)))
    assert not np.any(state == State.CHECKPOINT)


def test_a_long_steps_regular_troughs_stay_in_the_running_band():
    # a 30-s step whose communication holds 10 s at 0.8 of compute (a long step of a small
    # cluster): regular dips a third of the cycle long, the iteration's troughs, not stalls
    step = _held((600.0, 20.0), (480.0, 10.0))
    state = _states(np.concatenate((_held((70.0, 60.0)), np.tile(step, 20))))
    assert not np.any(state == State.CHECKPOINT)


def test_a_slow_last_poll_drops_no_gpu(tmp_path):
    # the log's last poll slow (its 4 lines over 6 s, as 1 % of polls are): each GPU's stream
    # ends seconds before the trace's last line, which was reported as 3 GPUs dropping out
    gpus, polls = 4, 300
    begin = np.arange(polls) * POLL
    spread = np.r_[np.full(polls - 1, 0.05), 6.0]
    stamp = begin[:, None] + spread[:, None] * (np.arange(gpus) + 1) / gpus
    when = np.datetime64("2025-03-04T09:00:00.000") + (stamp * 1e3).astype("timedelta64[ms]")
    text = np.char.replace(np.char.replace(when.ravel().astype(str), "-", "/"), "T", " ")
    memory = np.tile(70_000 + 311 * np.arange(gpus), polls)
    lines = [f"{s}, 612.00 W, 100 %, {m} MiB" for s, m in zip(text, memory, strict=True)]
    log = tmp_path / "slow-end.csv"
    head = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n"
    log.write_text(head + "\n".join(lines))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TelemetryWarning)
        data, meta = read_telemetry(log)
    assert meta["gpus"] == gpus
    assert not [w for w in caught if "dropped out" in str(w.message)]
    # (a GPU that stops for good is still said to: tests/test_telemetry.py's gpu2)


def test_a_fit_warns_only_in_its_own_words(folder):
    # every warning a fit gives is the reader's or the fit's, in words: pandas' "Discarding
    # nonzero nanoseconds in conversion" reached the command line from the prediction's start
    log = folder / "words.csv"
    _node_log(log, 2, 230.0, 17.0, 50, 0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_trace(log, folder / "words.toml", holdout=0.5)
    assert all(issubclass(w.category, TelemetryWarning) for w in caught), [
        str(w.message)[:80] for w in caught if not issubclass(w.category, TelemetryWarning)
    ]
