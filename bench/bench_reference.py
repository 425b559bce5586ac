"""Wall time and peak memory of the reference runs.

- the 54-day, 1-s reference run (issue 2, point 8): under 20 s and 2 GB here;
- a year at 1 min with weather and cooling plant at Sterling (issue 3, point 7): under 10 s;
- metrics and ``check`` (ERCOT 5 s, NPRR1191, IESO) over the 54-day 1-s run (issue 4, point 6):
  under 10 s.

Each measurement runs in a fresh subprocess so that peak RSS is its own. Machines here are shared
and noisy, so the script also reports ratios measured side by side in the same run:

- the 54-day run against a 7-day run (cost should grow with simulated time: about 54/7 = 7.7×);
- 131,072 GPUs against 16,384 GPUs over 7 days, failures off in both so that the number of events
  is the same (cost should not grow with GPU count: about 1×);
- pandas ``to_csv`` against pyarrow's CSV writer on the same 1-day table.

Usage: ``python bench/bench_reference.py``
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
from powermodel import load_scenario, simulate
overrides = json.loads(sys.argv[1])
mode = sys.argv[2]
scenario = load_scenario("llama3-405b-16k-h100", overrides)
start = time.perf_counter()
ds = simulate(scenario)
elapsed = {"simulate": time.perf_counter() - start}
if mode == "csv":
    import pandas as pd
    from powermodel import export
    start = time.perf_counter()
    export.write(ds, "/tmp/powermodel-bench.csv")
    elapsed["pyarrow_csv"] = time.perf_counter() - start
    start = time.perf_counter()
    ds[[n for n, v in ds.data_vars.items() if v.dims == ("time",)]].to_dataframe().to_csv(
        "/tmp/powermodel-bench-pandas.csv")
    elapsed["pandas_csv"] = time.perf_counter() - start
if mode == "check":
    from powermodel import metrics
    from powermodel.rules import check, load_rules
    rules = load_rules("ercot-5s,nprr1191,ieso")
    start = time.perf_counter()
    metrics(ds)
    check(ds, rules)
    elapsed["metrics_check"] = time.perf_counter() - start
peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
print(json.dumps({**elapsed, "peak_gb": peak_gb, "rows": ds.sizes["time"]}))
"""


def measure(overrides: dict, mode: str = "") -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(overrides), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    full = measure({}, "check")
    week = measure({"simulation.duration": "7d"})
    no_fail = {"simulation.duration": "7d", "reliability.rate_scale": 0.0}
    small = measure(no_fail)
    big = measure({**no_fail, "cluster.n_gpus": 131072})
    csv = measure({"simulation.duration": "1d"}, "csv")
    year = measure(
        {
            "simulation.start": "2024-01-01T00:00:00",
            "simulation.duration": "365d",
            "simulation.dt": "1min",
        }
    )
    print(f"54-day 1-s reference: {full['rows']:,} rows")
    print(
        f"  simulate wall time  {full['simulate']:6.2f} s   (target < 20 s: "
        f"{full['simulate'] / 20:.2f} of it)"
    )
    print(
        f"  peak memory         {full['peak_gb']:6.2f} GB  (target < 2 GB: "
        f"{full['peak_gb'] / 2:.2f} of it)"
    )
    print(
        f"  metrics and check   {full['metrics_check']:6.2f} s   (target < 10 s: "
        f"{full['metrics_check'] / 10:.2f} of it)"
    )
    print(f"year at 1 min with weather and plant: {year['rows']:,} rows")
    print(
        f"  simulate wall time  {year['simulate']:6.2f} s   (target < 10 s: "
        f"{year['simulate'] / 10:.2f} of it)"
    )
    print("side-by-side ratios:")
    print(
        f"  54 days / 7 days          {full['simulate'] / week['simulate']:6.1f}  (7.7 if linear)"
    )
    print(
        f"  131,072 / 16,384 GPUs     {big['simulate'] / small['simulate']:6.2f}  (1 if flat in N)"
    )
    print(f"  pandas / pyarrow CSV      {csv['pandas_csv'] / csv['pyarrow_csv']:6.1f}")
    ok = (
        full["simulate"] < 20
        and full["peak_gb"] < 2
        and year["simulate"] < 10
        and full["metrics_check"] < 10
    )
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
