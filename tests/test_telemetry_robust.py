"""Four shapes of real logs the count-by-line reading of nvidia-smi and the per-device reading of
rocm-smi and amd-smi misread in silence (issue 27): an nvidia-smi ``noheader`` log whose logger
was restarted mid-poll, a GPU count falling to a divisor of itself, ``--gpus`` a multiple of the
GPUs the log holds, and MI200-class (MI250/MI250X) GCD pairs that report one package's power on
one GCD only. Each log is written by tests/synthetic_telemetry.py from a known frame, so each
expected value is that frame's (named where it is asserted)."""

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
from powermodel.iotools.telemetry import read_telemetry

# the fields synthetic_telemetry writes for a shape's frame, in its order (noheader needs them)
COLUMNS = ["timestamp", "power.draw", "utilization.gpu", "memory.used"]
RESTART = "the per-GPU signature"  # the warning of a restart found without a header


# --- 1. nvidia-smi noheader, the logger restarted mid-poll -------------------------------------


def _restarted(name: str, polls: int, at: int, k: int, gap: float, **power):
    """A noheader log of ``name`` whose logger was killed after ``k`` lines of poll ``at``; the
    new one starts at GPU 0 with poll ``at`` + 1, ``gap`` s later (its start-up). Returns the
    frame of the lines the file holds and the lines that should be read (the cut poll
    dropped, as a poll cut by a repeated header is)."""
    frame, _, _ = shape(name, polls=polls, **power)
    gpu = frame["channel"].str[3:].astype(int)
    held = (frame["poll"] != at) | (gpu < k)
    frame = frame[held].copy()
    frame.loc[frame["poll"] > at, "time"] += np.timedelta64(int(gap * 1e9), "ns")
    return frame, frame[frame["poll"] != at]


@pytest.mark.parametrize(
    ("name", "at", "k", "gap", "field"),
    [
        ("h100x8", 150, 5, 0.0, "memory.used"),  # memory told apart in training
        ("h100x8", 150, 1, 2.0, "memory.used"),  # one line of the poll, 2 s to restart
        ("h100x8", 200, 7, 0.5, "memory.used"),
        ("h100x8-power-only", 70, 3, 1.0, "power"),  # at idle: the GPUs' own idle levels
        ("250w-x2", 150, 1, 0.0, "memory.used"),  # two GPUs: a shift by one swaps them
    ],
)
def test_noheader_restart_mid_poll_is_rephased(tmp_path, name, at, k, gap, field) -> None:
    # Before: line k of the whole file was GPU k mod N; from the restart on every line was on
    # another GPU's channel (h100x8 at 150, k 5: 1,187 of 2,392 lines, in silence).
    polls = 300
    # idle for half the log where only power tells the GPUs apart (its idle levels)
    loading = {"loading": 0.5} if name == "h100x8-power-only" else {}
    frame, kept = _restarted(name, polls, at, k, gap, **loading)
    columns = [c for c in COLUMNS if c != "memory.used" or "memory_used" in frame]
    path = write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False, header=False)
    data, meta, said = read_warned(path, columns=columns)
    gpus = SHAPES[name]["gpus"]
    line = at * gpus + k + 1  # noheader: the file's line 1 is poll 0's GPU 0
    restart = [m for m in said if RESTART in m]
    assert len(restart) == 1, said
    assert f"line {line}: the per-GPU signature ({field}) shifts by {k} line(s)" in restart[0]
    # the time since the line before, as the file shows it (the gap plus a line's step)
    stamps = frame.sort_values(["poll", "channel"])["time"].to_numpy()
    shown = (stamps[at * gpus + k] - stamps[at * gpus + k - 1]) / np.timedelta64(1, "s")
    assert f"{shown:g} s after the line before" in restart[0]
    # the k lines of the cut poll dropped, as a poll cut by a repeated header is
    assert any(f"{k} line(s) of an unfinished poll of {gpus} GPUs" in m for m in said)
    want = in_order(kept)
    assert meta["gpus"] == gpus
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_array_equal(data["time"].to_numpy(), want["time"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED["nvidia-smi"] + 1e-9)
    # --gpus N given: the same restart found, the same frame read
    given, meta, said = read_warned(path, columns=columns, gpus=gpus)
    assert meta["gpus_from"] == "given" and [m for m in said if RESTART in m] == restart
    pd.testing.assert_frame_equal(given, data)


def test_noheader_restart_after_a_whole_poll_needs_no_rephasing(tmp_path) -> None:
    # the old logger killed between polls: the count goes on unbroken, nothing to re-phase
    # (the current reader already read this right: a regression test)
    frame, kept = _restarted("h100x8", 300, 150, 0, 2.0)
    path = write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False, header=False)
    data, meta, said = read_warned(path, columns=COLUMNS)
    assert not [m for m in said if RESTART in m or "unfinished poll" in m]
    want = in_order(kept)
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED["nvidia-smi"] + 1e-9)


