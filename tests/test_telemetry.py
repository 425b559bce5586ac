"""Telemetry readers (issue 12): round trips through every format from a known frame, the
frame contract, to_grid, and each malformed file of acceptance 2 (an error naming the line and
the fix, or repaired data with a TelemetryWarning)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from synthetic_telemetry import write

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import FORMATS, TelemetryWarning, limits, read_telemetry, to_grid
from powermodel.iotools.trace import EPOCH

START = np.datetime64("2024-07-01T12:00:00", "ns")
STEP = np.timedelta64(100, "ms")


def _frame(polls: int = 40, gpus: int = 4, seed: int = 0, skew_ms: int = 2) -> pd.DataFrame:
    """A known trace: GPUs polled every 100 ms, each GPU ``skew_ms`` after the one before (as
    nvidia-smi queries them in turn); readings at the tools' printed precision."""
    rng = np.random.default_rng(seed)
    t = START + np.arange(polls)[:, None] * STEP + np.arange(gpus) * np.timedelta64(skew_ms, "ms")
    n = polls * gpus
    return pd.DataFrame(
        {
            "time": t.ravel(),
            "channel": np.tile([f"gpu{i}" for i in range(gpus)], polls),
            "power": np.round(rng.uniform(90, 700, n), 2),
            "utilization": rng.integers(0, 101, n) / 100,
            "sm_clock": rng.integers(345, 1981, n).astype(float),
            "temperature": rng.integers(25, 85, n).astype(float),
        }
    )


def _read(path, **kwargs) -> tuple[pd.DataFrame, dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data, meta = read_telemetry(path, **kwargs)
    messages = [str(w.message) for w in caught if issubclass(w.category, TelemetryWarning)]
    return data, meta, messages


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["channel", "time"]).reset_index(drop=True)


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def _put(path, lines: list[str], end: str = "\n"):
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


# --- round trips -----------------------------------------------------------------------------

TIMED = [
    ("nvidia-smi", {}),
    ("nvidia-smi", {"index": False}),
    ("nvidia-smi", {"units": False}),
    ("nvidia-smi", {"header": False}),
    ("nvidia-smi", {"header": False, "units": False}),
    ("nvidia-smi", {"power_field": "power.draw.instant"}),
    ("dcgm-exporter", {"timestamps": True}),
]


@pytest.mark.parametrize(("fmt", "options"), TIMED)
def test_timed_formats_round_trip(tmp_path, fmt, options) -> None:
    frame = _frame()
    path = write(frame, tmp_path / "log.txt", fmt, **options)
    data, meta, messages = _read(path)
    want = _expected(frame)
    # the file's own times: exact to the millisecond they are printed in
    assert_array_equal(data["time"].to_numpy(), want["time"].to_numpy())
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    # nvidia-smi prints power to 0.01 W and the frame holds 0.01 W steps: exact to rounding
    assert_allclose(data["power"], want["power"], atol=1e-9)
    for column in ("utilization", "sm_clock", "temperature"):
        assert_allclose(data[column], want[column], atol=1e-12)
    assert meta["format"] == fmt
    assert meta["step"] == pytest.approx(0.1, rel=1e-9)  # the 100 ms poll of _frame
    assert messages == []


@pytest.mark.parametrize("fmt", ["dcgmi-dmon", "dcgm-exporter"])
def test_untimed_formats_round_trip_with_period(tmp_path, fmt) -> None:
    # dcgmi dmon prints no times and dcgm-exporter writes none: one period per poll, from
    # 1970-01-01 (the file knows no start), the GPUs of a poll at the same time
    frame = _frame(polls=33, skew_ms=0)  # 33 polls: the dmon header is printed three times
    path = write(frame, tmp_path / "log.txt", fmt)
    data, meta, messages = _read(path, period=0.1)
    want = _expected(frame)
    relative = want["time"] - START + EPOCH
    assert_array_equal(data["time"].to_numpy(), relative.to_numpy())
    assert_allclose(data["power"], want["power"], atol=1e-9)
    assert_allclose(data["utilization"], want["utilization"], atol=1e-12)
    assert meta["start"] == EPOCH
    assert "none in the file" in meta["timezone"]
    assert messages == []


