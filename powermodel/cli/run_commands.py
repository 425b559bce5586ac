"""``powermodel run`` and ``powermodel validate``: a scenario simulated (in chunks, its file
written while the next is made, when nothing asked for needs the whole Dataset or when it is over
its memory budget; else in memory) and summarised, or checked without a run.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from powermodel import export
from powermodel.analysis import flexibility, metrics, part, resample_factor, workloads
from powermodel.cli.common import _loaded, _name_of, _running, _simulated, _wrote
from powermodel.cli.tables import _print_ride_through, _print_summary, _sensor_rows, _table
from powermodel.engine import preflight as budgets
from powermodel.engine.derive import derive
from powermodel.engine.facility import design_conditions, design_day, idle_gpus
from powermodel.engine.preflight import preflight, streamable
from powermodel.errors import PowerModelError
from powermodel.scenario import format_duration, shorten
from powermodel.sensitivity import sensitivity
from powermodel.simulate import memory_estimate


def _run(args: argparse.Namespace) -> int:
    scenario = _loaded(args.scenario, args.overrides)
    if args.timezone == "site":
        args.timezone = scenario.site.timezone
    if args.timezone is not None and not args.output:
        raise PowerModelError("--timezone is a column of the output: give -o FILE.csv")
    if args.output:
        export.check_timezone(args.timezone, export.check_path(args.output))
    if args.resample:
        sim = scenario.simulation
        resample_factor(sim.n_steps, sim.dt, args.resample)
    budget = _memory_budget(args.memory_gb)
    # the memory check's own reading of what is available (engine.preflight), so both agree
    limit = budgets.available_memory() if budget is None else budget
    over = memory_estimate(scenario, len(args.sensors)) > limit
    # over its budget a run streams only to a file; one that cannot is refused in memory's check
    if _streams(args, scenario) if over else _in_chunks(args, scenario):
        return _stream(args, scenario, limit, over)
    started = time.perf_counter()
    ds = _simulated(scenario, args.sensors, budget)
    elapsed = time.perf_counter() - started
    if args.part:
        ds = part(ds, **_part(args.part))
    written = (  # the file is written while the summary is made (export.writing)
        export.writing(ds, args.output, resample=args.resample, timezone=args.timezone)
        if args.output
        else nullcontext()
    )
    with written as path:
        _print_results(ds, _name_of(scenario, args.scenario), elapsed, args.sensors)
    if path is not None:
        _wrote(path)
    if args.sensitivity:
        table = sensitivity(scenario, progress=_running)
        print()
        print(_table(table.drop(columns="source")))
        print("\nranges:")
        for key, source in table[["key", "source"]].drop_duplicates().values[1:]:
            print(f"  {key}: {source}")
    return 0


def _print_results(ds: Any, name: str, elapsed: float, sensors: list[str]) -> None:
    """A run's summary, its workloads' and flexibility's tables, and its disturbances'."""
    seen = _sensor_rows(ds, sensors)
    _print_summary(name, metrics(ds), ds.attrs, elapsed, seen)
    for title, table in (("workloads", workloads(ds)), ("flexibility", flexibility(ds))):
        if not table.empty:
            print(f"\n{title}:\n{_table(table)}")
    if "disturbance_time" in ds:
        from powermodel import ride_through  # noqa: PLC0415 - only a disturbed run needs it

        print("\ngrid disturbances (powermodel ride-through for each and the requirements):")
        _print_ride_through(ride_through.summary(ds))


def _memory_budget(gigabytes: float | None) -> float | None:
    """The memory a run may take [B] by ``--memory-gb``; None: what the machine has available."""
    if gigabytes is None:
        return None
    if not (np.isfinite(gigabytes) and gigabytes > 0):
        raise PowerModelError(f"--memory-gb must be a number of GB > 0, got {gigabytes:g}")
    return gigabytes * 1e9


def _streams(args: argparse.Namespace, scenario: Any) -> bool:
    """Whether a run over its memory budget can be streamed to its output file in parts."""
    from powermodel.stream import STREAMED

    if not args.output or Path(args.output).suffix not in STREAMED:
        return False
    if streamable(scenario, len(args.sensors)) is not None:
        return False
    if args.resample or args.sensitivity:
        option = "--resample" if args.resample else "--sensitivity"
        raise PowerModelError(
            f"the run is over its memory budget and streams to {args.output} in parts, which "
            f"{option} cannot follow: leave out {option} (resample the file afterwards), or "
            "shorten simulation.duration"
        )
    return True


def _in_chunks(args: argparse.Namespace, scenario: Any) -> bool:
    """Whether a run within its memory budget is made in chunks all the same: when nothing
    the command does needs the whole Dataset (no sensor views, part, resampling or
    sensitivity; a file, if any, written a chunk at a time), its summary (the metrics a
    streamed run accumulates, :class:`powermodel.stream.Measures`) and its file are the
    in-memory run's, and a chunk's arrays stay in the processor's cache: 54 days of the
    reference take 1.8 s so against 2.7 s whole, and the file is written while the next
    chunk is made (``bench/bench_export.py``)."""
    from powermodel.stream import STREAMED  # noqa: PLC0415 - as _streams

    if args.part or args.resample or args.sensitivity:
        return False
    if args.output and Path(args.output).suffix not in STREAMED:
        return False
    return streamable(scenario, len(args.sensors)) is None


def _stream(args: argparse.Namespace, scenario: Any, budget: float, over: bool = True) -> int:
    """Stream a run to its output file (or to none) in chunks: with a line on why and a
    progress bar when it is over its memory ``budget`` [B]."""
    from tqdm import tqdm

    from powermodel import stream

    if over:
        print(f"powermodel: {stream.describe(scenario, budget)}", file=sys.stderr)
    steps = scenario.simulation.n_steps  # each chunk rendered once
    bar = tqdm(
        total=steps, unit="step", unit_scale=True, delay=2.0, file=sys.stderr, disable=not over
    )
    measures = stream.Measures()  # the metrics accumulated chunk by chunk, as in memory
    started = time.perf_counter()
    with bar:
        path = stream.stream(
            scenario, args.output, stream.chunk_steps(budget), bar.update, measures, args.timezone
        )
    elapsed = time.perf_counter() - started
    _print_summary(_name_of(scenario, args.scenario), measures.metrics, measures.attrs, elapsed)
    if path is not None:
        _wrote(path)
    return 0


def _validate(args: argparse.Namespace) -> int:
    scenario = _loaded(args.scenario, args.overrides)
    derived, _, _ = preflight(scenario)
    name = _name_of(scenario, args.scenario)

    def checkpoints(derived: Any) -> str:
        every = format_duration(round(derived.checkpoint_interval))
        return (
            f"checkpoint every {every} ({derived.checkpoint_stall:.1f} s stall)"
            if derived.checkpoints
            else "no checkpoints (no failures expected)"
        )

    if scenario.campus is None:
        print(
            f"{name}: ok — {_gpus(scenario)}, step "
            f"{derived.step_time:.2f} s, {checkpoints(derived)}"
        )
    else:
        print(f"{name}: ok — a campus of {len(scenario.parts)} workloads")
        for w, part in zip(scenario.campus.workloads, scenario.parts, strict=True):
            d = derive(part)
            what = (
                f"step {d.step_time:.2f} s, {checkpoints(d)}"
                if w.kind == "training"
                else "inference fleet"
            )
            print(f"  {w.name}: {_gpus(part)}, {what}")
    if design_conditions(scenario) is not None:
        day = design_day(scenario)
        print(
            # four significant digits: a 25 MW hall's to 10 kW, one node's to 10 W
            "ASHRAE 0.4 % cooling design day ({design_temp_air:.1f} °C), nameplate IT: facility "
            "peak {peak_facility_mw:.4g} MW (cooling {peak_cooling_mw:.4g} MW, PUE "
            "{peak_pue:.3f}), supply up to {max_supply_temp:.1f} °C".format(**day)
        )
    elif scenario.grid.registered_demand is None:
        print(
            f"weather {scenario.site.weather!r} has no ASHRAE design day, so no registered "
            "demand: rules relative to it (nprr1191, ieso-sso) need grid.registered_demand"
        )
    return 0


def _gpus(scenario: Any) -> str:
    """The hall's GPUs in words: ``job 896 H100-SXM, 104 idle in the hall``, or ``32,768
    H100-SXM`` where the job takes them all."""
    cl, idle = scenario.cluster, idle_gpus(scenario)
    if not idle:
        return f"{cl.n_gpus:,} {scenario.gpu.name}"
    spares = " (hot spares included)" if scenario.reliability.spare_nodes else ""
    return f"job {cl.n_gpus:,} {scenario.gpu.name}, {idle:,} idle in the hall{spares}"


def _part(text: str) -> dict[str, str]:
    """``--part workload=NAME`` or ``hall=NAME`` as :func:`powermodel.analysis.part` takes it."""
    kind, _, name = text.partition("=")
    if kind not in ("workload", "hall") or not name:
        raise PowerModelError(f"--part takes workload=NAME or hall=NAME, got {shorten(text)}")
    return {kind: name}
