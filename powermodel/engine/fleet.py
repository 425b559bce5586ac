"""An inference fleet on a campus (docs/model/campus.md): its utilisation series, its
flexibility, its rendering and its series on its hall's plant."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from powermodel.engine import facility
from powermodel.engine.derive import cluster_mw, per_gpu_power, plant_steps
from powermodel.engine.flex import (
    LOWEST_FLEX_CLOCK,
    check_fleet_event,
    event_inlet,
    settled_it_extra,
)
from powermodel.engine.run import JOB_ATTRS
from powermodel.engine.series import held_array
from powermodel.engine.timeline import STREAM_DEMAND
from powermodel.engine.waveform import idle_power
from powermodel.errors import ScenarioError
from powermodel.models import inference, thermal
from powermodel.scenario import Scenario
from powermodel.scenario.campus import FlexEvent, Inference


class Fleet:
    """An inference fleet on a campus (:mod:`powermodel.models.inference`): its utilisation on
    the variation's step, then everything per GPU and per node on that step (the supplies'
    curve on each node's power), averaged exactly over any profile step."""

    trains = False  # it serves: no training timeline, its tokens are its own

    def __init__(
        self, scenario: Scenario, spec: Inference, job: int, flex: Sequence[FlexEvent] = ()
    ) -> None:
        self.scenario, self.spec = scenario, spec
        sim, cl, gpu = scenario.simulation, scenario.cluster, scenario.gpu
        self.k, self.dt, self.step = plant_steps(scenario), sim.dt, spec.variation_step
        count = int(np.ceil(sim.duration / self.step - 1e-9))
        local = pd.Timestamp(sim.start).tz_localize("UTC").tz_convert(scenario.site.timezone)
        hour0 = local.dayofweek * 24 + local.hour + local.minute / 60 + local.second / 3600
        hours = hour0 + (np.arange(count) + 0.5) * self.step / 3600.0
        mean = inference.demand(
            hours, spec.base_level, spec.peak_level, spec.peak_hour, spec.weekend_level,
            None if spec.hourly is None else np.array(spec.hourly),
        )  # fmt: skip
        seeds = np.random.SeedSequence(sim.seed, spawn_key=(job, STREAM_DEMAND))
        # demand, as a share of what the fleet serves at a full batch and the nominal clock
        self.wanted = inference.utilisation(
            mean, spec.variation_cv, spec.variation_time, self.step, np.random.default_rng(seeds)
        )
        self.line = None  # no training timeline: no interruptions, no events
        self.busy = spec.busy_power * gpu.tdp
        full = inference.gpu_power(1.0, gpu.idle, self.busy, spec.clock)
        node = cl.gpus_per_node * full + cl.rest_power_active
        self.slope = float((cl.psu.input_power(node + 1.0) - cl.psu.input_power(node - 1.0)) / 2)
        clock = np.full(count, spec.clock)
        wanted, serving = self.wanted, np.ones(count, bool)
        self.flex, self.settings, self.lost = list(flex), [], []
        middle = (np.arange(count) + 0.5) * self.step
        self.series = self._power_series(clock, wanted, serving)
        for event in flex:  # one at a time on a workload: each on the series the others left
            check_fleet_event(scenario, spec, event)
            begin = (event.start - sim.start).total_seconds()
            inside = (middle >= begin) & (middle < begin + event.duration)
            clock, wanted, serving, setting = self._with_event(
                event, inside, clock, wanted, serving
            )
            series = self._power_series(clock, wanted, serving)
            self.settings.append(setting)
            self.lost.append(float((self.series[2] - series[2]).sum() * self.step))
            self.series = series

    def tokens_lost(self, event: FlexEvent) -> float:
        """Tokens ``event`` costs the fleet over the run [token]: demand refused, or deferred
        and not served by the run's end."""
        return self.lost[self.flex.index(event)] if event in self.flex else 0.0

    def _power_series(
        self, clock: np.ndarray, wanted: np.ndarray, serving: np.ndarray
    ) -> np.ndarray:
        """GPU and IT power [MW] and tokens served [tokens/s] on each step of the utilisation
        series, at each step's ``clock`` [1], demand ``wanted`` [1] and whether ``serving``.

        The job's mitigations hold: a clock lock lowers the clock; a power cap lowers it as far
        as the cap needs (the GPUs busier for it, demand beyond refused); software burn holds
        the board at its floor."""
        cl, gpu, spec, m = (
            self.scenario.cluster,
            self.scenario.gpu,
            self.spec,
            self.scenario.mitigation,
        )
        clock = np.minimum(clock, m.clock_lock or 1.0)
        if m.power_cap is not None and m.power_cap < self.busy:
            # the dynamic part at clock c is (busy - idle) * min(c^2 * wanted, c^3)
            room = max(m.power_cap - gpu.idle, 0.0) / (self.busy - gpu.idle)
            partly = np.sqrt(room / np.maximum(wanted, 1e-12))  # busy part of the time
            clock = np.minimum(clock, np.where(partly >= wanted, partly, np.cbrt(room)))
        served = np.where(serving, np.minimum(wanted, clock), 0.0)  # capacity follows the clock
        board = inference.gpu_power(served / clock, gpu.idle, self.busy, clock)
        if m.software_burn is not None:
            board = np.maximum(board, m.software_burn * gpu.tdp)
        node = cl.psu.input_power(cl.gpus_per_node * board + cl.rest_power_active)
        return np.array(
            [
                cluster_mw(board, cl.n_gpus),
                cluster_mw(node, cl.n_nodes)
                + (cl.network_load + cl.storage_load) / 1e6
                + idle_power(self.scenario),
                served * spec.token_rate * cl.n_gpus,
            ]
        )

    def _with_event(
        self,
        event: FlexEvent,
        inside: np.ndarray,
        clock: np.ndarray,
        wanted: np.ndarray,
        serving: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float | None]:
        """The series' clock, demand and serving with ``event`` on the steps ``inside`` it, and
        the lever's setting: a pause stops serving; a clock lock is found, and a share of demand
        deferred to the steps after (served there on spare capacity until none is left), so
        that the fleet's IT power, its dies settled at the event's inlet, falls by the share
        asked."""
        if event.lever == "pause":
            return clock, wanted, serving & ~inside, None
        cl = self.scenario.cluster
        before = self._power_series(clock, wanted, serving)[:, inside]
        inlet = event_inlet(self.scenario, float(before[1].mean()), event)

        def drawn(series: np.ndarray) -> float:
            """Mean IT power over the event, its dies and fans settled at the event's inlet."""
            board = per_gpu_power(series[0], cl.n_gpus)
            extra = settled_it_extra(
                self.scenario, inlet, board, self.reference_die(board), self.slope
            )
            return float((series[1] + extra).mean())

        target = (1.0 - event.reduction) * drawn(before)

        def flexed(setting: float) -> tuple[np.ndarray, np.ndarray]:
            if event.lever == "clock":
                return np.where(inside, setting, clock), wanted
            deferred = np.where(inside, wanted * setting, 0.0)
            after = np.arange(inside.size) > np.flatnonzero(inside).max(initial=-1)
            spare = np.where(after, np.maximum(clock - wanted, 0.0), 0.0)
            left = deferred.sum() - np.cumsum(spare) + spare  # backlog before each step
            return clock, wanted - deferred + np.clip(left, 0.0, spare)

        def miss(setting: float) -> float:
            c, w = flexed(setting)
            return drawn(self._power_series(c, w, serving)[:, inside]) - target

        low, high = (
            (LOWEST_FLEX_CLOCK, float(clock[inside].min()))
            if event.lever == "clock"
            else (1.0, 0.0)
        )
        if miss(low) > 0:
            what = "a clock lock" if event.lever == "clock" else "deferring all its demand"
            raise ScenarioError(
                f"flexibility {event.name!r}: {what} cannot shed {event.reduction:.0%} of the "
                "fleet's IT power (its idle GPUs and servers stay on): lower the reduction or "
                "pause it (lever 'pause')"
            )
        from scipy import optimize  # noqa: PLC0415 - scipy's import is paid by what uses it

        setting = float(optimize.brentq(miss, low, high, xtol=1e-12))
        c, w = flexed(setting)
        return c, w, serving, setting

    @property
    def effective_training_time(self) -> float:
        """A fleet serves the whole run: 1. [1]"""
        return 1.0

    def locked(self, path: facility.PlantPath) -> facility.PlantPath:
        """A fleet's clock is in its utilisation series: the plant path as it is."""
        return path

    def render(self, lo: int, hi: int) -> np.ndarray:
        """Interval means of the GPU and IT power [MW] and the tokens served [tokens/s] over
        steps ``lo`` to ``hi``: the step series' cumulative integral at the grid's edges."""
        edges = np.arange(lo, hi + 1) * self.dt
        at = np.minimum((edges // self.step).astype(np.int64), self.series.shape[1] - 1)
        cumulative = np.concatenate(
            (np.zeros((3, 1)), np.cumsum(self.series * self.step, axis=1)), axis=1
        )
        total = cumulative[:, at] + self.series[:, at] * (edges - at * self.step)
        return np.diff(total, axis=1) / self.dt

    def reference_die(self, board: np.ndarray | float) -> np.ndarray | float:
        """The die temperature [°C] at which a GPU drawing ``board`` [W] draws that: its
        power curve holds at the nominal inlet (its leakage there is in it)."""
        cl, gpu = self.scenario.cluster, self.scenario.gpu
        return thermal.steady_gpu_temperature(cl.fans.temp_nominal, board, gpu.thermal_resistance)

    def board_power(
        self, means: np.ndarray, per_gpu: np.ndarray, path: facility.PlantPath, lo: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """What the fleet's GPUs draw [MW] on its hall's plant over the steps from ``lo`` of
        :meth:`render`'s ``means`` (board power per GPU ``per_gpu`` [W]), and each GPU's change
        [W, DC]: they leak more when hot and less when cool than at the nominal inlet (they run
        below their cap, so power, not the clock, gives)."""
        cl, gpu, n = self.scenario.cluster, self.scenario.gpu, means.shape[1]
        own = gpu.leakage(self.reference_die(per_gpu))
        leak = held_array(gpu.leakage(path.gpu_temp), self.k, lo, n) - own
        return means[0] + cluster_mw(leak, cl.n_gpus), leak

    def own_series(
        self, means: np.ndarray, path: facility.PlantPath, on: np.ndarray | None
    ) -> dict:
        """The fleet's tokens served, states, clock and goodput as a campus workload, from its
        rendered ``means`` over the whole run: where a disturbance took its servers' power
        (``on``), they serve nothing."""
        n = means.shape[1]
        served = means[2] if on is None else means[2] * on
        return {
            "throughput": served,
            "job_state": np.zeros(n, np.int8),  # serving: running
            "clock_factor": np.ones(n, np.float32),  # below its cap: heat costs power, not clock
            "goodput": float(served.sum() * self.dt),
            "attrs": dict.fromkeys(JOB_ATTRS, float("nan")),  # no training step
        }

    def setting(self, event: FlexEvent) -> float | None:
        """The setting ``event`` took on the fleet: the clock it locked [1], the share of
        demand deferred [1]; None for a pause or another's event."""
        return self.settings[self.flex.index(event)] if event in self.flex else None