@pytest.mark.parametrize("unit", ["W", "kW", "MW"])
def test_meter_csv_round_trip_in_each_unit(tmp_path, unit) -> None:
    frame = _frame(skew_ms=0)[["time", "channel", "power"]]
    frame["channel"] = frame["channel"].str.replace("gpu", "rack")
    frame["power"] *= 1e3  # racks draw hundreds of kW
    path = write(frame, tmp_path / "meters.csv", "meter", unit=unit)
    data, meta, messages = _read(path)
    want = _expected(frame)
    assert_array_equal(data["time"].to_numpy(), want["time"].to_numpy())
    # written with repr() in the header's unit: the conversion back is exact to 1 ulp
    assert_allclose(data["power"], want["power"], rtol=1e-12)
    assert meta["kind"] == "meter" and meta["channels"] == ["rack0", "rack1", "rack2", "rack3"]
    assert meta["timezone"].startswith("UTC, converted")
    assert messages == []


def test_meter_naive_times_are_read_as_utc_and_meta_says_so(tmp_path) -> None:
    frame = _frame(polls=5, gpus=1, skew_ms=0)[["time", "channel", "power"]]
    path = write(frame, tmp_path / "meters.csv", "meter", offset=False)
    data, meta, _ = _read(path)
    assert_array_equal(data["time"].to_numpy(), frame["time"].to_numpy())
    assert meta["timezone"] == "UTC assumed: the times carry no offset"


def test_exporter_with_several_hosts_names_channels_by_host(tmp_path) -> None:
    frame = _frame(polls=5, gpus=2)
    other = frame.assign(channel="node2/" + frame["channel"])
    frame = pd.concat([frame.assign(channel="node1/" + frame["channel"]), other])
    path = write(frame, tmp_path / "metrics.prom", "dcgm-exporter", timestamps=True)
    data, meta, _ = _read(path)
    assert meta["channels"] == ["node1/gpu0", "node1/gpu1", "node2/gpu0", "node2/gpu1"]
    assert_allclose(data["power"], _expected(frame)["power"], atol=1e-9)


def test_each_format_is_detected(tmp_path) -> None:
    frame = _frame(polls=5, skew_ms=0)
    for fmt in FORMATS:
        data = frame[["time", "channel", "power"]] if fmt == "meter" else frame
        path = write(data, tmp_path / f"{fmt}.txt", fmt)
        assert _read(path, period=0.1)[1]["format"] == fmt


def test_frame_contract(tmp_path) -> None:
    path = write(_frame(), tmp_path / "log.csv", "nvidia-smi")
    data, meta, _ = _read(path, gpus_per_node=4)
    assert list(data.columns) == [
        "time",
        "channel",
        "power",
        "utilization",
        "sm_clock",
        "temperature",
    ]
    assert data["time"].dtype == np.dtype("datetime64[ns]")
    assert data["power"].dtype == np.float64
    assert all(isinstance(c, str) for c in data["channel"])
    assert data.equals(data.sort_values(["channel", "time"]).reset_index(drop=True))
    assert data["utilization"].between(0, 1).all()  # from percent
    assert set(meta) >= {
        "format",
        "kind",
        "channels",
        "step",
        "source",
        "start",
        "warnings",
        "gpus_per_node",
        "timezone",
        "power_field",
    }
    assert meta["source"] == "log.csv"  # the name, never the path
    assert meta["kind"] == "gpu" and meta["gpus_per_node"] == 4
    assert meta["start"] == START
    assert data.attrs["step"] == meta["step"]


def test_optional_columns_only_when_in_the_file(tmp_path) -> None:
    path = write(_frame()[["time", "channel", "power"]], tmp_path / "log.csv", "nvidia-smi")
    data, _, _ = _read(path)
    assert list(data.columns) == ["time", "channel", "power"]


# --- to_grid ---------------------------------------------------------------------------------


