"""The profile files :func:`powermodel.export.write` makes (issue 30, acceptance 3): a Parquet
file holds the Dataset's values exactly, a CSV each value to 7 significant digits (its energy
the run's), and a write that fails or is interrupted leaves no file."""

from __future__ import annotations

import errno
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from powermodel import export, load_scenario, simulate
from powermodel.errors import PowerModelError
from powermodel.export import CSV_DIGITS, decimal_text, significant, write, writing

REFERENCE = "llama3-405b-16k-h100"


@pytest.fixture(scope="module")
def day():
    """Six hours of the reference at 1 s, failures three times as often (the states vary)."""
    return simulate(
        load_scenario(REFERENCE, {"simulation.duration": "6h", "reliability.rate_scale": 3.0})
    )


def _profile(ds) -> list[str]:
    return [name for name in ds.data_vars if ds[name].dims == ("time",)]


@pytest.fixture
def chunked(monkeypatch):
    """Files written a few thousand rows at a time, so that a write has several chunks."""
    monkeypatch.setattr(export, "ROWS", {".parquet": 5000, ".csv": 5000})


def test_a_parquet_file_holds_the_datasets_values_exactly(day, tmp_path, chunked):
    path = write(day, tmp_path / "day.parquet")
    table = pq.read_table(path)
    assert table.column_names == ["time", *_profile(day)]
    assert np.array_equal(table["time"].to_numpy(), day["time"].values)
    assert str(table.schema.field("time").type) == "timestamp[ns, tz=UTC]"
    for name in _profile(day):
        var, field = day[name], table.schema.field(name)
        if name == "job_state":  # codes written as the names flag_meanings gives them
            names = np.array(var.attrs["flag_meanings"].split())
            codes = np.searchsorted(var.attrs["flag_values"], var.values)
            assert table[name].to_pylist() == names[codes].tolist()
            assert len(set(table[name].to_pylist())) > 1
            continue
        assert field.type == pa.from_numpy_dtype(var.dtype), name
        np.testing.assert_array_equal(table[name].to_numpy(), var.values, err_msg=name)
        assert field.metadata[b"units"].decode() == var.attrs["units"]
    metadata = table.schema.metadata
    assert metadata[b"scenario"].decode() == day.attrs["scenario"]
    # the encoding: state names as a dictionary, a float column's mostly distinct values not,
    # the times as deltas
    group = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(19)}
    assert "RLE_DICTIONARY" in encodings["job_state"]
    assert "RLE_DICTIONARY" not in encodings["grid_power"]
    assert "DELTA_BINARY_PACKED" in encodings["time"]  # a regular step: bits a row
    assert pq.ParquetFile(path).metadata.num_row_groups == 5  # 21,600 rows, 5,000 a group
    # other readers read the same numbers
    frame = pd.read_parquet(path)
    np.testing.assert_array_equal(frame["grid_power"].to_numpy(), day["grid_power"].values)
    polars = pytest.importorskip("polars")
    np.testing.assert_array_equal(
        polars.read_parquet(path)["supply_temp"].to_numpy(), day["supply_temp"].values
    )


def test_a_csvs_values_keep_seven_digits_and_its_energy_the_runs(day, tmp_path, chunked):
    path = write(day, tmp_path / "day.csv")
    frame = pd.read_csv(path)
    assert len(frame) == day.sizes["time"]
    for name in _profile(day):
        if name == "job_state":
            continue
        exact = day[name].values.astype(np.float64)
        written = frame[f"{name} [{day[name].attrs['units']}]"].to_numpy()
        # each within half a unit of its 7th significant digit (export.CSV_DIGITS)
        shown = np.abs(exact) > 0
        e = np.floor(np.log10(np.abs(exact), where=shown, out=np.zeros_like(exact)))
        half = 0.5 * 10.0 ** (e - CSV_DIGITS + 1) * (1 + 1e-9)  # 1e-9: the check's own sums
        assert np.all(np.abs(written - exact) <= np.where(shown, half, 0.0)), name
    # energy (sum × dt): each value within 5e-7 of itself, so the sum is; the run's own
    # figure is the in-memory sum of the same variable
    for name, units in (("grid_power", "MW"), ("it_power", "MW"), ("facility_power", "MW")):
        energy = float(day[name].values.sum()) * 1.0 / 3600  # MWh at dt = 1 s
        written = float(frame[f"{name} [{units}]"].sum()) * 1.0 / 3600
        assert written == pytest.approx(energy, rel=5e-7)


def test_a_csv_is_pyarrows_text_of_the_rounded_doubles_unquoted(day, tmp_path):
    # the file pyarrow's CSV writer made of significant()'s doubles, its fields unquoted
    part = day.isel(time=slice(0, 2000))
    path = write(part, tmp_path / "part.csv", timezone="America/New_York")
    written = path.read_bytes().splitlines()
    assert written[0].startswith(b'"time","local time (America/New_York)","gpu_power [MW]",')
    assert written[1].startswith(b"2024-07-01T00:00:00Z,2024-06-30 20:00:00,1.72032,")
    assert written[1].endswith(b",starting")
    table = export.profile_table(part)
    for i, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            values = significant(table.column(i).to_numpy(), CSV_DIGITS)
            table = table.set_column(i, field, pa.array(values, field.type))
    table = table.set_column(0, "time", export.iso_times(table["time"], 1.0))
    before = tmp_path / "before.csv"
    pacsv.write_csv(table, before, pacsv.WriteOptions(quoting_style="needed"))
    without_local = [b",".join(line.split(b",")[:1] + line.split(b",")[2:]) for line in written]
    assert without_local[1:] == before.read_bytes().replace(b'"', b"").splitlines()[1:]


