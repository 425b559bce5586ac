"""Scale laws from measured data: a step's wait at the barrier (workload.parallelism.sync_time,
sync_per_doubling, sync_power) lasts the same however few tokens a GPU computes, so a strongly
scaled job's running level falls as MLPerf Training v4.0's Llama 2 70B LoRA does from 1 to 8 to 64
nodes [D, mlperf_training_v4_smc]: data/published/mlperf_training_v4_scaling.csv, derived from
the runs' logs by bench/derive_mlperf_scaling.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import REFERENCE
from numpy.testing import assert_allclose

from powermodel import analysis, calibration, load_scenario
from powermodel.engine.derive import derive
from powermodel.errors import ScenarioError
from powermodel.iotools import data_dir
from powermodel.models import workload

LORA = "llama2-70b-lora-h100"
SEQUENCE = 8192  # tokens a sequence [P, mlperf_training_v4_smc]
# NeMo's wait at the barrier on H100, the preset's calibration [C, mlperf_training_v4_smc]
NEMO = {"workload.parallelism.sync_time": 0.0641, "workload.parallelism.sync_per_doubling": 0.0204}


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    """The llama2_70b_lora rows of the table, by node count."""
    table = pd.read_csv(data_dir() / "published" / "mlperf_training_v4_scaling.csv")
    return table[table["benchmark"] == "llama2_70b_lora"].set_index("nodes")


def at_nodes(nodes: int, measured: pd.DataFrame) -> dict:
    """The preset carried to ``nodes`` nodes of 8 GPUs with the submission's global batch."""
    return {
        "cluster.n_gpus": 8 * nodes,
        "workload.tokens_per_step": int(measured.loc[nodes, "global_batch"]) * SEQUENCE,
    }


def test_the_measured_rows(measured):
    # data/published/mlperf_training_v4_scaling.csv, rows llama2_70b_lora: 10 runs at each size;
    # the run mean falls 27 % from 1 to 64 nodes (6,953 to 5,083 W AC, the figure), the
    # running level 18 % (7,218 to 5,887 W), the rest being the evaluations and the start that a
    # 115-s run holds; nodes of one run differ by 0.6 % (8 nodes) and 2.5 % (64 nodes)
    assert list(measured.index) == [1, 8, 64] and set(measured["runs"]) == {10}
    assert measured.loc[64, "node_ac"] / measured.loc[1, "node_ac"] == pytest.approx(
        0.731, abs=1e-3
    )
    assert measured.loc[64, "running_ac"] / measured.loc[1, "running_ac"] == pytest.approx(
        0.8156, abs=1e-4
    )
    assert measured.loc[8, "running_node_cv"] == pytest.approx(0.0059, abs=1e-4)
    assert measured.loc[64, "running_node_cv"] == pytest.approx(0.0247, abs=1e-4)


def test_sync_time_adds_a_wait_per_doubling():
    # base + per_doubling · log2 n: 0.0641 + 0.0204 · 3 = 0.1253 s on one node of 8 GPUs
    assert workload.sync_time(8, 0.0641, 0.0204) == pytest.approx(0.1253, rel=1e-12)
    assert workload.sync_time(1, 0.0641, 0.0204) == 0.0641
    assert workload.sync_time(16384, 0.0, 0.0) == 0.0


def test_the_wait_is_its_calibration_on_the_measured_steps(measured):
    # [C] steps of global_batch / throughput at 1, 8, 64 nodes (8 sequences at 2.084 and 12.30 a
    # second, 64 at 89.92): t = λ·work + base + per_doubling·log2 n, three steps, three unknowns
    gpus = measured.index.to_numpy() * 8
    tokens = measured["global_batch"].to_numpy() * SEQUENCE / gpus
    steps = (measured["global_batch"] / measured["throughput"]).to_numpy()
    work, base, per_doubling = calibration.sync_law(tokens, gpus, steps)
    par = load_scenario(LORA).workload.parallelism
    assert (par.sync_time, par.sync_per_doubling) == (
        pytest.approx(base, abs=5e-5),
        pytest.approx(per_doubling, abs=5e-5),
    )
    assert work == pytest.approx(3.713, abs=1e-3)
    # the preset's layout gives each measured step back, to its rounding (3.838 s given)
    for nodes, step in zip(measured.index, steps, strict=True):
        sc = load_scenario(LORA, at_nodes(nodes, measured))
        assert derive(sc).step_time == pytest.approx(step, rel=5e-4)


