"""Checkpoint modes: a blocking write stalls the job for the whole write; an asynchronous one
for a short snapshot, then writes in the background while the job trains (ByteCheckpoint
[P, bytecheckpoint]), its host and storage power on the IT load."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from powermodel import load_scenario, simulate
from powermodel.engine.derive import derive
from powermodel.engine.timeline import timeline
from powermodel.models.events import State

REFERENCE = "llama3-405b-16k-h100"
# no failures: checkpoints every 10 min of training, nothing else stops the job
QUIET = {
    "simulation.duration": "1d",
    "reliability.rate_scale": 0.0,
    "reliability.planned_count": 0,
    "checkpoint.interval": "10min",
}


def _runs(dt: str = "1s", **extra):
    out = {}
    for mode in ("blocking", "async"):
        scenario = load_scenario(
            REFERENCE, {**QUIET, "simulation.dt": dt, "checkpoint.mode": mode, **extra}
        )
        out[mode] = (scenario, simulate(scenario))
    return out


def _lengths(flags: np.ndarray) -> np.ndarray:
    """Lengths of the runs of True in ``flags`` [steps]."""
    edges = np.diff(np.concatenate(([0], flags.astype(int), [0])))
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def test_an_async_checkpoint_dips_for_its_snapshot_only():
    runs = _runs("100ms")
    for mode, stall in (("blocking", 5670 / 2000), ("async", 1.0)):
        scenario, ds = runs[mode]
        # the stall: 5,670 GB at 2 TB/s = 2.8 s blocking [P, llama3]; the snapshot's 1 s [A]
        assert_allclose(derive(scenario).checkpoint_stall, stall)
        lengths = _lengths(ds.job_state.values == State.CHECKPOINT)
        assert lengths.size >= 100
        assert_allclose(lengths * 0.1, stall, atol=0.1)  # on a 100 ms grid


def test_the_background_write_adds_its_power_for_the_write():
    scenario, with_power = _runs()["async"]
    without = simulate(load_scenario(
        REFERENCE, {**QUIET, "checkpoint.mode": "async", "checkpoint.background_power": 0.0}
    ))  # fmt: skip
    extra = with_power.it_power.values - without.it_power.values
    # 8 W a GPU [A] on 16,384 GPUs: 0.131 MW while a write runs, for 2.8 s after each snapshot
    power = 8.0 * 16384 / 1e6
    assert_allclose(extra.max(), power, rtol=1e-9)
    assert extra.min() > -1e-9 * power
    checkpoints = _lengths(with_power.job_state.values == State.CHECKPOINT).size
    assert_allclose(extra.sum() * 1.0, power * 5670 / 2000 * checkpoints, rtol=1e-9)
    # the writes run from each snapshot's end for 2.8 s: within 4 s of it, on a 1 s grid
    ends = np.flatnonzero(
        np.diff((with_power.job_state.values == State.CHECKPOINT).astype(int)) == -1
    )
    near = np.zeros(extra.size, bool)
    for offset in range(5):
        near[np.minimum(ends + offset, extra.size - 1)] = True
    assert np.all(extra[~near] < 1e-9 * power)
    # the GPUs' own power is the same: the write runs on the hosts and the storage
    assert_allclose(with_power.gpu_power.values, without.gpu_power.values, rtol=0, atol=0)


def test_goodput_gains_match_the_stall_saved():
    """At a locked clock (nothing throttles) the tokens gained are the token rate times the
    stall the snapshot saves; free clocks give a little back, the GPUs training more of the
    time and running hotter."""
    gains = {}
    for lock in (0.9, None):
        runs = _runs(**{"mitigation.clock_lock": lock})
        lines = {m: timeline(scenario) for m, (scenario, _) in runs.items()}
        # 2.835 s blocking against 1 s a checkpoint, one every 10 min of training
        saved = lines["async"].running_time - lines["blocking"].running_time
        assert saved > 0.9 * 142 * (5670 / 2000 - 1.0)
        gained = float(runs["async"][1].goodput) - float(runs["blocking"][1].goodput)
        gains[lock] = gained / (runs["async"][1].attrs["token_rate"] * saved)
    assert_allclose(gains[0.9], 1.0, rtol=1e-9)
    assert 0.8 < gains[None] < 1.0


def test_writes_in_flight_queue_and_stop_for_a_pause():
    # writes of 113 s every 2 min, and planned stops whose checkpoint comes while one is still
    # in flight: the next waits, so no more than one write's power is ever on
    slow = {
        "simulation.duration": "3h",
        "checkpoint.mode": "async",
        "checkpoint.interval": "2min",
        "checkpoint.write_bandwidth": 50.0,
        "checkpoint.background_power": 1000.0,
        "reliability.planned_count": 2000,
    }
    with_writes = simulate(load_scenario(REFERENCE, slow))
    without = simulate(load_scenario(REFERENCE, {**slow, "checkpoint.background_power": 0.0}))
    extra = with_writes.it_power.values - without.it_power.values
    assert extra.max() <= 1000.0 * 16384 / 1e6 * (1 + 1e-9)
    # a pause stops the writes: none while the job is idle
    pause = {"start": "2024-07-01T01:00:00", "duration": "1h", "lever": "pause"}
    paused = simulate(load_scenario(REFERENCE, {**slow, "flexibility": [pause]}))
    idle = simulate(
        load_scenario(
            REFERENCE, {**slow, "checkpoint.background_power": 0.0, "flexibility": [pause]}
        )
    )
    during = slice(3600 + 120, 7200)
    assert_allclose(paused.it_power.values[during], idle.it_power.values[during], rtol=1e-12)