def test_to_grid_bin_means_are_exact(tmp_path) -> None:
    frame = _frame(polls=40, skew_ms=0)
    data, _, _ = _read(write(frame, tmp_path / "log.csv", "nvidia-smi"))
    grid = to_grid(data, step=0.5)
    # five 100-ms samples per 0.5-s bin: the mean of each block of five
    want = _expected(frame)["power"].to_numpy().reshape(4, 8, 5).mean(axis=2)
    assert_allclose(grid.to_numpy(), want, rtol=1e-12)
    assert grid.dims == ("channel", "time") and grid.attrs["units"] == "W"
    assert grid.attrs["step"] == 0.5
    assert to_grid(data).shape == (4, 40)  # default: the meta step, one sample a bin


def test_gpu_dropping_out_warns_and_is_nan_in_the_grid(tmp_path) -> None:
    frame = _frame(polls=40, skew_ms=0)
    gone = (frame["channel"] == "gpu2") & (frame["time"] >= START + 25 * STEP)
    path = write(frame[~gone], tmp_path / "log.csv", "nvidia-smi")
    data, _, messages = _read(path)
    assert any("gpu2 stops at" in m and "dropped out" in m for m in messages)
    grid = to_grid(data).sel(channel="gpu2").to_numpy()
    assert np.isnan(grid[25:]).all() and not np.isnan(grid[:25]).any()  # NaN, never zero


# --- malformed files: acceptance 2 -----------------------------------------------------------


def test_mixed_units_contradicting_the_header_are_refused(tmp_path) -> None:
    path = write(_frame(polls=5), tmp_path / "log.csv", "nvidia-smi")
    lines = _lines(path)
    fields = lines[3].split(", ")
    fields[2] = "0.31 kW"
    lines[3] = ", ".join(fields)
    with pytest.raises(
        DataFileError,
        match=r"line 4: power.draw '0.31 kW' is in kW, but the "
        r"header says \[W\].*convert",
    ):
        read_telemetry(_put(path, lines))


def test_mixed_unit_suffixes_without_a_header_are_converted_with_a_warning(tmp_path) -> None:
    frame = _frame(polls=5)
    path = write(frame, tmp_path / "log.csv", "nvidia-smi", header=False)
    lines = _lines(path)
    watts = lines[2].split(", ")[2]
    lines[2] = lines[2].replace(watts, f"{float(watts.split()[0]) / 1e3:.5f} kW")
    data, _, messages = _read(_put(path, lines))
    assert any("W, kW" in m and "own unit" in m for m in messages)
    # the kW reading converted back: the value to the 1e-5 kW (0.01 W) it was printed to
    assert_allclose(np.sort(data["power"]), np.sort(frame["power"]), atol=0.005 + 1e-9)


def test_gpu_missing_from_the_start_and_an_absent_index_are_reported(tmp_path) -> None:
    frame = _frame(polls=20, gpus=4, skew_ms=0)
    late = (frame["channel"] == "gpu1") & (frame["time"] < START + 10 * STEP)
    frame = frame[~late & (frame["channel"] != "gpu2")]
    data, meta, messages = _read(write(frame, tmp_path / "log.csv", "nvidia-smi"))
    assert meta["channels"] == ["gpu0", "gpu1", "gpu3"]
    assert any("gpu1 first reports" in m and "1 s after" in m for m in messages)
    assert any("no samples of GPU index 2" in m for m in messages)
    assert np.isnan(to_grid(data).sel(channel="gpu1").to_numpy()[:10]).all()


def test_backward_clock_jump_is_repaired_with_a_warning(tmp_path) -> None:
    frame = _frame(polls=30, skew_ms=0)
    stepped = frame.copy()
    after = frame["time"] >= START + 12 * STEP
    stepped.loc[after, "time"] -= np.timedelta64(30, "s")  # NTP steps the clock back 30 s
    path = write(stepped, tmp_path / "log.csv", "nvidia-smi")
    # the writer sorts by time: put the 12 polls before the jump back first, as logged
    lines = _lines(path)
    _put(path, [lines[0], *lines[1 + 18 * 4 :], *lines[1 : 1 + 18 * 4]])
    data, _, messages = _read(path)
    # 1.1 s, then 1.2 s - 30 s: back 29.9 s, at the first line after the 12 polls (line 50)
    assert any("time goes back 4 time(s)" in m and "line 50, by 29.9 s" in m for m in messages)
    assert len(messages) == 1
    # each GPU's samples after the jump follow the one before by its 100-ms step: as before
    assert_array_equal(data["time"].to_numpy(), _expected(frame)["time"].to_numpy())


