"""A sweep in turn against the same sweep on a 2-worker ``LocalCluster`` (issue 13, acceptance 5).

64 points (4 cluster sizes x 4 checkpoint intervals x 4 weather files) x 4 seeds = 256 runs of
7 days at 1 min, each simulated and measured. Measured side by side in one run (machines here
are shared and noisy): in turn (``workers=0``) and on two worker processes started by the sweep
(the cluster's start and close counted), alternately ``--repeat`` times, each pair's ratio and
their median reported; then once on a cluster already up and warm (what a long sweep
approaches), and once as the first version of this bench measured, in one process: in turn, then
on a cluster the sweep starts (whose workers then fork with the caches the first sweep warmed).
The results must be identical.

Each sweep runs in a fresh process (so that the first one pays the imports and first-call
costs a command pays, and no sweep inherits another's caches): what ``powermodel sweep`` costs.

Usage: ``python bench/bench_sweep.py [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import xarray as xr

BASE = "llama3-405b-16k-h100"
GRID = {
    "cluster.n_gpus": [4096, 8192, 16384, 24576],
    "checkpoint.interval": ["15min", "30min", "1h", "2h"],
    "site.weather": ["sterling", "tampa", "chicago", "golden"],
}
SEEDS = 4
WEEK = {"simulation.duration": "7d", "simulation.dt": "1min"}
ROOT = Path(__file__).resolve().parents[1]
# One sweep in a fresh process: the call's time (from after the imports to after the cluster
# closed) and the process's (from before the imports); for "pair", the sweep on a cluster and
# the sweep in turn before it
CHILD = """
import sys, time
begin = time.perf_counter()
from powermodel.sweep import cluster, sweep
sys.path.insert(0, {bench!r})
from bench_sweep import BASE, GRID, SEEDS, WEEK


def timed(**where):
    start = time.perf_counter()
    ds = sweep(BASE, GRID, SEEDS, overrides=WEEK, progress=False, **where)
    return time.perf_counter() - start, ds


if __name__ == "__main__":
    where = {where}
    if where == "pair":  # the first bench's way: in turn, then a cluster started, in one process
        other = timed(workers=0)[0]
        seconds, ds = timed(workers=2)
    elif where == "warm":
        with cluster(2) as client:
            timed(client=client)  # the workers' first runs: caches and lazy imports
            seconds, ds = timed(client=client)
        other = 0.0
    else:
        seconds, ds = timed(workers=where)
        other = time.perf_counter() - begin
    print(seconds, other)
    ds.to_netcdf({out!r})
"""


def timed(where: int | str, out: Path) -> tuple[float, float]:
    """Seconds of one sweep's call and of its process from the imports (of the sweep in turn
    for "pair"), in a fresh process, its results written to ``out``."""
    code = CHILD.format(bench=str(Path(__file__).parent), where=repr(where), out=str(out))
    script = out.with_suffix(".py")
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr)
    call, process = done.stdout.split()[-2:]
    return float(call), float(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="pairs in turn / cold cluster")
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        pairs = []
        for i in range(repeat):
            serial = timed(0, tmp / f"serial{i}.nc")
            cold = timed(2, tmp / f"cold{i}.nc")
            pairs.append((serial, cold))
            print(
                f"in turn {serial[0]:6.2f} s, 2 workers (cluster started and closed) "
                f"{cold[0]:6.2f} s: speed-up {serial[0] / cold[0]:.2f}x "
                f"(whole processes, imports too: {serial[1] / cold[1]:.2f}x)",
                flush=True,
            )
        warm_s = timed("warm", tmp / "warm.nc")[0]
        pair_cold, pair_serial = timed("pair", tmp / "pair.nc")
        with xr.open_dataset(tmp / "serial0.nc") as first:
            reference = first.load()
        for name in [
            *(f"{k}{i}" for i in range(repeat) for k in ("serial", "cold")),
            "warm",
            "pair",
        ]:
            with xr.open_dataset(tmp / f"{name}.nc") as other:
                xr.testing.assert_identical(reference, other.load())
    runs = reference["error"].size
    failed = int((reference["error"] != "").sum())
    ratio = statistics.median(s[0] / c[0] for s, c in pairs)
    serial_median = statistics.median(s[0] for s, _ in pairs)
    print(f"{runs} runs of 7 d at 1 min ({failed} failed), results identical in all")
    print(f"2 workers, cluster started: median speed-up {ratio:.2f}x (goal >= 1.6)")
    print(
        f"2 workers, cluster already up: {warm_s:6.2f} s, "
        f"{serial_median / warm_s:.2f}x the median in turn"
    )
    print(
        f"in one process, in turn then a cluster started (the caches warm from the first): "
        f"{pair_serial:6.2f} s, {pair_cold:6.2f} s: speed-up {pair_serial / pair_cold:.2f}x"
    )


if __name__ == "__main__":
    main()
