"""Derive data/published/mlperf_training_v4_scaling.csv from MLPerf Training v4.0's power logs.

Reads Sustainable Metal Cloud's ``smc-ac-power`` submission in a clone of
github.com/mlcommons/training_results_v4.0 (MLCommons, Apache-2.0; a bare clone works): for every
run, the node AC power logs (``power/result_*/node_*.txt``, a reading every 2 s) and the run's
result log (``result_*.txt``: its global batch and the throughput it tracks). Per benchmark and
node count it writes the runs, the mean run length, the median throughput and the step it
implies, the run-mean node power (each node's readings integrated by the trapezoid rule over its
span, averaged over the nodes) with its spread over the runs, and the running node power: the
mean of the readings at or above 0.75 of the run's 99th percentile, which leaves out the start,
the evaluations and the end (each at 2.2-3.5 kW a node against 5.8-7.3 kW running), with its
spread over the runs and, across a run's nodes, its coefficient of variation (averaged over the
runs). The throughput is the one the result log tracks, in its benchmark's unit (sequences a
second for llama2_70b_lora, so a step lasts global_batch / throughput).

    python bench/derive_mlperf_scaling.py /path/to/training_results_v4.0 > \
        data/published/mlperf_training_v4_scaling.csv
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys

import numpy as np

NODE_LOG = re.compile(
    r"^smc-ac-power/results/([^/]+)/([^/]+)/power/(result_[^/]+)/node_(\d+)\.txt$"
)
RESULT_LOG = re.compile(r"^smc-ac-power/results/([^/]+)/([^/]+)/(result_[^/]+)\.txt$")
RUNNING = 0.75  # of the run's 99th-percentile reading: training, not the start or an evaluation


def _blobs(git_dir: str, paths: list[str]) -> dict[str, str]:
    """The text of each path at HEAD, in one ``git cat-file --batch``."""
    batch = "".join(f"HEAD:{p}\n" for p in paths).encode()
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"], input=batch, capture_output=True
    ).stdout
    texts, pos = {}, 0
    for p in paths:
        end = out.index(b"\n", pos)
        size = int(out[pos:end].split()[2])
        texts[p] = out[end + 1 : end + 1 + size].decode()
        pos = end + 1 + size + 1
    return texts


def _events(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        if ":::MLLOG " in line:
            try:
                rows.append(json.loads(line.split(":::MLLOG ", 1)[1]))
            except json.JSONDecodeError:
                continue
    return rows


def _runs(repo: str) -> tuple[dict, dict, dict[str, str]]:
    """The submission's runs in the clone at ``repo``: the node logs of each run (keyed by system,
    benchmark and result), its result log, and the text of every one of them."""
    git_dir = repo if repo.endswith(".git") or repo.endswith("/repo") else f"{repo}/.git"
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.split()
    logs, results = collections.defaultdict(list), {}
    for n in names:
        if m := NODE_LOG.match(n):
            logs[(m[1], m[2], m[3])].append(n)
        elif m := RESULT_LOG.match(n):
            results[(m[1], m[2], m[3])] = n
    texts = _blobs(git_dir, [p for v in logs.values() for p in v] + list(results.values()))
    return logs, results, texts


def _readings(text: str) -> tuple[np.ndarray, np.ndarray]:
    """A node log's power readings: their times [s since the epoch] and values [W]."""
    rows = [e for e in _events(text) if e["key"] == "power_reading"]
    return (
        np.array([e["time_ms"] / 1e3 for e in rows]),
        np.array([float(e["value"]) for e in rows]),
    )


def main(repo: str) -> None:
    logs, results, texts = _runs(repo)
    table = collections.defaultdict(list)
    for key, paths in logs.items():
        means, readings, spans = [], [], []
        for p in paths:
            t, v = _readings(texts[p])
            if t.size > 1:
                means.append(np.trapezoid(v, t) / (t[-1] - t[0]))
                spans.append(t[-1] - t[0])
                readings.append(v)
        events = _events(texts[results[key]]) if key in results else []
        batch = [e["value"] for e in events if e["key"] == "global_batch_size"]
        rate = [
            e["value"]["throughput"]
            for e in events
            if e["key"] == "tracked_stats" and "throughput" in e["value"]
        ]
        v = np.concatenate(readings)
        floor = RUNNING * np.percentile(v, 99)
        running = v[v >= floor].mean()
        per_node = np.array([r[r >= floor].mean() for r in readings])
        spread = per_node.std(ddof=1) / per_node.mean() if per_node.size > 1 else np.nan
        table[key[:2]].append(
            (
                np.mean(means),
                running,
                np.mean(spans),
                batch[0] if batch else np.nan,
                np.median(rate) if rate else np.nan,
                spread,
            )
        )
    print(
        "system,benchmark,nodes,runs,run_time,global_batch,throughput,"
        "node_ac,node_ac_sd,node_ac_min,node_ac_max,running_ac,running_ac_sd,running_node_cv"
    )
    for (system, bench), rows in sorted(
        table.items(), key=lambda kv: (kv[0][1], int(kv[0][0].split("x")[0]))
    ):
        a = np.array(rows, dtype=float)
        nodes = int(system.split("x")[0])
        cv = f"{np.nanmean(a[:, 5]):.4f}" if nodes > 1 else ""
        print(
            f"{system},{bench},{nodes},{len(a)},{a[:, 2].mean():.0f},{a[0, 3]:.0f},"
            f"{np.nanmean(a[:, 4]):.6g},{a[:, 0].mean():.0f},{a[:, 0].std(ddof=1):.0f},"
            f"{a[:, 0].min():.0f},{a[:, 0].max():.0f},{a[:, 1].mean():.0f},"
            f"{a[:, 1].std(ddof=1):.0f},{cv}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
