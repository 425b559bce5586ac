"""Pure models, tested on numbers: waveform, offsets, power supplies, job timeline, rendering,
signal operations."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel.models import cooling, electrical, events, render, signal, thermal, workload
from powermodel.models.events import Recovery, State

TITANIUM_LOAD = np.array([0.1, 0.2, 0.5, 1.0])
TITANIUM_EFF = np.array([0.90, 0.94, 0.96, 0.91])


def test_derived_step_time_llama3():
    # [D, llama3]: 6 · 405e9 · 16.8e6 / (16,384 · 400e12) ≈ 6.2 s; Table 4: 41 % MFU of the
    # H100's 989 TFLOP/s dense BF16 is the paper's 400 TFLOP/s per GPU.
    step = workload.derived_step_time(405e9, 16 * 2**20, 16384, 989.4e12, 0.41)
    assert step == pytest.approx(6.2, abs=0.3)
    # Table 4: 8,192 GPUs at 43 % MFU take about twice as long per step ([D, llama3]: about 12 s).
    assert workload.derived_step_time(405e9, 16 * 2**20, 8192, 989.4e12, 0.43) == pytest.approx(
        12, abs=0.5
    )


def _square(edge_rate=1.9, step=6.0):
    shares = np.array([0.675, 0.325])
    levels = np.array([1.0, 0.7])
    return shares, levels, workload.iteration_waveform(shares, levels, step, edge_rate)


def test_waveform_keeps_each_phase_energy_and_levels():
    shares, levels, w = _square()
    # Edges are centred on the boundaries, so the mean is Σ share·level exactly.
    assert w.mean() == pytest.approx(shares @ levels, rel=1e-12)
    phase = (np.arange(w.size) + 0.5) / w.size
    assert_allclose(w[(phase > 0.1) & (phase < 0.6)], 1.0, rtol=1e-12)
    assert_allclose(w[(phase > 0.72) & (phase < 0.95)], 0.7, rtol=1e-12)


def test_waveform_edges_never_exceed_the_rate():
    # NERC LLTF [S, nerc_lltf]: 1.9 p.u./s. A 0.3 p.u. step takes 0.3 / 1.9 = 158 ms.
    step, rate = 6.0, 1.9
    _, _, w = _square(rate, step)
    slope = np.abs(np.diff(w)) / (step / w.size)
    assert slope.max() <= rate * (1 + 1e-9)
    assert slope.max() == pytest.approx(rate, rel=0.01)
    ramp_cells = np.count_nonzero(np.abs(np.diff(w)) > 1e-12)
    assert ramp_cells * step / w.size == pytest.approx(2 * 0.3 / rate, rel=0.02)


def test_waveform_phase_shorter_than_its_edge_never_reaches_its_level():
    w = workload.iteration_waveform(np.array([0.99, 0.01]), np.array([1.0, 0.0]), 10.0, 1.0)
    # A 100 ms dip with 1-s edges: the falling and rising ramps overlap and cancel after 0.1 p.u.
    assert w.min() == pytest.approx(0.9, abs=0.005)
    assert w.mean() == pytest.approx(0.99, rel=1e-9)


def test_offsets_smear_edges_and_conserve_energy():
    _, _, w = _square()
    step = 6.0
    kernel = workload.offset_kernel(step, offset_spread=1.2, jitter=0.0)
    smeared = workload.aggregate(w, kernel)
    assert smeared.mean() == pytest.approx(w.mean(), rel=1e-12)
    # A uniform spread of 1.2 s turns each 0.3 p.u. edge into a ramp of about 1.2 s + the edge.
    slope = np.abs(np.diff(smeared)).max() / (step / w.size)
    assert slope == pytest.approx(0.3 / 1.2, rel=0.15)
    unchanged = workload.aggregate(w, workload.offset_kernel(step, 0.0, 0.0))
    assert_allclose(unchanged, w, atol=1e-12)


def test_psu_curve_passes_through_titanium_points():
    # [P, titanium_80plus]: 80 PLUS Titanium 90/94/96/91 % at 10/20/50/100 % load.
    capacity = 19800.0
    out = TITANIUM_LOAD * capacity
    inp = electrical.input_power(out, capacity, TITANIUM_LOAD, TITANIUM_EFF)
    assert_allclose(out / inp, TITANIUM_EFF, rtol=1e-12)
    # Below 10 % load the loss falls toward a no-load loss near 1 % of capacity.
    idle = electrical.input_power(np.array(0.0), capacity, TITANIUM_LOAD, TITANIUM_EFF)
    assert 0.005 * capacity < idle < 0.015 * capacity


def test_young_daly():
    # Young (1974): √(2 · MTBF · C); 3.1 h MTBF and a 2.8 s checkpoint give about 4 minutes.
    assert events.young_daly_interval(3.1 * 3600, 2.8) == pytest.approx(250.1, rel=1e-3)


def _timeline(rates, seed=1, duration=86400.0 * 5, interval=300.0, stall=3.0, done=3.0):
    recoveries = [
        Recovery(
            (
                (State.STALLED, 60.0),
                (State.FAILED_IDLE, 600.0),
                (State.LOADING, 3.0),
                (State.RAMP, 10.0),
            ),
            loses_work=True,
        ),
        Recovery(
            (
                (State.CHECKPOINT, stall),
                (State.MAINTENANCE, 600.0),
                (State.LOADING, 3.0),
                (State.RAMP, 10.0),
            ),
            loses_work=False,
        ),
    ]
    return events.job_timeline(
        duration,
        np.asarray(rates),
        recoveries,
        ((State.LOADING, 3.0), (State.RAMP, 10.0)),
        interval,
        stall,
        done,
        np.random.default_rng(seed),
    )


def test_timeline_without_failures_is_start_then_checkpoint_cycles():
    line = _timeline([0.0, 0.0], duration=3600.0)
    assert line.start[0] == 0.0 and np.all(np.diff(line.start) > 0)
    assert list(line.state[:4]) == [State.LOADING, State.RAMP, State.RUNNING, State.CHECKPOINT]
    n_ckpt = np.count_nonzero(line.state == State.CHECKPOINT)
    assert n_ckpt == int((3600.0 - 13.0) // 303.0)
    assert line.event_time.size == 0 and line.lost_work == 0.0
    assert line.running_time == pytest.approx(3600.0 - 13.0 - 3.0 * n_ckpt)


def test_timeline_failures_lose_work_since_the_last_checkpoint():
    line = _timeline([1 / 3600.0, 1 / 36000.0])
    assert line.event_time.size > 50
    unexpected = line.event_cause == 0
    assert np.all(line.event_lost_work[unexpected] >= 0)
    assert np.all(line.event_lost_work[unexpected] <= 300.0 + 1e-9)
    assert np.all(line.event_lost_work[~unexpected] == 0.0)
    # Each unexpected interruption is followed by the stalled state at exactly its time.
    at = np.searchsorted(line.start, line.event_time[unexpected])
    assert_allclose(line.start[at], line.event_time[unexpected])
    assert np.all(line.state[at] == State.STALLED)
    # Uniform failure time within a 300 s interval: mean loss about half of it.
    assert np.mean(line.event_lost_work[unexpected]) == pytest.approx(150.0, rel=0.2)


def test_async_checkpoint_completing_late_loses_more_work():
    blocking = _timeline([1 / 3600.0, 0.0], stall=3.0, done=3.0)
    late = _timeline([1 / 3600.0, 0.0], stall=3.0, done=60.0)
    assert_allclose(blocking.event_time, late.event_time)
    assert np.all(late.event_lost_work >= blocking.event_lost_work - 1e-9)
    assert late.lost_work > blocking.lost_work


def test_render_is_energy_exact_at_any_grid():
    # A periodic shape and two constants, on segments that do not align with either grid.
    cells = np.array(
        [
            [
                np.sin(np.linspace(0, 2 * np.pi, 64, endpoint=False)) + 2.0,
                np.full(64, 5.0),
                np.full(64, 1.0),
            ]
        ]
    )
    cum = render.cumulative_tables(cells)
    seg_start = np.array([0.0, 10.37, 31.1, 47.9])
    seg_shape = np.array([1, 0, 2, 0])
    rate = np.array([1 / 3.3, 1.0, 1.0])
    fine = render.interval_means(seg_start, seg_shape, rate, cum, np.linspace(0, 60, 6001))
    coarse = render.interval_means(seg_start, seg_shape, rate, cum, np.linspace(0, 60, 7))
    assert fine.sum() * 0.01 == pytest.approx(coarse.sum() * 10.0, rel=1e-12)
    # The constant segment renders as itself where a bin lies wholly inside it.
    assert_allclose(fine[0, 100:1000], 5.0)
    # Analytic integral: 10.37·5 + (31.1−10.37)·2 + the sine over whole and partial cycles, etc.
    exact = 10.37 * 5 + 20.73 * 2 + 16.8 * 1 + 12.1 * 2
    sine = (3.3 / (2 * np.pi)) * (
        (1 - np.cos(2 * np.pi * 20.73 / 3.3)) + (1 - np.cos(2 * np.pi * 12.1 / 3.3))
    )
    assert coarse.sum() * 10.0 == pytest.approx(exact + sine, rel=2e-3)


def test_render_in_chunks_equals_render_at_once(monkeypatch):
    cells = np.array([[np.linspace(1.0, 2.0, 32), np.full(32, 3.0)]])
    cum = render.cumulative_tables(cells)
    args = (np.array([0.0, 7.3, 19.9]), np.array([0, 1, 0]), np.array([0.37, 1.0]), cum)
    edges = np.linspace(0.0, 40.0, 1001)
    whole = render.interval_means(*args, edges)
    monkeypatch.setattr(render, "CHUNK", 7)
    assert_allclose(render.interval_means(*args, edges), whole, rtol=1e-13)


def test_first_order_lag_follows_the_step_response():
    dt, tau = 10.0, 300.0
    y = signal.first_order_lag(np.ones(200), dt, tau, initial=0.0)
    k = np.array([0, 9, 29, 99, 199])
    t = (k + 1) * dt  # y[k] is the value at the end of step k
    assert_allclose(y[k], 1.0 - np.exp(-t / tau), rtol=1e-12)
    assert_allclose(signal.first_order_lag(np.arange(5.0), dt, 0.0), np.arange(5.0))
    # Steady state by default: a constant input stays put.
    assert_allclose(signal.first_order_lag(np.full(10, 7.0), dt, tau), 7.0, rtol=1e-14)


def test_first_order_lag_keeps_the_mean_of_a_periodic_input():
    dt, tau, period = 600.0, 7200.0, 144  # a day of 10-minute steps, 2 h lag
    phase = np.arange(period) / period
    day = 20.0 + 8.0 * np.sin(2 * np.pi * phase) + 3.0 * (phase > 0.5)
    u = np.tile(day, 60)
    y = signal.first_order_lag(u, dt, tau)
    tail = slice(20 * period, None)  # after the start-up transient (e^-240 is nothing)
    assert y[tail].mean() == pytest.approx(u[tail].mean(), rel=1e-12)
    assert np.ptp(y[tail]) < np.ptp(u[tail])  # and smooths it
    # Time on the last axis: rows are independent signals.
    both = signal.first_order_lag(np.stack([u, 2 * u]), dt, tau, initial=np.array([0.0, 1.0]))
    assert_allclose(both[0], signal.first_order_lag(u, dt, tau, initial=0.0))
    assert_allclose(both[1], signal.first_order_lag(2 * u, dt, tau, initial=1.0))


def test_energy_of_interval_means():
    # 1 MW held for an hour is 1 MWh by definition, whatever the step: E = Σ P·dt / (3600 s/h).
    assert signal.energy(np.ones(3600), 1.0) == pytest.approx(1.0, rel=1e-15)
    assert signal.energy(np.ones(60), 60.0) == pytest.approx(1.0, rel=1e-15)
    # 10 kW for 90 s at 100-ms steps: 10 · 90 / 3600 = 0.25 kWh, in the unit of the power.
    assert signal.energy(np.full(900, 10.0), 0.1) == pytest.approx(0.25, rel=1e-12)


def test_step_stretch_of_a_slower_clock():
    # Compute stretches as 1/clock, communication does not: with a compute share of 0.675 a clock
    # of 0.9 takes 0.675 / 0.9 + 0.325 = 1.075 of the step at clock 1.
    assert thermal.step_stretch(0.9, 1.0, 0.675) == pytest.approx(1.075, rel=1e-12)
    # Against a step already at 0.9 (a locked clock): 0.8 takes (0.675 / 0.8 + 0.325) / 1.075
    # = 1.16875 / 1.075 of it; the reference clock itself stretches nothing.
    assert_allclose(
        thermal.step_stretch(np.array([0.8, 0.9]), 0.9, 0.675), [1.16875 / 1.075, 1.0], rtol=1e-12
    )


def test_locked_clock_scales_dynamic_power_and_stretches_compute():
    # Clock locked at 0.8 with 100 W of leakage: the compute phase keeps its leakage and scales the
    # rest by f³ (100 + 600 · 0.512 = 407.2 W), communication by f (100 + 200 · 0.8 = 260 W), and
    # a phase already below the leakage keeps its power (nothing scales below nothing).
    shares, power = thermal.locked_phases(
        np.array([0.6, 0.3, 0.1]),
        np.array([700.0, 300.0, 80.0]),
        np.array([True, False, False]),
        0.8,
        100.0,
    )
    assert_allclose(power, [407.2, 260.0, 80.0], rtol=1e-12)
    # Compute takes 1/0.8 as long: shares 0.75, 0.3, 0.1 of the old step, which is now 1.15 of it.
    assert_allclose(shares, np.array([0.75, 0.3, 0.1]) / 1.15, rtol=1e-12)


def test_server_fans_speed_up_with_the_inlet_and_draw_by_the_cube_law():
    # Nominal up to 27 °C, +5 %/K above, at most 1.6×: 31 °C gives 1 + 0.05 · 4 = 1.2, 50 °C
    # would give 2.15 and is held at 1.6; a cool inlet does not slow them below nominal.
    speed = cooling.server_fan_speed(np.array([20.0, 27.0, 31.0, 50.0]), 27.0, 0.05, 1.6)
    assert_allclose(speed, [1.0, 1.0, 1.2, 1.6], rtol=1e-12)
    # Fan affinity laws (ASHRAE Handbook, "Fans"): power ∝ speed³. A 100 W fan set at twice its
    # speed draws 800 W, 700 W above nominal; at 1.2× it draws 1.728×, 72.8 W above.
    assert_allclose(cooling.server_fan_extra(speed, 100.0), [0.0, 0.0, 72.8, 309.6], rtol=1e-12)
    assert cooling.server_fan_extra(2.0, 100.0) == pytest.approx(700.0, rel=1e-12)


def test_running_level_between_its_two_sourced_anchors():
    # 405e9 parameters: compute phases at the power cap [P, choukse]; 1e9: 0.64 of TDP, the low
    # end of MLPerf Training v4.0's H100 power through the supplies' measured AC/DC, less the rest
    # of the node [D, mlperf_training_v4]; log-linear between (8e9: 0.64 + 0.36 · ln 8 / ln 405 =
    # 0.765), held beyond
    assert workload.running_level(405e9) == 1.0
    assert workload.running_level(1e9) == pytest.approx(0.64, rel=1e-12)
    assert workload.running_level(8e9) == pytest.approx(0.7647, abs=1e-4)
    assert workload.running_level(1e6) == pytest.approx(0.64, rel=1e-12)
    assert workload.running_level(2e12) == 1.0
    sizes = np.geomspace(1e9, 405e9, 50)
    assert np.all(np.diff([workload.running_level(n) for n in sizes]) > 0)


def test_teardown_is_the_launcher_check_on_one_node_and_longer_across_nodes():
    # one node: the launcher checks its ranks every 5 s [P, nvidia_resiliency]; more: 60 s [A],
    # under the NCCL watchdog's 10 min [P, pytorch]
    assert events.teardown_time(1) == 5.0
    assert events.teardown_time(2) == events.teardown_time(2048) == 60.0
    assert events.teardown_time(2) < 600.0


def test_segment_of_is_numpys_search_for_times_in_order_and_not():
    # The reference is np.searchsorted(starts, times, "right") − 1, which segment_of replaces
    # for times in order (a grid's): starts with repeats, times before the first start, on a
    # start, past the last, equal times, and unordered or empty times (which it searches).
    rng = np.random.default_rng(17)
    for trial in range(400):
        starts = np.sort(rng.integers(0, 40, rng.integers(1, 10))).astype(float)
        times = rng.integers(-5, 50, rng.integers(0, 25)).astype(float)
        times = np.sort(times) if trial % 3 else times
        expected = np.searchsorted(starts, times, side="right") - 1
        np.testing.assert_array_equal(render.segment_of(starts, times), expected)