def test_decimal_text_is_each_values_nearest_decimal():
    rng = np.random.default_rng(30)
    wide = rng.lognormal(0.0, 12.0, 100_000) * rng.choice([-1.0, 1.0], 100_000)
    text = decimal_text(wide, 7)
    # the nearest 7-digit decimal, as Python's correctly rounded formatting gives it
    assert [float(t) for t in text.to_pylist()] == [float(f"{x:.6e}") for x in wide]
    # the text the doubles significant() rounds to print as, where they hold the decimal
    held = np.abs(wide) >= 1e-16
    printed = pc.cast(pa.array(significant(wide, 7)), pa.string())
    assert pc.all(pc.equal(text.filter(held), printed.filter(held))).as_py()
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 9.9999999, 1e10, 1e-7, 1.5e-6])
    assert decimal_text(special, 7).to_pylist() == [
        "0", "-0", "nan", "inf", "-inf", "10", "1e+10", "1e-7", "0.0000015",
    ]  # fmt: skip
    held32 = rng.normal(30.0, 10.0, 10_000).astype(np.float32)  # each float32's own value
    assert decimal_text(held32, 7).equals(decimal_text(held32.astype(np.float64), 7))


def test_a_csv_is_the_same_text_in_blocks_parts_and_whole(day, tmp_path, monkeypatch):
    # the blocks each thread makes (export.CSV_BLOCK rows), the parts a chunk is cut into
    # (export.ROWS) and the blocks in flight join into the file one block makes
    whole = write(day, tmp_path / "whole.csv", timezone="Europe/London").read_bytes()
    monkeypatch.setattr(export, "CSV_BLOCK", 777)  # odd, so blocks end mid-run of values
    monkeypatch.setattr(export, "ROWS", {".parquet": 5000, ".csv": 5000})
    blocks = write(day, tmp_path / "blocks.csv", timezone="Europe/London").read_bytes()
    assert blocks == whole
    assert whole.count(b"\n") == day.sizes["time"] + 1
    # the kernel's times are pyarrow's ISO text (export.iso_times), the zone's its strftime
    lines = whole.decode().splitlines()[1:]
    utc = export.profile_table(day)["time"]
    assert [line.split(",", 1)[0] for line in lines] == export.iso_times(utc, 1.0).to_pylist()


@pytest.mark.parametrize("millis", [False, True])
def test_a_csvs_times_are_pyarrows_text_over_every_datetime64_ns(millis):
    # put_time's calendar against pyarrow's over the whole datetime64[ns] range (1677 to
    # 2262): leap days, centuries, times before 1970, the last second of a day
    from powermodel import _csvtext

    rng = np.random.default_rng(7)
    unit = 1_000_000 if millis else 1_000_000_000
    edges = np.array(["1677-09-22", "1900-02-28T23:59:59", "1900-03-01", "1969-12-31T23:59:59",
                      "1970-01-01", "2000-02-29T12:00:00", "2100-03-01", "2262-04-11"],
                     dtype="datetime64[ns]").astype(np.int64)  # fmt: skip
    low, high = edges[0], edges[-1]
    times = np.concatenate([edges, rng.integers(low, high, 200_000)]) // unit * unit
    out = np.empty(times.size * 26, np.uint8)
    kinds = np.array([_csvtext.TIME], np.int64)
    used = _csvtext.rows(
        kinds, np.zeros(1, np.int64), np.empty((0, times.size)), times, millis,
        np.empty(0, np.uint8), np.zeros((0, times.size + 1), np.int64), 0, times.size, 7, out,
    )  # fmt: skip
    text = out[:used].tobytes().decode().splitlines()
    pyarrow = export.iso_times(pa.array(times.astype("datetime64[ns]")), 0.5 if millis else 1.0)
    assert text == pyarrow.to_pylist()


def test_a_csv_refuses_a_text_it_cannot_hold_unquoted(day, tmp_path):
    # a state named with a comma would shift every column after it: refused, with the fix
    named = day.copy(deep=True)
    named["job_state"].attrs["flag_meanings"] = (
        day["job_state"].attrs["flag_meanings"].replace("starting", "starting,again")
    )
    with pytest.raises(PowerModelError, match="'starting,again'.*write Parquet"):
        write(named, tmp_path / "named.csv")
    assert list(tmp_path.iterdir()) == []


def test_decimal_text_has_room_for_every_text():
    # a digit or two of -5e9 is 11 characters, more than digits + 9: the buffer holds them
    for digits in (1, 2, 15):
        text = decimal_text(np.full(50_000, -5e9), digits).to_pylist()
        assert set(text) == {"-5000000000"}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_write_that_fails_leaves_no_file(day, tmp_path, chunked, monkeypatch, suffix):
    made = export.profile_table

    def failing(ds, headers=True):  # the disk fills on the second chunk
        failing.calls += 1
        if failing.calls > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return made(ds, headers)

    failing.calls = 0
    monkeypatch.setattr(export, "profile_table", failing)
    earlier = tmp_path / f"day{suffix}"
    earlier.write_bytes(b"an earlier file")
    with pytest.raises(PowerModelError, match="No space left on device"):
        write(day, earlier)
    assert earlier.read_bytes() == b"an earlier file"
    assert list(tmp_path.iterdir()) == [earlier]  # no temporary file left


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".nc"])
def test_an_interrupted_command_leaves_no_file_and_no_writer(day, tmp_path, chunked, suffix):
    with pytest.raises(KeyboardInterrupt), writing(day, tmp_path / f"day{suffix}"):
        raise KeyboardInterrupt  # a Ctrl-C while the summary is made
    assert list(tmp_path.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "powermodel-chunks"]
