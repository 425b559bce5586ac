"""The scale laws side by side with the measurements they are meant to follow.

1. MLPerf Training v4.0 Llama 2 70B LoRA on 1, 8, 64 nodes of 8 H100 [D, mlperf_training_v4_smc]
   (data/published/mlperf_training_v4_scaling.csv): the running node power of the preset
   ``llama2-70b-lora-h100`` carried to each size with the submission's batch, against the logs'.
2. NLR's multi-node H100 profiles of the same fine-tuning job on 2-16 nodes of 4 H100 [S,
   vercellino_genai] (data/published/nlr_h100_training_power.csv, repeat 0 of each size): the
   preset on 4-GPU nodes at an assumed 1,024 tokens a GPU a step (the batch the derived
   statistics do not give), from launch over the run's length (to the whole minute) at 0.2 s;
   the mean and the coefficient of variation of the per-GPU power over the whole trace, as the
   statistics were computed (their power is GPU and CPU together, the model's the GPU's), and
   the dips a 5-s rolling mean finds below 95 % of its 75th percentile (their detector).

The NLR rows are not a test: their layout and batch are not published with the statistics, and
the model's number depends on them. Usage: ``python bench/bench_scale_laws.py``
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from powermodel import calibration, load_scenario, simulate
from powermodel.iotools import data_dir

LORA = "llama2-70b-lora-h100"
SEQUENCE = 8192
DT = 0.2  # NLR's aggregation step [s]


def dips(power: np.ndarray, window: float = 5.0, threshold: float = 0.05) -> tuple[int, float]:
    """Events where the centred rolling mean falls below (1 − threshold) of its 75th percentile,
    and their mean depth against it (the NLR analysis's detector)."""
    rolling = pd.Series(power).rolling(round(window / DT), center=True, min_periods=1).mean()
    baseline = np.percentile(rolling, 75)
    edges = np.diff(np.r_[0, (rolling.to_numpy() < baseline * (1 - threshold)).astype(int), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = (ends - starts) * DT >= 0.5
    if not keep.any():
        return 0, 0.0
    cumulative = np.r_[0.0, np.cumsum(power)]
    a, b = starts[keep], ends[keep]
    depth = 1 - (cumulative[b] - cumulative[a]) / (b - a) / baseline
    return int(keep.sum()), float(depth.mean())


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
    print("NLR LoRA-70B, whole trace per GPU: mean [W], CV, dips (depth): model | measured")
    for _, row in nlr.iterrows():
        n = int(row["nodes"] * row["gpus_per_node"])
        sc = load_scenario(
            LORA,
            {
                "cluster.gpus_per_node": int(row["gpus_per_node"]),
                "cluster.n_gpus": n,
                "workload.tokens_per_step": n * 1024,
                "simulation.duration": f"{int(row['duration'] // 60) * 60}s",
                "simulation.dt": f"{DT * 1000:.0f}ms",
                "reliability.rate_scale": 0.0,
            },
        )
        gpu = simulate(sc)["gpu_power"].to_numpy() * 1e6 / n
        count, depth = dips(gpu)
        measured = (
            "" if np.isnan(row["dip_depth"]) else f"{int(row['dips'])} ({row['dip_depth']:.3f})"
        )
        print(
            f"  {int(row['nodes']):3d} nodes  {gpu.mean():5.0f} {gpu.std() / gpu.mean():.3f} "
            f"{count} ({depth:.3f}) | {row['mean']:5.0f} {row['cv']:.3f} {measured}"
        )


if __name__ == "__main__":
    main()
