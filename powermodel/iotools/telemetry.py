"""Measured GPU and meter telemetry as one tidy frame: ``nvidia-smi`` CSV logs (with or
without ``index``), DCGM's ``dcgmi dmon`` text and dcgm-exporter's Prometheus scrapes, AMD's
``rocm-smi`` and ``amd-smi`` CSV, CSVs of node, rack, PDU or facility meters, and MLPerf
Training's node power logs.

:func:`read_telemetry` returns ``(data, meta)``. ``data`` is long: one row per sample and
channel, with ``time`` (datetime64[ns], timezone-naive UTC), ``channel`` (``"gpu<i>"``, or
``"<host>/gpu<i>"`` when a file holds several hosts; a meter column's name without its unit),
``power`` [W] and, where the file has them, ``utilization`` [1] (0–1), ``sm_clock`` [MHz],
``temperature`` [°C] and ``memory_used`` [MiB]; sorted by channel, then time.
:func:`to_grid` bins it onto a uniform time grid, NaN where a channel has no sample.

Everything read is hostile: the file's size, rows and channels are bounded before it is
parsed, a defect that can be repaired is repaired and reported as a :class:`TelemetryWarning`
(also listed in ``meta["warnings"]``), and anything else raises a one-line
:class:`~powermodel.errors.DataFileError` naming the line, the column and the fix.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import xarray as xr

from powermodel.errors import DataFileError
from powermodel.iotools.trace import (
    ACTIVE_UNITS,
    EPOCH,
    UTC_OFFSET,
    first_bad,
    parse_iso,
    parse_times,
    read_columns,
    read_header,
    split_unit,
    to_floats,
)

__all__ = ["FORMATS", "NVIDIA_SMI_QUERY", "TelemetryWarning", "read_telemetry", "to_grid"]

FORMATS = (
    "nvidia-smi",
    "dcgmi-dmon",
    "dcgm-exporter",
    "rocm-smi",
    "amd-smi",
    "meter",
    "mlperf-power",
)
METER_FORMATS = ("meter", "mlperf-power")  # formats whose channels are meters, not GPUs
# The query the docs tell users to record, and the column order taken for a log written with
# --format=csv,noheader when no ``columns`` are given.
NVIDIA_SMI_QUERY = (
    "timestamp",
    "index",
    "power.draw",
    "utilization.gpu",
    "clocks.sm",
    "temperature.gpu",
)

# Bounds checked before any parsing. Parsing holds the text, its Arrow strings and the numbers:
# about four times the file, so 4 GiB at the size bound.
MAX_BYTES = 1 << 30  # [bytes] ~15 M nvidia-smi lines of ~70 B: a day of an 8-GPU node at 50 ms
# Samples (rows of the tidy frame, ~50 B each): the size bound's lines, with room for meters'
# wide rows (one row, several samples).
MAX_SAMPLES = 20_000_000
# Channels: 512 nodes of 8 GPUs, more than a fit needs to see every state; larger clusters are
# read a sample of nodes at a time. Checked on the header or on the first lines' labels.
MAX_CHANNELS = 4096
# Cells of to_grid (channels x bins, float64): 800 MB.
MAX_GRID = 100_000_000
# One nvidia-smi lists one node's GPUs; 64 bounds the search for GPUs per poll in a log
# without ``index`` [A] (8 in an HGX node, 4 in a GB200 compute tray [S, nvidia_blackwell]).
_MAX_NODE_GPUS = 64
# GPUs behind one meter channel: a whole hall's feeder (the bound powermodel.fit's
# MAX_METER_GPUS holds too) [A]
MAX_CHANNEL_GPUS = 100_000
# A per-GPU field "repeats every N lines" when, in a window of lines, the differences between
# lines N and 2N apart are both under a third of the smallest difference at any other lag: a
# margin that the noise of a field without a signature (power in training) does not reach in
# its windows, and that a GPU's own memory, temperature or idle level clears by far [A]. The
# differences at each lag are a mean without its top 5 %: the few pairs that straddle a step of
# every GPU at once (memory allocated at start-up) would outweigh the GPUs' own differences.
_CONTRAST = 3.0
_TRIM = 0.95
# Power and temperature also follow the workload, which repeats with the iteration: a count is
# theirs only where lines next to each other (different GPUs at the same time) differ at least
# this share of the most that lines under 2N apart do; a single GPU's waveform, smooth from one
# line to the next, does not [A].
_ADJACENT = 0.3
_WINDOWS = 64  # windows of lines searched for the signature, spread over the file
_WINDOW_POLLS = 3  # each window holds this many polls of the largest count searched
# Polls are told apart by time when the 10 % and 90 % quantiles of the time between polls'
# first lines are within a fifth of its median (nvidia-smi's own jitter is milliseconds [A])
# and 98 % of polls span under half of it (the other 2 %: slow polls); a wrong count mixes
# the short steps within a poll with the long ones between.
_REGULAR = 0.8
_TIGHT = 0.98
# [W] per GPU: seven times the largest board power, 1,400 W of a B300
# [S, nvidia_blackwell]; above it a reading is a unit mix-up (kW read as W) [A].
MAX_GPU_POWER = 10e3
# [W] per meter channel: a whole hall's feeder, 100,000 GPUs (the most the fit puts behind one
# channel) at MAX_GPU_POWER each; above it a reading is a unit mix-up (MW read as kW) [A].
MAX_METER_POWER = 1e9
# A time moving forward by more than this within a channel is not lost samples but a clock
# set wrong or files of different runs joined [A]: refused, naming the line.
_MAX_GAP = np.timedelta64(1, "D")
# Backward steps of a channel's time repaired as clock jumps (NTP); more is a shuffled file.
_MAX_JUMPS = 10
# Steps back by under half a step (the stamps' jitter) put in time order: a few in a log (seven
# at most in MLPerf's node logs, 0.8 % of its readings), so a channel whose steps go back more
# often than this share of its steps, and more than _MAX_JUMPS times, is a file out of order
# (reversed, shuffled, or joined in the wrong order) whose order no repair should guess [A].
_OUT_OF_ORDER = 0.05
# A channel that starts or stops this many of its steps away from the trace's ends is reported.
_LATE = 3
_LISTED = 8  # channels named one by one in the warnings
# Prometheus' exposition: name{labels} value [timestamp_ms]
_PROMETHEUS = re.compile(
    r"^(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+"
    r"(?P<value>\S+)(?:\s+(?P<stamp>-?\d+))?\s*$"
)
_NUMBER = r"^(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>[A-Za-z%°]*)$"
# Readings a tool prints when it has none (nvidia-smi: [N/A], [Not Supported], [GPU is lost]…;
# rocm-smi: N/A, "N/A (Secondary die)" for an MI200 package's second GCD [S, rocm_smi_mi200])
_MISSING = r"^(?:\[.*\]|N/A(?: \([^)]*\))?|NaN|nan|)$"
_MLLOG = ":::MLLOG"  # the tag of MLPerf's log lines (mlperf_logging's mllog)
_FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

# Field → (vocabulary name, unit → factor to the vocabulary's unit)
# ACTIVE_UNITS are factors to MW; W first, the unit a file without units is read in.
_POWER = {u: f * 1e6 for u, f in sorted(ACTIVE_UNITS.items(), key=lambda item: item[1])}
_PERCENT = {"%": 0.01}
_MHZ = {"MHz": 1.0, "MHZ": 1.0, "GHz": 1e3}
_CELSIUS = {"C": 1.0, "°C": 1.0}
# [MiB]: nvidia-smi prints MiB; amd-smi's "MB" are MiB (bytes // 2**20); rocm-smi prints bytes.
_MIB = {"MiB": 1.0, "MB": 1.0, "GiB": 1024.0, "B": 2.0**-20}
_SMI_FIELDS = {
    "power.draw.instant": ("power", _POWER),
    "power.draw": ("power", _POWER),
    "power.draw.average": ("power", _POWER),
    "utilization.gpu": ("utilization", _PERCENT),
    "clocks.sm": ("sm_clock", _MHZ),
    "clocks.current.sm": ("sm_clock", _MHZ),
    "temperature.gpu": ("temperature", _CELSIUS),
    "memory.used": ("memory_used", _MIB),
}
# dcgmi dmon prints each field's short name and unit; field ids 155, 203, 100, 150.
_DMON_FIELDS = {
    "POWER": ("power", _POWER),
    "GPUTL": ("utilization", _PERCENT),
    "SMCLK": ("sm_clock", _MHZ),
    "TMPTR": ("temperature", _CELSIUS),
}
_EXPORTER_FIELDS = {
    "DCGM_FI_DEV_POWER_USAGE": ("power", _POWER, "W"),
    "DCGM_FI_DEV_GPU_UTIL": ("utilization", _PERCENT, "%"),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock", _MHZ, "MHz"),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", _CELSIUS, "C"),
}
# rocm-smi --csv heads each field with its name and unit; the power is the "Current Socket"
# package power on MI300 and later, the "Average" one before [S, rocm_smi].
# Each variable's fields in order of preference.
_ROCM_FIELDS = {
    "power": (
        ("Current Socket Graphics Package Power", _POWER),
        ("Average Graphics Package Power", _POWER),
    ),
    "utilization": (("GPU use", _PERCENT),),
    "temperature": (
        ("Temperature (Sensor junction)", _CELSIUS),
        ("Temperature (Sensor edge)", _CELSIUS),
    ),
    "memory_used": (("VRAM Total Used Memory", _MIB),),
}
# amd-smi metric --csv flattens its sections to their keys (socket_power, gfx_activity,
# hotspot, used_vram); amd-smi monitor --csv names them power_usage, gfx, gfx_clk,
# hotspot_temperature, vram_used [S, amd_smi].
_AMD_FIELDS = {
    "power": (
        ("socket_power", _POWER),
        ("power_usage", _POWER),
        ("current_socket_power", _POWER),
        ("average_socket_power", _POWER),
    ),
    "utilization": (("gfx_activity", _PERCENT), ("gfx_usage", _PERCENT), ("gfx", _PERCENT)),
    "sm_clock": (("gfx_clk", _MHZ), ("gfx_0_clk", _MHZ)),
    "temperature": (("hotspot_temperature", _CELSIUS), ("hotspot", _CELSIUS)),
    "memory_used": (("used_vram", _MIB), ("vram_used", _MIB)),
}
# MI200-class devices are read in pairs (one package) when, in every pair, one of the two reads
# nothing (or the same power) in this share of the polls, out of this many at least [A]: a real
# second GPU reads its own power, and a lone [N/A] now and then is a missed reading.
_PAIRED = 0.95
_MIN_PAIRED_POLLS = 5
OPTIONAL = ("utilization", "sm_clock", "temperature", "memory_used")
# The fields whose repeating per-GPU values tell the GPUs of a log without index apart, the
# steadiest first: the memory a GPU holds, its temperature, its idle power level. Utilisation
# and clocks are left out: GPUs in step share them, and a periodic workload makes them repeat
# with the iteration, not with the GPUs.
_SIGNATURE = {"memory_used": "memory.used", "temperature": "temperature.gpu", "power": "power"}


class TelemetryWarning(UserWarning):
    """A defect of a telemetry file that was repaired: the data read is usable, and the
    message says what was changed."""


def read_telemetry(
    path: str | Path,
    format: str | None = None,
    period: float | None = None,
    gpus_per_node: int | None = None,
    *,
    columns: Sequence[str] | None = None,
    gpus: int | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Read GPU or meter telemetry into a tidy frame.

    Parameters
    ----------
    path
        The file: UTF-8 text written by one of the tools below.
    format
        One of :data:`FORMATS`; detected from the first lines when None.

        - ``nvidia-smi``: ``nvidia-smi --query-gpu=timestamp,index,power.draw,
          utilization.gpu,clocks.sm,temperature.gpu,memory.used --format=csv -lms 100``,
          with or without ``index``, ``noheader`` or ``nounits``; ``power.draw.instant``
          (preferred) or ``power.draw.average`` may replace ``power.draw``. Without ``index``
          line k of a logger run is GPU k mod N (see Notes). Timestamps are read as UTC.
        - ``dcgmi-dmon``: ``dcgmi dmon -e 155,203,100,150 -d 100`` output; it prints no times,
          so ``period`` is required.
        - ``dcgm-exporter``: concatenated Prometheus scrapes of dcgm-exporter
          (``DCGM_FI_DEV_POWER_USAGE``, ``_GPU_UTIL``, ``_SM_CLOCK``, ``_GPU_TEMP``; other
          metrics are ignored); samples without a timestamp need ``period``.
        - ``rocm-smi``: ``rocm-smi --showpower --showuse --showtemp --showmeminfo vram
          --csv`` run in a loop: a ``device`` column (``card0``...), fields headed with their
          unit, ``Average Graphics Package Power (W)`` or ``Current Socket Graphics Package
          Power (W)``; it prints no times, so ``period`` (the loop's) is required.
          MI250/MI250X GCD pairs that print their package's power on one GCD only are read
          per package (see Notes).
        - ``amd-smi``: ``amd-smi metric --csv`` (``socket_power``, ``gfx_activity``,
          ``hotspot``, ``used_vram``) or ``amd-smi monitor --csv`` (``power_usage``, ``gfx``,
          ``gfx_clk``, ``hotspot_temperature``, ``vram_used``), a ``gpu`` column; with
          ``-w`` (watch) a ``timestamp`` column (Unix seconds) times it, else ``period``.
        - ``meter``: a CSV of a time column and one power column per meter, each headed with
          its unit, ``rack1 [kW]``; times as :func:`powermodel.iotools.trace.read_trace`
          reads them.
        - ``mlperf-power``: an MLPerf Training power log (``power/<result>/node_<i>.txt`` of a
          submission): ``:::MLLOG {...}`` lines whose ``power_reading`` events carry a node
          meter's reading [W] and its Unix time in ms; one channel per ``host`` the readings'
          metadata name (``node`` where they name none), read as meters.
    period
        The sampling period of a file without times: ``dcgmi dmon``'s ``-d`` over 1000, or
        the scrape interval; a file with times is timed by them, not by this. [s]
    gpus_per_node
        GPUs per node, passed to ``meta`` for the fitter; a GPU file with more channels than
        a whole number of nodes is reported.
    columns
        The fields of an nvidia-smi log written with ``noheader``, in the order of its
        ``--query-gpu`` list (default :data:`NVIDIA_SMI_QUERY`).
    gpus
        GPUs per poll of an nvidia-smi log without ``index`` (the GPUs of the node the log
        was recorded on); inferred when None (see Notes). Logs that name each line's GPU
        do not use it.

    Returns
    -------
    data : pandas.DataFrame
        ``time``, ``channel``, ``power`` [W], and ``utilization`` [1], ``sm_clock`` [MHz],
        ``temperature`` [°C], ``memory_used`` [MiB] where the file has them; sorted by
        ``(channel, time)``.
        ``data.attrs["step"]`` is ``meta["step"]``.
    meta : dict
        ``format``, ``kind`` (``"gpu"`` or ``"meter"``), ``channels``, ``step`` (the median
        over channels of each channel's median sampling period [s]), ``source`` (the file
        name), ``start`` (the first time), ``timezone`` (how times became UTC), ``timed``
        (False where the file has no times and ``period`` timed it), ``warnings``
        (each also issued as a :class:`TelemetryWarning`), ``power_field`` (the field read as
        power), ``gpus_per_node`` when given, ``conversion_eff`` where an MLPerf power log
        states one; for an nvidia-smi log without ``index``, ``gpus`` (GPUs per poll) and
        ``gpus_from`` (how it was known: ``"given"``, the field whose values repeat, or
        ``"times"``); for rocm-smi or amd-smi read per MI200-class package, ``power_per``
        (``"package"``), ``gcds_per_package`` (2), ``packages`` and ``package_devices``
        (each channel's two devices).

    Raises
    ------
    DataFileError
        A file that is missing, empty, binary, not UTF-8, over :data:`MAX_BYTES`,
        :data:`MAX_SAMPLES` or :data:`MAX_CHANNELS`, of no known format, or with a defect
        that cannot be repaired (named by line and column, with the fix).

    Notes
    -----
    Repaired, with a warning: a last line cut mid-way (dropped); a header repeated when the
    logger restarted; readings the tool marks missing (``[N/A]``, ``N/A``: the sample is
    dropped when it is the power); times going backwards within a channel (an NTP step: the
    times after it are moved to follow the sample before by one median step); the same time
    twice for one channel (the later dropped); value suffixes that differ from row to row
    where no header gives the unit (each converted by its own suffix); channels that start
    late, stop early or leave gaps (kept as they are: :func:`to_grid` shows NaN there).
    A time jumping forward cannot be told from lost samples and is kept as a gap; past
    one day it is refused.

    Without ``index``, nvidia-smi prints one line per GPU per poll, in index order, each
    stamped when its own query completed: a poll's lines spread over most of a period, a slow
    poll over seconds, and the next poll's first line may be stamped before the last one's.
    So the GPUs are counted, not timed: line k of a logger run (a repeated header starts a
    new run) is GPU k mod N, and each sample keeps its own stamp. N is ``gpus`` when given,
    else inferred from the per-GPU signature: the smallest N for which a field's values
    (memory used, temperature, idle power and clock levels, in that order) differ little
    between lines N and 2N apart (those N apart no more than three times those 2N apart) and
    clearly more at every other lag, in the windows of the
    file where they differ at all (power must also differ between adjacent lines: a periodic
    workload repeats too); the steadiest field found decides. Without a signature, N is the
    smallest count whose polls start at regular times and are short beside the time between
    them (the GPUs' lines close together, as they are where queries are fast). Either way
    the times must agree: each GPU's time goes back no more than clock jumps do. Refused,
    naming ``gpus``: no field repeats and no count gives such polls; fields whose N are
    neither divisors nor multiples of one another; ``gpus`` that is no multiple of a field's
    N; ``gpus`` a multiple of the count every field shows (16 on 8 GPUs: each GPU's lines would
    be taken in turn by two channels), naming the count. Refused, naming the lines: memory used
    repeating every N lines in some windows and every M in others, neither a divisor of the
    other (the count changes: a GPU lost or added). Refused, naming the line: the count
    changing to or from a divisor of itself (8 GPUs, then 4), where the windows showing the
    divisor are one block at the start or end of the log and one field repeats with it line by
    line there and one with the full count in the rest (a divisor now and then is GPUs sharing
    a value). A logger restarted mid-poll with no header to mark it (``noheader``) is found
    where the per-GPU signature shifts phase: the N lines from there differ from the poll
    before but match the last whole poll before the cut; the count starts again at GPU 0 there,
    with a warning naming the line. A poll cut short at the end of a run is dropped with a
    warning.

    rocm-smi and amd-smi list each GCD of an MI250/MI250X package as a device but read the
    package's power on one of them: the other prints ``N/A (Secondary die)``, 0, or (assumed)
    the same power. Where every pair of devices 2i, 2i+1 does so in 95 % of the polls, the
    pair is read as one package, channel ``gpu<i>``, its power once, with a warning.
    """
    path = Path(path)
    # the options first: a wrong one is refused before a byte of the file is read
    if format is not None and format not in FORMATS:
        raise DataFileError(
            f"{path}: format {format!r} is not one of {', '.join(FORMATS)}; give one of them "
            "or None to detect it"
        )
    if period is not None and (
        isinstance(period, bool) or not isinstance(period, (int, float, np.integer, np.floating))
    ):
        raise DataFileError(
            f"{path}: period {period!r} is not a number of seconds; give it as one, e.g. 0.1"
        )
    if period is not None and not (np.isfinite(period) and 1e-3 <= period <= 86400):
        raise DataFileError(f"{path}: period {period!r} s is not within 1 ms to 1 day")
    for name, value, most, which in (
        ("gpus", gpus, _MAX_NODE_GPUS, "(one node's); give the GPUs the log's node has"),
        ("gpus_per_node", gpus_per_node, MAX_CHANNEL_GPUS, "; give the GPUs behind a channel"),
    ):
        if value is not None and not (
            isinstance(value, (int, np.integer))
            and not isinstance(value, bool)
            and 1 <= value <= most
        ):
            raise DataFileError(
                f"{path}: {name} {value!r} is not a whole number of GPUs from 1 to {most:,} "
                + which
            )
    text = _text(path)
    if format is None:
        format = _detect(text, path)
    log: list[str] = []
    meta = {"format": format, "source": path.name, "timezone": "UTC (as written)", "timed": True}
    if format == "nvidia-smi":
        raw = _nvidia_smi(text, path, columns, gpus, log, meta)
    elif format == "dcgmi-dmon":
        raw = _dcgmi_dmon(text, path, period, log)
        meta["timezone"] = f"none in the file: {period} s steps from 1970-01-01T00:00"
        meta["timed"] = False
        meta["power_field"] = "POWER (155)"
    elif format == "dcgm-exporter":
        raw = _exporter(text, path, period, log, meta)
    elif format == "mlperf-power":
        raw = _mlperf_power(text, path, log, meta)
    elif format in ("rocm-smi", "amd-smi"):
        raw = _device_csv(text, path, format, period, log, meta)
    else:
        raw = _meter(path, text, log, meta)
    data, meta = _finish(raw, meta, log, path, gpus_per_node)
    for message in log:
        warnings.warn(f"{path.name}: {message}", TelemetryWarning, stacklevel=2)
    return data, meta


