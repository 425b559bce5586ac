"""Hostile inputs and edge cases of the grid disturbances and the ride-through chain.

Each test pins a defect found by fuzzing the feature: a silently wrong answer or an input
accepted that should be refused with the fix. Expected values come from the chain's own
parameters (``ride_through``) and the scenario's own keys.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_disturbances import AT, QUIET, REFERENCE, ups_chain

from powermodel import load_scenario
from powermodel.errors import ScenarioError
from powermodel.models import disturbance as dm

INF = math.inf


def _respond(times, **kw) -> dm.Outcome:
    n = len(times)
    return dm.respond(np.array(times, float), np.full(n, 0.1), np.full(n, 0.5), ups_chain(**kw))


def test_a_sag_during_the_return_ramp_keeps_the_latched_site_on_its_generators():
    # three sags latch at 20 s: on the generators from 30 s (start 10 s) until the manual
    # return at 80 s, back over the 60-s ramp to 140 s. A fourth sag at 90 s, during the
    # ramp, moves the IT path to its UPS again; it must not undo the hour behind it: the
    # cooling and misc loads were on the generators from 30 s and come back over the ramp.
    o = _respond([0.0, 10.0, 20.0, 90.0])
    assert o.other, "the other loads' time on the generators vanished"
    assert o.other[0].begin == pytest.approx(30.0)
    assert o.other[0].hold == pytest.approx(80.0)
    assert o.generator_other[0] == pytest.approx((30.0, 140.0))
    # the IT path: on backup from the first of the latched run, not back before the
    # fourth sag's settle and walk-in
    assert o.it[-1].begin == pytest.approx(20.0)
    assert o.it[-1].hold + o.it[-1].ramp >= 90.1 + 2.0 + 5.0 - 1e-9


def test_a_relatch_during_the_return_ramp_keeps_the_generators_from_the_first_latch():
    # latched at 20 s (generators from 30 s), back at 80 s over 60 s; three more sags in the
    # ramp, each while the IT path is still on backup, latch again at 91 s: the other loads
    # never left the generators, and stay on them until the second manual return.
    o = _respond([0.0, 10.0, 20.0, 85.0, 88.0, 91.0])
    assert o.latched.tolist() == [False, False, True, False, False, True]
    assert len(o.other) == 1
    assert o.other[0].begin == pytest.approx(30.0)
    assert o.other[0].hold == pytest.approx(91.0 + 60.0)
    t, _, right = dm.on_grid(o.other)
    inside = (t >= 30.0) & (t < 151.0)
    assert (right[inside] == 0.0).all()


def test_an_immunity_curve_with_a_nan_duration_is_refused():
    with pytest.raises(ScenarioError, match="immunity"):
        load_scenario(
            REFERENCE,
            {
                **QUIET,
                "disturbance.start": AT,
                "disturbance.sags": [{"at": "0s", "duration": "100ms", "voltage": 0.5}],
                "ride_through.immunity": [[math.nan, 0.0], [INF, 0.9]],
            },
        )


def test_a_frequency_window_around_another_system_frequency_is_refused():
    # a 50-Hz system with the default 57-63 Hz UPS window: every point of the trace lies
    # outside it and the site would sit on its generators for the rest of the run
    with pytest.raises(ScenarioError, match="frequency_window"):
        load_scenario(
            REFERENCE,
            {
                **QUIET,
                "disturbance.start": AT,
                "disturbance.nominal_frequency": 50.0,
                "disturbance.frequency": [[0, 50.0], [5, 49.5], [10, 50.0]],
            },
        )


def test_a_campus_prices_each_crash_at_its_own_jobs_token_rate():
    from powermodel import ride_through as rt
    from powermodel import simulate

    ds = simulate(
        load_scenario(
            "mixed-campus-hopper-blackwell",
            {
                "simulation.start": "2024-07-01T00:00",
                "simulation.duration": "30min",
                "simulation.dt": "1s",
                "disturbance.start": "2024-07-01T00:05:00",
                "disturbance.sags": [
                    {"at": f"{s}s", "duration": "100ms", "voltage": 0.5} for s in (0, 10, 20)
                ],
                "ride_through.generator": False,  # the batteries run out: every job crashes
                "ride_through.autonomy": "30s",
                "ride_through.manual_return": "5min",
            },
        )
    )
    crashed = ds.event_cause.values == rt.GRID_CAUSE
    assert np.count_nonzero(crashed) == 3  # the three training jobs, not the inference fleet
    names = list(ds.workload.values)
    start = np.datetime64(ds.time.values[0])
    expected = 0.0
    for w, work, t in zip(
        ds.event_workload.values[crashed],
        ds.event_lost_work.values[crashed],
        ds.event_time.values[crashed],
        strict=True,
    ):
        i = names.index(w)
        k = int((t - start) / np.timedelta64(1, "s"))
        running = np.flatnonzero(ds.workload_job_state.values[i] == 0)
        down = float(running[running > k][0] - k)
        expected += (work + down) * ds.workload_token_rate.values[i]
    assert rt.summary(ds)["tokens not trained"] == pytest.approx(expected, rel=1e-9)


CLI_RUN = [
    "ride-through",
    REFERENCE,
    "--set",
    "simulation.duration=10min",
    "--set",
    "simulation.dt=1s",
    "--set",
    "disturbance.start=2024-07-01T00:05",
    "--set",
    "disturbance.sequence=nerc-2025-02-single-fault",
]


@pytest.mark.parametrize("problem", ["index", "aux folder"])
def test_the_ride_through_command_refuses_a_bad_model_request_before_the_run(
    problem, tmp_path, capsys, monkeypatch
):
    from powermodel import cli

    ran = []
    monkeypatch.setattr("powermodel.cli.common.simulate", lambda *a, **k: ran.append(1))
    args = [*CLI_RUN, "--model", str(tmp_path / "m")]
    if problem == "index":
        args += ["--disturbance", "99"]
    else:
        (tmp_path / "m.aux").mkdir()
    assert cli.main(args) != 0
    err = capsys.readouterr().err
    assert ("99" in err) if problem == "index" else ("m.aux" in err)
    assert not ran  # refused before the run
    assert not (tmp_path / "m.dyr").exists()


def test_generators_still_running_take_a_new_transfer_at_once():
    # a latch at 20 s (sags at 0, 10, 20 s), manual return at 80 s, everything back over the
    # 60-s ramp to 140 s; a sag at 90 s during it brings the IT path back over the 0.5-s
    # walk-in by 92.6 s, the cooling still coming back. Sags at 100 and 105 s latch again at
    # 105 s in a fresh IT window: the generators, still carrying the cooling, take the IT path
    # at once, not 10 s later (the fuzzing pass's finding)
    o = _respond([0.0, 10.0, 20.0, 90.0, 100.0, 105.0], walk_in=0.5)
    assert o.latched[-1] and o.it[-1].begin == pytest.approx(105.0)
    assert o.generator_it[-1][0] == pytest.approx(105.0)
