"""Two shapes of real logs a fit must not misread (issue 27): a trace polled every 5-10 s with
no sensor noise (``nvidia-smi -l 5`` or ``-l 10``, DCGM at 5 s) whose idle spells (before the
start-up, between two runs, after the end) are flat to the printed digit, and a trace of a job
that trained alone for its whole span, with no checkpoint at all. Each trace is generated here
through NVML's 1-s average (:data:`powermodel.models.sensors.CHAINS`), so its truth is known.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_telemetry import START, write

from powermodel.fit.scenario_toml import UNSEEN_SPANS
from powermodel.fit_report import MAX_HOLDOUT, Prediction, fit_trace, predict_trace
from powermodel.iotools.telemetry import TelemetryWarning
from powermodel.models import sensors
from powermodel.models.events import State

FINE = 0.05  # s: the grid the job's power is drawn on
IDLE = (70.0, 73.0)  # W: each GPU's idle level (the fit sees their mean, 71.5 W)
RUN = [("idle", 300), ("load", 110), ("run", 1500), ("idle", 400), ("load", 110), ("run", 1500)]
RUN += [("idle", 200)]  # s: idle, start-up, training, idle between runs, again, idle after


def _job(parts, checkpoint: tuple[float, float] | None = None) -> np.ndarray:
    """Per-GPU power [W] on the :data:`FINE` grid (the first GPU's; the second 3 W above):
    idle 70 W, start-up 120 W, training a 1.2-s step (650 W compute, 450 W for its last 30 %)
    with, if given, a stall at 150 W of ``checkpoint[1]`` s every ``checkpoint[0]`` s."""
    out = []
    for kind, length in parts:
        t = np.arange(int(round(length / FINE))) * FINE
        if kind == "idle":
            out.append(np.full(t.size, IDLE[0]))
        elif kind == "load":
            out.append(np.full(t.size, 120.0))
        else:
            x = np.where(t % 1.2 > 0.84, 450.0, 650.0)
            if checkpoint is not None:
                every, stall = checkpoint
                x = np.where(t % (every + stall) >= every, 150.0, x)
            out.append(x)
    return np.concatenate(out)


def _frame(x: np.ndarray, poll: float) -> pd.DataFrame:
    """Two GPUs read through NVML's 1-s average every ``poll`` [s], no noise, as printed."""
    at = np.arange(poll, x.size * FINE, poll)
    y = np.asarray(sensors.read(x, FINE, "nvml", at=at))
    stamps = START + (at * 1e9).astype(np.int64).astype("m8[ns]")
    return pd.concat(
        [
            pd.DataFrame({"time": stamps, "channel": f"gpu{g}", "power": np.round(y + g * 3.0, 2)})
            for g in range(2)
        ],
        ignore_index=True,
    )


@functools.cache
def _coarse(poll: float, fmt: str, folder: Path):
    trace = write(_frame(_job(RUN), poll), folder / f"{fmt}-{poll}.log", fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(
            trace,
            folder / f"{fmt}-{poll}.toml",
            period=poll if fmt == "dcgmi-dmon" else None,
            holdout=0,
        )
    return run.result


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("coarse")


@pytest.mark.parametrize(
    "poll, fmt", [(5.0, "nvidia-smi"), (10.0, "nvidia-smi"), (5.0, "dcgmi-dmon")]
)
def test_idle_spells_of_a_noiseless_coarse_poll_are_kept(poll, fmt, folder):
    result = _coarse(poll, fmt, folder)
    # the idle level: the two GPUs' 70 and 73 W, their mean exactly (a flat spell, no noise)
    idle = result.quantities["idle level"]
    assert idle.resolved and idle.value == pytest.approx(np.mean(IDLE), abs=0.05), idle.how
    # the three idle spells (before the start-up, between the runs, after the end), each
    # within two polls of the truth (the NVML window and the poll place each edge)
    line = result.timeline
    spells = line.lengths()[line.state == State.FAILED_IDLE]
    truth = [length for kind, length in RUN if kind == "idle"]
    assert spells.size == 3
    assert spells == pytest.approx(truth, abs=2 * poll)
    # both start-ups: 110 s each, the start-up level's spells
    assert result.quantities["start-up time"].value == pytest.approx(110.0, abs=2 * poll)


ALONE = [("idle", 120), ("load", 110), ("run", 1800)]  # a job trained alone: no checkpoint


@functools.cache
def _alone(folder: Path):
    trace = write(_frame(_job(ALONE), 1.0), folder / "alone.log", "nvidia-smi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        return trace, fit_trace(trace, folder / "alone.toml", holdout=0.3)


def test_a_trace_with_no_checkpoint_writes_an_interval_that_draws_none(folder):
    _, run = _alone(folder)
    q = run.result.quantities["checkpoint interval"]
    assert not q.resolved and q.how.startswith("unseen: no checkpoint"), q.how
    # the interval written: UNSEEN_SPANS x the trace's span, said so in the scenario
    span = run.result.timeline.duration
    assert run.scenario.checkpoint.interval == pytest.approx(UNSEEN_SPANS * span, rel=1e-3)
    line = next(s for s in run.text.splitlines() if s.startswith("interval"))
    assert "unseen" in line and f"{UNSEEN_SPANS:g} x the trace's" in line
    # a hold-out's first part is at least 1 - MAX_HOLDOUT of the trace: its interval too
    # reaches past the whole trace
    assert UNSEEN_SPANS * (1.0 - MAX_HOLDOUT) >= 1.0 - 1e-9
    # the fresh run draws no checkpoint (the preset's Young/Daly interval, about 4 min, drew
    # them over the 30 min of training), and keeps the energy
    numbers = run.predicted.numbers
    assert numbers["dips_predicted"].size == 0 and numbers["checkpoint_error"] == 0
    assert abs(numbers["energy_error"]) <= 0.05
    # the hold-out: fitted on the first 70 %, it predicts the rest, with no checkpoint either
    assert isinstance(run.holdout, Prediction), run.holdout
    assert run.holdout.numbers["checkpoint_error"] == 0
    assert abs(run.holdout.numbers["energy_error"]) <= 0.05


def test_the_one_key_prediction_of_an_unseen_interval_still_draws_the_key(folder, tmp_path):
    # the same job run again with a checkpoint every 5 min (a 3-s stall, about the preset's
    # 2.8 s): the fitted scenario with that one key changed predicts its checkpoints
    _alone(folder)  # the fitted scenario, alone.toml
    with_ck = write(
        _frame(_job(ALONE, checkpoint=(300.0, 3.0)), 1.0), tmp_path / "ck.log", "nvidia-smi"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        other = predict_trace(folder / "alone.toml", with_ck, {"checkpoint.interval": "300s"})
    numbers = other.predicted.numbers
    assert numbers["dips_predicted"].size == pytest.approx(1800 // 303, abs=1)
    assert abs(numbers["checkpoint_error"]) <= 1