def test_the_waits_level_and_the_trough_are_their_calibration(measured):
    # [C] the trough depth and the wait's level that give the 1- and 8-node running node power
    # (7,218 and 6,117 W AC): 0.265 and 0.153 of TDP (107 W, between the H100's 80 W idle and
    # 150 W stalled levels [A]); the compute phases at the power cap [A]
    sizes = [at_nodes(1, measured), at_nodes(8, measured)]
    depth, level = calibration.wait_levels(
        LORA, sizes, measured.loc[[1, 8], "running_ac"].to_numpy(), (0.3, 0.2)
    )
    wl = load_scenario(LORA).workload
    assert wl.trough_depth == pytest.approx(depth, abs=5e-4)
    assert wl.parallelism.sync_power == pytest.approx(level, abs=5e-4)


@pytest.mark.parametrize("nodes", [1, 8, 64])
def test_running_node_power_falls_with_the_nodes_as_measured(nodes, measured):
    # [D, mlperf_training_v4_smc] rows llama2_70b_lora: 7,218, 6,117 and 5,887 W AC a node while
    # training; 1 and 8 nodes are the calibration, 64 nodes (the batch per GPU of 8 nodes, 9
    # doublings of the GPUs against 6) is predicted: 5,850 W, 0.6 % under. Within the
    # measurement's spread: over its runs and, where it has several, over a run's nodes
    row = measured.loc[nodes]
    spread = np.hypot(
        row["running_ac_sd"], np.nan_to_num(row["running_node_cv"]) * row["running_ac"]
    )
    model = calibration.running_node_power(LORA, at_nodes(nodes, measured))
    assert model == pytest.approx(row["running_ac"], abs=spread)
    # without the wait the layout holds the shares: the level would not fall at all
    flat = calibration.running_node_power(
        LORA,
        {
            **at_nodes(nodes, measured),
            "workload.parallelism.sync_time": 0.0,
            "workload.parallelism.sync_per_doubling": 0.0,
        },
    )
    base = calibration.running_node_power(
        LORA, {"workload.parallelism.sync_time": 0.0, "workload.parallelism.sync_per_doubling": 0.0}
    )
    assert flat == pytest.approx(base, rel=2e-3)


def test_at_16k_gpus_the_wait_takes_two_fifths_of_the_step(measured):
    # the same job on 16,384 GPUs, the batch per GPU as on 8 and 64 nodes (an eighth of a
    # sequence): the work of 3.713 s / 8 and a wait of 0.0641 + 0.0204 · 14 = 0.350 s, a step of
    # 0.814 s of which 43 % waits; the running node power falls on, to 5,495 W (24 % under one
    # node), between the 64-node level and a node whose GPUs all wait (8 × 107 W + 2 kW)
    sc = load_scenario(LORA, {"cluster.n_gpus": 16384, "workload.tokens_per_step": 16384 * 1024})
    layout = sc.layout()
    assert layout.step_time == pytest.approx(0.8139, abs=5e-4)
    assert layout.wait.sum() == pytest.approx(0.350 / 0.8139, abs=1e-3)
    node = calibration.running_node_power(sc)
    assert node == pytest.approx(5495, abs=5)
    assert (
        8 * 0.153 * 700 + 2000 < node < calibration.running_node_power(LORA, at_nodes(64, measured))
    )
    # the reference keeps no wait: Llama 3's 8K and 16K rows leave no room for it (with NeMo
    # LoRA's, the 8K row would run at 44.7 % MFU against the published 43 % [P, llama3 Table 4])
    ref = load_scenario(REFERENCE)
    assert not ref.layout().wait.any()
    assert_allclose(ref.phase_powers()[1], [700.0, 490.0], rtol=1e-12)
    eight = load_scenario(REFERENCE, {"cluster.n_gpus": 8192, **NEMO})
    assert 6 * 405e9 * 16777216 / (8192 * 989.4e12 * derive(eight).step_time) == pytest.approx(
        0.4468, abs=5e-4
    )


def test_the_wait_keeps_each_phases_energy():
    # the wait is held in the communication phase as its time-weighted level: on one node the
    # 0.1253 s of the 3.838-s step at 107 W (0.153 of 700 W) and the rest of the phase's 0.325 at
    # 700 · (1 − 0.265) = 514.5 W
    sc = load_scenario(LORA)
    shares, watts = sc.phase_powers()
    wait = workload.sync_time(8, 0.0641, 0.0204) / 3.838
    assert_allclose(shares, [0.675, 0.325], rtol=1e-12)
    assert watts[1] * 0.325 == pytest.approx((0.325 - wait) * 514.5 + wait * 0.153 * 700, rel=1e-9)


