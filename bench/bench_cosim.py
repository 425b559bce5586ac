"""What the closed loop costs (issue 31, acceptance 2): ``cosimulate`` on the IEEE 123-bus
feeder with one 150-MW site and with three 81-MW sites (the 405B preset's job on 131,072 and
65,536 H100s; the feeder scaled so that they are 6.8 and 8.1 MW of it as shipped), a
voltage-triggered power cap on each site (and a ramp battery on the third), against the open
loop a planner runs today:
the same scenarios simulated, then the network solved over their profile as a time series
(``solve_many(carry=True)`` in chunks of an hour, ``resume`` between them).

Rounds alternate the order (open, closed / closed, open) so both see the same machine load;
reported: each run's wall and CPU time (medians over the rounds), the closed/open ratio, the
share of steps a cap was engaged, the tokens it cost, and the machine's 1-min load average
before and after. The target: 24 h at 1 s within 3 minutes, 1 to 3 sites.

Usage: ``python bench/bench_cosim.py [--hours 24] [--repeat 2]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import xarray as xr

from powermodel.cosim import RampBattery, VoltageCap, cosimulate, resolve
from powermodel.network import load_network
from powermodel.scenario import load_scenario
from powermodel.simulate import simulate

HOUR = 3600


def cases(hours: float) -> dict:
    """Each case's scenarios, buses, scale and controllers."""
    duration = {"simulation.duration": f"{hours:g}h"}
    big = load_scenario("llama3-405b-16k-h100", {**duration, "cluster.n_gpus": 131072})
    mid = load_scenario("llama3-405b-8k-h100", {**duration, "cluster.n_gpus": 65536})

    def caps(n):
        return [VoltageCap(400.0, v_on=0.956, v_off=0.965, hold=60.0, site=i) for i in range(n)]

    return {
        "1 site (150 MW at 57, scale 22)": ([big], ["57"], 22.0, caps(1)),
        "3 sites (3 x 81 MW at 57, 67, 35, scale 30)": (
            [mid] * 3, ["57", "67", "35"], 30.0, caps(3) + [RampBattery(20.0, 30.0, 10.0, site=2)]
        ),
    }  # fmt: skip


def open_loop(scenarios, buses, scale) -> dict:
    """The profile, then the network over it: simulate, then solve_many a chunk at a time."""
    runs = [simulate(s) for s in scenarios]
    p = np.stack([r.grid_power.values for r in runs], axis=1) / scale
    q = np.stack([r.grid_reactive_power.values for r in runs], axis=1) / scale
    net = load_network("ieee123")
    net.command("Set Tolerance=1e-7")  # as cosimulate solves it
    for i, bus in enumerate(buses):
        net.attach(f"site{i + 1}", bus)
    vmin = []
    for start in range(0, len(p), HOUR):
        batch = net.solve_many(
            p[start : start + HOUR], q[start : start + HOUR], carry=True, resume=start > 0
        )
        vmin.append(batch.site_vmin.min())
    return {"vmin": min(vmin)}


def closed_loop(scenarios, buses, scale, controllers) -> xr.Dataset:
    return cosimulate(scenarios, "ieee123", buses, controllers, scale=scale, record_taps=True)


def summary(ds: xr.Dataset, controllers) -> dict:
    """The closed loop's effect, and 4 of its steps solved again by fresh networks (untimed)."""
    caps = [c.name for c in controllers if c.lever is not None]
    engaged = ds.engaged.sel(controller=caps).any("controller").values
    steps = sorted({0, int(np.argmax(engaged)), len(engaged) // 2, len(engaged) - 1})
    return {
        "deviation": float(resolve(ds, "ieee123", steps)["deviation"].max()),
        "vmin": float(ds.site_voltage.min()),
        "engaged": float(engaged.mean()),
        "tokens_lost": sum(ds.attrs["tokens_lost"]) / sum(ds.attrs["tokens_open_loop"]),
    }


def timed(run, *args) -> tuple[float, float, dict]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = run(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"{args.hours:g} h at 1 s, {args.repeat} round(s); load before "
          f"{os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")  # fmt: skip
    for label, (scenarios, buses, scale, controllers) in cases(args.hours).items():
        times = {"open": [], "closed": []}
        for r in range(args.repeat):
            order = ("open", "closed") if r % 2 == 0 else ("closed", "open")
            for kind in order:
                if kind == "open":
                    wall, cpu, out = timed(open_loop, scenarios, buses, scale)
                else:
                    wall, cpu, ds = timed(closed_loop, scenarios, buses, scale, controllers)
                    out = summary(ds, controllers)
                times[kind].append((wall, cpu))
                results = {**times.get("results", {}), kind: out}
                times["results"] = results
        med = {
            k: [statistics.median(x) for x in zip(*times[k], strict=True)]
            for k in ("open", "closed")
        }
        res = times["results"]
        print(
            f"{label}: open loop {med['open'][0]:.1f} s (CPU {med['open'][1]:.1f}), closed loop "
            f"{med['closed'][0]:.1f} s (CPU {med['closed'][1]:.1f}), ratio "
            f"{med['closed'][0] / med['open'][0]:.2f}; cap engaged "
            f"{100 * res['closed']['engaged']:.1f} % of steps, tokens lost "
            f"{100 * res['closed']['tokens_lost']:.2f} %, lowest site voltage "
            f"{res['open']['vmin']:.4f} -> {res['closed']['vmin']:.4f} pu, a fresh power flow "
            f"within {res['closed']['deviation']:.1e} pu at 4 steps; load now "
            f"{os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
