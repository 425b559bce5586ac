"""A long run at 100 ms streamed to Parquet: time with and without rules against pyarrow's own
write of the same file, peak memory and energy (issue 13, acceptance 4; issue 30, acceptance 2).

The reference preset at ``simulation.dt = 100ms`` over ``--duration`` (a year by default: 315 M
steps) is streamed to a Parquet file in fresh subprocesses (each peak RSS its own) with the
command line's memory budget (``--memory-gb``), side by side, alternating, ``--repeats`` times:

- with the metrics and the verdicts of ercot-5s, nprr1191 and ieso
  (:class:`powermodel.stream.Measures`);
- with the metrics alone (no rules);
- pyarrow writing the same file again: its row groups read back one at a time (not timed) and
  written by ``pyarrow.parquet.ParquetWriter`` with the options the stream's writer takes
  (:func:`powermodel.export.parquet_writer`; the time of the writes and the close).

Targets (medians): streamed with rules at most 1.3 times streamed without, and 1.5 times
pyarrow's write; peak memory of each streamed run at most 1.0 GiB. The same period at 1 min is
simulated in memory in another subprocess: the streamed run's GPU and IT energy equal its
within 1e-6 (they are linear in the rendered interval means, so exact across resolutions). The
energy at the connection (``grid_power``) is reported beside them: it is not a resolution
invariant, as the UPS's losses are convex in the load (its efficiency curve), so the 100-ms
swings that 1-min means smooth out lose more (Jensen's inequality; 2e-5 of the energy here).
The machine's load average is printed before and after.

Usage: ``python bench/bench_stream.py [--duration 365d] [--memory-gb 1] [--repeats 1]
[--no-plain] [--defaults]`` (``--no-plain``: without the run without rules; ``--defaults``:
pyarrow's write with its own default options beside, dictionaries tried for every column). A year
writes a file of some 6 GB (and keeps some 3 GB of samples for the rules a while) and takes
minutes a run: ``--duration 14d --repeats 3`` gives the ratios to iterate on.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PRESET = "llama3-405b-16k-h100"
ROOT = Path(__file__).resolve().parent.parent
RULES = "ercot-5s,nprr1191,ieso"

STREAMED = r"""
import json, resource, sys, time
from powermodel import load_scenario
from powermodel.rules import load_rules
from powermodel.stream import Measures, chunk_steps, stream
import numpy as np
import pyarrow.parquet as pq
scenario = load_scenario(sys.argv[1], json.loads(sys.argv[2]))
start = time.perf_counter()
measures = Measures(load_rules(sys.argv[5]) if sys.argv[5] else [])
path = stream(scenario, sys.argv[3], chunk_steps(float(sys.argv[4]) * 1e9), measures=measures)
elapsed = time.perf_counter() - start
verdicts = {r.rule.name: r.passed for r in measures.results}
peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
energy = dict.fromkeys(("grid_power", "it_power", "gpu_power"), 0.0)
rows, data = 0, pq.ParquetFile(path)
for group in range(data.num_row_groups):  # a row group at a time: the file is larger than memory
    table = data.read_row_group(group, columns=list(energy))
    rows += table.num_rows
    for name in energy:
        energy[name] += float(np.sum(table[name].to_numpy())) * scenario.simulation.dt / 3600
size = {"rows": rows, "groups": data.num_row_groups, "bytes": path.stat().st_size}
energy = {f"{k}_mwh": v for k, v in energy.items()}
usage = resource.getrusage(resource.RUSAGE_SELF)
found = {"seconds": elapsed, "cpu": usage.ru_utime + usage.ru_stime, "peak_gib": peak_gib}
found |= {**size, **energy, "verdicts": verdicts}
print(json.dumps(found))
"""

PYARROW = r"""
import json, sys, time
import pyarrow.parquet as pq
from powermodel.export import parquet_writer
data = pq.ParquetFile(sys.argv[1])
writer, seconds, cpu = None, 0.0, 0.0
for group in range(data.num_row_groups):
    table = data.read_row_group(group)  # read back: not timed
    start, used = time.perf_counter(), time.process_time()
    writer = writer or (  # the stream's options, or pyarrow's own defaults
        parquet_writer(sys.argv[2], data.schema_arrow)
        if sys.argv[3] == "stream"
        else pq.ParquetWriter(sys.argv[2], data.schema_arrow)
    )
    writer.write_table(table)
    seconds += time.perf_counter() - start
    cpu += time.process_time() - used
    del table