def test_a_wait_longer_than_the_communication_is_refused():
    with pytest.raises(ScenarioError, match=r"wait at the barrier .* is longer than the") as err:
        load_scenario(LORA, {"workload.parallelism.sync_time": 2.0}).layout()
    assert "\n" not in str(err.value)


def test_the_dashboards_compute_share_leaves_room_for_the_wait(measured):
    # on 8 nodes the wait takes 0.186 s of the 0.6506-s step (no bubble, no exposed traffic with
    # PP 1 and LoRA's adapters): a compute share above 1 − 0.2867 = 0.713 cannot be shown
    from powermodel.webapp import controls

    base = load_scenario(LORA, at_nodes(8, measured))
    with pytest.raises(ScenarioError, match=r"and wait at the barrier .* at most 0\.713"):
        controls.overrides({"workload.compute_share": 0.75}, base)
    out = controls.overrides({"workload.compute_share": 0.6}, base)
    assert load_scenario(base, out).compute_share == pytest.approx(0.6, rel=1e-9)


def test_one_node_runs_train_near_tdp_whatever_the_model():
    # data/published/mlperf_training_v4_scaling.csv (running_ac) through each run's own AC/DC
    # ratio (data/published/mlperf_training_v4_power.csv), less a fanless node's 2 kW, over 8 GPUs
    # of 700 W: 0.84-0.90 of TDP for the six one-node benchmarks, from tens of millions of
    # parameters to 70e9 (docs/model/workload.md, "Scale, not size"); the size law gives a 1e9
    # model 0.64 · 0.9025 = 0.58. With more nodes the level falls.
    published = data_dir() / "published"
    table = pd.read_csv(published / "mlperf_training_v4_scaling.csv").merge(
        pd.read_csv(published / "mlperf_training_v4_power.csv")[
            ["benchmark", "nodes", "ac_dc_ratio"]
        ],
        on=["benchmark", "nodes"],
    )
    gpu = (table["running_ac"] / table["ac_dc_ratio"] - 2000.0) / 8 / 700.0
    one = gpu[table["nodes"] == 1]
    assert len(one) == 6 and 0.835 <= one.min() < one.max() <= 0.90
    assert workload.running_level(1e9) * (0.675 + 0.325 * 0.7) == pytest.approx(0.578, abs=1e-3)
    for bench, nodes, level in (("resnet", 8, 0.667), ("ssd", 8, 0.742), ("unet3d", 9, 0.809)):
        row = (table["benchmark"] == bench) & (table["nodes"] == nodes)
        first = (table["benchmark"] == bench) & (table["nodes"] == 1)
        assert float(gpu[row].iloc[0]) == pytest.approx(level, abs=1e-3)
        assert float(gpu[row].iloc[0]) < float(gpu[first].iloc[0])


@pytest.mark.parametrize(
    ("key", "value"), [("workload.parallelism.sync_power", 0.1), ("workload.startup_power", 0.1)]
)
def test_a_level_below_idle_is_refused_naming_its_key(key, value):
    # 0.1 of 700 W is 70 W, under the H100's 80 W idle: the key and the least it may be (0.114)
    with pytest.raises(ScenarioError, match=rf"{key} 0.1 is 70 W .* at least 0.114") as err:
        load_scenario(LORA, {key: value})
    assert "\n" not in str(err.value)


# NLR's profiles of MLCommons' reference LoRA job (DeepSpeed ZeRO-3) on 2-16 nodes of 4 H100
# [S, vercellino_genai]: data/published/nlr_h100_training_power.csv (repeat 0 of each size, and
# the five repeats' spread of the standard deviation read off the source's figure) and
# data/published/nlr_h100_lora_16node_drops.csv (the 16-node run's drops, 10 % threshold)
ZERO3, NLR_DT = calibration.ZERO3, calibration.NLR_DT


@pytest.fixture(scope="module")
def nlr() -> pd.DataFrame:
    table = pd.read_csv(data_dir() / "published" / "nlr_h100_training_power.csv")
    return table[table["workload"] == "llama2_70b_lora"].set_index("nodes")


@pytest.fixture(scope="module")
def nlr_drops() -> pd.DataFrame:
    """The 16-node run's drops: its start-up first, its end last."""
    return pd.read_csv(data_dir() / "published" / "nlr_h100_lora_16node_drops.csv")