def test_forward_jump_past_a_day_is_refused(tmp_path) -> None:
    frame = _frame(polls=10, skew_ms=0)
    frame.loc[frame["time"] >= START + 5 * STEP, "time"] += np.timedelta64(3, "D")
    with pytest.raises(
        DataFileError,
        match=r"line 22: gpu0's time jumps forward 3.0 days.*"
        "split the file",
    ):
        read_telemetry(write(frame, tmp_path / "log.csv", "nvidia-smi"))


def test_lost_samples_are_kept_as_a_gap_with_a_warning(tmp_path) -> None:
    frame = _frame(polls=20, skew_ms=0)
    lost = (frame["time"] >= START + 8 * STEP) & (frame["time"] < START + 11 * STEP)
    data, _, messages = _read(write(frame[~lost], tmp_path / "log.csv", "nvidia-smi"))
    assert any("4 gap(s)" in m and "the longest 0.4 s" in m for m in messages)
    assert len(data) == 4 * 17


def test_cut_last_line_is_dropped_with_a_warning(tmp_path) -> None:
    path = write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi")
    lines = _lines(path)
    lines[-1] = lines[-1][:30]  # the logger was killed mid-line
    data, _, messages = _read(_put(path, lines, end=""))
    assert len(data) == 39
    assert any("line 41 is cut short" in m for m in messages)


@pytest.mark.parametrize("fmt", ["nvidia-smi", "dcgmi-dmon", "dcgm-exporter", "meter"])
def test_cut_line_in_the_middle_is_refused_by_number(tmp_path, fmt) -> None:
    frame = _frame(polls=10, skew_ms=0)
    if fmt == "meter":
        frame = frame[["time", "channel", "power"]]
    path = write(frame, tmp_path / "log.txt", fmt)
    lines = _lines(path)
    lines[5] = lines[5][: len(lines[5]) // 3]
    with pytest.raises(DataFileError, match=r"line 6\b.*(mend|delete)"):
        read_telemetry(_put(path, lines), format=fmt, period=0.1)


@pytest.mark.parametrize(
    ("junk", "match"),
    [
        ("hello W", r"line 3: power.draw is 'hello W', not a number"),
        ("312.4 lb", r"line 3: power.draw '312.4 lb' has unit 'lb'"),
    ],
)
def test_non_numeric_junk_is_refused_by_line_and_column(tmp_path, junk, match) -> None:
    path = write(_frame(polls=5), tmp_path / "log.csv", "nvidia-smi")
    lines = _lines(path)
    lines[2] = lines[2].replace(lines[2].split(", ")[2], junk)
    with pytest.raises(DataFileError, match=match):
        read_telemetry(_put(path, lines))


def test_tool_markers_of_missing_readings(tmp_path) -> None:
    path = write(_frame(polls=5), tmp_path / "log.csv", "nvidia-smi")
    lines = _lines(path)
    fields = lines[2].split(", ")
    fields[2], fields[3] = "[N/A]", "[Not Supported]"
    lines[2] = ", ".join(fields)
    fields = lines[3].split(", ")
    fields[3] = "[Not Supported]"
    lines[3] = ", ".join(fields)
    data, _, messages = _read(_put(path, lines))
    assert len(data) == 19  # the sample without power is dropped
    assert any("1 sample(s) without a power reading (first at line 3)" in m for m in messages)
    assert data["utilization"].isna().sum() == 1  # kept as NaN where only it is missing


@pytest.mark.parametrize(
    ("power", "match"),
    [
        (-5.0, r"line 2: gpu0 reads -5 W, negative power"),
        (15000.0, r"line 2: gpu0 reads 15000 W, over 10 kW for one GPU"),
    ],
)
def test_negative_or_absurd_power_is_refused(tmp_path, power, match) -> None:
    frame = _frame(polls=5)
    frame.loc[0, "power"] = power
    with pytest.raises(DataFileError, match=match):
        read_telemetry(write(frame, tmp_path / "log.csv", "nvidia-smi"))


def test_duplicate_timestamps_of_one_gpu_keep_the_first(tmp_path) -> None:
    path = write(_frame(polls=5), tmp_path / "log.csv", "nvidia-smi")
    lines = _lines(path)
    twice = lines[6].replace(lines[6].split(", ")[2], "1.00 W")
    data, _, messages = _read(_put(path, [*lines[:7], twice, *lines[7:]]))
    assert len(data) == 20
    assert any("1 sample(s) repeat their channel's time (first at line 8" in m for m in messages)
    assert 1.0 not in data["power"].to_numpy()


def test_repeated_header_after_a_restart_is_skipped(tmp_path) -> None:
    path = write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi", index=False)
    lines = _lines(path)
    data, _, messages = _read(_put(path, [*lines[:21], lines[0], *lines[21:]]))
    assert len(data) == 40 and data["channel"].nunique() == 4
    assert any("repeated 1 time(s)" in m for m in messages)


def test_gpus_without_index_that_cannot_be_told_apart_are_refused(tmp_path) -> None:
    frame = _frame(polls=20, skew_ms=0)
    rng = np.random.default_rng(3)
    frame["time"] = START + np.sort(rng.integers(0, 2_000, len(frame))) * np.timedelta64(1, "ms")
    with pytest.raises(DataFileError, match="record with --query-gpu=timestamp,index"):
        read_telemetry(write(frame, tmp_path / "log.csv", "nvidia-smi", index=False))


def test_untimed_files_need_a_period(tmp_path) -> None:
    frame = _frame(polls=5, skew_ms=0)
    with pytest.raises(DataFileError, match="dcgmi dmon prints no times.*give period="):
        read_telemetry(write(frame, tmp_path / "dmon.txt", "dcgmi-dmon"))
    with pytest.raises(DataFileError, match="no timestamps.*give period="):
        read_telemetry(write(frame, tmp_path / "metrics.prom", "dcgm-exporter"))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "the file is empty"),
        (b"  \n\n", "the file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a binary file"),
        (b"timestamp, power.draw [W]\n\xff\xfe, 1 W\n", "line 2 is not UTF-8"),
        (
            b"hello world\n",
            r"not a telemetry file.*nvidia-smi, dcgmi-dmon, dcgm-exporter, rocm-smi, amd-smi, "
            "meter",
        ),
        (b"timestamp, index, power.draw [W]\n", "a header and no samples"),
        (b"time,rack1\n2025-01-01T00:00Z,1\n", r"column 'rack1': it has no unit.*'rack1 \[kW\]'"),
        (
            b"#Entity  POWER\nID  W\nGPU 0  1.0\nhello\nGPU 0  2.0\n",
            "line 4: 'hello' is not a dmon",
        ),
    ],
)
def test_unreadable_files_are_refused(tmp_path, content, match) -> None:
    path = tmp_path / "log.csv"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=match):
        read_telemetry(path)