def test_two_noheader_restarts_are_each_rephased(tmp_path) -> None:
    frame, _, _ = shape("h100x8", polls=400)
    gpu = frame["channel"].str[3:].astype(int)
    cuts = {120: 3, 260: 6}  # poll: lines of it printed before the kill
    held = np.ones(len(frame), dtype=bool)
    for poll, k in cuts.items():
        held &= ~((frame["poll"] == poll) & (gpu >= k)).to_numpy()
    frame = frame[held]
    path = write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False, header=False)
    data, _, said = read_warned(path, columns=COLUMNS)
    # the first restart's line: 120 polls of 8 and 3 lines; the second: 139 more polls, 6 lines
    lines = [120 * 8 + 3 + 1, 120 * 8 + 3 + 139 * 8 + 6 + 1]
    restart = [m for m in said if RESTART in m]
    assert [int(re.search(r": line (\d+):", m).group(1)) for m in restart] == lines
    want = in_order(frame[~frame["poll"].isin(list(cuts))])
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED["nvidia-smi"] + 1e-9)


@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if s["options"] == {"index": False}])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_restart_is_found_in_a_log_without_one(tmp_path, name, seed) -> None:
    # slow polls, a poll's first line before the one before's last, start-up's memory step of
    # every GPU at once: none is a restart (the log is read exactly, as before)
    frame, fmt, options = shape(name, polls=600, seed=seed)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    data, _, said = read_warned(path)
    assert not [m for m in said if RESTART in m]
    assert_array_equal(data["channel"].to_numpy(), in_order(frame)["channel"].to_numpy())


# --- 2. the GPU count changing to a divisor ---------------------------------------------------


def _changed(before: int, after: int, at: int, polls: int = 600, seed: int = 0):
    """An nvidia-smi log without index of ``before`` GPUs per poll up to poll ``at``, then
    ``after`` (the first ``after`` of them: a GPU off the bus, the node re-configured)."""
    power = node_power(polls, max(before, after), seed=seed)
    times = smi_stamps(polls, max(before, after), slow=(100, 450), overlap=(200,), seed=seed)
    frame = power.assign(time=times.ravel(), channel="gpu" + power["gpu"].astype(str))
    late = frame["poll"] >= at
    frame = frame[np.where(late, frame["gpu"] < after, frame["gpu"] < before)]
    return frame.drop(columns="gpu")


@pytest.mark.parametrize(
    ("before", "after", "at"),
    [(8, 4, 300), (8, 4, 180), (8, 4, 480), (8, 2, 400), (4, 2, 300), (16, 8, 300), (4, 8, 300)],
)
@pytest.mark.parametrize("given", [False, True])
def test_gpu_count_changing_to_a_divisor_is_refused_naming_the_line(
    tmp_path, before, after, at, given
) -> None:
    # Before: read with the larger count throughout (every field still repeats with it), each
    # GPU of the smaller part split over two or four channels, in silence, given or inferred.
    frame = _changed(before, after, at)
    path = write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False)
    line = 1 + at * before + 1  # the header, the polls before, then the first changed poll
    with pytest.raises(DataFileError) as err:
        read_telemetry(path, gpus=max(before, after) if given else None)
    said = str(err.value)
    assert "\n" not in said
    found = re.search(r"line (\d+): the GPUs per poll change from (\d+) to (\d+) here", said)
    assert found, said
    assert (int(found.group(2)), int(found.group(3))) == (before, after)
    # the line where it changed, to within the first poll of the new count (the lines
    # ``after`` apart start or stop matching there)
    assert abs(int(found.group(1)) - line) <= min(before, after), said
    assert "Split the file at line" in said and "--query-gpu=timestamp,index" in said


@pytest.mark.parametrize("at", [150, 450])
def test_each_part_of_a_split_log_is_read_with_its_own_count(tmp_path, at) -> None:
    # the fix the refusal names: the two parts, each read with its own count
    frame = _changed(8, 4, at)
    path = write(frame, tmp_path / "smi.csv", "nvidia-smi", index=False)
    with pytest.raises(DataFileError) as err:
        read_telemetry(path)
    line = int(re.search(r"line (\d+):", str(err.value)).group(1))
    assert line == 1 + at * 8 + 1
    lines = path.read_text().splitlines()
    head, tail = lines[: line - 1], [lines[0], *lines[line - 1 :]]
    (tmp_path / "a.csv").write_text("\n".join(head) + "\n")
    (tmp_path / "b.csv").write_text("\n".join(tail) + "\n")
    first, meta_a, _ = read_warned(tmp_path / "a.csv")
    second, meta_b, _ = read_warned(tmp_path / "b.csv")
    assert (meta_a["gpus"], meta_b["gpus"]) == (8, 4)
    assert_allclose(first["power"], in_order(frame[frame["poll"] < at])["power"], atol=0.006)
    assert_allclose(second["power"], in_order(frame[frame["poll"] >= at])["power"], atol=0.006)