@pytest.fixture(scope="module")
def nlr_model(nlr) -> dict[int, np.ndarray]:
    return {nodes: calibration.nlr_profile(nodes, row["duration"]) for nodes, row in nlr.iterrows()}


def _found(trace: np.ndarray) -> pd.DataFrame:
    """NLR's detector at its 10 % threshold: a 5-s rolling mean below 90 % of its 75th
    percentile [S, vercellino_genai]."""
    return analysis.drops(trace, NLR_DT, threshold=0.10)


def test_the_zero3_preset_is_its_calibration(nlr, nlr_drops, nlr_model):
    # [C] on the 16-node run: the step is its spectrum's 10.58-s peak [S]; the CPUs' share its
    # 95th percentile (751.9 W a GPU) less the model's backward (708.9 W); the forward's level
    # (0.219 under the cap) the raw power's mean over its drops (their median, 15.92 % under
    # the detector's baseline: 15.91 %); the shares (0.541 at the cap) its mean, 597.5 W
    # (597.55). To the coefficients' third decimals: a thousandth of the share moves the mean
    # 0.12 W, of the depth the mean 0.27 W and the drops' depth 0.0008
    row, model = nlr.loc[16], nlr_model[16]
    drops = nlr_drops.iloc[1:-1]
    assert derive(load_scenario(ZERO3)).step_time == pytest.approx(row["period"], rel=1e-9)
    assert np.percentile(model, 95) == pytest.approx(row["p95"], abs=0.1)
    found = _found(model).iloc[1:-1]
    assert found["depth"].median() == pytest.approx(drops["drop_pct"].median() / 100, abs=5e-4)
    assert model.mean() == pytest.approx(row["mean"], abs=0.2)


def test_the_16_node_drops_follow_from_the_calibration(nlr_drops, nlr_model):
    # A check of the calibration on the run it is fitted on, not a prediction: the drops'
    # count (164 against 159: (2,074.6 - 312 - 20) / 10.58 = 164.6 steps; the run's gaps and
    # its five 16-s drops every 20 steps the model has not) and spacing (10.6 against 10.4 s,
    # 10th-90th percentile 10.2-11.0 s) follow from the step, the start-up and the end read off
    # it; their length (2.6 s against 2.6 s, 2.4-3.0 s) from the shares and depth fitted on it;
    # the detector's baseline (711.3 against 711.2 W) from the CPUs' share; the start-up's drop
    # (310.8 against 313.2 s, 75.6 against 74.4 % deep) and the end's (22.0 against 20.0 s)
    # [S, vercellino_genai]
    found, drops = _found(nlr_model[16]), nlr_drops
    assert found.attrs["baseline"] == pytest.approx(drops["baseline_W"].iloc[0] / 64, rel=0.001)
    inner, measured = found.iloc[1:-1], drops.iloc[1:-1]
    assert len(inner) == pytest.approx(len(measured), rel=0.05)
    length = measured["duration_s"]
    assert length.quantile(0.1) <= inner["length"].median() <= length.quantile(0.9)
    apart = np.diff(measured["start_s"])
    assert np.quantile(apart, 0.1) <= np.median(np.diff(inner["start"])) <= np.quantile(apart, 0.9)
    for at in (0, -1):  # the start-up and the end: within 2.5 s (half the detector's window)
        assert found["length"].iloc[at] == pytest.approx(drops["duration_s"].iloc[at], abs=2.5)
    assert found["depth"].iloc[0] == pytest.approx(drops["drop_pct"].iloc[0] / 100, abs=0.02)


def test_the_spread_grows_with_the_nodes_as_the_start_up_takes_more_of_the_run(nlr, nlr_model):
    # Predicted on 2, 4 and 8 nodes (nothing of them fitted): the running swing is the same at
    # every size (the batch per GPU is fixed), the start-up, 312 s from launch on 16 nodes, a
    # growing share of a run that shortens from 89 to 35 min. The coefficient of variation
    # rises from 22.1 % on 2 nodes to 26.4 % on 4 and 33.3 % on 8 (as long as the 16-node run),
    # against 20.5, 24.9 and 29.7 % measured (33.2 % on 16, the model 33.3 %). On 4 nodes the
    # standard deviation, 166.4 W, is within the five runs' spread, 140.0-170.5 W
    # [S, vercellino_genai]; on 2 and 8 it is not (below)
    cv = {nodes: trace.std() / trace.mean() for nodes, trace in nlr_model.items()}
    assert cv[2] < cv[4] < cv[8] and cv[8] == pytest.approx(cv[16], abs=1e-3)
    row = nlr.loc[4]
    assert row["std_runs_min"] <= nlr_model[4].std() <= row["std_runs_max"]


