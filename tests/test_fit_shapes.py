"""Each real log shape of issue 27 (acceptance 1) read AND fitted end to end: nvidia-smi without
``index`` (stamps spread over a poll, slow polls, the next poll's first line before the last
one's, the GPU count inferred from memory.used or from the idle levels alone), a 2-GPU 250-W
part idling at 15–20 W, an 8-GPU 1,200-W part logged with ``power.draw.instant``, and AMD
Instinct's ``rocm-smi`` and ``amd-smi`` CSV. Each trace is
:func:`synthetic_telemetry.shape`'s, so its truth (the GPU count, each sample's power) is known.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from synthetic_telemetry import SHAPES, shape, write

from powermodel.fit_report import fit_trace
from powermodel.iotools.telemetry import TelemetryWarning
from powermodel.scenario import load_scenario

POLLS = 1200  # two minutes at 100 ms: 24 s idle, then training (node_power's loading 0.2)
# the shapes whose levels lie outside the H100's idle to TDP: the fit builds their GPU
BUILT = {"250w-x2", "1200w-x8"}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_real_log_shape_is_read_and_fitted(name, tmp_path):
    frame, fmt, options = shape(name, polls=POLLS)
    trace = write(frame, tmp_path / f"{name}.log", fmt, **options)
    # rocm-smi's loop prints no times: its period is the loop's (node_power's 100 ms)
    period = 0.1 if fmt == "rocm-smi" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = fit_trace(trace, tmp_path / "fitted.toml", period=period, holdout=0)
    result = run.result
    assert result.n_gpus == SHAPES[name]["gpus"]  # inferred (no index, no --gpus) or read
    # the running level: node_power's training samples (from the first poll past its loading
    # fifth), their mean over every GPU; an average (NVML's 1 s) keeps a mean exactly
    polls = frame["poll"].to_numpy()
    truth = float(frame["power"].to_numpy()[polls >= int(0.2 * POLLS)].mean())
    assert result.quantities["running mean"].value == pytest.approx(truth, rel=0.05)
    # the scenario written loads with every check validate makes, on the GPU chosen
    fitted = load_scenario(tmp_path / "fitted.toml")
    assert bool(result.gpu.table) == (name in BUILT)
    if name in BUILT:
        # a built GPU: its TDP at least the highest sustained level, idle the idle band's
        assert fitted.gpu.tdp >= truth
        idle = SHAPES[name]["power"]["idle"]
        assert idle[0] - 2.0 <= fitted.gpu.idle <= idle[1] + 2.0
    else:
        assert fitted.gpu.name == load_scenario("llama3-405b-16k-h100").gpu.name
    # a fresh run of the fitted scenario predicts the trace (acceptance 3's bounds): its energy
    # within 5 % and its checkpoint count (none: node_power's job never stalls) within one
    numbers = run.predicted.numbers
    assert abs(numbers["energy_error"]) <= 0.05
    assert abs(numbers["checkpoint_error"]) <= 1
