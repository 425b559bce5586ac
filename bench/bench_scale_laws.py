"""The scale laws side by side with the measurements they are meant to follow.

1. MLPerf Training v4.0 Llama 2 70B LoRA on 1, 8, 64 nodes of 8 H100 [D, mlperf_training_v4_smc]
   (data/published/mlperf_training_v4_scaling.csv): the running node power of the preset
   ``llama2-70b-lora-h100`` carried to each size with the submission's batch, against the logs'.
2. NLR's multi-node H100 profiles of MLCommons' reference LoRA job (DeepSpeed ZeRO-3) on 2-16
   nodes of 4 H100 [S, vercellino_genai] (data/published/nlr_h100_training_power.csv, repeat 0
   of each size; data/published/nlr_h100_lora_16node_drops.csv): the preset
   ``llama2-70b-lora-zero3-h100`` (calibrated on the 16-node run) from launch over each run's
   length at 0.2 s, per GPU with the CPUs' 43.0 W; the mean, standard deviation (against the
   five repeats' range; the model's also with start-ups across the runs' range) and
   coefficient of variation of the whole trace, and the drops NLR's
   detector finds (a 5-s rolling mean below 90 % of its 75th percentile: count, median depth,
   length and interval after the start-up).

The same comparisons are tests in tests/test_scale_laws.py; this prints them side by side.
Usage: ``python bench/bench_scale_laws.py``
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from powermodel import analysis, calibration
from powermodel.iotools import data_dir

LORA = "llama2-70b-lora-h100"
# launch to the first step over NLR's runs, about 250-330 s: the rises into training on the
# profiles' figure (02_analysis_scripts/plots/2026-03-20_llama2_70b_lora_power_profile.png)
STARTUPS = (250.0, 330.0)
SEQUENCE = 8192


def main() -> None:
    published = data_dir() / "published"
    mlperf = pd.read_csv(published / "mlperf_training_v4_scaling.csv")
    lora = mlperf[mlperf["benchmark"] == "llama2_70b_lora"].set_index("nodes")
    print("MLPerf v4.0 LoRA-70B, running node power [W AC]: model / measured")
    for nodes, row in lora.iterrows():
        over = {
            "cluster.n_gpus": 8 * nodes,
            "workload.tokens_per_step": int(row["global_batch"]) * SEQUENCE,
        }
        model = calibration.running_node_power(LORA, over)
        print(
            f"  {nodes:3d} nodes  {model:7.0f} / {row['running_ac']:5.0f}  "
            f"{model / row['running_ac']:.4f}"
        )
    nlr = pd.read_csv(published / "nlr_h100_training_power.csv")
    nlr = nlr[nlr["workload"] == "llama2_70b_lora"]
    print("NLR LoRA-70B (ZeRO-3), whole trace per GPU: mean [W], std [W], CV: model")
    print(f"  [std with start-ups of {STARTUPS[0]:g}-{STARTUPS[1]:g} s] | measured (repeats' std)")
    traces = {}
    for _, row in nlr.iterrows():
        nodes = int(row["nodes"])
        traces[nodes] = gpu = calibration.nlr_profile(nodes, row["duration"])
        early, late = (calibration.nlr_profile(nodes, row["duration"], s).std() for s in STARTUPS)
        print(
            f"  {nodes:3d} nodes  {gpu.mean():5.1f} {gpu.std():5.1f} "
            f"[{early:5.1f}-{late:5.1f}] {gpu.std() / gpu.mean():.4f} | "
            f"{row['mean']:5.1f} {row['std']:5.1f} ({row['std_runs_min']:.1f}-"
            f"{row['std_runs_max']:.1f}) {row['cv']:.4f}"
        )
    measured = pd.read_csv(published / "nlr_h100_lora_16node_drops.csv").iloc[1:-1]
    found = analysis.drops(traces[16], calibration.NLR_DT, threshold=0.10).iloc[1:-1]
    print("16 nodes, drops below 90 % of the baseline: count, median depth, length, interval")
    for label, count, depth, length, start in (
        ("model", len(found), found["depth"].median(), found["length"].median(), found["start"]),
        (
            "measured",
            len(measured),
            measured["drop_pct"].median() / 100,
            measured["duration_s"].median(),
            measured["start_s"],
        ),
    ):
        print(
            f"  {label:8s} {count:4d}  {depth:.3f}  {length:.1f} s  "
            f"{np.median(np.diff(start.to_numpy())):.2f} s"
        )


if __name__ == "__main__":
    main()