def test_missing_file_and_unknown_format(tmp_path) -> None:
    with pytest.raises(DataFileError, match="no such file"):
        read_telemetry(tmp_path / "absent.csv")
    path = write(_frame(polls=3), tmp_path / "log.csv", "nvidia-smi")
    with pytest.raises(DataFileError, match="format 'smi' is not one of nvidia-smi"):
        read_telemetry(path, format="smi")


def test_size_rows_and_channels_are_bounded_before_reading(tmp_path, monkeypatch) -> None:
    path = write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi")
    monkeypatch.setattr(limits, "MAX_BYTES", 100)
    with pytest.raises(DataFileError, match=r"\d+ bytes is over the 100 a telemetry file"):
        read_telemetry(path)
    monkeypatch.setattr(limits, "MAX_BYTES", 1 << 30)
    monkeypatch.setattr(limits, "MAX_SAMPLES", 20)
    with pytest.raises(DataFileError, match="41 lines is over the 20 samples"):
        read_telemetry(path)
    monkeypatch.setattr(limits, "MAX_SAMPLES", 1000)
    monkeypatch.setattr(limits, "MAX_CHANNELS", 3)
    with pytest.raises(DataFileError, match="4 channels is over the 3"):
        read_telemetry(path)
    wide = tmp_path / "meters.csv"
    wide.write_text("time," + ",".join(f"m{i} [kW]" for i in range(5)) + "\n")
    with pytest.raises(DataFileError, match="5 meter columns is over the 3"):
        read_telemetry(wide)


