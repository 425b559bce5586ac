"""Aliasing of the step a fit folds from samples its sensor does not average (issue 27): a
step T sampled instantly every dt shows as a swing of period P with |1/T - k/dt| = 1/P, and on
a regular grid the samples of the two are the same. The fit folds each candidate on the
samples' own stamps (:func:`powermodel.fit._aliased`): a step stands only when the stamps'
irregularity (nvidia-smi's slow polls) makes every alias fold worse; else it stays unresolved.
Each trace is generated here, so its true step is known.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_telemetry import START, smi_stamps, write

from powermodel.fit import Timeline, chain_of, step_response
from powermodel.fit.fold import _aliased, aliases
from powermodel.fit.running import GOLDEN
from powermodel.fit_report import fit_trace
from powermodel.iotools.telemetry import TelemetryWarning
from powermodel.models.events import State

POLLS, GPUS = 900, 2  # 15 min of 1-s polls: 150 cycles of a 6-s step
RUNNING, SWING = 600.0, 150.0  # W: compute, and the drop of its 30 % communication


def _trace(step: float, regular: bool, seed: int = 0) -> pd.DataFrame:
    """Two GPUs idle for a tenth of the polls, then training with a two-level ``step`` [s]
    (communication the last 30 % of it, 150 W under compute), each sample the power at the
    instant it is stamped (an instantaneous sensor). ``regular``: stamped every whole second
    (amd-smi's watch mode); else nvidia-smi's stamps at ``-l 1`` (queries within 50 ms of the
    poll's start, a slow poll of 1-9 s every 100 polls, :func:`smi_stamps`)."""
    rng = np.random.default_rng(seed)
    if regular:
        stamps = START + (np.arange(POLLS)[:, None] * np.ones(GPUS) * 1e9).astype("m8[ns]")
    else:
        stamps = smi_stamps(POLLS, GPUS, 1.0, spread=0.05, slow=tuple(range(50, POLLS, 100)))
    t = (stamps - START) / np.timedelta64(1, "s")
    begin = t[POLLS // 10, 0]
    comm = ((t - begin) % step) > 0.7 * step
    busy = RUNNING - SWING * comm + rng.normal(0.0, 3.0, t.shape)
    power = np.where(t >= begin, busy, 70.0 + rng.normal(0.0, 0.1, t.shape))
    return pd.DataFrame(
        {
            "poll": np.repeat(np.arange(POLLS), GPUS),
            "time": stamps.ravel(),
            "channel": [f"gpu{g}" for g in range(GPUS)] * POLLS,
            "power": np.round(power, 2).ravel(),
        }
    )


@functools.cache
def _fitted(step: float, regular: bool, folder: Path):
    frame = _trace(step, regular)
    fmt, options = (
        ("amd-smi", {"timestamps": True, "header": "once"})
        if regular
        else (
            "nvidia-smi",
            {"power_field": "power.draw.instant"},
        )
    )
    trace = write(frame, folder / f"{step}-{regular}.log", fmt, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        return fit_trace(trace, folder / f"{step}-{regular}.toml", holdout=0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("alias")


def test_the_aliases_of_a_step_are_the_steps_its_samples_cannot_tell_apart():
    # |1/T - k/dt| = 1/P: a 6-s swing sampled every 1 s is also 1/(1 ± 1/6) = 0.857 and 1.2 s,
    # 1/(2 ± 1/6) = 0.4615 and 0.5455 s ... down to MIN_STEP (0.15 s: k = 6 gives 0.1622 and
    # 0.1714 s, k = 7 0.1395 s, left out)
    found = aliases(6.0, 1.0)
    assert found[:4] == pytest.approx([1.2, 6 / 7, 6 / 11, 6 / 13], rel=1e-9)
    assert found.min() == pytest.approx(6 / 37, rel=1e-9) and found.size == 12
    # at 0.1-s polls the aliases of a 1.2-s step are 0.092 and 0.109 s: no training step
    assert aliases(1.2, 0.1).size == 0


def test_amd_current_socket_power_is_instantaneous_and_its_average_is_not():
    # AMD: MI300's current socket power is "also known as instant power" [P, rocm_smi]; the
    # average socket power of MI200 and earlier is averaged (over a window AMD does not state)
    for fmt, field in (
        ("rocm-smi", "Current Socket Graphics Package Power (W)"),
        ("amd-smi", "socket_power"),
        ("amd-smi", "power_usage"),
    ):
        assert chain_of({"format": fmt, "power_field": field}, 1.0).window == 0.0
    for fmt, field in (
        ("rocm-smi", "Average Graphics Package Power (W)"),
        ("amd-smi", "average_socket_power"),
    ):
        assert chain_of({"format": fmt, "power_field": field}, 1.0).key == "nvml"


def test_a_long_step_sampled_instantly_is_resolved_when_the_stamps_tell_it(folder):
    # a genuine 6-s step through power.draw.instant at -l 1: its slow polls shift the sampling
    # phase by whole-and-fractional seconds, so each alias folds incoherently across them
    q = _fitted(6.0, False, folder).result.quantities
    assert q["step time"].resolved, q["step time"].how
    assert q["step time"].value == pytest.approx(6.0, rel=0.01)
    # the compute share: 70 % of the step, as generated
    assert q["compute share"].value == pytest.approx(0.7, abs=0.05)


def test_an_aliased_step_is_not_resolved_when_the_stamps_break_it(folder):
    # the same stamps on a 1.2-s step: its 6.0-s alias does not hold across the slow polls
    # (each shifts the sampling phase), so no swing is resolved, and the fresh run draws no
    # stall where the trace has none, nor the preset's checkpoints (the trace shows none)
    run = _fitted(1.2, False, folder)
    q = run.result.quantities["step time"]
    assert not q.resolved and q.value == pytest.approx(run.result.period / GOLDEN, rel=1e-3)
    assert run.predicted.numbers["checkpoint_error"] == 0
    assert abs(run.predicted.numbers["energy_error"]) <= 0.05


def test_the_stamps_name_an_alias_they_fold_better():
    # a 6-s swing folded from 1-s samples whose stamps jitter by ±0.25 s at random: a 1.2-s
    # step sampled at those instants folds coherently on the stamps (phase error 0), the 6-s
    # swing on them by 0.25/6 cycles more, its aliases by 0.25/1.2 more: the 1.2-s one wins
    rng = np.random.default_rng(1)
    t = np.arange(3000.0) + rng.uniform(-0.25, 0.25, 3000)
    x = np.where((t % 1.2) > 0.84, -SWING, 0.0) + rng.normal(0, 3.0, t.size)
    line = Timeline(start=np.array([0.0]), state=np.array([State.RUNNING]), duration=3000.0)
    response = step_response(chain_of({"power_field": "power.draw.instant"}, 1.0), 1.0)
    shape = {"seen_swing": SWING, "share": 0.7}
    why = _aliased((t, np.zeros(t.size, int), x), line, 6.0, 1.0, response, shape, 555.0)
    assert why is not None and "is an alias" in why and "1.2-s step" in why, why
    # the same samples on a regular grid (their stamps without the jitter) cannot tell
    why = _aliased((np.round(t), np.zeros(t.size, int), x), line, 6.0, 1.0, response, shape, 555.0)
    assert why is not None and "may be an alias" in why, why


@pytest.mark.parametrize("step", [1.2, 6.0])
def test_a_step_on_a_regular_grid_stays_unresolved_either_way(step, folder):
    # amd-smi's whole-second stamps: a 1.2-s step and a 6-s one give the same samples, so the
    # fit resolves neither and writes one sampling period over the golden ratio
    run = _fitted(step, True, folder)
    q = run.result.quantities["step time"]
    assert not q.resolved
    assert "may be an alias" in q.how and "do not tell them apart" in q.how, q.how
    assert q.value == pytest.approx(1.0 / GOLDEN, rel=1e-3)
    assert run.predicted.numbers["checkpoint_error"] == 0
    assert abs(run.predicted.numbers["energy_error"]) <= 0.05