start, used = time.perf_counter(), time.process_time()
writer.close()
seconds, cpu = seconds + time.perf_counter() - start, cpu + time.process_time() - used
print(json.dumps({"seconds": seconds, "cpu": cpu}))
"""

IN_MEMORY = r"""
import json, sys
from powermodel import load_scenario, simulate
scenario = load_scenario(sys.argv[1], json.loads(sys.argv[2]))
ds = simulate(scenario)
hours = scenario.simulation.dt / 3600
names = ("grid_power", "it_power", "gpu_power")
print(json.dumps({f"{k}_mwh": float(ds[k].values.sum()) * hours for k in names}))
"""


def _child(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="365d")
    parser.add_argument("--memory-gb", default="1")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="also time pyarrow's write with its default options (dictionaries for every column)",
    )
    parser.add_argument(
        "--no-plain",
        action="store_true",
        help="leave out the run without rules (a year's runs take many minutes each)",
    )
    args = parser.parse_args()
    fine = json.dumps({"simulation.duration": args.duration, "simulation.dt": "100ms"})
    coarse = json.dumps({"simulation.duration": args.duration, "simulation.dt": "1min"})
    print(f"load average before (1/5/15 min, {os.cpu_count()} CPUs): {_load()}")
    runs: dict[str, list[dict]] = {"rules": [], "none": [], "pyarrow": [], "defaults": []}
    with tempfile.TemporaryDirectory(dir=ROOT) as folder:
        out, again = str(Path(folder) / "run.parquet"), str(Path(folder) / "again.parquet")
        for _ in range(args.repeats):  # alternating, each run in a fresh process
            runs["rules"].append(_child(STREAMED, PRESET, fine, out, args.memory_gb, RULES))
            if not args.no_plain:
                runs["none"].append(_child(STREAMED, PRESET, fine, out, args.memory_gb, ""))
            runs["pyarrow"].append(_child(PYARROW, out, again, "stream"))
            Path(again).unlink()
            if args.defaults:
                runs["defaults"].append(_child(PYARROW, out, again, "defaults"))
                Path(again).unlink()
    reference = _child(IN_MEMORY, PRESET, coarse)
    print(f"load average after: {_load()}")
    streamed = runs["rules"][-1]
    runs = {key: found for key, found in runs.items() if found}
    median = {key: statistics.median(r["seconds"] for r in found) for key, found in runs.items()}
    cpu = {key: statistics.median(r["cpu"] for r in found) for key, found in runs.items()}
    print(
        f"{args.duration} at 100 ms streamed to Parquet ({streamed['rows']:,} rows, "
        f"{streamed['groups']} row groups, {streamed['bytes'] / 1e9:.2f} GB on disk), "
        f"medians of {args.repeats}"
    )
    print(f"  verdicts                      {streamed['verdicts']}")
    for key, label in (("rules", f"with rules ({RULES})"), ("none", "without rules")):
        if key not in runs:
            continue
        peak = max(r["peak_gib"] for r in runs[key])
        rate = streamed["rows"] / median[key] / 1e6
        print(f"  streamed {label:38s} {median[key]:8.1f} s ({rate:.2f} M steps/s), ", end="")
        print(f"CPU {cpu[key]:.1f} s, peak {peak:.2f} GiB")
    print(f"  pyarrow's write of the same file                {median['pyarrow']:8.1f} s, ", end="")
    print(f"CPU {cpu['pyarrow']:.1f} s (the stream's options)")
    if "defaults" in median:
        label = "pyarrow's write, its default options"
        print(f"  {label:46s} {median['defaults']:8.1f} s, CPU {cpu['defaults']:.1f} s")
    ratios = (
        ("rules / no rules   (<= 1.3)", "rules", "none"),
        ("rules / pyarrow    (<= 1.5)", "rules", "pyarrow"),
        ("no rules / pyarrow", "none", "pyarrow"),
        ("rules / pyarrow's defaults", "rules", "defaults"),
    )
    for label, top, bottom in ratios:
        if top in median and bottom in median:
            ratio, used = median[top] / median[bottom], cpu[top] / cpu[bottom]
            print(f"  {label:30s} {ratio:6.2f}   (CPU time {used:.2f})")
    peak = max(r["peak_gib"] for key in ("rules", "none") for r in runs.get(key, []))
    print(f"  peak memory (<= 1.0 GiB)       {peak:6.2f} GiB")
    for name, target in (("gpu_power", 1e-6), ("it_power", 1e-6), ("grid_power", None)):
        ours, theirs = streamed[f"{name}_mwh"], reference[f"{name}_mwh"]
        gap = abs(ours / theirs - 1.0)
        verdict = "(UPS losses convex)" if target is None else "ok" if gap <= target else "over"
        print(f"  {name:10s} energy vs 1 min {gap:8.1e} {verdict}: {ours:,.3f} MWh")


if __name__ == "__main__":
    main()
