"""Weather, clocks, cooling plants and facility power, end to end (issue 3's acceptance)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import REFERENCE, TWO_DAYS
from numpy.testing import assert_allclose

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import diurnal_swing
from powermodel.calibration import (
    CALIBRATION_WEEK,
    CALIBRATION_YEAR,
    DIURNAL_SWING_TARGET,
    PUE_TARGET,
    leakage_coefficient,
)
from powermodel.engine.facility import design_it_power, facility_loss
from powermodel.errors import ScenarioError
from powermodel.models.events import State
from powermodel.scenario import catalogue

JULY_WEEK = {
    "simulation.start": "2024-07-08T04:00:00",  # local midnight at Sterling (EDT)
    "simulation.duration": "7d",
    "simulation.dt": "1min",
}


def test_diurnal_throughput_swing_calibration():
    # Calibration: Llama 3 paper, "a diurnal 1-2% throughput variation based on time-of-day" from
    # "higher mid-day temperatures". The reference as it stands (failures on) over a July week.
    ds = simulate(load_scenario(REFERENCE, JULY_WEEK))
    swing, trough = diurnal_swing(ds)
    assert 0.01 <= swing <= 0.02
    assert 12 <= trough < 18
    # the stored coefficient is the calibration's result, which hits the middle of the range
    sc = load_scenario(REFERENCE)
    assert CALIBRATION_WEEK["simulation.start"] == JULY_WEEK["simulation.start"]
    assert leakage_coefficient(sc, DIURNAL_SWING_TARGET) == pytest.approx(
        sc.gpu.leakage_coefficient, rel=0.01
    )


def test_plant_that_holds_its_supply_shows_no_diurnal_swing():
    # With chillers sized to hold the supply air whatever the weather, the GPUs never see it.
    ds = simulate(
        load_scenario(REFERENCE, {**JULY_WEEK, "cooling.plant": "enterprise-chilled-water"})
    )
    assert np.ptp(ds["supply_temp"].values) < 1e-6
    assert diurnal_swing(ds)[0] < 0.001


def test_a_run_that_never_trains_has_no_diurnal_swing():
    # a 1-min run is all start-up (2 min, workload.startup_time): no hour has running time, so
    # there is no profile to take a swing of (it raised numpy's "All-NaN slice" before)
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "1min"}))
    assert not (ds["job_state"].values == State.RUNNING).any()
    swing, trough = diurnal_swing(ds)
    assert np.isnan(swing) and trough is None


@pytest.fixture(scope="module")
def gb200():
    """GB200s (liquid-cooled, a warm-water plant) at their 1,200 W TDP and capped at 1,000 W."""
    base = {
        **JULY_WEEK,
        "simulation.duration": "2d",
        "simulation.dt": "1s",
        "reliability.rate_scale": 0.0,
        "cluster.gpu": "GB200",
        "cooling.plant": "liquid-dry-cooler",
    }
    full = simulate(load_scenario(REFERENCE, base))
    capped = simulate(load_scenario(REFERENCE, {**base, "mitigation.power_cap": 1000.0}))
    running = full["job_state"].values == State.RUNNING
    assert np.array_equal(running, capped["job_state"].values == State.RUNNING)
    return full, capped, running


def test_gb200_power_cap_throughput_validation(gb200):
    # Validation, not fitted: Meta lowered GB200 from 1,200 W to 1,000 W for -5 % performance
    # [S, meta_gb200_cap]. Clocks fall at the cap by the cube law, less what a cooler die leaks.
    full, capped, running = gb200
    tokens = capped["throughput"].values[running].mean() / full["throughput"].values[running].mean()
    assert tokens - 1.0 == pytest.approx(-0.05, abs=0.015)


def test_gb200_power_cap_power_validation(gb200):
    # Meta: -16.7 % power for the 1,200 -> 1,000 W cap [S, meta_gb200_cap]. 16.7 % is 200/1200 to
    # the digit: the per-GPU power the cluster is provisioned for (Meta's paper is about
    # provisioning), not a measured mean. The model's provisioned figure is the peak GPU draw
    # while running.
    full, capped, running = gb200
    peak = capped["gpu_power"].values[running].max() / full["gpu_power"].values[running].max()
    assert peak - 1.0 == pytest.approx(-0.167, abs=0.015)
    # A prediction, not a published number: the mean falls less, as communication phases already
    # draw under the cap. It must lie between no change and the peak's change.
    mean = capped["gpu_power"].values[running].mean() / full["gpu_power"].values[running].mean()
    assert peak < mean < 1.0
    assert mean - 1.0 == pytest.approx(-0.123, abs=0.01)  # this model's value, 2 d at 1 s


@pytest.fixture(scope="module")
def years():
    """A year at 1 min for the reference cluster at three sites on three kinds of plant."""
    plants = {
        "meta-outside-air-evaporative": "standby",
        "liquid-dry-cooler": "double-conversion",
        "enterprise-chilled-water": "double-conversion",
        "modern-chilled-water": "double-conversion",
    }
    out = {}
    for plant, chain in plants.items():
        for site in ("tampa", "sterling", "chicago"):
            over = {
                **CALIBRATION_YEAR,
                "site.weather": site,
                "cooling.plant": plant,
                "electrical.chain": chain,
            }
            ds = simulate(load_scenario(REFERENCE, over))
            assert np.all(ds["facility_power"].values >= ds["it_power"].values)
            assert np.all(ds["pue"].values >= 1.0)
            out[plant, site] = metrics(ds)
    return out


# Published PUE by plant type
RANGES = {
    "meta-outside-air-evaporative": (1.07, 1.09),  # Meta halls [S, meta_datacenters]
    "liquid-dry-cooler": (1.1, 1.3),  # direct-to-chip [S, uptime_survey]
    # typical enterprise, survey average 1.54 [S, uptime_survey]
    "enterprise-chilled-water": (1.5, 1.6),
}


@pytest.mark.parametrize("plant", list(RANGES))
def test_annual_pue_orders_sites_and_lies_in_published_range(years, plant):
    tampa, sterling, chicago = (years[plant, s]["pue"] for s in ("tampa", "sterling", "chicago"))
    assert tampa > sterling > chicago
    low, high = RANGES[plant]
    assert low <= chicago and tampa <= high


def test_reference_plant_pue_is_its_calibration(years):
    # Calibration: the outside-air plant's fan fraction was fitted to Meta's fleet PUE 1.08.
    assert years["meta-outside-air-evaporative", "sterling"]["pue"] == pytest.approx(
        PUE_TARGET, abs=0.001
    )


def test_chiller_hours_order_with_the_climate(years):
    hours = [
        years["modern-chilled-water", s]["chiller_hours"] for s in ("tampa", "sterling", "chicago")
    ]
    assert hours[0] > hours[1] > hours[2]
    assert hours[0] > 0
    chw = [years["modern-chilled-water", s]["pue"] for s in ("tampa", "sterling", "chicago")]
    assert chw[0] > chw[1] > chw[2]


def test_failure_reaches_the_facility_at_once_and_cooling_follows():
    sc = load_scenario(
        REFERENCE,
        {
            **TWO_DAYS,
            # an outage longer than five plant time constants (5 × 5 min), so the drop lasts
            "reliability.restart_time": "40min",
        },
    )
    ds = simulate(sc)
    t = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(1, "s")
    tau, plant_dt = sc.cooling.tau, ds.attrs["plant_dt"]
    events = (ds["event_time"].values - ds["time"].values[0]) / np.timedelta64(1, "s")
    unexpected = events[ds["event_kind"].values == "unexpected"]
    # a failure with 10 minutes of training before it, whose next 10 s stay in one plant step
    fail = next(
        e
        for e in unexpected
        if e > 900
        and (e % plant_dt) < plant_dt - 11
        and np.all(ds["job_state"].values[(t >= e - 600) & (t < e - 1)] == State.RUNNING)
    )
    it, fac = ds["it_power"].values, ds["facility_power"].values
    before = (t >= fail - 120) & (t < np.floor(fail))
    after = (t >= np.ceil(fail) + 1) & (t < np.ceil(fail) + 10)
    d_it = it[before].mean() - it[after].mean()
    d_fac = fac[before].mean() - fac[after].mean()
    # the marginal loss of the UPS/transformer chain at this load (a numerical derivative)
    capacity = sc.electrical.design_margin * design_it_power(sc) / 1e6
    level = it[before].mean()
    marginal = (
        facility_loss(np.array(level + 0.01), sc, capacity)
        - facility_loss(np.array(level - 0.01), sc, capacity)
    ) / 0.02
    assert d_it > 8.0  # MW, issue 2's bound
    assert d_fac == pytest.approx(d_it * (1 + float(marginal)), rel=0.02)
    # five plant time constants later the cooling has followed: the facility change is larger
    late = (t >= fail + 5 * tau) & (t < fail + 5 * tau + 30)
    assert np.all(ds["job_state"].values[late] == State.FAILED_IDLE)
    d_fac_late = fac[before].mean() - fac[late].mean()
    d_it_late = it[before].mean() - it[late].mean()
    assert d_fac_late >= d_it_late


def test_design_day_bounds_the_year(years):
    # ASHRAE 0.4 % cooling design day from the EPW header: the hottest hour is the header's
    # design dry-bulb (Sterling: 34.1 °C, its DESIGN CONDITIONS line); at nameplate IT it bounds
    # every hour of the typical year.
    from powermodel.engine.facility import design_day

    sc = load_scenario(REFERENCE)
    day = design_day(sc)
    assert day["design_temp_air"] == pytest.approx(34.1, abs=0.05)
    assert (
        day["peak_facility_mw"]
        > years["meta-outside-air-evaporative", "sterling"]["facility_peak_mw"]
    )
    assert day["peak_pue"] >= 1.0


def test_wet_bulb_is_solved_at_the_hours_read_to_the_bit_of_the_whole_year():
    # the whole year solved at once (models.weather.wet_bulb, psychrolib's values) and
    # interpolated (to_grid) is the reference: readings across New Year, on the hour, a week;
    # only the hours beside them are solved
    from powermodel.engine.facility import HourlyWeather
    from powermodel.iotools import read_weather
    from powermodel.models import weather

    data, meta = read_weather("tampa")
    columns = [data[k].to_numpy() for k in ("temp_air", "relative_humidity", "temp_dew")]
    pressure = data["pressure"].to_numpy()
    wx = HourlyWeather(*columns, pressure, meta["utc_offset"], "tampa")
    whole = weather.wet_bulb(columns[0], columns[1], pressure)
    hours = np.r_[np.linspace(8755.0, 8760.0, 41, endpoint=False), 0.0, 0.5, 1.0, 4000.0]
    week = np.arange(2000.0, 2000.0 + 168.0, 1.0 / 60.0)
    for at in (hours, week, hours):  # the second time over solved hours
        np.testing.assert_array_equal(wx.wet_bulb_at(at), weather.to_grid(whole, at))
    solved = np.flatnonzero(~np.isnan(wx._wet_bulb))
    assert 168 < solved.size < 168 + 20
    np.testing.assert_array_equal(wx._wet_bulb[solved], whole[solved])
    # any real hours, as to_grid takes them: far outside the year, not finite, none
    far = np.array([1e19, -1e19, 1e300, -1e300, -1e-300, 8760.0, -0.5, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = wx.wet_bulb_at(far)
    np.testing.assert_array_equal(got, weather.to_grid(whole, far))
    with np.errstate(invalid="ignore"):  # np.interp's remainder of inf warns, as before
        assert np.isnan(wx.wet_bulb_at(np.array([np.inf, -np.inf]))).all()
    assert wx.wet_bulb_at(np.array([])).size == 0


def test_weather_the_wet_bulb_cannot_be_solved_for_is_refused_before_a_run():
    # psychrolib refuses air below -100 °C (its range); the year is checked whole when read,
    # not at the hour a run reaches, and a synthetic climate that cold is refused by name
    from powermodel.engine.facility import HourlyWeather
    from powermodel.errors import ScenarioError

    temp = np.full(8760, 10.0)
    temp[5000] = -120.0
    with pytest.raises(ValueError, match=r"range \[-100, 200\]"):
        HourlyWeather(temp, np.full(8760, 50.0), temp - 5.0, np.full(8760, 101325.0), 0.0, "x")
    cold = {
        "site.weather": "synthetic",
        "site.synthetic.mean": -60,
        "site.synthetic.seasonal_amplitude": 40,
        "site.synthetic.daily_amplitude": 25,
    }
    with pytest.raises(ScenarioError, match=r"is -125 °C, colder than -100 °C"):
        load_scenario(REFERENCE, cold)


def test_weather_errors_are_clear():
    from powermodel import PowerModelError

    with pytest.raises(PowerModelError, match="did you mean 'sterling'"):
        simulate(
            load_scenario(REFERENCE, {"site.weather": "stirling", "simulation.duration": "1h"})
        )


# --- issue 26, item 6: the plant on any step against the electrical one, alone or in halls -----

PLANTS = list(catalogue("cooling"))
CAMPUS = "mixed-campus-hopper-blackwell"
STEPPED = {"simulation.duration": "2h", "simulation.dt": "10s", "reliability.rate_scale": 0.0}
# the plant's step against the electrical 10 s: finer (the plant runs at dt), equal, coarser
PLANT_STEPS = {"finer": "1s", "equal": "10s", "coarser": "1min"}


def _stepped(preset: str, plant: str, step: str, **more) -> object:
    keys = {**STEPPED, "cooling.plant": plant, "cooling.dt": step, **more}
    if preset == CAMPUS:  # the second hall chooses the plant from the catalogue too
        keys["campus.halls.1.set"] = {"cooling.plant": plant}
    return simulate(load_scenario(preset, keys))


@pytest.fixture(scope="module")
def at_dt():
    """Each preset and plant with its plant on the electrical step (cooling.dt = dt)."""
    return {
        (preset, plant): _stepped(preset, plant, PLANT_STEPS["equal"])
        for preset in (REFERENCE, CAMPUS)
        for plant in PLANTS
    }


@pytest.mark.parametrize("step", ["finer", "coarser"])
@pytest.mark.parametrize("plant", PLANTS)
@pytest.mark.parametrize("preset", [REFERENCE, CAMPUS])
def test_every_plant_runs_on_a_step_finer_equal_or_coarser_than_the_electrical(
    preset, plant, step, at_dt
):
    ds, equal = _stepped(preset, plant, PLANT_STEPS[step]), at_dt[(preset, plant)]
    for run in (ds, equal):
        for name in ("it_power", "cooling_power", "facility_power", "supply_temp", "gpu_temp"):
            assert np.isfinite(run[name].values).all(), name
        assert (run.facility_power.values >= run.it_power.values).all()
        assert (run.pue.values >= 1.0).all()
        if "hall" in run.dims:  # each hall its own plant, every one on the campus's step
            assert np.isfinite(run.hall_cooling_power.values).all()
            assert (run.hall_facility_power.values >= run.hall_it_power.values).all()
            assert_allclose(run.hall_cooling_power.sum("hall"), run.cooling_power, rtol=1e-12)
    if step == "finer":  # a plant step finer than dt repeats dt's heat: the plant runs at dt
        np.testing.assert_array_equal(ds.cooling_power.values, equal.cooling_power.values)
    else:
        # the plant lags the heat by minutes (tau 3-10 min, presets/plants.toml) and its step
        # delays the response to the job's start-up by up to a step (0.33 % of the 2 h's
        # cooling energy at 1 min); once the heat has settled (the second hour, over three
        # time constants on) the energy is the same within 0.05 % (measured 0.011 % at most)
        second = slice(ds.sizes["time"] // 2, None)
        assert_allclose(
            ds.cooling_power[second].mean(), equal.cooling_power[second].mean(), rtol=5e-4
        )


def test_the_issues_campus_with_its_plants_on_the_electrical_step_runs():
    # issue 26: a broadcast ValueError in the liquid plant of the campus's second hall, whose
    # catalogue plant brought its own 1-min step beside the site's 1 s
    keys = {"simulation.duration": "1h", "simulation.dt": "1s", "cooling.dt": "1s"}
    ds = simulate(load_scenario(CAMPUS, keys))
    assert ds.attrs["plant_dt"] == 1.0
    assert [h.cooling.dt for h in load_scenario(CAMPUS, keys).halls] == [1.0, 1.0]
    assert np.isfinite(ds.hall_cooling_power.values).all()


@pytest.mark.parametrize("preset", [REFERENCE, CAMPUS])
@pytest.mark.parametrize(
    ("keys", "fix"),
    [
        ({"cooling.dt": "25s"}, "give cooling.dt = 20s or 30s"),  # not a whole number of dt
        ({"simulation.duration": "90s", "cooling.dt": "1min"}, "give cooling.dt = 30s or 90s"),
        ({"simulation.duration": "30min", "cooling.dt": "1h"}, "give cooling.dt = 30min"),
    ],
    ids=["not a whole number of dt", "not dividing the run", "longer than the run"],
)
def test_a_plant_step_that_cannot_be_is_refused_with_the_steps_that_can(preset, keys, fix):
    with pytest.raises(ScenarioError, match=f"must be a whole number of simulation.dt.*: {fix}$"):
        simulate(load_scenario(preset, {**STEPPED, **keys}))