def to_grid(data: pd.DataFrame, step: float | None = None) -> xr.DataArray:
    """Telemetry on a uniform time grid: the mean of each channel's samples in each bin.

    Parameters
    ----------
    data
        The frame :func:`read_telemetry` returns.
    step
        Bin width; default ``data.attrs["step"]`` (the reader's ``meta["step"]``). [s]

    Returns
    -------
    xarray.DataArray
        ``power`` [W] on ``(channel, time)``; ``time`` is each bin's start, from the first
        sample's time; NaN where a channel has no sample in a bin (a GPU that dropped out
        shows as missing, not as zero). attrs ``units`` and ``step`` [s].
    """
    if step is None:
        step = data.attrs.get("step")
    if step is None or not (np.isfinite(step) and step >= 1e-9):
        raise DataFileError(
            f"to_grid: step {step!r} is not a number of seconds of at least 1 ns (the times' "
            "resolution); give a wider step"
        )
    if data.empty:
        raise DataFileError("to_grid: the frame has no samples; read a trace with samples")
    time = data["time"].to_numpy(dtype="datetime64[ns]")
    start = time.min()
    width = np.int64(round(step * 1e9))
    bins = ((time - start).astype(np.int64) // width).astype(np.int64)
    channels, code = np.unique(data["channel"].to_numpy(dtype=str), return_inverse=True)
    n = int(bins.max()) + 1
    if channels.size * n > MAX_GRID:
        raise DataFileError(
            f"to_grid: {channels.size} channels x {n} bins of {step:g} s exceeds {MAX_GRID:,} "
            "cells; give a larger step or fewer channels"
        )
    cell = code * n + bins
    power = data["power"].to_numpy(dtype=float)
    total = np.bincount(cell, weights=power, minlength=channels.size * n)
    count = np.bincount(cell, minlength=channels.size * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / count, np.nan).reshape(channels.size, n)
    grid = xr.DataArray(
        mean,
        dims=("channel", "time"),
        coords={"channel": channels, "time": start + np.arange(n) * width.astype("m8[ns]")},
        name="power",
    )
    grid.attrs.update(units="W", step=float(step), long_name="power, mean over each bin")
    return grid


# --- reading and detecting -------------------------------------------------------------------


def _text(path: Path) -> str:
    """The file's text, after checking its size, rows and encoding."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such file; give the path of a telemetry file") from None
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc})") from None
    if size > MAX_BYTES:
        raise DataFileError(
            f"{path}: {size:,} bytes is over the {MAX_BYTES:,} a telemetry file "
            "may have; split it by time (e.g. a day per file) or record fewer GPUs or a longer "
            "period"
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc.strerror})") from None
    if not raw.strip():
        raise DataFileError(f"{path}: the file is empty; give a telemetry log with its rows")
    if b"\x00" in raw[: 1 << 20]:
        raise DataFileError(f"{path}: a binary file, not telemetry text; give the text log")
    lines = raw.count(b"\n")
    if lines > MAX_SAMPLES:
        raise DataFileError(
            f"{path}: {lines:,} lines is over the {MAX_SAMPLES:,} samples a file may have; "
            "split it by time or record a longer period"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataFileError(f"{path}: line {line} is not UTF-8 text; save it as UTF-8") from None


def _detect(text: str, path: Path) -> str:
    head = text[:65536]
    # first: a result log's job output may hold lines like the other formats'
    if re.search(rf"^\s*(?:\d+: )?{_MLLOG} ", head, re.M):
        return "mlperf-power"
    if re.search(r"^(?:# (?:HELP|TYPE) )?DCGM_FI_\w+", head, re.M):
        return "dcgm-exporter"
    if re.search(r"^\s*#\s*Entity\b|^\s*GPU \d+\s+\S", head, re.M):
        return "dcgmi-dmon"
    first = next((line.strip() for line in head.splitlines() if line.strip()), "")
    if re.match(r"device\s*,", first):
        return "rocm-smi"
    if re.match(r"(?:timestamp\s*,\s*)?gpu\s*,", first):
        return "amd-smi"
    if re.match(r"timestamp\b|index\s*,|power\.draw", first) or re.match(
        r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}", first
    ):
        return "nvidia-smi"
    if "," in first and (re.search(r"\[[^\]]*\]|\([^)]*\)", first) or re.match("time", first)):
        return "meter"
    raise DataFileError(
        f"{path}: not a telemetry file this reader knows; its first line is {first[:60]!r}. "
        f"Formats: {', '.join(FORMATS)} (see the telemetry guide for the commands that "
        "record them); give format= if it is one of them"
    )


def _lines(text: str) -> tuple[pd.Series, bool]:
    """The file's lines (Arrow strings, index = line number from 1) and whether the last one
    ends without a line break (cut mid-way while written, if it does not parse)."""
    parts = re.split(r"\r\n?|\n", text)
    cut = parts[-1] != ""
    if not cut:
        parts.pop()
    lines = pd.Series(parts, dtype=pd.ArrowDtype(pa.string()))
    lines.index = np.arange(1, len(parts) + 1)
    return lines, cut


def _bad_rows(bad: np.ndarray, lines: pd.Series, cut: bool, log: list, path: Path, want: str):
    """Rows flagged bad: a cut last line is dropped with a warning; any other is an error."""
    if not bad.any():
        return bad
    rows = np.flatnonzero(bad)
    last = len(lines) - 1
    if cut and rows.size == 1 and rows[0] == last:
        log.append(f"line {lines.index[last]} is cut short ({lines.iloc[last][:40]!r}): dropped")
        return bad
    i = rows[0]
    raise DataFileError(
        f"{path}: line {lines.index[i]}: {lines.iloc[i][:80]!r} is not {want} ({rows.size} such "
        f"line{'s' if rows.size > 1 else ''}); mend or delete {'it' if rows.size == 1 else 'them'}"
    )


def _values(
    text: pd.Series,
    units: dict[str, float],
    header_unit: str | None,
    field: str,
    lines: np.ndarray,
    path: Path,
    log: list,
) -> np.ndarray:
    """A field's readings in the vocabulary's unit, each by its own suffix or the header's;
    NaN where the tool printed none. Junk, an unknown unit or a suffix contradicting the
    header is an error naming the line."""
    text = text.str.strip()
    missing = text.str.contains(_MISSING).to_numpy(dtype=bool)
    parts = text.str.extract(_NUMBER)
    number = to_floats(parts["number"])
    junk = ~missing & np.isnan(number)
    if junk.any():
        i = int(np.flatnonzero(junk)[0])
        raise DataFileError(
            f"{path}: line {lines[i]}: {field} is {text.iloc[i]!r}, not a number with its "
            f"unit ({int(junk.sum())} such); mend or delete the line"
        )
    suffix = parts["unit"].fillna("").to_numpy(dtype=str)
    known = next(iter(units)) if header_unit is None else header_unit
    if header_unit is not None and header_unit not in units:
        raise DataFileError(
            f"{path}: {field}: its unit {header_unit!r} is not one of {', '.join(units)}; "
            f"write it as e.g. '{field} [{next(iter(units))}]'"
        )
    given = suffix[~missing & (suffix != "")]
    found = np.unique(given)
    unknown = [str(u) for u in found if u not in units]
    if unknown:
        i = int(np.flatnonzero(suffix == unknown[0])[0])
        raise DataFileError(
            f"{path}: line {lines[i]}: {field} {text.iloc[i]!r} has unit {unknown[0]!r}, not "
            f"one of {', '.join(units)}; convert it"
        )
    if header_unit is not None and any(u != header_unit for u in found):
        other = next(u for u in found if u != header_unit)
        i = int(np.flatnonzero(suffix == other)[0])
        raise DataFileError(
            f"{path}: line {lines[i]}: {field} {text.iloc[i]!r} is in {other}, but the header "
            f"says [{header_unit}]: the file mixes units (edited or joined?); convert every "
            "value to the header's unit"
        )
    if found.size > 1:
        log.append(
            f"{field} is written in {', '.join(found)} on different lines: each read "
            "by its own unit"
        )
    written, which = np.unique(np.where(suffix == "", known, suffix), return_inverse=True)
    factor = np.array([units.get(str(u), np.nan) for u in written])[which]
    return np.where(missing, np.nan, number * factor)


# --- nvidia-smi ------------------------------------------------------------------------------


def _nvidia_smi(
    text: str,
    path: Path,
    columns: Sequence[str] | None,
    gpus: int | None,
    log: list,
    meta: dict,
) -> pd.DataFrame:
    lines, cut = _lines(text)
    lines = lines[lines.str.strip() != ""]
    first = lines.iloc[0].strip()
    has_header = bool(re.match(r"[A-Za-z]", first))
    if has_header:
        header = [h.strip() for h in first.split(",")]
        is_header = (lines.str.strip() == first).to_numpy(dtype=bool)
        other = lines.str.match(r"\s*[A-Za-z]").to_numpy(dtype=bool) & ~is_header
        if other.any():
            i = int(np.flatnonzero(other)[0])
            raise DataFileError(
                f"{path}: line {lines.index[i]}: a header {lines.iloc[i][:60]!r} unlike line "
                f"{lines.index[0]}'s: nvidia-smi restarted with another query; record one "
                "query per file, or split the file there"
            )
    else:
        header = list(columns or NVIDIA_SMI_QUERY)
        is_header = np.zeros(len(lines), dtype=bool)
    restarts = int(is_header.sum()) - int(has_header)
    if restarts:
        log.append(
            f"the header is repeated {restarts} time(s) (nvidia-smi restarted): "
            "the copies are skipped"
        )
    names = [split_unit(h)[0] for h in header]
    header_units = [split_unit(h)[1] for h in header]
    if not has_header:
        header_units = [None] * len(header)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DataFileError(f"{path}: field {twice!r} is given twice; give each once")
    if "timestamp" not in names:
        raise DataFileError(
            f"{path}: no timestamp field among {', '.join(names)}: record with "
            f"--query-gpu={','.join(NVIDIA_SMI_QUERY)}"
        )
    power_field = next(
        (f for f in _SMI_FIELDS if f in names and _SMI_FIELDS[f][0] == "power"), None
    )
    if power_field is None:
        raise DataFileError(
            f"{path}: no power field among {', '.join(names)}: record power.draw (or "
            f"power.draw.instant); --query-gpu={','.join(NVIDIA_SMI_QUERY)}"
        )
    meta["power_field"] = power_field
    meta["timezone"] = "UTC assumed: nvidia-smi prints local time without an offset"
    # Every run of the logger starts a new sequence of polls (for a log without index).
    run = np.cumsum(is_header)
    body = lines[~is_header]
    run = run[~is_header]
    # A row whose field count differs from the header's is cut (at the end) or broken.
    count = body.str.count(",").to_numpy() + 1
    if not has_header and (count[: min(len(count), 2)] != len(header)).all():
        raise DataFileError(
            f"{path}: rows have {count[0]} fields, the columns {len(header)} "
            f"({', '.join(names)}): give columns= in the order of --query-gpu"
        )
    bad = _bad_rows(
        count != len(header),
        body,
        cut,
        log,
        path,
        f"{len(header)} comma-separated fields ({', '.join(names)})",
    )
    body, run = body[~bad], run[~bad]
    if body.empty:
        raise DataFileError(f"{path}: a header and no samples; give a log with its rows")
    number = body.index.to_numpy()
    fields = body.str.split(",", expand=True)
    stamp = fields[names.index("timestamp")].str.strip()
    time, offset = parse_iso(stamp.str.replace("/", "-", n=2))
    bad = _bad_rows(
        np.isnat(time),
        body,
        cut,
        log,
        path,
        "a line starting with a time like 2024/07/01 12:00:00.123",
    )
    fields, time, offset, number, run = (
        fields[~bad],
        time[~bad],
        offset[~bad],
        number[~bad],
        run[~bad],
    )
    if offset.any():
        meta["timezone"] = "UTC, converted from the offsets written"
    out = {"line": number, "time": time}
    for name, unit, j in zip(names, header_units, range(len(names)), strict=True):
        if name in _SMI_FIELDS and (_SMI_FIELDS[name][0] != "power" or name == power_field):
            var, units = _SMI_FIELDS[name]
            out[var] = _values(fields[j], units, unit, name, number, path, log)
    raw = pd.DataFrame(out)
    if "index" in names:
        text = fields[names.index("index")].str.strip()
        index = to_floats(text)
        bad = ~(np.isfinite(index) & (index >= 0) & (index == np.round(index)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataFileError(
                f"{path}: line {number[i]}: index {text.iloc[i]!r} is not a GPU index (0, 1, "
                "...); mend or delete the line"
            )
        raw["channel"] = np.char.add("gpu", index.astype(np.int64).astype(str))
    else:
        raw = _polls(raw, run, gpus, path, log, meta)
    return raw


def _polls(
    raw: pd.DataFrame, run: np.ndarray, gpus: int | None, path: Path, log: list, meta: dict
) -> pd.DataFrame:
    """Name the GPUs of a log without ``index`` by their place in each poll: line k of a
    logger run is GPU k mod N (see :func:`read_telemetry`'s Notes)."""
    t = raw["time"].to_numpy().astype(np.int64)
    start = np.r_[0, np.flatnonzero(np.diff(run)) + 1]
    size = np.diff(np.r_[start, len(run)])
    place = np.arange(len(run)) - np.repeat(start, size)
    largest = min(_MAX_NODE_GPUS, int(size.max()))
    found, per, starts = _signature(raw, run, path)
    fix = (
        "give the GPUs per poll, --gpus N (gpus=N), or record with "
        "--query-gpu=timestamp,index,... so each line names its GPU"
    )
    if gpus is not None:
        if gpus > int(size.max()):
            raise DataFileError(
                f"{path}: --gpus {gpus} is more than the {int(size.max())} lines of the log's "
                f"longest run: no poll is whole; {fix}"
            )
        field = next((var for var, n in found.items() if gpus % n), None)
        if field is not None:
            raise DataFileError(
                f"{path}: --gpus {gpus} does not fit the log: {_SIGNATURE[field]} "
                f"repeats every {found[field]} lines, one per GPU; give --gpus {found[field]}"
            )
        shown = int(np.lcm.reduce(list(found.values()))) if found else gpus
        if shown < gpus:
            # Every field repeats at a divisor of the count given: read with it, GPU k and
            # GPU k + shown would be one GPU's samples taken in turn (half its rate each).
            said = ", ".join(f"{_SIGNATURE[v]} every {n} lines" for v, n in found.items())
            raise DataFileError(
                f"{path}: --gpus {gpus} is {gpus // shown} times the {shown} GPUs the log "
                f"shows ({said}, throughout): read with {gpus}, each GPU's lines would be "
                f"split over {gpus // shown} channels; give --gpus {shown}, or record with "
                "--query-gpu=timestamp,index,... if the node has more GPUs than its fields tell"
            )
        source = "given"
    elif found:
        # The steadiest field decides (power also repeats with a periodic workload); another
        # whose count is neither a divisor nor a multiple of it leaves the count ambiguous.
        field = next(iter(found))
        gpus, source = found[field], _SIGNATURE[field]
        if any(gpus % m and m % gpus for m in found.values()):
            said = ", ".join(f"{_SIGNATURE[v]} every {m} lines" for v, m in found.items())
            raise DataFileError(
                f"{path}: a log without index whose GPU count is ambiguous: {said}; {fix}"
            )
    else:
        regular = next((g for g in range(1, largest + 1) if _regular(t, run, place, g)), None)
        if regular is None:
            raise DataFileError(
                f"{path}: a log without index whose GPUs cannot be told apart: no field "
                "(memory.used, temperature.gpu, power) repeats with the GPUs and no count of "
                f"GPUs gives regular polls whose lines come close together; {fix}"
            )
        gpus, source = regular, "times"
    _divisor_change(raw, run, per, starts, gpus, found, path)
    run = _restarts(raw, run, gpus, found, log)
    start = np.r_[0, np.flatnonzero(np.diff(run)) + 1]
    size = np.diff(np.r_[start, len(run)])
    place = np.arange(len(run)) - np.repeat(start, size)
    back = _backward(t, run, gpus)
    if back > _MAX_JUMPS * gpus:
        said = "given" if source == "given" else f"from {source}"
        raise DataFileError(
            f"{path}: with {gpus} GPUs per poll ({said}) their times go back {back} times, "
            f"more than clock jumps do: the count is wrong or the lines are out of order; {fix}"
        )
    meta.update(gpus=int(gpus), gpus_from=source)
    # A run's unfinished last poll (the logger stopped or restarted mid-poll) is dropped.
    complete = place < np.repeat(size - size % gpus, size)
    if not complete.all():
        log.append(
            f"{int((~complete).sum())} line(s) of an unfinished poll of {gpus} GPUs (at line "
            f"{raw['line'].iloc[int(np.flatnonzero(~complete)[0])]}) dropped"
        )
    raw = raw[complete]
    return raw.assign(channel=np.char.add("gpu", (place[complete] % gpus).astype(str)))


def _signature(
    raw: pd.DataFrame, run: np.ndarray, path: Path
) -> tuple[dict[str, int], dict[str, np.ndarray], np.ndarray]:
    """Each field whose values repeat with the GPUs, and every how many lines, steadiest first;
    each field's count in each window (0: none), and each window's first row.

    Each field is searched in windows spread over the file (:func:`_window_counts`). A window
    where some GPUs share a value (idle memory) finds a divisor of the count: a field's count is
    the one that the most windows' counts divide, and two thirds of them must, in an eighth of
    the windows or more. The memory the GPUs hold repeats with their count and nothing else, so
    it repeating every N lines in some windows and every M, neither a divisor of the other, in
    others (two windows each at least) is a count that changes within the file: refused."""
    found, per = {}, {}
    starts = np.zeros(0, dtype=np.int64)
    for var in _SIGNATURE:  # three fields at most, each searched with whole-array operations
        if var not in raw:
            continue
        counts, starts = _window_counts(raw[var].to_numpy(dtype=float), run, var == "memory_used")
        if var == "memory_used":
            _one_count(counts, raw["line"].to_numpy()[starts], path)
        per[var] = counts  # the windows are the same rows for every field (of the lines alone)
        windows, counts = counts.size, counts[counts > 0]
        # An eighth of the windows at least: a field without a signature clears the contrast
        # in a window now and then by chance, a start-up's idle minutes fill several.
        if 8 * counts.size >= windows > 0:
            values = np.unique(counts)
            agree = (values[:, None] % counts[None, :] == 0).sum(axis=1)
            if 3 * agree.max() >= 2 * counts.size:
                found[var] = int(values[np.argmax(agree)])
    return found, per, starts


def _one_count(counts: np.ndarray, lines: np.ndarray, path: Path) -> None:
    """Refuse windows' counts (0: none found; ``lines``, each window's first line) of which two
    seen in two windows or more are neither a divisor nor a multiple of each other."""
    values, seen = np.unique(counts[counts > 0], return_counts=True)
    common = values[seen >= 2]
    clash = (common[:, None] % common[None, :] != 0) & (common[None, :] % common[:, None] != 0)
    if clash.any():
        pair = common[np.argwhere(clash)[0]]
        near = np.array([lines[np.flatnonzero(counts == c)[0]] for c in pair])
        (one, first), (other, then) = sorted(zip(near.tolist(), pair.tolist(), strict=True))
        raise DataFileError(
            f"{path}: memory.used repeats every {first} lines near line {one} and every {then} "
            f"near line {other}: the GPUs per poll change within the log (a GPU lost, hidden or "
            "added); split the file where the count changes, or record with "
            "--query-gpu=timestamp,index,... so each line names its GPU"
        )


def _divisor_change(
    raw: pd.DataFrame,
    run: np.ndarray,
    per: dict[str, np.ndarray],
    starts: np.ndarray,
    gpus: int,
    found: dict[str, int],
    path: Path,
) -> None:
    """Refuse a log whose GPUs per poll change to (or from) a divisor of ``gpus`` (8 GPUs, then
    4: a GPU off the bus or the node re-configured). Read with 8, each later GPU's lines would
    be split over two channels, in silence: every field still repeats every 8 lines. Told from
    GPUs that share a value now and then by the windows (``per``: each field's count in each,
    from :func:`_signature`; a window's count is the least common multiple of its fields'):
    those showing a divisor M of the count and none showing the count itself are one block,
    two windows or more (or the log's last or first window alone), at the start or the end of
    the windows that show a count, and those showing the count are two or more; and line by
    line in one field (:func:`_repeats`). The line is where the lines M apart in that field
    stop (or start) differing: the change point of their differences."""
    if not per:
        return
    stack = np.stack(list(per.values()))
    together = np.lcm.reduce(np.where(stack > 0, stack, 1), axis=0) * (stack > 0).any(axis=0)
    has = together > 0
    short = has & (together < gpus) & (gpus % np.maximum(together, 1) == 0)
    full = has & (together % gpus == 0)
    if not short.any() or full.sum() < 2:
        return
    i_short, i_full = np.flatnonzero(short), np.flatnonzero(full)
    later = i_short[0] > i_full[-1]  # gpus, then fewer
    if not (later or i_short[-1] < i_full[0]):
        return  # a divisor now and then, among windows of the full count: GPUs sharing a value
    # one window of the divisor will do where it is the log's last (or first): a part of
    # fewer GPUs at the end, shorter than two windows, is no less misread
    if i_short.size < 2 and i_short[0] != (together.size - 1 if later else 0):
        return
    fewer = int(np.lcm.reduce(together[short]))
    if fewer >= gpus:
        return
    n = len(run)
    width = min(n, _WINDOW_POLLS * min(2 * _MAX_NODE_GPUS, n // 4))
    # Confirmed line by line, by medians (a window's trimmed mean can show a divisor where
    # most of its lines are alike, as at idle with the little memory every GPU holds): in the
    # windows of the divisor M, lines M apart match and lines fewer apart differ; in those
    # of the count N, lines M apart differ and lines N apart match.

    def rows(windows: np.ndarray) -> np.ndarray:
        return np.unique((starts[windows][:, None] + np.arange(width)).ravel())

    # each field on the windows where it shows a count of its own (memory says nothing at
    # idle, power nothing in training): one shows the divisor there, one the count here
    def shows(windows: np.ndarray, count: int, others: Sequence[int]) -> str | None:
        return next(
            (
                v
                for v, counts in per.items()
                if (counts[windows] > 0).any()
                and _repeats(
                    raw[v].to_numpy(dtype=float),
                    run,
                    rows(windows[counts[windows] > 0]),
                    count,
                    others,
                )
            ),
            None,
        )

    var = shows(i_short, fewer, range(1, fewer))
    if var is None or shows(i_full, gpus, (fewer,)) is None:
        return
    one, other = (i_full[-1], i_short[0]) if later else (i_short[-1], i_full[0])
    lo, hi = int(starts[one]), min(n, int(starts[other]) + width)
    x = raw[var].to_numpy(dtype=float)[lo:hi]
    r = run[lo:hi]
    d = np.full(hi - lo, np.nan)
    d[fewer:] = np.where(r[fewer:] == r[:-fewer], np.abs(x[fewer:] - x[:-fewer]), np.nan)
    # tau: halfway between what lines M apart differ by in the windows of the full count
    # (different GPUs) and in those of the divisor (one GPU a poll apart), each the median over
    # the lines that differ from one of the poll's (none at idle, where every GPU may hold the
    # same memory), and over all of each side's windows where the field shows a count (the two
    # next to the change hold lines of both sides)
    counts = per[var]
    seen = i_full[counts[i_full] > 0]
    whole = raw[var].to_numpy(dtype=float)
    tau = 0.5 * (
        _lag_median(whole, run, rows(seen if seen.size else i_full), fewer, gpus)
        + _lag_median(whole, run, rows(i_short[counts[i_short] > 0]), fewer, gpus)
    )
    if not np.isfinite(tau):
        at = lo if later else hi - 1
    else:
        # The change point of lines M apart differing (over tau) on the full count's side
        # and matching on the divisor's: the extreme of the running count of lines that
        # differ less those that match, so a step of every GPU at once (memory allocated: M
        # lines that differ by 60 GiB) or a few near GPUs on the full side move it by no more
        # than their lines. The first M lines of a poll of M still differ from the poll of N
        # before, and the first M of a poll of N still match the poll of M before: the
        # change is M lines before the extreme's end.
        excess = np.cumsum(np.nan_to_num(np.sign(d - tau), nan=0.0))
        end = int(np.argmax(excess) if later else np.argmin(excess)) + 1
        at = lo + int(np.clip(end - fewer, 0, hi - lo - 1))
    line = int(raw["line"].iloc[at])
    then, now = (gpus, fewer) if later else (fewer, gpus)
    raise DataFileError(
        f"{path}: line {line}: the GPUs per poll change from {then} to {now} here "
        f"({_SIGNATURE[var]} repeats every {then} lines before this line and every {now} from "
        f"it: a GPU lost, the node re-configured); read with {gpus}, each "
        f"GPU's lines of the {fewer}-GPU part would be split over {gpus // fewer} channels. "
        f"Split the file at line {line} and read each part, or record with "
        "--query-gpu=timestamp,index,... so each line names its GPU"
    )


def _repeats(
    x: np.ndarray, run: np.ndarray, rows: np.ndarray, count: int, others: Sequence[int]
) -> bool:
    """Whether, over ``rows``, lines ``count`` apart differ (the median of their differences)
    _CONTRAST times less than lines any of ``others`` apart do (the median of each line's
    least difference at those lags). Only lines that differ from one of the count's lines
    before are weighed (at idle every GPU may hold the same memory: nothing to tell there);
    lines of different runs are not compared."""
    rows = rows[rows >= max(count, *others)]
    if rows.size == 0:
        return False

    def apart(lag: int) -> np.ndarray:
        d = np.abs(x[rows] - x[rows - lag])
        return np.where(run[rows] == run[rows - lag], d, np.nan)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: no median, no repeat
        told = np.nanmax(np.stack([apart(lag) for lag in range(1, count)]), axis=0) > 0
        same = np.nanmedian(apart(count)[told])
        least = np.nanmin(np.stack([apart(lag) for lag in others]), axis=0)
        differ = np.nanmedian(least[told])
    return bool(differ > 0 and differ > _CONTRAST * same)


def _lag_median(x: np.ndarray, run: np.ndarray, rows: np.ndarray, lag: int, gpus: int) -> float:
    """The median over ``rows`` of the difference between lines ``lag`` apart, among the lines
    that differ from one of the ``gpus`` - 1 lines before them (NaN where none does)."""
    rows = rows[rows >= gpus]
    if rows.size == 0:
        return np.nan

    def apart(k: int) -> np.ndarray:
        return np.where(run[rows] == run[rows - k], np.abs(x[rows] - x[rows - k]), np.nan)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: no median
        told = np.nanmax(np.stack([apart(k) for k in range(1, gpus)]), axis=0) > 0
        return float(np.nanmedian(apart(lag)[told])) if told.any() else np.nan


def _restarts(
    raw: pd.DataFrame, run: np.ndarray, gpus: int, found: dict[str, int], log: list
) -> np.ndarray:
    """``run`` with a new run from each line where the logger restarted mid-poll with no
    header to mark it (``noheader``): the old process killed after k of a poll's N lines, the
    new one starting again at GPU 0. Read as line k is GPU k mod N, every later line lands
    on another GPU's channel. Found by the per-GPU signature shifting phase there
    (:func:`_phase_shifts`), in each field whose count divides N, steadiest first."""
    if gpus < 2 or len(run) < 4 * gpus:
        return run
    t = raw["time"].to_numpy().astype(np.int64)
    lines = raw["line"].to_numpy()
    at, cut, by = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    for var, count in found.items():
        if gpus % count:
            continue
        hits, ks = _phase_shifts(raw[var].to_numpy(dtype=float), run, gpus)
        # the same restart seen in another field (within a poll of one found) is kept once
        if at.size:
            near = np.abs(hits[:, None] - at[None, :]).min(axis=1) < gpus
            hits, ks = hits[~near], ks[~near]
        at, cut = np.r_[at, hits], np.r_[cut, ks]
        by += [_SIGNATURE[var]] * hits.size
    if at.size == 0:
        return run
    order = np.argsort(at)
    at, cut, by = at[order], cut[order], [by[i] for i in order]
    for i, k, field in list(zip(at, cut, by, strict=True))[:_LISTED]:
        log.append(
            f"line {lines[i]}: the per-GPU signature ({field}) shifts by {k} line(s) there: "
            f"the logger restarted after {k} of the {gpus} lines of a poll with no header to "
            f"mark it (noheader), {(t[i] - t[i - 1]) / 1e9:g} s after the line before; counted "
            "from GPU 0 again from that line"
        )
    if at.size > _LISTED:
        log.append(f"{at.size - _LISTED} more restart(s) without a header found and re-phased")
    flags = np.zeros(len(run), dtype=np.int64)
    flags[at] = 1
    return run + np.cumsum(flags)


def _phase_shifts(x: np.ndarray, run: np.ndarray, gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """Lines r where a new run of N = ``gpus`` lines per poll starts after k (1 ≤ k < N) lines
    of a cut poll, and each k: the N lines from r differ from those a poll (N lines) before,
    but match those N + k before (the same GPUs in the last whole poll), while the polls
    before and after r match their previous ones. Each as a sum over the N lines, beyond
    _CONTRAST times the others and the field's typical sum; and half the N lines (two at
    least) each so. A step of every GPU at once (memory allocated) differs at both lags, a
    periodic workload too (the GPUs swing together): neither is a restart."""
    n = len(x)

    def diff(lag: int) -> np.ndarray:
        d = np.full(n, np.nan)
        if lag < n:
            d[lag:] = np.where(run[lag:] == run[:-lag], np.abs(x[lag:] - x[:-lag]), np.nan)
        return d

    def window(d: np.ndarray) -> np.ndarray:  # the sum of d over the N lines from each line
        s = np.full(n, np.nan)
        m = n - gpus + 1
        total = np.r_[0.0, np.cumsum(np.nan_to_num(d, nan=0.0))]
        holes = np.r_[0, np.cumsum(np.isnan(d))]
        s[:m] = np.where(holes[gpus:] - holes[:m] == 0, total[gpus:] - total[:m], np.nan)
        return s

    d_n = diff(gpus)
    s_n = window(d_n)
    best, cut = np.full(n, np.inf), np.zeros(n, dtype=np.int64)
    for k in range(1, gpus):  # each cut length (at most 63), over all lines
        s_k = window(diff(gpus + k))
        better = s_k < best
        best, cut = np.where(better, s_k, best), np.where(better, k, cut)
    before = np.r_[np.full(gpus, np.nan), s_n[:-gpus]]
    after = np.r_[s_n[gpus:], np.full(gpus, np.nan)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        typical = np.nanmedian(s_n) if np.isfinite(s_n).any() else np.inf
        hit = (
            (s_n > _CONTRAST * best)
            & (s_n > _CONTRAST * before)
            & (s_n > _CONTRAST * after)
            & (s_n > _CONTRAST * typical)
        )
    at = np.flatnonzero(hit)
    if at.size:
        rows = at[:, None] + np.arange(gpus)
        ks = cut[at]
        d_k = np.abs(x[rows] - x[rows - gpus - ks[:, None]])
        each = ((d_n[rows] > _CONTRAST * d_k) & (d_n[rows] > 0)).sum(axis=1)
        at = at[each >= max(2, -(-gpus // 2))]
    if at.size == 0:
        return at, at
    # one restart per cluster of lines under a poll apart: the one whose poll differs most
    # (the first on a tie)
    group = np.cumsum(np.r_[True, np.diff(at) >= gpus])
    pick = pd.Series(s_n[at]).groupby(group).idxmax().to_numpy()
    at = at[pick]
    return at, cut[at]


def _window_counts(
    values: np.ndarray, run: np.ndarray, steady: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per window of lines, the smallest count N ≥ 2 with which ``values`` repeat (0: none),
    and the window's first row; a field not ``steady`` must also differ between adjacent lines
    (see _ADJACENT)."""
    n = len(values)
    lags = min(2 * _MAX_NODE_GPUS, n // 4)
    if lags < 4:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=np.int64)
    width = min(n, _WINDOW_POLLS * lags)
    starts = np.unique(np.linspace(0, n - width, _WINDOWS).astype(np.int64))
    rows = starts[:, None] + np.arange(width)
    x, r = values[rows], run[rows]
    mean = np.full((len(starts), lags), np.nan)
    for lag in range(1, lags + 1):  # candidate lags (at most 128), each over all windows
        diff = np.abs(x[:, lag:] - x[:, :-lag])
        diff[(r[:, lag:] != r[:, :-lag])] = np.nan
        # the mean of each window's smallest _TRIM of its pairs (NaN sorts last)
        ranked = np.sort(diff, axis=1)
        keep = np.ceil(_TRIM * np.isfinite(ranked).sum(axis=1)).astype(np.int64)
        total = np.nancumsum(ranked, axis=1)[np.arange(len(starts)), np.maximum(keep, 1) - 1]
        mean[:, lag - 1] = np.where(keep > 0, total / np.maximum(keep, 1), np.nan)
    lag = np.arange(1, lags + 1)
    count = np.arange(2, lags // 2 + 1)
    multiple = lag[None, :] % count[:, None] == 0  # (count, lag)
    near = lag[None, :] < 2 * count[:, None]
    at = np.maximum(mean[:, count - 1], mean[:, 2 * count - 1])  # lags N and 2N
    other = np.where(~multiple[None], mean[:, None, :], np.inf).min(axis=2)
    widest = np.where(~multiple[None] & near[None], mean[:, None, :], -np.inf).max(axis=2)
    with np.errstate(invalid="ignore"):
        clear = (other > 0) & (other >= _CONTRAST * at)
        # Lines N apart must match about as well as lines 2N apart: a GPU's own values drift
        # with time, so at the true count the wider lag differs as much or more. Lines N apart
        # that differ clearly more than lines 2N apart are GPUs k and k + N of a count 2N with
        # near values (memory of 64,749 and 65,237 MiB against 62,411 and 61,701 between).
        clear &= mean[:, count - 1] <= _CONTRAST * mean[:, 2 * count - 1]
        if not steady:
            clear &= mean[:, :1] >= _ADJACENT * widest
    return np.where(clear.any(axis=1), count[np.argmax(clear, axis=1)], 0), starts


def _regular(t: np.ndarray, run: np.ndarray, place: np.ndarray, gpus: int) -> bool:
    """Whether polls of ``gpus`` lines start at regular times and are short beside the time
    between them (eight polls or more; see _REGULAR)."""
    first = place % gpus == 0
    last = np.flatnonzero(place % gpus == gpus - 1)  # a poll's last line, its first g-1 before
    starts, runs = t[first], run[first]
    between = np.diff(starts)[runs[1:] == runs[:-1]]
    if between.size < 8:
        return False
    span = t[last] - t[last - (gpus - 1)]
    low, typical, high = np.quantile(between, [0.1, 0.5, 0.9])
    return bool(
        typical > 0
        and low > _REGULAR * typical
        and high * _REGULAR < typical
        and np.quantile(span, _TIGHT) < 0.5 * typical
    )


def _backward(t: np.ndarray, run: np.ndarray, gpus: int) -> int:
    """Lines whose time is before that of the same GPU's line a poll earlier."""
    if len(t) <= gpus:
        return 0
    return int(((t[gpus:] < t[:-gpus]) & (run[gpus:] == run[:-gpus])).sum())


# --- DCGM ------------------------------------------------------------------------------------


def _need_period(period: float | None, path: Path, what: str) -> float:
    if period is None:
        raise DataFileError(f"{path}: {what}; give period= in seconds (the sampling period)")
    return period


def _dcgmi_dmon(text: str, path: Path, period: float | None, log: list) -> pd.DataFrame:
    lines, cut = _lines(text)
    strip = lines.str.strip()
    is_header = strip.str.match(r"#\s*Entity\b").to_numpy(dtype=bool)
    if not is_header.any():
        raise DataFileError(f"{path}: no '#Entity' header line: not dcgmi dmon output")
    header = strip[is_header]
    other = (
        header.str.replace(r"\s+", " ", regex=True) != re.sub(r"\s+", " ", header.iloc[0])
    ).to_numpy()
    if other.any():
        i = int(np.flatnonzero(other)[0])
        raise DataFileError(
            f"{path}: line {header.index[i]}: a header unlike line {header.index[0]}'s: dmon "
            "was restarted with other fields; record one field list per file"
        )
    names = re.sub(r"^#\s*Entity", "", header.iloc[0]).split()
    is_unit = strip.str.match(r"I[Dd]\b").to_numpy(dtype=bool)
    unit_line = strip[is_unit]
    units = unit_line.iloc[0].split()[1:] if len(unit_line) else [None] * len(names)
    if len(units) != len(names):
        units = [None] * len(names)
    is_row = strip.str.match(r"(?:GPU|GPU-I|GPU-CI|Switch|vGPU|CPU|Link|Core)\s+\d+").to_numpy(
        dtype=bool
    )
    ignored = strip.str.contains(r"^$|dmon was stopped").to_numpy(dtype=bool)
    junk = ~(is_header | is_unit | is_row | ignored)
    junk = _bad_rows(junk, lines, cut, log, path, "a dmon header, unit or entity line")
    is_gpu = (strip.str.match(r"GPU\s+\d+(?:\s|$)").to_numpy(dtype=bool)) & is_row
    rows = strip[is_gpu]
    count = rows.str.count(r"\S+").to_numpy()
    short = count != len(names) + 2
    short = _bad_rows(
        _expand(short, is_gpu, len(lines)),
        lines,
        cut,
        log,
        path,
        f"'GPU <id>' and {len(names)} values ({', '.join(names)})",
    )[is_gpu]
    rows, number = rows[~short], rows.index.to_numpy()[~short]
    if rows.empty:
        raise DataFileError(f"{path}: no 'GPU <id>' rows; give dmon output with its samples")
    fields = rows.str.split(expand=True)
    gpu = fields[1].astype(int).to_numpy()
    period = _need_period(
        period,
        path,
        "dcgmi dmon prints no times (no release does): the rows are timed by dmon's -d delay",
    )
    poll = _poll_numbers(gpu)
    time = EPOCH + (np.round(poll * period * 1e9).astype(np.int64)).astype("m8[ns]")
    out = {"line": number, "time": time, "channel": np.char.add("gpu", gpu.astype(str))}
    for j, (name, unit) in enumerate(zip(names, units, strict=True)):
        if name in _DMON_FIELDS:
            var, table = _DMON_FIELDS[name]
            out[var] = _values(fields[j + 2], table, unit, name, number, path, log)
    if "power" not in out:
        raise DataFileError(
            f"{path}: no POWER field among {', '.join(names)}: record field 155 "
            "(dcgmi dmon -e 155,203,100,150 -d 100)"
        )
    return pd.DataFrame(out)


def _poll_numbers(gpu: np.ndarray) -> np.ndarray:
    """The poll of each row of a tool that prints each GPU once per poll, in a fixed order (by
    id in current dcgmi, rocm-smi and amd-smi): a row whose GPU comes no later in that order
    than the row before starts the next poll."""
    order = pd.Index(pd.unique(gpu[: _first_repeat(gpu)]))
    rank = order.get_indexer(gpu)
    rank = np.where(rank >= 0, rank, len(order) + gpu)  # GPUs first seen later: by id
    return np.cumsum(np.r_[True, np.diff(rank) <= 0]) - 1


def _expand(flags: np.ndarray, where: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[where] = flags
    return out


def _first_repeat(values: np.ndarray) -> int:
    """Length of the leading run without a repeated value."""
    seen = pd.Series(values[: _MAX_NODE_GPUS * 64 + 1]).duplicated().to_numpy()
    return int(np.argmax(seen)) if seen.any() else len(seen)


def _exporter(text: str, path: Path, period: float | None, log: list, meta: dict):
    lines, cut = _lines(text)
    strip = lines.str.strip()
    comment = strip.str.contains(r"^(?:#|$)").to_numpy(dtype=bool)
    parts = strip.str.extract(_PROMETHEUS.pattern)
    junk = ~comment & parts["metric"].isna().to_numpy()
    junk = _bad_rows(junk, lines, cut, log, path, "a Prometheus sample 'NAME{labels} value'")
    kept = parts["metric"].isin(list(_EXPORTER_FIELDS)).to_numpy() & ~junk
    parts = parts[kept]
    if parts.empty:
        raise DataFileError(
            f"{path}: no DCGM_FI_DEV_POWER_USAGE samples: have dcgm-exporter collect it "
            "(its default counters do)"
        )
    labels = parts["labels"].fillna("")
    gpu = labels.str.extract(r'(?:^|,)\s*gpu="(?P<gpu>\d+)"')["gpu"]
    if gpu.isna().any():
        i = int(np.flatnonzero(gpu.isna().to_numpy())[0])
        raise DataFileError(
            f'{path}: line {parts.index[i]}: a sample without a gpu="<i>" '
            "label; keep dcgm-exporter's labels"
        )
    host = labels.str.extract(r'(?:^|,)\s*Hostname="(?P<host>[^"]*)"')["host"].fillna("")
    several = host.nunique() > 1
    channel = (host + "/gpu" + gpu) if several else ("gpu" + gpu)
    frame = pd.DataFrame(
        {
            "line": parts.index.to_numpy(),
            "metric": parts["metric"].to_numpy(dtype=str),
            "channel": channel.to_numpy(dtype=str),
            "stamp": parts["stamp"].to_numpy(dtype=object),
            "value": parts["value"].to_numpy(dtype=object),
        }
    )
    stamped = (frame["stamp"].fillna("") != "").to_numpy(dtype=bool)
    if stamped.any() and not stamped.all():
        i = int(np.flatnonzero(~stamped)[0])
        raise DataFileError(
            f"{path}: line {frame['line'].iloc[i]}: a sample without a timestamp among samples "
            "with one; give scrapes all with or all without timestamps"
        )
    if stamped.all():
        ms = to_floats(frame["stamp"])
        frame["key"] = ms.astype(np.int64)
        meta["timezone"] = "UTC (Prometheus timestamps)"
    else:
        period = _need_period(
            period,
            path,
            "the scrapes carry no timestamps (dcgm-exporter writes none): they "
            "are timed by the scrape interval",
        )
        frame["key"] = frame.groupby(["metric", "channel"]).cumcount()
        meta["timezone"] = f"none in the file: {period} s scrapes from 1970-01-01T00:00"
        meta["timed"] = False
    dup = frame.duplicated(["metric", "channel", "key"]).to_numpy()
    if dup.any():
        log.append(
            f"{int(dup.sum())} sample(s) repeat a GPU's metric at the same timestamp "
            f"(first at line {frame['line'].iloc[int(np.flatnonzero(dup)[0])]}): the "
            "later dropped"
        )
        frame = frame[~dup]
    power = frame[frame["metric"] == "DCGM_FI_DEV_POWER_USAGE"]
    if power.empty:
        raise DataFileError(
            f"{path}: no DCGM_FI_DEV_POWER_USAGE samples: have dcgm-exporter collect it"
        )
    out = power[["line", "channel", "key"]].reset_index(drop=True)
    meta["power_field"] = "DCGM_FI_DEV_POWER_USAGE"
    for metric, (var, units, unit) in _EXPORTER_FIELDS.items():
        rows = frame[frame["metric"] == metric]
        if rows.empty:
            continue
        values = _values(
            pd.Series(rows["value"].to_numpy(dtype=str)),
            units,
            unit,
            metric,
            rows["line"].to_numpy(),
            path,
            log,
        )
        series = pd.Series(
            values,
            index=pd.MultiIndex.from_arrays([rows["channel"].to_numpy(), rows["key"].to_numpy()]),
        )
        out[var] = series.reindex(
            pd.MultiIndex.from_arrays([out["channel"].to_numpy(), out["key"].to_numpy()])
        ).to_numpy()
    key = out.pop("key").to_numpy(dtype=np.int64)
    if stamped.all():
        out["time"] = EPOCH + (key * 1_000_000).astype("m8[ns]")
    else:
        out["time"] = EPOCH + np.round(key * period * 1e9).astype(np.int64).astype("m8[ns]")
    return out


# --- AMD: rocm-smi and amd-smi ----------------------------------------------------------------


def _device_csv(
    text: str, path: Path, format: str, period: float | None, log: list, meta: dict
) -> pd.DataFrame:
    """rocm-smi's or amd-smi's CSV, printed once per poll in a loop (each poll its header,
    then one row per GPU) or once by amd-smi's watch mode (one header, a timestamp column)."""
    rocm = format == "rocm-smi"
    device, table = ("device", _ROCM_FIELDS) if rocm else ("gpu", _AMD_FIELDS)
    lines, cut = _lines(text)
    lines = lines[lines.str.strip() != ""]
    # amd-smi quotes a field that holds commas (a list of engines' activity): none is read.
    lines = lines.str.replace(r'"[^"]*,[^"]*"', "[list]", regex=True).str.replace(
        '"', "", regex=False
    )
    first = lines.iloc[0].strip()
    header = [h.strip() for h in first.split(",")]
    if device not in header:
        raise DataFileError(
            f"{path}: line {lines.index[0]}: no {device!r} column in the header "
            f"{first[:60]!r}: not {format} --csv output; give format= if it is another tool's"
        )
    head = lines.str.match(rf"\s*(?:timestamp\s*,\s*)?{device}\s*,").to_numpy(dtype=bool)
    is_header = (lines.str.strip() == first).to_numpy(dtype=bool)
    if (head & ~is_header).any():
        i = int(np.flatnonzero(head & ~is_header)[0])
        raise DataFileError(
            f"{path}: line {lines.index[i]}: a header {lines.iloc[i][:60]!r} unlike line "
            f"{lines.index[0]}'s: {format} was run with other fields; record one field list per "
            "file, or split the file there"
        )
    body = lines[~is_header]
    count = body.str.count(",").to_numpy() + 1
    bad = _bad_rows(
        count != len(header), body, cut, log, path, f"{len(header)} comma-separated fields"
    )
    body = body[~bad]
    if body.empty:
        raise DataFileError(f"{path}: a header and no samples; give a log with its rows")
    number = body.index.to_numpy()
    fields = body.str.split(",", expand=True)
    label = fields[header.index(device)].str.strip()
    gpu = label.str.extract(r"^(?:card)?(?P<gpu>\d{1,6})$" if rocm else r"^(?P<gpu>\d{1,6})$")[
        "gpu"
    ]
    if gpu.isna().any():
        i = int(np.flatnonzero(gpu.isna().to_numpy())[0])
        want = "card0, card1..." if rocm else "0, 1..."
        raise DataFileError(
            f"{path}: line {number[i]}: {device} {label.iloc[i][:20]!r} is not a GPU ({want}); "
            "mend or delete the line"
        )
    gpu = gpu.astype(np.int64).to_numpy()
    out = {"line": number, "channel": np.char.add("gpu", gpu.astype(str))}
    if "timestamp" in header:
        stamp = fields[header.index("timestamp")].str.strip()
        seconds = to_floats(stamp)
        bad = ~(np.abs(seconds) < 1e10)  # Unix seconds before the year 2286
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataFileError(
                f"{path}: line {number[i]}: timestamp {stamp.iloc[i][:30]!r} is not Unix "
                "seconds; mend or delete the line"
            )
        out["time"] = EPOCH + np.round(seconds * 1e9).astype(np.int64).astype("m8[ns]")
        meta["timezone"] = "UTC (Unix timestamps)"
    else:
        period = _need_period(
            period,
            path,
            f"{format} prints no times: the polls are timed by the loop that ran it",
        )
        poll = _poll_numbers(gpu)
        out["time"] = EPOCH + np.round(poll * period * 1e9).astype(np.int64).astype("m8[ns]")
        meta["timezone"] = f"none in the file: {period} s polls from 1970-01-01T00:00"
        meta["timed"] = False
    names = {split_unit(h)[0] if rocm else h: (j, split_unit(h)[1]) for j, h in enumerate(header)}
    for var, choices in table.items():
        name, units = next(((n, u) for n, u in choices if n in names), (None, None))
        if name is None:
            continue
        j, unit = names[name]
        out[var] = _values(fields[j], units, unit, name, number, path, log)
        if var == "power":
            meta["power_field"] = header[j]
    if "power" not in out:
        wanted = " or ".join(n for n, _ in table["power"][:2])
        how = "--showpower" if rocm else "metric --power (or monitor -p)"
        raise DataFileError(
            f"{path}: no power field among {', '.join(header)}: record {wanted} ({format} {how})"
        )
    return _packages(pd.DataFrame(out), format, log, meta)


def _packages(raw: pd.DataFrame, format: str, log: list, meta: dict) -> pd.DataFrame:
    """Devices read as MI200-class packages where their power says so, else ``raw`` as it is.

    An MI250 or MI250X OAM package holds two GCDs, and rocm-smi and amd-smi list each GCD as a
    device, but the package's power is read on one of them: rocm-smi 6.0.2 and later print
    ``N/A (Secondary die)`` on the other and the package's whole power ("primary + secondary")
    on the primary, "usually one above or below the secondary" [S, rocm_smi_mi200]; the
    driver's hwmon reads 0 W there [S, amdgpu_mi200_power], which tools that read hwmon print;
    a tool that prints the package's power on both is assumed too [A]. Read per device, the
    secondary is a GPU drawing nothing (the running level halved), or the package counted
    twice. So devices 2i and 2i+1 are taken as one package when, in every pair and in
    _PAIRED of the polls where either reads, one of them reads nothing (N/A or 0) and the
    other a power, or both the same power in _PAIRED of the polls where the power changes
    (ten at least: two GPUs idling steadily may print the same watts). Each package is a
    channel ``gpu<i>``: its power the reading one (once), its utilisation and clock the two
    GCDs' mean, its memory their sum, its temperature the hotter."""
    gpu = raw["channel"].str.slice(3).astype(np.int64).to_numpy()
    ids = np.unique(gpu)
    if ids.size < 2 or ids.size % 2 or ids[-1] != ids.size - 1:
        return raw
    t = raw["time"].to_numpy().astype(np.int64)
    frame = raw.assign(_t=t, _package=gpu // 2, _die=gpu % 2)
    frame = frame[~frame.duplicated(["_t", "_package", "_die"])]
    wide = frame.set_index(["_package", "_t", "_die"])["power"].unstack("_die")
    if wide.shape[1] != 2:
        return raw
    a, b = wide[0].to_numpy(dtype=float), wide[1].to_numpy(dtype=float)
    quiet_a, quiet_b = ~(a > 0), ~(b > 0)  # N/A (NaN) or 0
    package = wide.index.get_level_values("_package").to_numpy()
    either = ~(quiet_a & quiet_b)
    one = either & (quiet_a ^ quiet_b)
    # the same power on both, where the package's power moved since the pair's last poll
    moved = np.r_[False, (np.diff(np.nan_to_num(a)) != 0) & (package[1:] == package[:-1])]
    same = moved & ~quiet_a & (a == b)
    per = pd.DataFrame(
        {"either": either, "one": one, "moved": moved & ~quiet_a, "same": same}
    ).groupby(package)
    total = per.sum()
    alone = total["one"] >= _PAIRED * np.maximum(total["either"], 1)
    twice = (total["moved"] >= 10) & (total["same"] >= _PAIRED * np.maximum(total["moved"], 1))
    paired = (alone | twice) & (total["either"] >= _MIN_PAIRED_POLLS)
    if not paired.all():
        return raw
    what = "N/A or 0" if alone.all() else "the same power" if twice.all() else "N/A, 0 or the same"
    optional = [c for c in OPTIONAL if c in frame]
    group = frame.groupby(["_package", "_t"], sort=False)
    power = group["power"].max().to_numpy()  # the reading GCD's: the other reads less or NaN
    out = {
        "line": group["line"].min().to_numpy(),
        "time": group["time"].first().to_numpy(),
        "channel": np.char.add("gpu", group["_package"].first().to_numpy().astype(str)),
        "power": np.where(power > 0, power, np.nan),  # a package reading 0 read nothing
    }
    how = {"utilization": "mean", "sm_clock": "mean", "temperature": "max", "memory_used": "sum"}
    for var in optional:
        if how[var] == "sum":
            out[var] = group[var].sum(min_count=1).to_numpy()
        else:
            out[var] = getattr(group[var], how[var])().to_numpy()
    packages = ids.size // 2
    meta.update(
        power_per="package",
        gcds_per_package=2,
        packages=packages,
        package_devices={f"gpu{i}": [2 * i, 2 * i + 1] for i in range(packages)},
    )
    hit, of = ("one", "either") if alone.all() else ("same", "moved")
    share = total[hit].sum() / max(total[of].sum(), 1)
    log.append(
        f"{format}: the {ids.size} devices report power in pairs, one of each pair {what} in "
        f"{share:.0%} of the polls (MI200-class, MI250/MI250X: two GCDs per OAM package, the "
        f"package's power on one): read as {packages} packages, gpu<i> = devices 2i and "
        "2i+1, each package's power once (the other's N/A or 0 is no idle GPU); utilisation "
        "and clock the mean of the two GCDs, memory the sum, temperature the hotter"
    )
    return pd.DataFrame(out)


# --- meters ----------------------------------------------------------------------------------


def _meter(path: Path, text: str, log: list, meta: dict) -> pd.DataFrame:
    header = read_header(path)
    if len(header) > MAX_CHANNELS + 1:
        raise DataFileError(
            f"{path}: {len(header) - 1} meter columns is over the "
            f"{MAX_CHANNELS} channels a file may have; split it"
        )
    t_col = next(
        (i for i, h in enumerate(header) if split_unit(h)[0] == "time"),
        next((i for i, h in enumerate(header) if h.startswith("time")), 0),
    )
    channels = [i for i in range(len(header)) if i != t_col]
    if not channels:
        raise DataFileError(f"{path}: no meter column besides the time; add 'name [kW]' columns")
    for i in channels:
        name, unit = split_unit(header[i])
        if unit not in ACTIVE_UNITS:
            found = f"its unit {unit!r} is not one of" if unit else "it has no unit: one of"
            raise DataFileError(
                f"{path}: column {header[i]!r}: {found} {', '.join(ACTIVE_UNITS)}; head each "
                f"meter with its unit, e.g. '{name} [kW]'"
            )
    names = [split_unit(header[i])[0] for i in channels]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DataFileError(f"{path}: two columns are named {twice!r}; name each meter once")
    ragged: list[int] = []

    def skip(row) -> str:
        ragged.append(row.number)
        return "skip"

    frame = read_columns(path, len(header), list(range(len(header))), ragged=skip)
    last = len(re.split(r"\r\n?|\n", text.rstrip("\r\n")))
    if ragged:
        cut = not text.endswith(("\n", "\r"))
        if ragged != [last] or not cut:
            line = ragged[0] if ragged[0] is not None else "?"
            raise DataFileError(
                f"{path}: line {line} has not the {len(header)} values of the header "
                f"({len(ragged)} such line(s)); mend or delete it"
            )
        log.append(f"line {last} is cut short: dropped")
    if len(frame) < 2:
        raise DataFileError(f"{path}: {len(frame)} data row(s): a trace needs two or more")
    time = parse_times(frame[t_col], header[t_col], path)
    first = frame[t_col].iloc[0].strip()
    unit = split_unit(header[t_col])[1]
    meta["timezone"] = (
        "time since the start, placed at 1970-01-01T00:00"
        if unit
        else "UTC, converted from the offsets written"
        if re.search(UTC_OFFSET, first)
        else "UTC assumed: the times carry no offset"
    )
    values = []
    for i in channels:
        text_i = frame[i].str.strip()
        number = to_floats(text_i)
        first_bad(
            np.isnan(number) & (text_i != "").to_numpy(dtype=bool),
            text_i,
            header[i],
            path,
            "a number (or empty for a missing reading)",
        )
        values.append(number * _POWER[split_unit(header[i])[1]])
    n = len(frame)
    meta["power_field"] = "the meter columns"
    return pd.DataFrame(
        {
            "line": np.tile(np.arange(2, n + 2), len(channels)),
            "time": np.tile(time, len(channels)),
            "channel": np.repeat(np.array(names, dtype=object), n),
            "power": np.concatenate(values),
        }
    )


# --- MLPerf power logs ------------------------------------------------------------------------


def _mllog_field(rows: pd.Series, name: str, value: str, after: str = "") -> pd.Series:
    """The text of one JSON field of each MLLOG line (NaN where a line has none, or its text
    does not match ``value`` followed by ``after``), matched by pattern rather than parsed line
    by line: a field's place in the line varies by logger."""
    return rows.str.extract(rf'"{name}"\s*:\s*(?P<v>{value}){after}')["v"]


def _mlperf_power(text: str, path: Path, log: list, meta: dict) -> pd.DataFrame:
    """The readings of an MLPerf power log: each ``power_reading`` line's ``value`` [W] at its
    ``time_ms``. The other events (the measurement's start and stop, ``conversion_eff``) are no
    samples; ``conversion_eff``, the efficiency MLPerf's result summarizer multiplies the
    energy by, is kept in ``meta`` but not applied: the readings are the meter's."""
    lines, cut = _lines(text)
    strip = lines.str.strip()
    # srun --label puts the task's rank before each line of a job's output: "0: :::MLLOG {"
    tagged = strip.str.contains(rf"^(?:\d+: )?{_MLLOG} ").to_numpy(dtype=bool)
    blank = (strip == "").to_numpy(dtype=bool)
    key = _mllog_field(strip, "key", r'"[^"]*"').fillna("").to_numpy(dtype=str)
    if not (tagged & (key == '"power_reading"')).any():
        found = ", ".join(pd.unique(np.char.strip(key[tagged & (key != "")], '"'))[:4])
        raise DataFileError(
            f"{path}: an MLPerf log without power_reading events (its events: {found}): a "
            "result or switch log, not a node's power log; give power/<result>/node_<i>.txt"
        )
    # an event is one JSON object with its key: anything else is junk, or the last line cut
    whole = tagged & (key != "") & strip.str.endswith("}").to_numpy(dtype=bool)
    bad = _bad_rows(
        ~(whole | blank), lines, cut, log, path, f"an MLPerf log event ('{_MLLOG} {{...}}')"
    )
    rows, key = lines[whole & ~bad], key[whole & ~bad]
    reading = key == '"power_reading"'
    eff = to_floats(_mllog_field(rows[key == '"conversion_eff"'], "value", _FLOAT))
    if eff.size:
        meta["conversion_eff"] = float(eff[0])
    samples = rows[reading]
    # whole milliseconds of 15 digits at most (to the year 33658): a longer one is no time
    ms = to_floats(_mllog_field(samples, "time_ms", r"-?\d{1,15}", after=r"\s*[,}]"))
    value = _mllog_field(samples, "value", r'"[^"]*"|[^,}\s]+')
    missing = np.isnan(ms) | value.isna().to_numpy(dtype=bool)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise DataFileError(
            f"{path}: line {samples.index[i]}: a power_reading without its "
            f'"time_ms" or "value" ({int(missing.sum())} such); mend or delete the line'
        )
    number = samples.index.to_numpy()
    power = _values(value.str.strip('"'), _POWER, "W", "power_reading value", number, path, log)
    # the host a reading names is a channel's label, never a path: kept to word characters
    written = _mllog_field(samples, "host", r'"[^"]*"').fillna('"node"').str.strip('"')
    host = written.str.replace(r"[^\w.\-]", "_", regex=True).str.slice(0, 64)
    host = host.where(host != "", "node")  # a host written empty names no meter
    names = pd.DataFrame({"host": host, "written": written}).drop_duplicates()
    twice = names["host"].duplicated(keep=False).to_numpy(dtype=bool)
    if twice.any():
        one, other = names["written"][twice].iloc[:2]
        raise DataFileError(
            f"{path}: the hosts {one[:30]!r} and {other[:30]!r} would be one channel "
            f"({names['host'][twice].iloc[0]!r}: a channel's name keeps letters, digits, '.', "
            "'-' and '_', 64 at most): two meters' readings mixed; give one node's log per file"
        )
    # Logs joined into one file (cat node_*.txt) repeat the measurement's start: readings of
    # one host under two starts are two meters, or two runs, that one channel would mix.
    measurement = np.cumsum(key == '"power_measurement_start"')[reading]
    mixed = (
        pd.DataFrame({"host": host.to_numpy(dtype=str), "run": measurement})
        .groupby("host")["run"]
        .nunique()
    )
    if (mixed > 1).any():
        name = str(mixed.index[np.argmax(mixed.to_numpy() > 1)])
        again = np.flatnonzero(np.diff(measurement) != 0)
        line = number[again[0] + 1] if again.size else number[0]
        raise DataFileError(
            f"{path}: line {line}: the readings of {name!r} continue under another "
            f"power_measurement_start ({int(mixed.max())} measurements in the file): logs "
            "joined without their host; give one node's log per file"
        )
    meta["power_field"] = "power_reading"
    meta["timezone"] = "UTC (Unix times in ms)"
    return pd.DataFrame(
        {
            "line": number,
            "time": EPOCH + (ms.astype(np.int64) * 1_000_000).astype("m8[ns]"),
            "channel": host.to_numpy(dtype=str),
            "power": power,
        }
    )


# --- common checks and repairs ---------------------------------------------------------------


def _finish(
    raw: pd.DataFrame, meta: dict, log: list, path: Path, gpus_per_node: int | None
) -> tuple[pd.DataFrame, dict]:
    kind = "meter" if meta["format"] in METER_FORMATS else "gpu"
    channels = pd.unique(raw["channel"])
    if len(channels) > MAX_CHANNELS:
        raise DataFileError(
            f"{path}: {len(channels)} channels is over the {MAX_CHANNELS} a "
            "file may have; split it by node"
        )
    missing = np.isnan(raw["power"].to_numpy())
    if missing.any():
        log.append(
            f"{int(missing.sum())} sample(s) without a power reading (first at line "
            f"{raw['line'].iloc[int(np.flatnonzero(missing)[0])]}): dropped"
        )
        raw = raw[~missing]
    power = raw["power"].to_numpy()
    _refuse(
        ~np.isfinite(power),
        raw,
        path,
        "not a finite number",
        "a reading is a number of watts; mend the line or leave it empty for a missing reading",
    )
    _refuse(
        power < 0,
        raw,
        path,
        "negative power",
        "a meter of load reads zero or more; negate an export meter's column or drop it",
    )
    top, what = (MAX_GPU_POWER, "one GPU") if kind == "gpu" else (MAX_METER_POWER, "one meter")
    _refuse(
        power > top,
        raw,
        path,
        f"over {top / 1e3:,.0f} kW for {what}",
        "a value in a larger unit than its column's? convert it or head the column with its unit",
    )
    raw = raw.sort_values(["channel", "line"], kind="stable").reset_index(drop=True)
    raw = _jumps(raw, path, log)
    if raw.empty or len(raw) < 2:
        raise DataFileError(
            f"{path}: fewer than two samples with a power reading; a trace needs two or more"
        )
    steps = _steps(raw)
    step = float(np.median(list(steps.values())))
    if not np.isfinite(step):
        raise DataFileError(f"{path}: no channel has two samples: no sampling period")
    _coverage(
        raw, steps, kind, log, gpus_per_node, meta.get("gpus") if "gpus_from" in meta else None
    )
    columns = ["time", "channel", "power"] + [c for c in OPTIONAL if c in raw]
    data = raw[columns].reset_index(drop=True)
    data["channel"] = data["channel"].astype(object)
    data["power"] = data["power"].astype(np.float64)
    data.attrs["step"] = step
    names = sorted(pd.unique(data["channel"]))
    meta.update(
        kind=kind,
        channels=names,
        step=step,
        start=pd.Timestamp(data["time"].min()).to_datetime64(),
        warnings=list(log),
    )
    if gpus_per_node is not None:
        meta["gpus_per_node"] = gpus_per_node
    return data, meta


def _refuse(bad: np.ndarray, raw: pd.DataFrame, path: Path, what: str, fix: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFileError(
            f"{path}: line {raw['line'].iloc[i]}: {raw['channel'].iloc[i]} reads "
            f"{raw['power'].iloc[i]:g} W, {what} ({int(bad.sum())} such sample(s)); {fix}"
        )


def _jumps(raw: pd.DataFrame, path: Path, log: list) -> pd.DataFrame:
    """Repair each channel's backward time steps (clock jumps), drop its repeated times,
    refuse a forward jump over a day; raw is in file order within each channel."""
    t = raw["time"].to_numpy().astype(np.int64)
    same = raw["channel"].to_numpy()[1:] == raw["channel"].to_numpy()[:-1]
    d = np.where(same, np.diff(t), 1)
    typical = (
        pd.Series(np.where(same & (d > 0), d, np.nan))
        .groupby(raw["channel"].to_numpy()[1:])
        .transform("median")
        .to_numpy()
    )
    # A step back by less than half the channel's step is the stamps' jitter (a logger that
    # stalled stamps its next reading a few ms before the one it held back: MLPerf's node logs
    # after a pause, by 2-130 ms in 2-s steps): put in time order, where moving the times after
    # it by a step would misplace the rest of the log by that step [A]
    # (a channel that never steps forward has no step: NaN, and nothing of it is jitter)
    with np.errstate(invalid="ignore"):
        jitter = same & (d < 0) & (-d < 0.5 * typical)
    back = same & (d < 0) & ~jitter
    channel = raw["channel"].to_numpy()[1:]
    counts = pd.DataFrame({"back": back, "any": same & (d < 0), "steps": same}).groupby(channel)
    per = counts.sum()
    order = (per["back"] > _MAX_JUMPS) | (
        per["any"] > np.maximum(_MAX_JUMPS, _OUT_OF_ORDER * per["steps"])
    )
    if order.any():
        name = order.index[np.argmax(order.to_numpy())]
        i = int(np.flatnonzero((channel == name) & (d < 0))[0]) + 1
        raise DataFileError(
            f"{path}: line {raw['line'].iloc[i]}: {name}'s time goes back "
            f"{int(per.loc[name, 'any'])} times in {int(per.loc[name, 'steps'])} steps: not clock "
            "jumps or the stamps' jitter but a file out of order; sort it by time"
        )
    if jitter.any():
        i = int(np.flatnonzero(jitter)[0]) + 1
        log.append(
            f"{int(jitter.sum())} sample(s) stamped up to {-d[jitter].min() / 1e9:g} s before the "
            f"sample before (first at line {raw['line'].iloc[i]}; under half a step: the stamps' "
            "jitter): put in time order"
        )
    if back.any():
        shift = np.where(back, -d + np.nan_to_num(typical).astype(np.int64), 0)
        cum = pd.Series(np.r_[0, shift]).groupby(raw["channel"].to_numpy()).cumsum().to_numpy()
        i = int(np.flatnonzero(back)[0]) + 1
        log.append(
            f"time goes back {int(back.sum())} time(s) (a clock jump; first at line "
            f"{raw['line'].iloc[i]}, by {-d[i - 1] / 1e9:g} s): the times after each are moved "
            "to follow the sample before by one step"
        )
        t = t + cum
        raw = raw.assign(time=t.astype("datetime64[ns]"))
        d = np.where(same, np.diff(t), 1)
    dup = np.r_[False, same & (d == 0)]
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        log.append(
            f"{int(dup.sum())} sample(s) repeat their channel's time (first at line "
            f"{raw['line'].iloc[i]}, {raw['channel'].iloc[i]}): the later dropped"
        )
        raw = raw[~dup]
        t = t[~dup]
        same = raw["channel"].to_numpy()[1:] == raw["channel"].to_numpy()[:-1]
        d = np.where(same, np.diff(t), 1)
    far = same & (d > _MAX_GAP.astype("m8[ns]").astype(np.int64))
    if far.any():
        i = int(np.flatnonzero(far)[0]) + 1
        raise DataFileError(
            f"{path}: line {raw['line'].iloc[i]}: {raw['channel'].iloc[i]}'s time jumps forward "
            f"{d[i - 1] / 86400e9:.1f} days: a clock set wrong or files of different runs "
            "joined; split the file there"
        )
    return raw.sort_values(["channel", "time"], kind="stable").reset_index(drop=True)


def _steps(raw: pd.DataFrame) -> dict:
    """Each channel's median sampling period [s] (NaN for a channel of one sample)."""
    t = raw["time"].to_numpy().astype(np.int64)
    channel = raw["channel"].to_numpy()
    same = channel[1:] == channel[:-1]
    d = pd.Series(np.where(same, np.diff(t) / 1e9, np.nan))
    return d.groupby(channel[1:]).median().reindex(pd.unique(channel)).to_dict()


def _coverage(
    raw: pd.DataFrame, steps: dict, kind: str, log: list, gpus_per_node, poll: int | None = None
) -> None:
    """Report channels that start late, stop early or leave gaps, and GPUs absent; ``poll``
    the GPUs of a log read by count (its polls' lines, one a GPU: a GPU with a reading in the
    first or last poll is there from the start or to the end, however far a slow poll spread
    that poll's stamps)."""
    t = raw["time"]
    span = t.groupby(raw["channel"]).agg(["min", "max", "size"])
    line = raw["line"].groupby(raw["channel"]).agg(["first", "last"])
    step = pd.to_timedelta(pd.Series(steps).fillna(0), unit="s")
    late = span["min"] - t.min() > _LATE * step
    early = t.max() - span["max"] > _LATE * step
    if poll:
        numbers = np.sort(raw["line"].unique())
        late &= ~line["first"].isin(numbers[:poll])
        early &= ~line["last"].isin(numbers[-poll:])
    # One message per channel, the first few: a file of thousands would flood the log.
    for name in span.index[late][:_LISTED]:
        log.append(
            f"{name} first reports at {span.at[name, 'min']} (line "
            f"{line.at[name, 'first']}), {(span.at[name, 'min'] - t.min()).total_seconds():g}"
            " s after the trace starts: missing before"
        )
    for name in span.index[early][:_LISTED]:
        log.append(
            f"{name} stops at {span.at[name, 'max']} (line {line.at[name, 'last']}), "
            f"{(t.max() - span.at[name, 'max']).total_seconds():g} s before the trace "
            "ends: it dropped out (NaN in to_grid)"
        )
    unlisted = max(int(late.sum()) - _LISTED, 0) + max(int(early.sum()) - _LISTED, 0)
    if unlisted:
        log.append(f"{unlisted} more channel(s) start late or stop early")
    channel = raw["channel"].to_numpy()
    same = channel[1:] == channel[:-1]
    d = np.diff(t.to_numpy().astype(np.int64)) / 1e9
    gap = same & (d > 1.5 * pd.Series(steps).reindex(channel[1:]).to_numpy())
    if gap.any():
        i = int(np.flatnonzero(gap)[0]) + 1
        log.append(
            f"{int(gap.sum())} gap(s) longer than 1.5 steps, the longest {d[gap].max():g} s "
            f"(first at line {raw['line'].iloc[i]}, {channel[i]}): kept as gaps (a forward "
            "clock jump cannot be told from lost samples)"
        )
    if kind == "gpu":
        index = pd.Series(span.index).str.extract(r"^(?:(.*)/)?gpu(\d+)$")
        for host, ids in index.groupby(index[0].fillna(""))[1]:
            ids = ids.astype(int)
            if ids.max() >= 4 * MAX_CHANNELS:  # an index this large is no GPU's: not listed
                continue
            absent = sorted(set(range(int(ids.max()) + 1)) - set(ids))
            if absent:
                where = f" on {host}" if host else ""
                log.append(
                    f"no samples of GPU index {', '.join(map(str, absent))}{where} "
                    f"(the file has {', '.join(map(str, sorted(ids)))}): missing GPUs"
                )
        if gpus_per_node and len(span) % gpus_per_node:
            log.append(f"{len(span)} GPUs is not a whole number of nodes of {gpus_per_node}")
