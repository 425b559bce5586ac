"""A sweep in turn against the same sweep on a 2-worker ``LocalCluster`` (issue 13, acceptance 5).

64 points (4 cluster sizes x 4 checkpoint intervals x 4 weather files) x 4 seeds = 256 runs of
7 days at 1 min, each simulated and measured. Measured side by side in one run (machines here
are shared and noisy): in turn (``workers=0``), then on two worker processes twice: once
started cold by the sweep (the cluster's start and the workers' first imports counted), and once
on a cluster already up and warm (what a long sweep approaches). The results must be identical.

Usage: ``python bench/bench_sweep.py``
"""

from __future__ import annotations

import time

import xarray as xr

from powermodel.sweep import cluster, run_all, sweep

BASE = "llama3-405b-16k-h100"
GRID = {
    "cluster.n_gpus": [4096, 8192, 16384, 24576],
    "checkpoint.interval": ["15min", "30min", "1h", "2h"],
    "site.weather": ["sterling", "tampa", "chicago", "golden"],
}
SEEDS = 4
WEEK = {"simulation.duration": "7d", "simulation.dt": "1min"}


def timed(**where: object) -> tuple[float, xr.Dataset]:
    start = time.perf_counter()
    ds = sweep(BASE, GRID, SEEDS, overrides=WEEK, progress=False, **where)
    return time.perf_counter() - start, ds


def main() -> None:
    serial_s, serial = timed(workers=0)
    cold_s, cold = timed(workers=2)
    with cluster(2) as client:
        run_all(abs, [-1, -2], client=client)  # the workers up, powermodel imported on each
        timed(client=client)  # first runs on each worker: caches and lazy imports
        warm_s, warm = timed(client=client)
    xr.testing.assert_identical(serial, cold)
    xr.testing.assert_identical(serial, warm)
    runs = serial["error"].size
    failed = int((serial["error"] != "").sum())
    print(f"{runs} runs of 7 d at 1 min ({failed} failed), results identical in all three")
    print(f"in turn:                        {serial_s:6.2f} s")
    print(f"2 workers, cluster started:     {cold_s:6.2f} s  speed-up {serial_s / cold_s:.2f}x")
    print(f"2 workers, cluster already up:  {warm_s:6.2f} s  speed-up {serial_s / warm_s:.2f}x")


if __name__ == "__main__":
    main()
