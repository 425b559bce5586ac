"""Wall time and peak memory of step-to-step variation (``workload.variation``).

The 54-day reference at 1 s with variation off and on (about 0.76 M drawn steps of 6.1 s), and
the same run with a 0.5-s step (about 9.3 M drawn steps: the most steps a run draws at this
length), each off and on. Every measurement runs in a fresh subprocess so that its peak RSS is
its own; machines here are shared and noisy, so the ratios are measured side by side in one run.

Usage: ``python bench/bench_variation.py``
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
from powermodel import load_scenario, simulate
from powermodel.simulate import memory_estimate
scenario = load_scenario("llama3-405b-16k-h100", json.loads(sys.argv[1]))
start = time.perf_counter()
ds = simulate(scenario)
elapsed = time.perf_counter() - start
peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
estimate_gb = memory_estimate(scenario) / 1e9
print(json.dumps({"simulate": elapsed, "peak_gb": peak_gb, "estimate_gb": estimate_gb}))
"""

RUNS = {
    "reference 54 d at 1 s": {},
    "0.5-s steps 54 d at 1 s": {"workload.step_time": "0.5s"},
}


def measure(overrides: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(overrides)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    for name, overrides in RUNS.items():
        off = measure(overrides)
        on = measure({**overrides, "workload.variation": {}})
        print(
            f"{name}: off {off['simulate']:.1f} s, {off['peak_gb']:.3f} GB peak "
            f"(estimate {off['estimate_gb']:.2f} GB); on {on['simulate']:.1f} s, "
            f"{on['peak_gb']:.3f} GB peak (estimate {on['estimate_gb']:.2f} GB); "
            f"ratio on/off: time {on['simulate'] / off['simulate']:.2f}x, "
            f"peak memory {on['peak_gb'] / off['peak_gb']:.2f}x"
        )


if __name__ == "__main__":
    main()
