"""Where MLPerf Training v4.0's Llama 2 70B LoRA runs spend their time and power, by node count.

Reads Sustainable Metal Cloud's ``smc-ac-power`` submission in a clone of
github.com/mlcommons/training_results_v4.0 (MLCommons, Apache-2.0; a bare clone works), as
bench/derive_mlperf_scaling.py does: for every run of ``llama2_70b_lora``, the result log's
training blocks and evaluations (``block_start``/``block_stop``, ``eval_start``/``eval_stop``)
and every node's AC power readings (every 2 s). Each reading goes to the part of the run it
falls in: before ``run_start`` (the end of the initialisation, where a node's log begins
before the run), the first training block (the warm-up before the first evaluation), the later
blocks, the evaluations, after ``run_stop``. Per node count it prints each part's share of the
logged time and its mean power, averaged over the runs, and the logged mean they make: the
run-mean node power of data/published/mlperf_training_v4_scaling.csv (``node_ac``) less the
trapezoid rule's difference. The running level the model predicts (``running_ac``, the readings
at or above 0.75 of the run's 99th percentile) is the later blocks' level; the rest of the 27 %
by which the run mean falls from 1 to 64 nodes is in these parts.

    python bench/mlperf_lora_timeline.py /path/to/training_results_v4.0
"""

from __future__ import annotations

import collections
import sys

import numpy as np
from derive_mlperf_scaling import _events, _readings, _runs

PARTS = ("before the run", "first block", "later blocks", "evaluations", "after the run")


def _parts(events: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The run's part boundaries [s since the epoch] and each interval's part (an index into
    :data:`PARTS`), from its result log."""
    times = {e["key"]: e["time_ms"] / 1e3 for e in events if e["key"] in ("run_start", "run_stop")}
    edges, parts = [times["run_start"]], []
    blocks = 0
    for e in events:
        key, t = e["key"], e["time_ms"] / 1e3
        if key in ("block_start", "eval_start") and t > edges[-1]:
            edges.append(t)
            parts.append(3 if parts and parts[-1] == 3 else 2)  # a gap: the block's
        if key == "block_start":
            blocks += 1
        if key in ("block_stop", "eval_stop"):
            edges.append(t)
            parts.append(3 if key == "eval_stop" else (1 if blocks == 1 else 2))
    edges.append(times["run_stop"])
    parts.append(2)
    return np.array(edges), np.array(parts)


def main(repo: str) -> None:
    logs, results, texts = _runs(repo)
    logs = {k: v for k, v in logs.items() if k[1] == "llama2_70b_lora"}
    table = collections.defaultdict(list)
    for key, paths in logs.items():
        edges, parts = _parts(_events(texts[results[key]]))
        time, energy = np.zeros(len(PARTS)), np.zeros(len(PARTS))
        for p in paths:
            t, v = _readings(texts[p])
            if t.size < 2:
                continue
            held = np.diff(t, append=t[-1] + np.median(np.diff(t)))  # each reading's interval
            at = np.searchsorted(edges, t, side="right")
            part = np.where(
                at == 0, 0, np.where(at == edges.size, 4, parts[np.clip(at, 1, parts.size) - 1])
            )
            time += np.bincount(part, held, len(PARTS))
            energy += np.bincount(part, held * v, len(PARTS))
        table[int(key[0].split("x")[0])].append(
            (
                time / time.sum(),
                energy / np.maximum(time, 1e-9),
                energy.sum() / time.sum(),
                time.sum() / len(paths),
            )
        )
    print(
        "nodes  runs  logged [s]  logged mean [W]  |  share of the time, mean node AC [W]: "
        + ", ".join(PARTS)
    )
    for nodes in sorted(table):
        rows = table[nodes]
        share = np.mean([r[0] for r in rows], axis=0)
        time = np.array([r[0] for r in rows])
        level = (time * np.array([r[1] for r in rows])).sum(0) / np.maximum(time.sum(0), 1e-12)
        mean = np.mean([r[2] for r in rows])
        span = np.mean([r[3] for r in rows])
        cells = "  ".join(
            f"{s:5.3f} {lv:5.0f}" if s > 0 else "  -      -"
            for s, lv in zip(share, level, strict=True)
        )
        print(f"{nodes:5d}  {len(rows):4d}  {span:10.0f}  {mean:15.0f}  |  {cells}")


if __name__ == "__main__":
    main(sys.argv[1])
