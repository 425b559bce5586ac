"""Telemetry as real tools write it (issue 27): nvidia-smi logs without index (each line stamped
when its own query completed, slow polls, a poll's first line before the last one's, the GPU
count written nowhere), GPUs of 250 W and 1,200 W, rocm-smi and amd-smi CSV. Each shape is
written by tests/synthetic_telemetry.py from a known frame and must be read back exactly."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from synthetic_telemetry import (
    PRINTED,
    SHAPES,
    in_order,
    node_power,
    read_warned,
    shape,
    smi_stamps,
    write,
)

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits, read_telemetry
from powermodel.iotools.trace import EPOCH

# rocm-smi and amd-smi in a loop print no times: the loop's period, as the shape polls
PERIOD = {"rocm-smi": 0.1}


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def _put(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- each shape, read back exactly ------------------------------------------------------------


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_real_shape_is_read_exactly(tmp_path, name) -> None:
    frame, fmt, options = shape(name, polls=600)
    path = write(frame, tmp_path / f"{name}.log", fmt, **options)
    data, meta, _ = read_warned(path, period=PERIOD.get(fmt))
    want = in_order(frame)
    gpus = SHAPES[name]["gpus"]
    assert meta["format"] == fmt and meta["channels"] == [f"gpu{i}" for i in range(gpus)]
    # every sample on its own GPU, none lost: the channel of each row and its power exact
    assert len(data) == 600 * gpus
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED[fmt] + 1e-9)
    if fmt == "rocm-smi":  # the loop's polls, one period each from 1970
        poll = np.tile(np.arange(600), gpus)
        want_time = EPOCH + (poll * 100_000_000).astype("m8[ns]")
        assert_array_equal(data["time"].to_numpy(), want_time)
    else:  # each line its own stamp: nvidia-smi's milliseconds, amd-smi's Unix seconds
        assert_array_equal(data["time"].to_numpy(), want["time"].to_numpy())
    if "memory_used" in want:
        # MiB as nvidia-smi and amd-smi print them, bytes from rocm-smi: exact
        assert_array_equal(data["memory_used"].to_numpy(), want["memory_used"].to_numpy())
    assert_allclose(data["utilization"], want["utilization"], atol=0.005)
    if fmt == "nvidia-smi" and not options.get("index", True):
        signature = "memory.used" if "memory_used" in want else "power"
        assert (meta["gpus"], meta["gpus_from"]) == (gpus, signature)


def test_the_shapes_have_what_real_logs_have(tmp_path) -> None:
    # the log is as hard as the issue says: GPU lines spread over most of a poll, a slow poll
    # spread over seconds, a poll's first line stamped before the one before's last
    frame, fmt, options = shape("h100x8", polls=600)
    stamps = frame.sort_values(["poll", "channel"])["time"].to_numpy().reshape(600, 8)
    spread = (stamps[:, -1] - stamps[:, 0]) / np.timedelta64(1, "s")
    assert np.median(spread) > 0.06  # of a 0.1-s poll
    assert 1.0 <= spread.max() <= 9.0  # a slow poll
    assert (stamps[1:, 0] < stamps[:-1, -1]).any()  # overlap across polls
    # the old reader grouped by time and refused such a log (issue 27): this one reads it
    data, meta, _ = read_warned(write(frame, tmp_path / "smi.csv", fmt, **options))
    assert meta["gpus"] == 8


@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 8, 16])
def test_gpu_count_is_inferred_from_memory_for_any_node(tmp_path, gpus) -> None:
    polls = 400
    power = node_power(polls, gpus, seed=gpus)
    # a poll's first line before the last one's: of another GPU, so with two or more
    times = smi_stamps(polls, gpus, slow=(150,), overlap=(260,) if gpus > 1 else (), seed=gpus)
    frame = power.assign(time=times.ravel(), channel="gpu" + power["gpu"].astype(str))
    path = write(frame.drop(columns="gpu"), tmp_path / "smi.csv", "nvidia-smi", index=False)
    if gpus == 1:
        # one GPU has no per-GPU signature and its stamps jitter as a node's do: refused,
        # naming the fix, rather than read with a count the file does not show
        with pytest.raises(DataFileError, match=r"cannot be told apart.*--gpus N"):
            read_telemetry(path)
        data, meta, _ = read_warned(path, gpus=1)
    else:
        data, meta, _ = read_warned(path)
        assert (meta["gpus"], meta["gpus_from"]) == (gpus, "memory.used")
    want = in_order(frame)
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_array_equal(data["time"].to_numpy(), want["time"].to_numpy())


def test_single_gpu_log_with_steady_polls_is_read_by_its_times(tmp_path) -> None:
    # a one-GPU workstation log: one line a poll, its query milliseconds long
    power = node_power(200, 1, seed=3).drop(columns="memory_used")
    times = smi_stamps(200, 1, spread=0.05, seed=3)
    frame = power.assign(time=times.ravel(), channel="gpu0").drop(columns="gpu")
    data, meta, _ = read_warned(write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False))
    assert (meta["gpus"], meta["gpus_from"]) == (1, "times")
    assert len(data) == 200


# --- gpus given, inferred, ambiguous ----------------------------------------------------------


def test_gpus_given_reads_what_inference_reads(tmp_path) -> None:
    frame, fmt, options = shape("h100x8", polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    given, meta, _ = read_warned(path, gpus=8)
    inferred, _, _ = read_warned(path)
    assert meta["gpus_from"] == "given"
    pd.testing.assert_frame_equal(given, inferred)


def test_log_without_signature_is_refused_and_read_with_gpus(tmp_path) -> None:
    # training from the first poll, no memory.used: nothing tells the 8 GPUs apart, and their
    # lines spread over the poll, so time cannot either
    frame, fmt, options = shape("h100x8-power-only", polls=300, loading=0.0)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    with pytest.raises(
        DataFileError,
        match=r"GPUs cannot be told apart: no field .* repeats.*give the GPUs per poll, "
        r"--gpus N \(gpus=N\), or record with --query-gpu=timestamp,index",
    ):
        read_telemetry(path)
    data, meta, _ = read_warned(path, gpus=8)
    assert meta["gpus_from"] == "given"
    assert_array_equal(data["channel"].to_numpy(), in_order(frame)["channel"].to_numpy())


def test_fields_repeating_with_counts_that_disagree_are_refused(tmp_path) -> None:
    # 6 GPUs: memory repeats every 2 lines, temperature every 3: neither divides the other
    frame, fmt, options = shape("h100x8", polls=300)
    gpu = frame["channel"].str[3:].astype(int)
    frame = frame[gpu < 6].copy()
    gpu = gpu[gpu < 6]
    frame["memory_used"] = 60_000.0 + 1000 * (gpu % 2)
    frame["temperature"] = 50.0 + 7 * (gpu % 3)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    with pytest.raises(
        DataFileError,
        match=r"GPU count is ambiguous: memory.used every 2 lines, temperature.gpu every 3 "
        r"lines; give the GPUs per poll, --gpus N",
    ):
        read_telemetry(path)
    data, _, _ = read_warned(path, gpus=6)
    assert data["channel"].nunique() == 6


@pytest.mark.parametrize("gpus", [3, 5, 6, 12])
def test_wrong_gpus_is_refused_by_the_signature(tmp_path, gpus) -> None:
    # 8 GPUs: --gpus that is no multiple of 8 puts one GPU's lines on several channels
    frame, fmt, options = shape("h100x8", polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    with pytest.raises(
        DataFileError,
        match=rf"--gpus {gpus} does not fit the log: memory.used repeats every 8 lines, one "
        r"per GPU; give --gpus 8",
    ):
        read_telemetry(path, gpus=gpus)


@pytest.mark.parametrize("gpus", [0, -1, 65, 2.5, "8", True])
def test_gpus_that_is_no_count_is_refused(tmp_path, gpus) -> None:
    frame, fmt, options = shape("250w-x2", polls=50)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    with pytest.raises(DataFileError, match=r"gpus .* is not a whole number of GPUs from 1 to 64"):
        read_telemetry(path, gpus=gpus)


def test_gpus_over_the_lines_of_a_run_is_refused(tmp_path) -> None:
    frame, fmt, options = shape("250w-x2", polls=10)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    with pytest.raises(DataFileError, match=r"--gpus 32 is more than the 20 lines"):
        read_telemetry(path, gpus=32)


def test_time_going_back_under_a_given_count_is_refused(tmp_path) -> None:
    # 2 GPUs with tight stamps read as one: every second line is before the one it follows
    frame = node_power(200, 2, seed=1).drop(columns="memory_used")
    times = smi_stamps(200, 2, spread=0.1, seed=1)
    frame = frame.assign(time=times.ravel(), channel="gpu" + frame["gpu"].astype(str))
    lines = _lines(write(frame.drop(columns="gpu"), tmp_path / "smi.csv", "nvidia-smi"))
    # the second GPU's line printed first in each poll: stamped after, printed before
    body = np.array(lines[1:]).reshape(-1, 2)[:, ::-1].ravel().tolist()
    path = _put(tmp_path / "smi.csv", [lines[0].replace("index, ", ""), *body])
    path.write_text(path.read_text().replace(", 0, ", ", ").replace(", 1, ", ", "))
    with pytest.raises(DataFileError, match=r"with 1 GPUs per poll \(given\) their times go back"):
        read_telemetry(path, gpus=1)


@pytest.mark.parametrize(
    ("before", "after", "at"),
    [(8, 7, 0.5), (8, 7, 0.3), (6, 8, 0.6), (8, 6, 0.5), (2, 3, 0.4), (16, 12, 0.5)],
)
def test_gpu_count_changing_within_a_log_is_refused(tmp_path, before, after, at) -> None:
    # A GPU lost (it leaves the poll) or GPUs added mid-log: counted by line with one count,
    # every later line lands on another GPU's channel (a GPU lost halfway through an 8-GPU log
    # put 85 W on the wrong channels, in silence). The memory each GPU holds repeats with the
    # count in each part: refused, naming where, rather than read with either count. (A count
    # that divides the other, 4 then 8, looks as GPUs sharing their memory do: not told.)
    polls = 600
    power = node_power(polls, max(before, after), seed=before + after)
    times = smi_stamps(polls, max(before, after), slow=(100,), overlap=(200,), seed=after)
    frame = power.assign(time=times.ravel(), channel="gpu" + power["gpu"].astype(str))
    late = frame["poll"] >= int(at * polls)
    frame = frame[np.where(late, frame["gpu"] < after, frame["gpu"] < before)]
    path = write(frame.drop(columns="gpu"), tmp_path / "smi.csv", "nvidia-smi", index=False)
    with pytest.raises(DataFileError) as err:
        read_telemetry(path)
    said = str(err.value)
    assert "\n" not in said and "the GPUs per poll change within the log" in said
    counts = re.findall(r"every (\d+) (?:lines )?near line", said)
    assert sorted(map(int, counts)) == sorted((before, after))


# --- runs, cut polls, missing readings --------------------------------------------------------


def test_logger_restart_restarts_the_count(tmp_path) -> None:
    frame, fmt, options = shape("h100x8", polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    lines = _lines(path)
    # the logger was restarted after 150 polls and 5 lines of the next: those 5 are a cut
    # poll, and the new run counts from GPU 0 again
    cut = 1 + 150 * 8
    restarted = [*lines[: cut + 5], lines[0], *lines[cut + 8 :]]
    data, meta, messages = read_warned(_put(path, restarted))
    assert any("5 line(s) of an unfinished poll of 8 GPUs (at line 1202)" in m for m in messages)
    kept = frame[frame["poll"] != 150]
    assert meta["gpus"] == 8
    assert_array_equal(data["channel"].to_numpy(), in_order(kept)["channel"].to_numpy())
    assert_allclose(data["power"], in_order(kept)["power"], atol=0.005 + 1e-9)


def test_poll_cut_short_at_the_end_is_dropped_with_a_warning(tmp_path) -> None:
    frame, fmt, options = shape("h100x8", polls=300)
    lines = _lines(write(frame, tmp_path / "smi.csv", fmt, **options))
    data, _, messages = read_warned(_put(tmp_path / "smi.csv", lines[:-3]))
    assert any("5 line(s) of an unfinished poll of 8 GPUs (at line 2394)" in m for m in messages)
    assert len(data) == 299 * 8


def test_power_not_available_is_dropped_without_moving_the_count(tmp_path) -> None:
    # nvidia-smi prints [N/A] for a GPU it could not read: the line still holds its place
    frame, fmt, options = shape("250w-x2", polls=300)
    gone = frame.index[(frame["poll"] % 37 == 5) & (frame["channel"] == "gpu1")]
    frame.loc[gone, "power"] = np.nan
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    assert "[N/A]" in path.read_text()
    data, meta, messages = read_warned(path)
    kept = in_order(frame.dropna(subset=["power"]))
    assert meta["gpus"] == 2
    assert_array_equal(data["channel"].to_numpy(), kept["channel"].to_numpy())
    assert_allclose(data["power"], kept["power"], atol=0.005 + 1e-9)
    assert any(f"{len(gone)} sample(s) without a power reading" in m for m in messages)


# --- AMD --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("rocm-smi", {}),
        ("rocm-smi", {"power_field": "Current Socket"}),
        ("amd-smi", {}),
        ("amd-smi", {"command": "monitor"}),
        ("amd-smi", {"command": "monitor", "header": "once"}),
    ],
)
def test_amd_loops_without_times_are_read_with_a_period(tmp_path, fmt, options) -> None:
    frame, _, _ = shape("mi300x-rocm-smi", polls=100)
    path = write(frame.assign(temperature=60.0), tmp_path / "amd.csv", fmt, **options)
    with pytest.raises(DataFileError, match=r"prints no times.*give period="):
        read_telemetry(path)
    data, meta, _ = read_warned(path, period=0.1)
    want = in_order(frame)
    assert meta["format"] == fmt and not meta["timed"]
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED[fmt] + 1e-9)
    assert (data["temperature"] == 60.0).all()
    assert_array_equal(data["memory_used"].to_numpy(), want["memory_used"].to_numpy())


def test_amd_smi_watch_mode_is_timed_by_its_unix_seconds(tmp_path) -> None:
    frame, fmt, options = shape("mi300x-amd-smi", polls=60)
    data, meta, _ = read_warned(write(frame, tmp_path / "amd.csv", fmt, **options))
    assert meta["timed"] and meta["timezone"] == "UTC (Unix timestamps)"
    assert meta["start"] == np.datetime64("2024-07-01T12:00:00")
    assert meta["step"] == 1.0
    assert meta["power_field"] == "socket_power"


@pytest.mark.parametrize(
    ("fmt", "edit", "match"),
    [
        # a header with other fields in the middle: the tool restarted with other flags
        ("rocm-smi", lambda ls: ls[:20] + ["device,GPU use (%)"] + ls[20:], r"line 21: a header"),
        ("amd-smi", lambda ls: ls[:20] + ["gpu,power_usage"] + ls[20:], r"line 21: a header"),
        # a device that is no GPU
        ("rocm-smi", lambda ls: ls[:3] + ["cardX" + ls[3][5:]] + ls[4:], r"line 4: device 'cardX'"),
        ("amd-smi", lambda ls: ls[:3] + ["x" + ls[3][1:]] + ls[4:], r"line 4: gpu 'x' is not"),
        # a row cut in the middle
        ("rocm-smi", lambda ls: ls[:5] + [ls[5][:8]] + ls[6:], r"line 6: .*mend or delete it"),
        # a power that is no number (socket_power follows the quoted list of vcn_activity)
        (
            "amd-smi",
            lambda ls: ls[:2] + [re.sub(r'(\]",)[^,]*', r"\1hot", ls[2])] + ls[3:],
            r"line 3: socket_power is 'hot', not a number",
        ),
    ],
)
def test_malformed_amd_files_are_refused_by_line(tmp_path, fmt, edit, match) -> None:
    frame, _, _ = shape("mi300x-rocm-smi", polls=10)
    lines = _lines(write(frame, tmp_path / "amd.csv", fmt))
    with pytest.raises(DataFileError, match=match):
        read_telemetry(_put(tmp_path / "amd.csv", edit(lines)), period=0.1)


def test_amd_file_without_power_is_refused_naming_the_field(tmp_path) -> None:
    path = _put(tmp_path / "amd.csv", ["device,GPU use (%)", "card0,99", "card1,98"])
    with pytest.raises(DataFileError, match=r"no power field.*Current Socket Graphics Package"):
        read_telemetry(path, period=1.0)


@pytest.mark.parametrize("fmt", ["rocm-smi", "amd-smi", "nvidia-smi"])
def test_new_shapes_are_bounded_before_reading(tmp_path, monkeypatch, fmt) -> None:
    name = {"rocm-smi": "mi300x-rocm-smi", "amd-smi": "mi300x-amd-smi", "nvidia-smi": "h100x8"}
    frame, fmt, options = shape(name[fmt], polls=20)
    path = write(frame, tmp_path / "log.csv", fmt, **options)
    monkeypatch.setattr(limits, "MAX_BYTES", 100)
    with pytest.raises(DataFileError, match=r"bytes is over the 100 a telemetry file"):
        read_telemetry(path, period=0.1)
    monkeypatch.setattr(limits, "MAX_BYTES", 1 << 30)
    monkeypatch.setattr(limits, "MAX_SAMPLES", 100)
    with pytest.raises(DataFileError, match=r"lines is over the 100 samples"):
        read_telemetry(path, period=0.1)
    monkeypatch.setattr(limits, "MAX_SAMPLES", 10_000)
    monkeypatch.setattr(limits, "MAX_CHANNELS", 4)
    with pytest.raises(DataFileError, match="8 channels is over the 4"):
        read_telemetry(path, period=0.1)


# --- the CLI ----------------------------------------------------------------------------------


def test_fit_cli_takes_gpus(tmp_path, capsys) -> None:
    from powermodel.cli import main

    frame, fmt, options = shape("h100x8-power-only", polls=300, loading=0.0)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    assert main(["fit", str(path), "-o", str(tmp_path / "fit.toml")]) == 1
    said = capsys.readouterr().err
    assert "cannot be told apart" in said and "--gpus N" in said and "Traceback" not in said
    # --gpus reaches the reader: a count the memory signature contradicts is refused by it
    frame, fmt, options = shape("h100x8", polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    assert main(["fit", str(path), "--gpus", "3", "-o", str(tmp_path / "fit.toml")]) == 1
    assert "--gpus 3 does not fit the log" in capsys.readouterr().err
    assert not (tmp_path / "fit.toml").exists()