def test_to_grid_refuses_a_grid_too_large(tmp_path, monkeypatch) -> None:
    data, _, _ = _read(write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi"))
    monkeypatch.setattr(limits, "MAX_GRID", 10)
    with pytest.raises(DataFileError, match="4 channels x 10 bins"):
        to_grid(data)


def test_noheader_columns_in_the_order_given(tmp_path) -> None:
    frame = _frame(polls=5)
    path = write(frame, tmp_path / "log.csv", "nvidia-smi", header=False, units=False)
    # the same file read with another column order: the fields land where named
    fields = ["timestamp", "index", "power.draw", "clocks.sm", "utilization.gpu", "temperature.gpu"]
    data, _, _ = _read(path, columns=fields)
    assert_allclose(data["sm_clock"], _expected(frame)["utilization"] * 100, atol=1e-9)
    with pytest.raises(DataFileError, match="give columns= in the order of --query-gpu"):
        read_telemetry(path, columns=["timestamp", "index", "power.draw"])


def test_meter_cut_last_line_is_dropped_and_a_missing_reading_skipped(tmp_path) -> None:
    frame = _frame(polls=6, gpus=2, skew_ms=0)[["time", "channel", "power"]]
    path = write(frame, tmp_path / "meters.csv", "meter")
    lines = _lines(path)
    lines[2] = ",".join([*lines[2].split(",")[:2], ""])  # one meter missed a reading
    lines[-1] = lines[-1].split(",")[0]
    data, meta, messages = _read(_put(path, lines, end=""))
    assert len(data) == 2 * 5 - 1
    assert any("line 7 is cut short" in m for m in messages)
    assert any("1 sample(s) without a power reading (first at line 3)" in m for m in messages)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        # a reading that is no number of watts, named by its line (row 3 of the file)
        ("inf", r"line 3: rack1 reads inf W, not a finite number"),
        ("-inf", r"line 3: rack1 reads -inf W, not a finite number"),
        ("1e300", r"line 3: rack1 reads 1e\+303 W, over 1,000,000 kW for one meter"),
        # 10 GW on one rack: ten times the 1-GW bound of a whole hall's feeder
        ("1e7", r"line 3: rack1 reads 1e\+10 W, over 1,000,000 kW for one meter"),
    ],
)
def test_meter_values_that_are_no_power_are_refused(tmp_path, value, match) -> None:
    path = tmp_path / "meters.csv"
    path.write_text(
        "time,rack1 [kW]\n2026-03-01T00:00:00Z,40\n2026-03-01T00:00:01Z,"
        f"{value}\n2026-03-01T00:00:02Z,41\n"
    )
    with pytest.raises(DataFileError, match=match):
        read_telemetry(path)
    # the bound itself is read: a feeder of 1 GW
    path.write_text(
        "time,feeder [kW]\n2026-03-01T00:00:00Z,1e6\n2026-03-01T00:00:01Z,1e6\n"
        "2026-03-01T00:00:02Z,1e6\n"
    )
    assert read_telemetry(path)[0]["power"].max() == limits.MAX_METER_POWER