# --- 3. --gpus a multiple of the GPUs the log holds --------------------------------------------


@pytest.mark.parametrize(
    ("name", "gpus"), [("h100x8", 16), ("h100x8", 32), ("h100x8", 64), ("250w-x2", 4)]
)
def test_gpus_a_multiple_of_the_count_is_refused_with_the_count(tmp_path, name, gpus) -> None:
    # Before: --gpus 16 on an 8-GPU log read 16 channels, each GPU's lines taken in turn by two
    # of them (half its rate each), in silence: 16 is a multiple of memory's 8.
    frame, fmt, options = shape(name, polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    true = SHAPES[name]["gpus"]
    with pytest.raises(
        DataFileError,
        match=rf"--gpus {gpus} is {gpus // true} times the {true} GPUs the log shows "
        rf"\(memory.used every {true} lines.*give --gpus {true}",
    ):
        read_telemetry(path, gpus=gpus)
    # the count it names reads the log exactly
    data, meta, _ = read_warned(path, gpus=true)
    assert meta["gpus_from"] == "given"
    assert_array_equal(data["channel"].to_numpy(), in_order(frame)["channel"].to_numpy())


def test_gpus_with_near_memory_are_not_counted_as_a_divisor(tmp_path) -> None:
    # Inferred, not given: 4 GPUs whose memory is near in alternate lines (GPUs 0 and 2 hold
    # 64,749 and 65,237 MiB, GPUs 1 and 3 62,411 and 61,701: a seed of node_power) differ
    # less 2 lines apart than 1 or 3 apart, but not nothing, as 4 apart. Before, read as 2
    # GPUs (each channel two GPUs' lines in turn), in silence; now as 4.
    power = node_power(500, 4, seed=5)
    held = np.array([64_749.0, 62_411.0, 65_237.0, 61_701.0])
    power["memory_used"] = np.where(power["memory_used"] > 4, held[power["gpu"]], 4.0)
    times = smi_stamps(500, 4, slow=(100, 300), overlap=(200,), seed=5)
    frame = power.assign(time=times.ravel(), channel="gpu" + power["gpu"].astype(str))
    path = write(frame.drop(columns="gpu"), tmp_path / "smi.csv", "nvidia-smi", index=False)
    data, meta, _ = read_warned(path)
    assert (meta["gpus"], meta["gpus_from"]) == (4, "memory.used")
    want = in_order(frame.drop(columns="gpu"))
    assert_array_equal(data["channel"].to_numpy(), want["channel"].to_numpy())
    assert_allclose(data["power"], want["power"], atol=PRINTED["nvidia-smi"] + 1e-9)


def test_fit_cli_refuses_gpus_a_multiple_of_the_count(tmp_path, capsys) -> None:
    from powermodel.cli import main

    frame, fmt, options = shape("h100x8", polls=300)
    path = write(frame, tmp_path / "smi.csv", fmt, **options)
    assert main(["fit", str(path), "--gpus", "16", "-o", str(tmp_path / "fit.toml")]) == 1
    said = capsys.readouterr().err
    assert "--gpus 16 is 2 times the 8 GPUs the log shows" in said and "--gpus 8" in said
    assert "Traceback" not in said and not (tmp_path / "fit.toml").exists()


# --- 4. MI200-class: two GCDs per package, the package's power on one -------------------------


def _mi250x(polls: int, secondary: str, period: float = 0.1):
    """4 MI250X packages as 8 GCD devices: the package's power [W] on the even GCD (the
    frame's power for that package, its idle 90-100 W, running 500 W, within the 560-W TDP),
    the odd one printing ``secondary`` ('N/A (Secondary die)' as rocm-smi 6.0.2 and later,
    '0' as the driver's hwmon, 'same': the package's power again), polled every ``period``
    [s]. Returns the frame of
    packages (channel gpu<i>, i the package) and the frame of GCDs to write."""
    packages = node_power(polls, 4, idle=(90.0, 100.0), running=500.0, swing=150.0, seed=5)
    packages = packages.assign(
        time=smi_stamps(polls, 4, period, spread=0.0, seed=5).ravel(),
        channel="gpu" + packages["gpu"].astype(str),
        memory_used=packages["memory_used"],
    )
    gcds = packages.loc[packages.index.repeat(2)].reset_index(drop=True)
    die = np.tile([0, 1], len(packages))
    gcds["channel"] = "gpu" + (2 * gcds["gpu"] + die).astype(str)
    # each GCD holds half the package's memory (written whole MiB) and its own utilisation
    gcds["memory_used"] = np.round(gcds["memory_used"] / 2)
    gcds["utilization"] = np.clip(gcds["utilization"] - 0.1 * die, 0, 1)
    odd = die == 1
    gcds.loc[odd, "power"] = {"same": gcds["power"], "0": 0.0}.get(secondary, np.nan)
    return packages, gcds.drop(columns="gpu")


@pytest.mark.parametrize(
    ("fmt", "secondary", "options"),
    [
        ("rocm-smi", "N/A (Secondary die)", {}),  # rocm-smi >= 6.0.2 [S, rocm_smi_mi200]
        ("rocm-smi", "0", {}),  # hwmon's 0 W on the secondary [S, amdgpu_mi200_power]
        ("rocm-smi", "same", {}),  # the package's power on both [A]
        ("amd-smi", "N/A", {}),
        ("amd-smi", "0", {"command": "monitor"}),
        ("amd-smi", "same", {"timestamps": True, "header": "once"}),
    ],
)
def test_mi250x_gcd_pairs_are_read_per_package(tmp_path, fmt, secondary, options) -> None:
    # Before: N/A (Secondary die) refused as junk; N/A read as GPUs 0, 2, 4, 6 with "missing
    # GPUs" 1, 3, 5, 7; 0 read as four GPUs drawing nothing (the running level halved); the
    # same power read twice (the node's power doubled: 4,000 W for 2,000 W).
    polls = 200
    timed = options.get("timestamps", False)  # watch mode: whole Unix seconds, -w 1
    packages, gcds = _mi250x(polls, secondary, period=1.0 if timed else 0.1)
    path = write(gcds, tmp_path / "amd.csv", fmt, **options)
    if secondary.startswith("N/A ("):
        text = re.sub(
            r"^(card[1357]),N/A,", r"\1,N/A (Secondary die),", path.read_text(), flags=re.M
        )
        path.write_text(text)
        assert text.count("N/A (Secondary die)") == 4 * polls
    data, meta, said = read_warned(path, period=None if timed else 0.1)
    assert meta["channels"] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert (meta["power_per"], meta["gcds_per_package"], meta["packages"]) == ("package", 2, 4)
    assert meta["package_devices"]["gpu1"] == [2, 3]
    assert any("read as 4 packages" in m and "MI250" in m for m in said), said
    assert not any("missing GPUs" in m for m in said)
    want = in_order(packages)
    # each package's power once: the frame's package power, to the printed precision
    assert_allclose(data["power"], want["power"], atol=PRINTED[fmt] + 1e-9)
    assert_allclose(
        data.groupby("channel")["power"].mean().sum(),
        want.groupby("channel")["power"].mean().sum(),
        rtol=1e-3,
    )
    # memory the sum of the two GCDs' halves, utilisation their mean (one 0.1 lower)
    halves = 2 * np.round(want["memory_used"].to_numpy() / 2)
    assert_allclose(data["memory_used"], halves, atol=1.0)
    assert_allclose(data["utilization"], np.clip(want["utilization"] - 0.05, 0, 1), atol=0.056)


def test_mi300x_devices_with_an_odd_missing_reading_stay_devices(tmp_path) -> None:
    # MI300X: one device per GPU. A lone N/A now and then (2 % of gpu1's polls) is a missed
    # reading, not a secondary GCD: eight channels, as before (a regression test)
    frame, fmt, options = shape("mi300x-rocm-smi", polls=200)
    missed = frame.index[(frame["channel"] == "gpu1") & (frame["poll"] % 50 == 7)]
    frame.loc[missed, "power"] = np.nan
    data, meta, said = read_warned(write(frame, tmp_path / "amd.csv", fmt, **options), period=0.1)
    assert meta["channels"] == [f"gpu{i}" for i in range(8)] and "power_per" not in meta
    assert not any("packages" in m for m in said)
    assert len(data) == 8 * 200 - len(missed)


def test_mi300x_idling_at_the_same_watts_is_not_taken_for_pairs(tmp_path) -> None:
    # two GPUs of a pair idling steadily print the same whole watts (amd-smi): the same power
    # on both counts as a pair only where it moves (ten polls at least), so eight devices stay
    frame, fmt, options = shape("mi300x-amd-smi", polls=120)
    frame["power"] = 135.0  # every GPU idle at 135 W the whole log
    data, meta, _ = read_warned(write(frame, tmp_path / "amd.csv", fmt, **options))
    assert meta["channels"] == [f"gpu{i}" for i in range(8)]
    assert_allclose(data.groupby("channel")["power"].mean().sum(), 8 * 135.0)