@pytest.mark.xfail(strict=True, reason="one start-up for every run: see docs/model/workload.md")
@pytest.mark.parametrize("nodes", [2, 8])
def test_the_spread_on_2_and_8_nodes_is_within_the_runs(nodes, nlr, nlr_model):
    # With the 16-node run's start-up at every size, the model's standard deviation is 143.2 W
    # on 2 nodes (125.0-141.3 over the five runs) and 198.9 W on 8 (170.9-182.0: its first run,
    # 181.3 W, is as long as the 16-node one, 198.2 W); the runs' start-ups range from about
    # 250 to 330 s (the profiles' figure), which moves it by 13 and 19 W
    row = nlr.loc[nodes]
    assert row["std_runs_min"] <= nlr_model[nodes].std() <= row["std_runs_max"]


@pytest.mark.parametrize("gpus", [4, 32, 256, 16384])
def test_the_zero3_job_keeps_its_step_at_any_size(gpus):
    # one node to 4,096: a sequence a GPU a step and no data-parallel term (the preset's
    # assumption), so the layout carries the step (10.58 s) and its two levels (700 and
    # 546.7 W) unchanged
    sc = load_scenario(ZERO3, {"cluster.n_gpus": gpus, "workload.tokens_per_step": gpus * 8192})
    assert derive(sc).step_time == pytest.approx(10.58, rel=1e-12)
    shares, watts = sc.phase_powers()
    assert_allclose(shares, [0.541, 0.459], rtol=1e-12)
    assert_allclose(watts, [700.0, 546.7], rtol=1e-12)


def test_the_nlr_profile_refuses_what_it_cannot_run():
    for args, match in (
        ((0, 600.0), "whole number of nodes"),
        ((2.5, 600.0), "whole number of nodes"),
        ((2, 10.0), "at least 20.2 s"),
        ((2, float("nan")), "at least 20.2 s"),
    ):
        with pytest.raises(ValueError, match=match):
            calibration.nlr_profile(*args)
    with pytest.raises(ValueError, match="sets cluster.gpus_per_node"):
        calibration.nlr_profile(2, 600.0, overrides={"simulation.dt": "1s"})
    with pytest.raises(ValueError, match="startup is launch to the first step"):
        calibration.nlr_profile(2, 600.0, startup=10.0)


def test_the_drop_detector_on_a_known_trace():
    # a 100-s trace at 0.2 s at 10 W, with a 4-s drop to 5 W at 20 s and a 2-s one to 4 W at
    # the end; with a 1-s window the baseline (75th percentile) is 10 W and the centred mean is
    # under 9.5 W from 0.4 s before a drop to 0.4 s after it: 4.8 and 2.4 s (the second cut by
    # the trace's end), their raw means over that 41.7 and 50 % under the baseline
    power = np.full(500, 10.0)
    power[100:120], power[490:] = 5.0, 4.0
    found = analysis.drops(power, 0.2, window=1.0)
    assert found.attrs["baseline"] == 10.0
    assert_allclose(found["start"], [19.6, 97.6], atol=1e-9)
    assert_allclose(found["length"], [4.8, 2.4], atol=1e-9)
    assert_allclose(found["minimum"], [5.0, 4.0])
    assert_allclose(
        found["depth"], [1 - (5.0 * 20 + 10.0 * 4) / 24 / 10, 1 - (4.0 * 10 + 20) / 12 / 10]
    )
    assert analysis.drops(np.ones(10), 0.2).empty
    for bad in (
        {"dt": 0.0},
        {"dt": 0.2, "threshold": 1.0},
        {"dt": float("nan")},
        {"dt": float("inf")},
        {"dt": 0.2, "window": float("inf")},
        {"dt": "0.2"},
        {"dt": np.array([0.2, 0.4])},
        {"dt": True},
    ):
        with pytest.raises(ValueError, match="drops\\(\\) needs"):
            analysis.drops(power, **bad)
    with pytest.raises(ValueError, match="finite"):
        analysis.drops(np.r_[power, np.nan], 0.2)
    with pytest.raises(ValueError, match="complex"):
        analysis.drops(power * 1j, 0.2)
    for flat in (-power, np.zeros(5)):
        with pytest.raises(ValueError, match="positive baseline"):
            analysis.drops(flat, 0.2)
