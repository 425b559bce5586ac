"""What writing a run's output costs the command (issue 30, acceptance 3).

``powermodel run llama3-405b-16k-h100`` (54 days at 1 s, within its memory budget: made in
chunks, the file written while the next is computed) is timed as a whole process
three ways: without output, ``-o x.parquet`` and ``-o x.csv``; beside them, in a process of its
own, pyarrow's write of the same table (``pq.write_table`` with its default options) as the
writer's own speed. Machines here are shared and noisy, so each figure is the median of
``--repeat`` fresh processes, the variants alternating (their order turned each round), and
the load average is printed before and after. Targets:

- ``run -o x.parquet`` at most 1.25x the run without output;
- ``run -o x.csv`` at most 2x ``run -o x.parquet``.

Peak memory is each process's own (``os.wait4``). A CSV run before the rounds compiles and
caches the CSV's number formatting (numba), as a user's first CSV does once.

Usage: ``python bench/bench_export.py [--days 54] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRESET = "llama3-405b-16k-h100"
ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
TARGETS = {"parquet / run": 1.25, "csv / parquet": 2.0}

PYARROW = r"""
import json, sys, time
import pyarrow.parquet as pq
from powermodel import load_scenario, simulate
from powermodel.export import profile_table
ds = simulate(load_scenario(sys.argv[1], json.loads(sys.argv[2])))
start = time.perf_counter()
table = profile_table(ds, headers=False)
built = time.perf_counter()
pq.write_table(table, sys.argv[3])
done = time.perf_counter()
print(json.dumps({"table": built - start, "write": done - built}))
"""


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall time [s], peak RSS [GiB] and stdout of a fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}")
    return elapsed, usage.ru_maxrss / 1024**2, out


def run(days: float, output: Path | None) -> tuple[float, float]:
    """``powermodel run`` for ``days``, with ``-o output`` where given: wall time, peak."""
    command = [sys.executable, "-m", "powermodel.cli", "run", PRESET]
    command += ["--set", f"simulation.duration={days:g}d"]
    if output is not None:
        command += ["-o", str(output)]
    elapsed, peak, _ = _timed(command)
    if output is not None:
        output.unlink()
    return elapsed, peak


def pyarrow_write(days: float, path: Path) -> float:
    """pyarrow's own write of the run's table [s] (the table built apart)."""
    overrides = json.dumps({"simulation.duration": f"{days:g}d"})
    _, _, out = _timed([sys.executable, "-c", PYARROW, PRESET, overrides, str(path)])
    path.unlink()
    return json.loads(out.strip().splitlines()[-1])["write"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=54.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        files = {"parquet": Path(folder) / "x.parquet", "csv": Path(folder) / "x.csv"}
        run(min(args.days, 1.0), files["csv"])  # compiles the CSV's formatting once (cached)
        variants = {
            "run": lambda: run(args.days, None),
            "parquet": lambda: run(args.days, files["parquet"]),
            "csv": lambda: run(args.days, files["csv"]),
            "pyarrow": lambda: (pyarrow_write(args.days, Path(folder) / "p.parquet"), 0.0),
        }
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        names = list(variants)
        for i in range(args.repeat):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                found[name].append(variants[name]())
                print(f"  round {i + 1} {name:8s} {found[name][-1][0]:7.2f} s", flush=True)
    after = os.getloadavg()
    median = {name: statistics.median(t for t, _ in runs) for name, runs in found.items()}
    peak = {name: max(p for _, p in runs) for name, runs in found.items()}
    cores = len(os.sched_getaffinity(0))
    print(f"powermodel run {PRESET}, {args.days:g} days at 1 s, median of {args.repeat}")
    print(f"load average {load[0]:.2f} before, {after[0]:.2f} after, on {cores} cores")
    for name in ("run", "parquet", "csv"):
        print(
            f"  run{'' if name == 'run' else ' -o x.' + name:16s} {median[name]:7.2f} s  "
            f"peak {peak[name]:.2f} GiB"
        )
    print(f"  pyarrow's write of the table   {median['pyarrow']:7.2f} s (default options)")
    extra = median["parquet"] - median["run"]
    print(
        f"  parquet's cost over the run    {extra:7.2f} s = "
        f"{extra / median['pyarrow']:.2f}x pyarrow's write"
    )
    ratios = {
        "parquet / run": median["parquet"] / median["run"],
        "csv / parquet": median["csv"] / median["parquet"],
    }
    for name, value in ratios.items():
        verdict = "PASS" if value <= TARGETS[name] else "FAIL"
        print(f"  {name:14s} {value:5.2f}  (target <= {TARGETS[name]:g})  {verdict}")


if __name__ == "__main__":
    main()
