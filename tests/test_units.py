"""Units, sign conventions and UTC in every file powermodel writes (issue 10, "what users see")."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import xarray as xr
from numpy.testing import assert_allclose, assert_array_equal

from powermodel import load_scenario, simulate
from powermodel.analysis import resample
from powermodel.export import DATASET_FILES, TOOLS, export_tool, write
from powermodel.iotools.trace import read_trace
from powermodel.models.events import State
from powermodel.variables import Q_SIGN, VARIABLES, annotate, header

REFERENCE = "llama3-405b-16k-h100"
# The columns that hold labels, not numbers: the only ones without units.
LABELS = {
    "time",
    "job_state",
    "event_time",
    "event_kind",
    "event_cause",
    "event_category",
    # a campus's: workload names, kinds and states, and its flexibility events' labels
    "workload",
    "workload_kind",
    "hall",
    "workload_hall",
    "workload_job_state",
    "event_workload",
    "flex_name",
    "flex_workload",
    "flex_lever",
    "flex_start",
    # a grid disturbance's: when, which kind, what the site did (flags), and the code of what
    # a disturbance does at each step
    "disturbance_time",
    "disturbance_kind",
    "disturbance_transferred",
    "disturbance_latched",
    "disturbance_dropped",
    "grid_event",
}


@pytest.fixture(scope="module")
def profile() -> xr.Dataset:
    """An hour of the reference at 1 s."""
    return simulate(load_scenario(REFERENCE, {"simulation.duration": "1h"}))


def known_profile() -> xr.Dataset:
    """Three minutes at 1 s, IT power 20 MW running, 12 MW in a checkpoint, 5 MW idle.

    Minute 1 runs but for a 3-s checkpoint (s 10-12); minute 2 is idle after a failure for its
    first 40 s; minute 3 is half running, half checkpoint.
    """
    state = np.full(180, State.RUNNING, dtype=np.int8)
    state[10:13] = State.CHECKPOINT
    state[60:100] = State.FAILED_IDLE
    state[150:] = State.CHECKPOINT
    watts = {State.RUNNING: 20.0, State.CHECKPOINT: 12.0, State.FAILED_IDLE: 5.0}
    power = np.vectorize(watts.get)(state).astype(float)
    ds = xr.Dataset(
        {"it_power": ("time", power), "job_state": ("time", state)},
        coords={"time": np.datetime64("2024-07-01T00:00", "ns") + np.arange(180) * 10**9},
        attrs={"dt": 1.0},
    )
    ds["job_state"].attrs.update(
        flag_values=[s.value for s in State], flag_meanings=" ".join(s.name.lower() for s in State)
    )
    return annotate(ds)


# --- one convention ----------------------------------------------------------------------------


def test_every_number_in_the_registry_has_units_and_only_labels_go_without():
    unitless = {name for name, meta in VARIABLES.items() if not meta["units"]}
    assert unitless == LABELS
    assert header("grid_voltage") == "grid_voltage [pu]"  # per unit of the no-load voltage
    for ratio in ("pue", "clock_factor", "bess_soc", "effective_training_time", "share_ramp"):
        assert header(ratio) == f"{ratio} [1]"
    assert header("job_state") == "job_state"
    assert header("grid_power_min", "MW") == "grid_power_min [MW]"


def test_csv_headers_carry_units_also_on_min_max_and_state_shares(profile, tmp_path):
    path = write(profile, tmp_path / "minutes.csv", resample="1min")
    columns = list(pd.read_csv(path, nrows=0).columns)
    for column in columns:
        name, unit = re.fullmatch(r"(\w+)(?: \[(.+)\])?", column).groups()
        base = re.sub(r"_(min|max)$", "", name)
        assert unit == (VARIABLES[base]["units"] or None), column
    for column in (
        "grid_voltage [pu]",
        "grid_voltage_min [pu]",
        "grid_voltage_max [pu]",
        "pue [1]",
        "clock_factor_min [1]",
        "share_running [1]",
        "share_checkpoint [1]",
        "job_state",
        "time",
    ):
        assert column in columns


def test_netcdf_attrs_give_every_number_its_unit(profile, tmp_path):
    back = xr.open_dataset(write(profile, tmp_path / "p.nc"))
    assert back["grid_voltage"].attrs["units"] == "pu"
    assert back["pue"].attrs["units"] == "1"
    assert "units" not in back["job_state"].attrs  # codes are not a quantity: a label column
    assert "UTC" in back["time"].attrs["long_name"]
    units = json.loads(back.attrs["attribute_units"])
    assert units["dt"] == "s" and units["registered_demand"] == "MW"
    assert units["compute_share"] == "1" and units["token_rate"] == "token/s"
    numbers = {k for k, v in back.attrs.items() if isinstance(v, (int, float, np.number))}
    assert numbers <= units.keys()
    back.close()


# --- Parquet -----------------------------------------------------------------------------------


def test_parquet_keeps_units_long_names_and_the_scenario(profile, tmp_path):
    path = write(resample(profile, "1min"), tmp_path / "p.parquet")
    schema = pq.read_schema(path)
    assert "grid_power" in schema.names and "grid_power [MW]" not in schema.names
    field = schema.field("grid_power").metadata
    assert field[b"units"] == b"MW"
    assert field[b"long_name"] == VARIABLES["grid_power"]["long_name"].encode()
    assert b"description" in field
    assert schema.field("grid_power_max").metadata[b"cell_methods"] == b"time: maximum"
    assert schema.field("grid_voltage").metadata[b"units"] == b"pu"
    assert schema.field("share_checkpoint").metadata[b"units"] == b"1"
    assert Q_SIGN in schema.field("grid_reactive_power").metadata[b"long_name"].decode()
    assert schema.field("job_state").metadata[b"cell_methods"] == b"time: mode"
    assert str(schema.field("time").type.tz) == "UTC"
    meta = schema.metadata
    assert meta[b"scenario"].decode() == profile.attrs["scenario"]
    assert meta[b"site_timezone"] == b"America/New_York"
    assert json.loads(meta[b"dt"]) == 60.0  # the resampled step [s]
    assert meta[b"powermodel_version"].decode() == profile.attrs["powermodel_version"]
    assert json.loads(meta[b"attribute_units"])["dt"] == "s"


# --- job states at a coarser step ----------------------------------------------------------------


def test_resampled_job_state_is_the_mode_and_shares_are_exact():
    fine = known_profile()
    coarse = resample(fine, "1min")
    # minute 1: 3 s of checkpoint in 60 (known_profile); minute 2: 40 s idle; minute 3: a tie
    assert_allclose(coarse["share_checkpoint"].values, [3 / 60, 0.0, 30 / 60], rtol=1e-15)
    assert_allclose(coarse["share_running"].values, [57 / 60, 20 / 60, 30 / 60], rtol=1e-15)
    assert_allclose(coarse["share_failed_idle"].values, [0.0, 40 / 60, 0.0], rtol=1e-15)
    shares = sum(coarse[f"share_{s.name.lower()}"] for s in State)
    assert_allclose(shares.values, 1.0, rtol=1e-15)
    # the tie in minute 3 goes to the lower code, running
    assert_array_equal(coarse["job_state"].values, [State.RUNNING, State.FAILED_IDLE, 0])
    assert coarse["job_state"].dtype == np.int8
    assert coarse["job_state"].attrs["flag_meanings"] == fine["job_state"].attrs["flag_meanings"]
    assert coarse["share_checkpoint"].attrs["units"] == "1"
    # energy: (57·20 + 3·12) + (40·5 + 20·20) + (30·20 + 30·12) MW·s, at 1 s and at 1 min
    energy = 57 * 20 + 3 * 12 + 40 * 5 + 20 * 20 + 30 * 20 + 30 * 12
    assert fine["it_power"].sum() * 1.0 == pytest.approx(energy, rel=1e-15)
    assert coarse["it_power"].sum() * 60.0 == pytest.approx(energy, rel=1e-15)
    assert resample(fine, "3min")["it_power"].sum() * 180.0 == pytest.approx(energy, rel=1e-15)


def test_one_minute_csv_has_the_state_and_its_shares(tmp_path):
    frame = pd.read_csv(write(known_profile(), tmp_path / "m.csv", resample="1min"))
    assert list(frame["job_state"]) == ["running", "failed_idle", "running"]
    assert_allclose(frame["share_checkpoint [1]"], [0.05, 0.0, 0.5], rtol=1e-15)
    assert list(frame["time"]) == [
        "2024-07-01T00:00:00Z",
        "2024-07-01T00:01:00Z",
        "2024-07-01T00:02:00Z",
    ]


# --- grid tools --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [t for t in TOOLS if t not in DATASET_FILES])
def test_every_grid_tool_export_states_the_sign_of_q_and_utc(profile, tmp_path, tool):
    files = export_tool(profile, tool, tmp_path)
    text = {f.name: f.read_text() for f in files if f.suffix in (".dss", ".glm", ".txt", ".player")}
    assert text, "no file carries the notes"
    for name, content in text.items():
        assert Q_SIGN in content, name
        assert "2024-07-01T00:00:00Z (UTC)" in content, name


def test_our_own_csvs_read_back_as_traces(profile, tmp_path):
    """The measured-trace reader takes the profile CSV and the playback CSV as they are."""
    trace = read_trace(write(profile, tmp_path / "p.csv"))
    assert_array_equal(trace["time"].values, profile["time"].values)
    # the profile CSV keeps 7 significant digits (powermodel.export.CSV_DIGITS)
    written = trace["grid_reactive_power"].values
    assert_allclose(written, profile["grid_reactive_power"].values, rtol=5e-7, atol=0)
    playback = read_trace(export_tool(profile, "playback", tmp_path)[0])
    assert_allclose(playback["grid_power"].values, profile["grid_power"].values)
    assert playback.attrs["dt"] == 1.0
