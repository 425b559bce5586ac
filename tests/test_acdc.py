"""A node's AC/DC ratio (issue 12) against MLPerf Training v4.0's measured AC and DC node power
[D, mlperf_training_v4_smc]: data/published/mlperf_training_v4_power.csv, derived from the
Apache-2.0 results of github.com/mlcommons/training_results_v4.0."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from conftest import REFERENCE

from powermodel import load_scenario
from powermodel.calibration import (
    TITANIUM_EFFICIENCY,
    TITANIUM_LOAD,
    psu_loss_scale,
    scaled_efficiency,
)
from powermodel.models import electrical

DATA = Path(__file__).resolve().parents[1] / "data"
MEASURED = DATA / "published" / "mlperf_training_v4_power.csv"


@pytest.fixture(scope="module")
def mlperf() -> dict[str, np.ndarray]:
    with open(MEASURED, newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in ("node_ac", "node_dc", "ac_dc_ratio")}


def test_the_measured_ratios(mlperf):
    # 12 system-benchmark pairs (1, 8, 9 and 64 nodes): AC/DC 1.016-1.034, the ratio of the
    # columns as written, at 4.3-7.0 kW AC per node
    assert len(mlperf["node_ac"]) == 12
    np.testing.assert_allclose(
        mlperf["node_ac"] / mlperf["node_dc"], mlperf["ac_dc_ratio"], atol=2e-4
    )
    assert mlperf["ac_dc_ratio"].min() == pytest.approx(1.0158, abs=1e-4)
    assert mlperf["ac_dc_ratio"].max() == pytest.approx(1.0343, abs=1e-4)
    assert 4300 < mlperf["node_ac"].min() < mlperf["node_ac"].max() < 7100


def test_model_ratio_at_the_measured_loads_lies_in_the_measured_range(mlperf):
    # At each measured DC node power, on the reference's 19.8 kW of supplies, the model's AC/DC
    # lies within what MLPerf measured; the 80 PLUS Titanium floor alone (1.048-1.061 there) does
    # not, at any load: its best point, 96 % at half load, is already 1.042.
    psu = load_scenario(REFERENCE).cluster.psu
    low, high = mlperf["ac_dc_ratio"].min(), mlperf["ac_dc_ratio"].max()
    model = psu.input_power(mlperf["node_dc"]) / mlperf["node_dc"]
    assert np.all((low <= model) & (model <= high)), model
    floor = electrical.input_power(
        mlperf["node_dc"], psu.capacity, np.array(TITANIUM_LOAD), np.array(TITANIUM_EFFICIENCY)
    )
    assert np.all(floor / mlperf["node_dc"] > high + 0.01)
    # the calibration pins only the mean: energy over the 12 conditions within 0.1 %
    assert psu.input_power(mlperf["node_dc"]).sum() == pytest.approx(
        mlperf["node_ac"].sum(), rel=1e-3
    )


def test_preset_curve_is_its_calibration(mlperf):
    # [C]: the Titanium losses scaled by k = Σ(AC − DC) / Σ loss(DC) = 0.467
    psu = load_scenario(REFERENCE).cluster.psu
    k = psu_loss_scale(mlperf["node_dc"], mlperf["node_ac"], psu.capacity)
    assert k == pytest.approx(0.467, abs=5e-4)
    np.testing.assert_allclose(psu.efficiency, scaled_efficiency(k), atol=5e-5)
    assert psu.load == list(TITANIUM_LOAD)


@pytest.mark.parametrize("n_gpus", [8, 32, 512, 16384])
def test_running_node_ratio_at_four_cluster_sizes(mlperf, n_gpus):
    # The node's AC/DC over an iteration (compute and communication phases, each through the
    # supply curve) at one node, a rack, 512 GPUs and 16K: within MLPerf's measured 1.016-1.034
    # [D, mlperf_training_v4_smc]; 1.0215 with the reference's 8.2 kW DC compute phase and
    # 6.5 kW communication phase. (The Titanium floor gave 1.046.)
    # the reference's phases at every size: no layout, which moves the shares with the size
    # and refuses one node or one rack (less than one of its 128-GPU replicas)
    fixed = {"cluster.n_gpus": n_gpus, "workload.step_time": "6s", "workload.parallelism": None}
    sc = load_scenario(REFERENCE, fixed)
    cl = sc.cluster
    shares, watts = sc.phase_powers()
    dc = cl.gpus_per_node * np.asarray(watts) + cl.rest_power_active
    ratio = float(shares @ cl.psu.input_power(dc) / (shares @ dc))
    assert mlperf["ac_dc_ratio"].min() <= ratio <= mlperf["ac_dc_ratio"].max()
    assert ratio == pytest.approx(1.0215, abs=0.002)


def test_node_peak_still_is_the_measured_peak():
    # rest_power_active was re-derived through the new curve from Latif et al.'s 8.4 kW measured
    # node peak [P, latif]: 8.23 kW DC less 8 × 700 W, rounded to 2.6 kW
    cl = load_scenario(REFERENCE).cluster
    assert cl.psu.input_power(8 * 700.0 + cl.rest_power_active) == pytest.approx(8400, rel=0.005)


def test_the_running_levels_range_covers_the_measured_runs(mlperf):
    # The same runs' GPUs [D, mlperf_training_v4_smc]: node DC less a fanless node's rest (the
    # reference's 2.6 kW less its 0.6 kW of fans), over 8 GPUs and 700 W, average 0.40-0.87 of
    # TDP; at the reference iteration (compute 67.5 %, a trough 30 % lower: 0.9025 of the
    # compute level) their compute levels span 0.45-0.96, inside the sensitivity range of
    # workload.compute_power, whose low end is the lowest of them
    sc = load_scenario(REFERENCE)
    fans = sc.cluster.fans.power
    average = (mlperf["node_dc"] - (sc.cluster.rest_power_active - fans)) / 8 / sc.gpu.tdp
    assert average.min() == pytest.approx(0.40, abs=0.005)
    assert average.max() == pytest.approx(0.87, abs=0.005)
    compute = average / (0.675 + 0.325 * 0.7)
    (span,) = [s for s in sc.sensitivity if s.key == "workload.compute_power"]
    assert span.low == pytest.approx(compute.min(), abs=0.005) and compute.max() <= span.high
