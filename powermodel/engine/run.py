"""The run (docs/model/index.md): :class:`Run` renders the timeline's shapes onto the grid, any
range of steps at a time, and completes them stage by stage (plant path, IT path, facility,
connection) into the profile's variables; the run's totals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pandas as pd
import xarray as xr

from powermodel._version import __version__
from powermodel.engine import disturbances, facility
from powermodel.engine.connection import (
    facility_draw,
    it_path,
    misc_load,
    plant_means,
    site_connection,
    storage_variables,
)
from powermodel.engine.derive import Derived, cluster_mw, derive, plant_steps
from powermodel.engine.flex import check_lever, flex_clock
from powermodel.engine.preflight import CHUNK_STEPS, sequential
from powermodel.engine.series import (
    HELD,
    ORDER,
    PiecewiseSeries,
    checked_float32,
    datetimes,
    held_array,
    held_series,
    hour_starts,
    hourly_ratio,
    lazy_data,
    step_datetimes,
    timedelta_ns,
)
from powermodel.engine.timeline import (
    JOB,
    Overlay,
    closed_tables,
    event_variables,
    failed_replicas,
    kept_training,
    startup,
    timeline,
    whole_job_pauses,
    without_paused_events,
)
from powermodel.engine.waveform import (
    drawn_steps,
    idle_power,
    shape_tables,
    stop_ramps,
    with_trained,
)
from powermodel.models import events, plants, render, thermal
from powermodel.models.events import State
from powermodel.scenario import Scenario
from powermodel.scenario.campus import FlexEvent
from powermodel.variables import annotate

WRITE_RATE = np.ones(2)  # the background writes' shapes are constant: any rate


# A training job's attrs, kept per campus workload (workload_<attr>) for its own view
JOB_ATTRS = (
    "step_time",
    "compute_share",
    "clock_setpoint",
    "clock_lock",
    "checkpoint_interval",
    "checkpoint_stall",
    "token_rate",
)


def gpu_attrs(scenario: Scenario) -> dict[str, float]:
    """The hall's GPUs in a profile's attrs: the job's, the idle ones outside it (with the hot
    spares' GPUs) and what they draw [MW]; a campus's, summed over its workloads."""
    members = scenario.parts or [scenario]
    return dict(
        job_gpus=sum(p.cluster.n_gpus for p in members),
        idle_gpus=sum(facility.idle_gpus(p) for p in members),
        idle_power=sum(idle_power(p) for p in members),
    )


@dataclass(frozen=True)
class Run:
    """What a run renders its profile from, any range of its steps at a time: the job timeline,
    the cell tables and drawn steps, the plant step. :func:`simulate` renders the whole run at
    once; :mod:`powermodel.stream` renders it in chunks, with the same values."""

    scenario: Scenario
    derived: Derived
    line: events.Timeline
    rate: np.ndarray  # each shape's rate [1/s]
    tables: np.ndarray  # cumulative cell tables of what is rendered
    steps: render.Steps | None
    k: int  # electrical steps a plant step
    token_rate: float  # tokens/s of the running job at the nominal clock
    # shares of the job that follow other states through windows: failed replicas' recoveries
    # (reliability.scope "replica"), flexibility events
    overlays: tuple[Overlay, ...] = ()
    # an async checkpoint's background write: its timeline (starts, 1 while writing) and the
    # cumulative table of the IT power it adds [MW]
    writes: tuple[np.ndarray, np.ndarray] | None = None
    write_table: np.ndarray | None = None
    trains: ClassVar[bool] = True  # a training job (an inference fleet serves)

    @property
    def dt(self) -> float:
        return self.scenario.simulation.dt

    @property
    def paused(self) -> np.ndarray:
        """When the whole job pauses for a flexibility event [s]."""
        return whole_job_pauses(self.overlays)[0]

    @property
    def effective_training_time(self) -> float:
        """Training time kept, as a fraction of the run (:func:`kept_training`). [1]"""
        return kept_training(self.line, self.overlays)

    def render(self, lo: int, hi: int) -> np.ndarray:
        """The rendered means of steps ``lo`` to ``hi``: ``gpu_power`` and ``it_power`` [MW], the
        throughput at the nominal clock [tokens/s] (under variation, then the tokens trained)."""
        edges = np.arange(lo, hi + 1) * self.dt
        line = self.line
        state = line.state.astype(np.int64)
        means = render.interval_means(line.start, state, self.rate, self.tables, edges, self.steps)
        for o in self.overlays:  # a share of the job follows other states, on other tables
            job, own = render.window_sums(
                line.start, state, self.rate, self.tables, o.windows, self.dt, lo, hi,
                self.steps, o.rate, o.tables,
            )  # fmt: skip
            means += o.share * (own - job)
        if self.writes is not None:  # the IT power of the background writes
            start, writing = self.writes
            means[1] += render.interval_means(start, writing, WRITE_RATE, self.write_table, edges)[
                0
            ]
        return means

    @property
    def slope(self) -> float:
        """d(AC)/d(DC) of a server's supplies at the running load [1]."""
        return self.derived.slope

    def plant_means(self, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plant-step means of the rendered board power per GPU [W] and IT power [MW],
        from :meth:`render`'s means over whole plant steps."""
        return plant_means(self, means)

    def board_power(
        self, means: np.ndarray, per_gpu: np.ndarray, path: facility.PlantPath, lo: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """What the GPUs finally draw [MW] over the steps from ``lo`` of :meth:`render`'s
        ``means`` (board power per GPU ``per_gpu`` [W]), and each GPU's change over it [W, DC]:
        hot dies leak more while training (the share of each interval spent training), and the
        ramp limits act on what each GPU finally draws, leakage included."""
        running = means[2] / self.token_rate  # share of each interval spent training
        leak = running * held_array(path.leak_extra, self.k, lo, per_gpu.size)  # W per GPU, DC
        drawn = stop_ramps(self.scenario, self.line, per_gpu + leak, self.dt, self.paused)
        return cluster_mw(drawn, self.scenario.cluster.n_gpus), drawn - per_gpu

    def throughput(self, means: np.ndarray, path: facility.PlantPath, lo: int) -> np.ndarray:
        """The tokens trained [tokens/s] over the steps from ``lo`` of :meth:`render`'s
        ``means``, each plant step's training slowed by its die's clock (see drawn_steps)."""
        trained = means[3] if means.shape[0] > 3 else means[2]
        return trained / held_array(path.step_factor, self.k, lo, means.shape[1])

    def states(self, lo: int, n: int) -> np.ndarray:
        """The job's state (:meth:`state_at`) at the middle of each of the ``n`` steps from
        ``lo``, as ``job_state`` stores it."""
        return self.state_at((np.arange(lo, lo + n) + 0.5) * self.dt).astype(np.int8)

    def plant(
        self,
        per_gpu: np.ndarray,
        heat: np.ndarray,
        first: int = 0,
        lags: plants.Lags | None = None,
    ) -> facility.PlantPath:
        """The plant path from the plant-step means of the rendered board power per GPU [W] and
        IT power [MW], at the middle of each plant step. Weather → plant → inlet → die
        temperature → clocks, leakage and server fans. Given ``first``, the plant steps from
        that one on, their lags carried in ``lags`` from the steps before (a streamed run's
        path advancing with its chunks: the whole path's values)."""
        scenario, plant_dt = self.scenario, self.k * self.dt
        steps = np.arange(first, first + heat.size)
        start = datetimes(scenario.simulation.start, steps * self.k * self.dt)
        middle = start + timedelta_ns(plant_dt / 2.0)
        design = facility.design_it_power(scenario)
        path = facility.plant_path(scenario, middle, heat * 1e6, per_gpu, plant_dt, design, lags)
        return self.locked(path, first)

    def locked(self, path: facility.PlantPath, first: int = 0) -> facility.PlantPath:
        """The plant path with each clock-lock event on the plant steps in it (by their
        middles): the step relative to the locked step its shapes already hold (longer only
        where the die throttles below the lock), and every phase's leakage following the die
        (off the cap). ``clock_factor`` stays the clock the heat allows: the lock is the
        event's (``flex_setting``), not the weather's. ``path`` holds the plant steps from
        ``first`` on."""
        locks = [o for o in self.overlays if o.clock is not None]
        if not locks:
            return path
        scenario, gpu = self.scenario, self.scenario.gpu
        middle = (np.arange(first, first + path.clock_factor.size) + 0.5) * self.k * self.dt
        step, leak = path.step_factor.copy(), path.leak_extra.copy()
        share, nominal = scenario.compute_share, self.derived.nominal_die
        for o in locks:
            inside = events.within(o.windows.begin, o.windows.end, middle)[0]
            free = path.clock_factor[inside]
            off_cap = np.where(free > o.clock, 1.0, 1.0 - share)
            die = path.gpu_temp[inside].astype(np.float64)
            leak[inside] = off_cap * (gpu.leakage(die) - gpu.leakage(nominal))
            step[inside] = thermal.step_stretch(np.minimum(free, o.clock), o.clock, share)
        return replace(path, step_factor=step, leak_extra=leak)

    def profile(
        self, path: facility.PlantPath, means: np.ndarray, lo: int, held: bool = True
    ) -> dict[str, np.ndarray | PiecewiseSeries]:
        """The profile's variables on ``time`` over the steps from ``lo`` that ``means``
        (:meth:`render`'s) cover, completed by the plant path stage by stage: what the GPUs
        and racks finally draw, the facility around them, the connection, the training they
        buy. Piecewise-constant ones as :class:`PiecewiseSeries`; without ``held``, leaves out those
        :meth:`held` gives.

        PUE is hourly: a range of steps from the start of an hour to the start of another (or
        the run's end) has the whole run's values (:meth:`chunks`)."""
        scenario, k, dt, n = self.scenario, self.k, self.dt, means.shape[1]
        gpu_power, it_power, _ = it_path(self, means, path, lo)
        it_power, rack = facility.storage(scenario, "rack", it_power, dt)
        site = facility_draw(scenario, it_power, path.cooling_power, k, lo)
        # through grid disturbances the connection follows the whole run (the recharge):
        # simulate adds it once the run is whole (through_disturbances)
        connection, bess = (
            ({}, [])
            if scenario.disturbance is not None
            else site_connection(scenario, it_power, site, dt)
        )
        return {
            "gpu_power": gpu_power,
            "it_power": it_power,
            "facility_loss": site["facility_loss"],
            "facility_power": site["facility_power"],
            **connection,
            **storage_variables(rack, bess),
            "pue": hourly_ratio(site["facility_power"], it_power, dt, lo),
            "throughput": self.throughput(means, path, lo),
            "job_state": self.states(lo, n),
            **(self.held(path, lo, n) if held else {}),
        }

    def held(self, path: facility.PlantPath, lo: int, n: int) -> dict[str, PiecewiseSeries]:
        """The variables constant over each plant step (the plant path's state, the cooling
        power [MW]) or over the run (the misc power [MW]), over the ``n`` steps from ``lo``."""
        k = self.k
        return {
            "cooling_power": held_series(path.cooling_power / 1e6, k, lo, n),
            "misc_power": held_series(np.array([misc_load(self.scenario)]), lo + n, lo, n),
            **{
                name: held_series(checked_float32(name, getattr(path, name)), k, lo, n, np.float32)
                for name in HELD
            },
        }

    def chunks(self, lo: int, hi: int, size: int) -> list[tuple[int, int]]:
        """Steps ``lo`` to ``hi`` (``lo`` the start of an hour) in ranges of about ``size``
        steps, each from the start of a clock hour (hourly PUE stays whole); one range where a
        filter runs over the whole run (power smoothing, burn on job stop, batteries)."""
        if sequential(self.scenario):
            return [(lo, hi)]
        dt = self.dt
        hours = hour_starts(lo, hi, dt)
        cuts = [lo]
        while cuts[-1] + size < hi:
            # the first step of an hour at or after the next cut (an hour spans 3600 / dt steps)
            at = np.searchsorted(hours, cuts[-1] + size)
            if at == hours.size or hours[at] >= cuts[-1] + size + int(3600 / dt) + 2:
                break
            cuts.append(int(hours[at]))
        return list(zip(cuts, [*cuts[1:], hi], strict=True))

    def own_series(
        self, means: np.ndarray, path: facility.PlantPath, on: np.ndarray | None
    ) -> dict:
        """This job's throughput, states, clock and goodput as a campus workload on its hall's
        plant (``path``), from its rendered ``means`` over the whole run, and its attrs (its
        timeline holds what a disturbance stopped: ``on`` adds nothing)."""
        n = means.shape[1]
        throughput = self.throughput(means, path, 0)
        totals = run_totals(self, path, self.realised(means), throughput)
        attrs = self.attrs(path)
        return {
            "throughput": throughput,
            "job_state": self.states(0, n),
            "clock_factor": held_array(path.clock_factor, self.k, 0, n).astype(np.float32),
            "goodput": totals["goodput"][1],
            "attrs": {key: float(attrs[key]) for key in JOB_ATTRS},
        }

    def setting(self, event: FlexEvent) -> float | None:
        """The clock ``event`` locked the job at [1]; None for a pause or another's event."""
        return next((o.clock for o in self.overlays if o.event is event), None)

    def state_at(self, times: np.ndarray) -> np.ndarray:
        """The job's state at each of ``times`` [s]: its timeline's, or inside a window where the
        whole job follows other states (a pause), those."""
        line = self.line
        state = render.state_at(line.start, line.state, times)
        for o in self.overlays:
            if o.share < 1.0 or not o.stops:
                continue
            w = o.windows
            inside, at = events.within(w.begin, w.end, times)
            own = w.origin[at[inside]] + (times[inside] - w.begin[at[inside]])
            state[inside] = render.state_at(w.seg_start, w.seg_state, own)
        return state

    def tokens_lost(self, event: FlexEvent) -> float:
        """Tokens ``event`` costs the job [token]: what the job would have trained in its
        window less what it trains there (at the nominal clock, as rendered)."""
        line, out = self.line, 0.0
        for o in self.overlays:
            if o.event is not event:
                continue
            row = self.tables.shape[0] - 1  # the tokens trained
            w, state = o.windows, line.state.astype(np.int64)
            for b, e, origin in zip(w.begin, w.end, w.origin, strict=True):
                job = render.interval_means(
                    line.start, state, self.rate, self.tables, np.array([b, e]), self.steps
                )[row, 0]
                own = render.interval_means(
                    w.seg_start, w.seg_state, o.rate, o.tables, np.array([origin, origin + e - b])
                )[row, 0]
                out += o.share * (job - own) * (e - b)
        return out

    def realised(self, means: np.ndarray) -> float:
        """The share of the nominal token rate a run with variation trains (evaluations and
        stragglers train none), from :meth:`render`'s means over the whole run; 1 without (a
        clock-lock event's slower tokens are its own: the work failures lose is priced at the
        job's rate)."""
        return 1.0 if self.steps is None else share_of(means[3], means[2])

    def dataset(
        self, path: facility.PlantPath, variables: dict[str, np.ndarray | PiecewiseSeries], lo: int
    ) -> xr.Dataset:
        """The profile over the steps from ``lo`` that ``variables`` (:meth:`profile`'s, in the
        order of :data:`ORDER`) cover, as a Dataset with its attrs and units."""
        n = variables["gpu_power"].size
        ds = xr.Dataset(
            {name: ("time", lazy_data(values)) for name, values in variables.items()},
            # an index already (not an array xarray would first ask whether dask holds)
            coords={
                "time": pd.DatetimeIndex(
                    step_datetimes(self.scenario.simulation.start, lo, n, self.dt), copy=False
                )
            },
            attrs=self.attrs(path),
        )
        ds["job_state"].attrs.update(
            flag_values=[s.value for s in State],
            flag_meanings=" ".join(s.name.lower() for s in State),
        )
        if "grid_event" in ds:
            ds["grid_event"].attrs.update(
                flag_values=list(range(len(disturbances.EVENT_CODES))),
                flag_meanings=" ".join(c.replace(" ", "_") for c in disturbances.EVENT_CODES),
            )
        return annotate(ds)

    def attrs(self, path: facility.PlantPath) -> dict:
        """The profile's attrs: the scenario, its step, what it implies."""
        scenario, derived = self.scenario, self.derived
        return dict(
            title=f"powermodel: {scenario.name or 'scenario'}",
            scenario=scenario.to_json(),
            site_timezone=scenario.site.timezone,
            weather=facility.hourly_weather(scenario).source,
            time_label="start of each interval; values are interval means",
            dt=self.dt,
            plant_dt=self.k * self.dt,
            step_time=derived.step_time,
            compute_share=scenario.compute_share,
            clock_setpoint=path.clock_setpoint,
            clock_lock=scenario.mitigation.clock_lock or 1.0,
            checkpoint_interval=derived.checkpoint_interval if derived.checkpoints else np.inf,
            checkpoint_stall=derived.checkpoint_stall,
            token_rate=self.token_rate,
            registered_demand=facility.registered_demand(scenario),
            **gpu_attrs(scenario),
            powermodel_version=__version__,
        )


def prepare(
    scenario: Scenario,
    derived: Derived,
    cells: np.ndarray,
    rate: np.ndarray,
    job: int = JOB,
    launch: tuple[float, float] = (0.0, 0.0),
    flex: Sequence[FlexEvent] | None = None,
) -> Run:
    """The run of a scenario, from :func:`preflight`'s ``derived``, ``cells`` and ``rate``: its
    timeline and drawn steps, ready to render (a campus workload's ``job`` and ``launch``
    as :func:`timeline` takes them); with the flexibility events ``flex`` that target it
    (by default the scenario's own)."""
    flex = scenario.flexibility if flex is None else flex
    line = timeline(scenario, derived, job, launch)
    steps = drawn_steps(scenario, derived, line, cells, job)
    # a clock lock's overlay trains fewer tokens while its GPUs still run: the tokens trained
    # render apart from the running share (as under variation)
    apart = steps is not None or any(event.lever == "clock" for event in flex)
    tables = render.cumulative_tables(with_trained(cells, apart))
    token_rate = cells[2, State.RUNNING, 0]
    run = Run(scenario, derived, line, rate, tables, steps, plant_steps(scenario), token_rate)
    overlays = [flex_overlay(run, cells, event) for event in flex]
    paused = whole_job_pauses(overlays)
    line = without_paused_events(line, paused)  # a paused job does not fail
    windows = failed_replicas(scenario, derived, line, paused[0])
    if windows is not None:
        share = scenario.replica_gpus / scenario.cluster.n_gpus
        overlays.append(Overlay(windows, share, *closed_tables(rate, tables), stops=True))
    run = replace(run, line=line, overlays=tuple(overlays))
    ck = scenario.checkpoint
    if ck.mode == "async" and ck.background_power > 0 and derived.checkpoints:
        write = derived.checkpoint_done - derived.checkpoint_stall
        writes = events.background_writes(
            line, write, cut=scenario.reliability.scope == "job", paused=paused
        )
        power = cluster_mw(ck.background_power, scenario.cluster.n_gpus)
        table = render.cumulative_tables(np.array([[[0.0], [power]]]))
        run = replace(run, writes=writes, write_table=table)
    return run


def flex_overlay(run: Run, cells: np.ndarray, event: FlexEvent) -> Overlay:
    """The whole job through a flexibility event: a pause checkpoints, stops until the end,
    then restarts; a clock lock runs the job's own states on the locked clock's shapes."""
    scenario, derived, line = run.scenario, run.derived, run.line
    begin = np.array([(event.start - scenario.simulation.start).total_seconds()])
    closed = len(State)
    if event.lever == "pause":
        stall = derived.checkpoint_stall
        sequence = (
            (State.CHECKPOINT, stall),
            (State.MAINTENANCE, max(event.duration - stall, 0.0)),
            *startup(scenario, derived),
        )
        windows = events.recovery_windows(
            line, begin, [sequence], np.zeros(1, np.int64), derived.step_time, closed
        )
        return Overlay(windows, 1.0, *closed_tables(run.rate, run.tables), True, event)
    check_lever(scenario, event)
    clock = flex_clock(scenario, derived, cells, event)
    locked = scenario.model_copy(
        update={"mitigation": scenario.mitigation.model_copy(update={"clock_lock": clock})}
    )
    slow_cells, slow_rate = shape_tables(locked, derive(locked))
    # the GPUs run through the event: the running share stays the job's, the tokens are slower
    slow_cells = np.concatenate((slow_cells[:2], cells[2:3], slow_cells[2:]))
    tables = render.cumulative_tables(slow_cells)
    windows = events.clipped_windows(line, begin, begin + event.duration, closed)
    return Overlay(windows, 1.0, *closed_tables(slow_rate, tables), False, event, clock)


def run_totals(
    run: Run, path: facility.PlantPath, realised: float, throughput: np.ndarray
) -> dict[str, tuple]:
    """The whole run's ``goodput`` [tokens] (the tokens trained less the work failures lost,
    priced at the job's ``realised`` yield and at the training rate of the plant step each
    failure happened in) and ``chiller_hours`` [h], from its ``throughput`` [tokens/s]."""
    line, k, dt = run.line, run.k, run.dt
    at = np.minimum((line.event_time // (k * dt)).astype(np.int64), path.step_factor.size - 1)
    lost_tokens = line.event_lost_work * (run.token_rate * realised) / path.step_factor[at]
    plant_hours = np.count_nonzero(path.chiller_load > 0) * (k * dt) / 3600
    return {
        "goodput": ((), float(throughput.sum() * dt - lost_tokens.sum())),
        "chiller_hours": ((), float(plant_hours)),
    }


def assembled_profile(
    run: Run, path: facility.PlantPath, means: np.ndarray, chunks: list[tuple[int, int]]
) -> dict[str, np.ndarray | PiecewiseSeries]:
    """The whole run's variables on ``time``, in the order of :data:`ORDER`, from its rendered
    ``means``, profiled range by range (``chunks``). The profile takes the means' place: what
    is rendered of ``gpu_power``, ``it_power`` and the throughput becomes that variable."""
    n = means.shape[1]
    out: dict[str, np.ndarray] = dict(
        zip(("gpu_power", "it_power", "throughput"), means[:3], strict=True)
    )
    pue = []
    for lo, hi in chunks:
        part = run.profile(path, means[:, lo:hi], lo, held=False)
        pue.append((lo, part.pop("pue")))
        same = {id(values): name for name, values in reversed(part.items())}
        for name, values in part.items():
            if same[id(values)] != name:  # one variable is another (no batteries: grid is site)
                out[name] = out[same[id(values)]]
            else:
                if name not in out:
                    out[name] = np.empty(n, values.dtype)
                out[name][lo:hi] = values
    merged = {**out, **run.held(path, 0, n), "pue": PiecewiseSeries.joined(pue, n)}
    return {name: merged[name] for name in ORDER if name in merged}


def share_of(part: np.ndarray, whole: np.ndarray) -> float:
    """``part``'s sum over ``whole``'s, 1 where ``whole`` sums to nothing."""
    total = float(whole.sum())
    return float(part.sum()) / total if total > 0 else 1.0


def render_whole(run: Run) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The whole run rendered (:meth:`Run.render`'s means), range by range of
    :meth:`Run.chunks` (bounded temporaries: only the profile takes memory per step), and the
    ranges."""
    n = run.scenario.simulation.n_steps
    chunks = run.chunks(0, n, CHUNK_STEPS)
    means = np.empty((run.tables.shape[0], n))
    for lo, hi in chunks:
        means[:, lo:hi] = run.render(lo, hi)
    return means, chunks


def job_totals(
    run: Run, path: facility.PlantPath, realised: float, throughput: np.ndarray
) -> dict[str, tuple]:
    """The whole job's totals (:func:`run_totals`), its events, the training time it kept and
    the grid disturbances it met, as the profile reports them."""
    return {
        **run_totals(run, path, realised, throughput),
        **event_variables(run.scenario, run.line),
        "effective_training_time": ((), run.effective_training_time),
        **disturbances.variables(run.scenario),
    }
