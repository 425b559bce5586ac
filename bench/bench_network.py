"""What a power-flow solve costs (issue 31's network layer): the per-solve time of
``Network.solve_many`` on the IEEE 123-bus feeder (OpenDSS) and on the CIGRE MV network
(pandapower), each with one site whose power swings as a training job's does (a 1-s series:
a plateau with dips every few seconds, between 40 % and 100 % of the site's size).

Each engine's series runs several times (rounds alternating the two, so that both see the same
machine load); reported: the least and the median time per solve, the iterations a solve took,
and the machine's 1-min load average before and after. The target (the brief of issue 31's
network layer): under 2 ms a solve on the 123-bus feeder, solves independent of each other
(``carry=False``, the default); ``carry=True`` (regulators and the solution carried from one
step to the next, as a time series) is timed beside it.

Usage: ``python bench/bench_network.py [--steps 1000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from powermodel.network import load_network


def profile(steps: int, size: float) -> np.ndarray:
    """A site's power [MW]: full power with a dip to 40 % for 2 s in every 7."""
    t = np.arange(steps)
    return np.where(t % 7 < 2, 0.4, 1.0) * size


def timed(network, p: np.ndarray, carry: bool) -> tuple[float, float]:
    """Seconds a solve and mean iterations, over the whole series."""
    start = time.perf_counter()
    batch = network.solve_many(p, 0.2 * p, carry=carry)
    return (time.perf_counter() - start) / len(p), float(batch.iterations.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load before {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    cases = {
        "ieee123 (OpenDSS), carry=False": ("ieee123", "67", 1.5, False, args.steps),
        "ieee123 (OpenDSS), carry=True": ("ieee123", "67", 1.5, True, args.steps),
        "cigre-mv (pandapower), carry=False": ("cigre-mv", "Bus 11", 2.0, False, args.steps // 10),
        "cigre-mv (pandapower), carry=True": ("cigre-mv", "Bus 11", 2.0, True, args.steps // 10),
    }
    networks = {}
    for label, (name, bus, _, _, _) in cases.items():
        networks[label] = load_network(name)
        networks[label].attach("site", bus)
        networks[label].solve_many([0.0])  # warm: pandapower's numba compiles once a process
    times = {label: [] for label in cases}
    for r in range(args.repeat):
        for label in cases if r % 2 == 0 else reversed(cases):
            _, _, size, carry, steps = cases[label]
            times[label].append(timed(networks[label], profile(steps, size), carry))
    for label, runs in times.items():
        seconds = [s for s, _ in runs]
        print(
            f"{label}: {cases[label][4]} steps, least {min(seconds) * 1e3:.3f} ms, "
            f"median {statistics.median(seconds) * 1e3:.3f} ms a solve, "
            f"{runs[0][1]:.1f} iterations a solve"
        )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