@pytest.mark.parametrize("step", [1e-10, 4e-10, 0.0, -1.0, float("nan"), float("inf")])
def test_to_grid_refuses_a_bin_narrower_than_a_nanosecond(tmp_path, step) -> None:
    # times are nanoseconds: 0.1 ns rounded to a 0-ns bin put every sample in one bin
    data, _, _ = _read(write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi"))
    with pytest.raises(DataFileError, match="at least 1 ns"):
        to_grid(data, step=step)


def test_to_grid_of_an_empty_frame_says_so(tmp_path) -> None:
    data, _, _ = _read(write(_frame(polls=10), tmp_path / "log.csv", "nvidia-smi"))
    with pytest.raises(DataFileError, match="the frame has no samples"):
        to_grid(data.iloc[:0], step=1.0)


@pytest.mark.parametrize("back_ms", [2, 38, 130, 900])
def test_a_stamp_a_little_before_the_one_before_is_jitter_not_a_clock_jump(tmp_path, back_ms):
    # MLPerf v4.0's SMC node logs (bench/bench_real_logs.py over 1,432 of them): after a pause of
    # 15-19 s in the 2-s readings, the next reading is stamped 2-130 ms before the one before;
    # read as a clock jump, every later time moved by a whole 2-s step (seven times in one log:
    # 14 s). A step back by under half the channel's step is put in time order, each time as
    # written; one by half a step or more is still a clock jump (the test above).
    t = np.r_[np.arange(20) * 2.0, 40.0 + 17.0, 57.0 - back_ms / 1e3 + np.arange(20) * 2.0]
    lines = ["time,node [W]"] + [
        f"{(START + np.timedelta64(round(s * 1e3), 'ms')).astype('M8[ms]')}Z,{5000 + i}"
        for i, s in enumerate(t)
    ]
    data, _, messages = _read(_put(tmp_path / "meter.csv", lines))
    assert any("stamped up to" in m and "the stamps' jitter" in m for m in messages)
    assert not any("time goes back" in m for m in messages)  # no clock jump repaired
    seconds = (data["time"] - np.datetime64(START)).dt.total_seconds().to_numpy()
    assert_allclose(seconds, np.sort(t), atol=1e-9)  # every time as written, in order
    # the two readings swapped into time order keep their own values
    assert data["power"].iloc[21] == 5000 + 20 and data["power"].iloc[20] == 5000 + 21


def _meter_lines(seconds: np.ndarray) -> list[str]:
    """A meter CSV with one reading [W] at each of ``seconds`` after START, in that order."""
    return ["time,node [W]"] + [
        f"{(START + np.timedelta64(round(s * 1e3), 'ms')).astype('M8[ms]')}Z,{5000 + i}"
        for i, s in enumerate(seconds)
    ]


@pytest.mark.parametrize(
    "seconds",
    [
        np.arange(50)[::-1] * 2.0,  # reversed: no step forward, so no step to be jitter of
        np.r_[np.arange(30)[::-1] * 2.0, 3600.0 + np.arange(30)[::-1] * 2.0],  # two reversed
        (np.arange(100) * 2.0).reshape(50, 2)[:, ::-1].ravel(),  # each pair swapped: 1 s back
        np.r_[0.0, np.arange(1, 200)[::-1] * 2.0 / 200.0 + 60.0],  # reversed, one step forward
    ],
    ids=["reversed", "two-reversed-parts", "pairs-swapped", "reversed-after-one-step"],
)
def test_a_file_out_of_order_is_refused_not_sorted_as_jitter(tmp_path, seconds):
    # Jitter is a few readings stamped a little early (seven at most in an MLPerf node log, the
    # test above); a channel stepping back in a twentieth of its steps or more is out of order,
    # as it was refused before steps back under half a step were read as jitter
    with pytest.raises(DataFileError, match=r"goes back \d+ times in \d+ steps.*sort it by time"):
        read_telemetry(_put(tmp_path / "meter.csv", _meter_lines(seconds)))


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"format": "nvidia"}, "format 'nvidia' is not one of"),
        ({"period": "100ms"}, "period '100ms' is not a number of seconds"),
        ({"period": [0.1]}, r"period \[0.1\] is not a number of seconds"),
        ({"period": True}, "period True is not a number of seconds"),
        ({"period": 0.0}, "period 0.0 s is not within 1 ms to 1 day"),
        ({"gpus": 0}, "gpus 0 is not a whole number of GPUs from 1 to 64"),
        ({"gpus": 8.0}, "gpus 8.0 is not a whole number"),
        ({"gpus_per_node": "8"}, "gpus_per_node '8' is not a whole number of GPUs"),
        ({"gpus_per_node": 0}, "gpus_per_node 0 is not a whole number of GPUs"),
        ({"gpus_per_node": 10**7}, "gpus_per_node 10000000 is not a whole number of GPUs"),
    ],
)
def test_a_wrong_option_is_refused_in_one_line_before_the_file_is_read(tmp_path, options, said):
    # the options are checked before the file (up to MAX_BYTES) is read: a missing file still
    # gets the option's message, and an option of the wrong type no TypeError
    with pytest.raises(DataFileError, match=said) as caught:
        read_telemetry(tmp_path / "not-there.csv", **options)
    assert "\n" not in str(caught.value)
