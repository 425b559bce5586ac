"""Write a tidy telemetry frame (the contract of :func:`powermodel.iotools.read_telemetry`) as
each tool prints it, for tests: ``from synthetic_telemetry import write``.

Not a test module: pytest puts ``tests/`` on ``sys.path`` (rootdir-relative "prepend" import
mode, as for ``conftest``), so any test file can import it.

Formats and their options:

- ``"nvidia-smi"``: ``nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu,
  clocks.sm,temperature.gpu --format=csv -lms N``. ``index=True`` (False drops the field: one
  line per GPU per poll, in index order), ``header=True`` (``noheader``), ``units=True``
  (``nounits``), ``power_field="power.draw"`` (or ``power.draw.instant``/``.average``).
  Power with two decimals as nvidia-smi prints it, utilisation and clocks as integers.
- ``"dcgmi-dmon"``: ``dcgmi dmon -e 155,203,100,150 -d <ms>``: no times (read back with
  ``period``), the header repeated every 15 polls as dcgmi does, power with three decimals.
- ``"dcgm-exporter"``: scrapes of dcgm-exporter's ``/metrics``, concatenated;
  ``timestamps=False`` (True appends each sample's time in ms, as a Prometheus text file
  may), ``hostname="node1"`` (a channel ``"<host>/gpu<i>"`` gives its own host).
- ``"rocm-smi"``: ``rocm-smi --showtemp --showpower --showuse --showmeminfo vram --csv`` run
  in a loop: no times (read back with ``period``); each poll its header and one ``card<i>``
  row per GPU; ``power_field="Average"`` (``"Current Socket"`` as on MI300).
- ``"amd-smi"``: ``amd-smi metric --csv`` run in a loop (``command="monitor"`` for ``amd-smi
  monitor``): no times (read back with ``period``), each poll its header; ``timestamps=True``
  and ``header="once"`` write watch mode's file (``-w``: Unix seconds, one header).
- ``"meter"``: ``time`` (ISO 8601, ``Z``) and one ``"<channel> [<unit>]"`` column per
  channel; ``unit="W"`` (``"kW"``, ``"MW"``); ``offset=True`` (False writes naive times).
- ``"mlperf-power"``: an MLPerf Training power log as mlperf_logging's power_measurement.py
  writes it: ``:::MLLOG {...}`` events, the measurement's start, ``conversion_eff`` and stop
  around one ``power_reading`` per sample, its channel as the ``host`` of its metadata.

A frame with a ``poll`` column is printed poll by poll, each poll's GPUs in index order,
whatever their times (nvidia-smi stamps each line when its own query completes, so a line may
be stamped before the last one of the poll before): :func:`smi_stamps` makes such times and
:func:`node_power` a node's power, and :func:`shape` puts them together in the shapes real
logs have (:data:`SHAPES`). NaN readings print as the tools print them (``[N/A]``, ``N/A``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.iotools.telemetry import TelemetryWarning, read_telemetry

_DMON_EVERY = 15  # dcgmi dmon prints its header again after 14 further polls
# Each format's printed precision [W]: nvidia-smi 0.01 W, rocm-smi 0.1 W, amd-smi 1 W: a
# reading read back is within half of it.
PRINTED = {"nvidia-smi": 0.005, "rocm-smi": 0.05, "amd-smi": 0.5}
_UNITS = {"W": 1.0, "kW": 1e3, "MW": 1e6}


def read_warned(path, **kwargs) -> tuple[pd.DataFrame, dict, list[str]]:
    """:func:`~powermodel.iotools.telemetry.read_telemetry` of ``path``, and the texts of the
    :class:`~powermodel.iotools.telemetry.TelemetryWarning` it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data, meta = read_telemetry(path, **kwargs)
    return data, meta, [str(w.message) for w in caught if w.category is TelemetryWarning]


def in_order(frame: pd.DataFrame) -> pd.DataFrame:
    """A shape's frame in the reader's order: by channel, then time."""
    return frame.sort_values(["channel", "time"]).reset_index(drop=True)


def write(data: pd.DataFrame, path: str | Path, format: str, **options) -> Path:
    """Write ``data`` (time, channel, power [W], optional utilization [1], sm_clock [MHz],
    temperature [°C]) to ``path`` in ``format``; returns the path."""
    path = Path(path)
    writer = {
        "nvidia-smi": _nvidia_smi,
        "dcgmi-dmon": _dcgmi_dmon,
        "dcgm-exporter": _exporter,
        "rocm-smi": _rocm_smi,
        "amd-smi": _amd_smi,
        "meter": _meter,
        "mlperf-power": _mlperf_power,
    }[format]
    path.write_text(writer(data.sort_values(["time", "channel"]), **options), encoding="utf-8")
    return path


START = np.datetime64("2024-07-01T12:00:00", "ns")


def smi_stamps(
    polls: int,
    gpus: int,
    period: float = 0.1,
    spread: float = 0.8,
    slow: tuple[int, ...] = (),
    overlap: tuple[int, ...] = (),
    seed: int = 0,
    start: np.datetime64 = START,
) -> np.ndarray:
    """Times [datetime64, ms] of an nvidia-smi log, (polls, gpus): GPU k of a poll stamped when
    its query completes, the queries of a poll filling ``spread`` of the period [s] with
    jitter; a poll in ``slow`` spreads over 1–9 s (the next starts when it ends); after a poll
    in ``overlap`` the next poll's first line is stamped 5 ms before its last one."""
    if overlap and gpus < 2:
        raise ValueError("an overlap puts one GPU's line before another's: give 2 GPUs or more")
    rng = np.random.default_rng(seed)
    offsets = np.cumsum(rng.uniform(0.5, 1.5, (polls, gpus)) * period * spread / gpus, axis=1)
    slow = np.asarray(slow, dtype=int)
    spans = rng.uniform(1.0, 9.0, slow.size)
    offsets[slow] = spans[:, None] * np.arange(1, gpus + 1) / gpus
    starts = np.r_[0.0, np.cumsum(np.maximum(period, offsets[:-1, -1] + 0.01))]
    stamps = np.round((starts[:, None] + offsets) * 1e3)  # [ms], as nvidia-smi prints them
    after = np.asarray(overlap, dtype=int)
    stamps[after + 1, 0] = stamps[after, -1] - 5
    return start + stamps.astype(np.int64).astype("m8[ms]").astype("m8[ns]")


def node_power(
    polls: int,
    gpus: int,
    period: float = 0.1,
    idle: tuple[float, float] = (60.0, 80.0),
    running: float = 600.0,
    swing: float = 150.0,
    step: float = 1.2,
    loading: float = 0.2,
    seed: int = 0,
) -> pd.DataFrame:
    """A node's GPUs idle, then training: per poll and GPU (columns ``poll``, ``gpu``,
    ``power`` [W], ``utilization`` [1], ``memory_used`` [MiB]). Each GPU idles at its own level,
    spread evenly over ``idle`` [W] (boards differ by a few watts) with 0.1-W noise, for the
    first ``loading`` of the polls; then it computes at ``running`` [W] (±2 % per GPU) and
    falls by ``swing`` [W] for the exposed communication, 30 % of each ``step`` [s]. It holds
    a few MiB idle and 60–64 GiB in training, its own amount."""
    rng = np.random.default_rng(seed)
    t = np.arange(polls)[:, None] * period + np.zeros(gpus)
    levels = rng.permutation(np.linspace(*idle, gpus))
    trained = np.arange(polls)[:, None] >= int(loading * polls)
    offset = 1 + rng.uniform(-0.02, 0.02, gpus)
    comm = (t + rng.uniform(0, 0.05, gpus)) % step > 0.7 * step
    busy = (running - swing * comm) * offset + rng.normal(0, 3.0, t.shape)
    power = np.where(trained, busy, levels + rng.normal(0, 0.1, t.shape))
    memory = np.where(trained, 61_440 + rng.integers(0, 4096, gpus), 4)
    return pd.DataFrame(
        {
            "poll": np.repeat(np.arange(polls), gpus),
            "gpu": np.tile(np.arange(gpus), polls),
            "power": np.round(power, 2).ravel(),
            "utilization": np.where(trained, np.where(comm, 0.35, 1.0), 0.0).ravel(),
            "memory_used": memory.astype(float).ravel(),
        }
    )


# The shapes of real logs (issue 27): a name -> what shape() builds and how write() writes it.
SHAPES = {
    # 8 x H100 with nvidia-smi -lms 100 without index: stamps spread over 80 % of a poll, a
    # slow poll (1 %), the next poll's first line before the last one's, memory.used recorded
    "h100x8": {
        "gpus": 8,
        "power": {"idle": (65.0, 80.0), "running": 620.0, "swing": 180.0},
        "format": "nvidia-smi",
        "options": {"index": False},
    },
    # the same without memory.used: only the idle levels tell the GPUs apart
    "h100x8-power-only": {
        "gpus": 8,
        "power": {"idle": (65.0, 80.0), "running": 620.0, "swing": 180.0},
        "format": "nvidia-smi",
        "options": {"index": False},
        "drop": ("memory_used",),
    },
    # 2 GPUs of 250 W TDP idling at 15–20 W, with and without burn, without index
    "250w-x2": {
        "gpus": 2,
        "power": {"idle": (15.0, 20.0), "running": 225.0, "swing": 60.0},
        "format": "nvidia-smi",
        "options": {"index": False},
    },
    # 8 GPUs of 1,200 W (B200/GB200 class), with index, power.draw.instant
    "1200w-x8": {
        "gpus": 8,
        "power": {"idle": (140.0, 180.0), "running": 1050.0, "swing": 350.0},
        "format": "nvidia-smi",
        "options": {"power_field": "power.draw.instant"},
    },
    # 8 x MI300X (750 W) through rocm-smi in a loop every 100 ms (no times: period)
    "mi300x-rocm-smi": {
        "gpus": 8,
        "power": {"idle": (130.0, 140.0), "running": 650.0, "swing": 200.0},
        "format": "rocm-smi",
        "options": {"power_field": "Current Socket"},
        "spread": 0.0,
    },
    # 8 x MI300X through amd-smi metric -w 1 --csv (Unix-second timestamps)
    "mi300x-amd-smi": {
        "gpus": 8,
        "power": {"idle": (130.0, 140.0), "running": 650.0, "swing": 200.0},
        "format": "amd-smi",
        "options": {"timestamps": True, "header": "once"},
        "period": 1.0,
        "spread": 0.0,
    },
}


def shape(name: str, polls: int = 600, seed: int = 0, **power) -> tuple[pd.DataFrame, str, dict]:
    """A trace in the shape ``name`` of :data:`SHAPES`: its frame (with ``poll``), format and
    write() options. ``power`` overrides :func:`node_power`'s arguments (``running``,
    ``idle``...). nvidia-smi shapes without index have a slow poll and an overlap every
    100 polls (1 %)."""
    spec = SHAPES[name]
    gpus, period = spec["gpus"], spec.get("period", 0.1)
    frame = node_power(polls, gpus, period, seed=seed, **{**spec["power"], **power})
    every = np.arange(50, polls - 1, 100)
    times = smi_stamps(
        polls,
        gpus,
        period,
        spread=spec.get("spread", 0.8),
        slow=tuple(every) if not spec["options"].get("index", True) else (),
        overlap=tuple(every + 20) if not spec["options"].get("index", True) else (),
        seed=seed,
    )
    if spec["format"] == "amd-smi":  # watch mode prints whole Unix seconds, one per poll
        times = START + np.arange(polls).repeat(gpus).reshape(polls, gpus) * np.timedelta64(
            int(period * 1e9), "ns"
        )
    frame = frame.assign(time=times.ravel(), channel="gpu" + frame["gpu"].astype(str)).drop(
        columns=["gpu", *spec.get("drop", ())]
    )
    return frame, spec["format"], dict(spec["options"])


def _gpu(channel: pd.Series) -> np.ndarray:
    return channel.str.extract(r"gpu(\d+)$")[0].astype(int).to_numpy()


def _ordered(data: pd.DataFrame) -> pd.DataFrame:
    """Rows by poll (by time where no ``poll`` is given), then GPU index: the order the tools
    print a poll in."""
    first = "poll" if "poll" in data else "time"
    return data.assign(_gpu=_gpu(data["channel"])).sort_values([first, "_gpu"], kind="stable")


def _numbers(values: pd.Series, spec: str, missing: str = "N/A") -> pd.Series:
    """Readings as the tools print them, ``missing`` for NaN."""
    return values.map(spec.format).where(values.notna(), missing)


def _nvidia_smi(
    data: pd.DataFrame,
    index: bool = True,
    header: bool = True,
    units: bool = True,
    power_field: str = "power.draw",
) -> str:
    data = _ordered(data)
    stamp = pd.to_datetime(data["time"]).dt.strftime("%Y/%m/%d %H:%M:%S.%f").str[:-3]
    fields = [("timestamp", "", stamp)]
    if index:
        fields.append(("index", "", data["_gpu"].astype(str)))
    power = data["power"].map("{:.2f}".format) + (" W" if units else "")
    fields.append((power_field, "W", power.where(data["power"].notna(), "[N/A]")))
    if "utilization" in data:
        fields.append(("utilization.gpu", "%", (data["utilization"] * 100).round().astype(int)))
    if "sm_clock" in data:
        fields.append(("clocks.sm", "MHz", data["sm_clock"].round().astype(int)))
    if "temperature" in data:
        fields.append(("temperature.gpu", "", data["temperature"].round().astype(int)))
    if "memory_used" in data:
        fields.append(("memory.used", "MiB", data["memory_used"].round().astype(int)))
    # each reading with its unit, as nvidia-smi prints them (power's is on it already)
    columns = [
        v.astype(str) + (f" {u}" if units and u and n != power_field else "") for n, u, v in fields
    ]
    rows = columns[0]
    for column in columns[1:]:
        rows = rows + ", " + column
    lines = list(rows)
    if header:
        names = [f"{n} [{u}]" if u else n for n, u, _ in fields]
        lines.insert(0, ", ".join(names))
    return "\n".join(lines) + "\n"


def _dcgmi_dmon(data: pd.DataFrame) -> str:
    data = _ordered(data)
    fields = [("POWER", "W", data["power"].map("{:.3f}".format))]
    if "utilization" in data:
        fields.append(("GPUTL", "%", (data["utilization"] * 100).round().astype(int).astype(str)))
    if "sm_clock" in data:
        fields.append(("SMCLK", "MHZ", data["sm_clock"].round().astype(int).astype(str)))
    if "temperature" in data:
        fields.append(("TMPTR", "C", data["temperature"].round().astype(int).astype(str)))
    head = f"{'#Entity':<10}" + "".join(f"{n:<12}" for n, _, _ in fields)
    unit = f"{'ID':<10}" + "".join(f"{u:<12}" for _, u, _ in fields)
    rows = ("GPU " + data["_gpu"].astype(str)).str.ljust(10)
    for _, _, values in fields:
        rows = rows + values.str.ljust(12)
    poll = pd.factorize(data["time"])[0]
    starts = np.r_[True, poll[1:] != poll[:-1]] & (poll % _DMON_EVERY == 0)
    lines = []
    for start, row in zip(starts, rows, strict=True):
        if start:
            lines += [head.rstrip(), unit.rstrip()]
        lines.append(row.rstrip())
    return "\n".join(lines) + "\n"


def _exporter(data: pd.DataFrame, timestamps: bool = False, hostname: str = "node1") -> str:
    data = _ordered(data)
    host = data["channel"].str.extract(r"^(.*)/gpu\d+$")[0].fillna(hostname)
    labels = (
        'gpu="'
        + data["_gpu"].astype(str)
        + '",UUID="GPU-'
        + data["_gpu"].astype(str).str.zfill(8)
        + '-0000-0000-0000-000000000000",device="nvidia'
        + data["_gpu"].astype(str)
        + '",modelName="NVIDIA H100 80GB HBM3",Hostname="'
        + host
        + '"'
    )
    ms = (pd.to_datetime(data["time"]).astype("int64") // 1_000_000).astype(str)
    metrics = [
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", data["power"].map("{:.3f}".format))
    ]
    if "utilization" in data:
        values = (data["utilization"] * 100).round().astype(int).astype(str)
        metrics.append(("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", values))
    if "sm_clock" in data:
        values = data["sm_clock"].round().astype(int).astype(str)
        metrics.append(("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", values))
    if "temperature" in data:
        values = data["temperature"].round().astype(int).astype(str)
        metrics.append(("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", values))
    # Each scrape prints, per metric, its HELP and TYPE lines, then one sample per GPU.
    scrape = pd.factorize(data["time"])[0]
    parts = []
    for k, (name, help_text, values) in enumerate(metrics):
        sample = name + "{" + labels + "} " + values
        if timestamps:
            sample = sample + " " + ms
        parts.append(
            pd.DataFrame(
                {
                    "scrape": scrape,
                    "metric": k,
                    "row": np.arange(len(data)),
                    "text": sample.to_numpy(),
                }
            )
        )
        for j, text in enumerate((f"# HELP {name} {help_text}", f"# TYPE {name} gauge")):
            parts.append(
                pd.DataFrame({"scrape": np.unique(scrape), "metric": k, "row": j - 2, "text": text})
            )
    lines = pd.concat(parts).sort_values(["scrape", "metric", "row"], kind="stable")
    return "\n".join(lines["text"]) + "\n"


def _polls(data: pd.DataFrame) -> np.ndarray:
    return pd.factorize(data["poll"] if "poll" in data else data["time"])[0]


def _with_headers(head: str, rows: pd.Series, poll: np.ndarray, each: bool) -> str:
    """The rows, with ``head`` before each poll's (``each``) or once."""
    starts = (
        np.r_[True, poll[1:] != poll[:-1]] if each else np.r_[True, np.zeros(len(rows) - 1, bool)]
    )
    lines = pd.DataFrame({"order": np.arange(len(rows)), "text": rows.to_numpy()})
    heads = pd.DataFrame({"order": np.flatnonzero(starts) - 0.5, "text": head})
    return "\n".join(pd.concat([lines, heads]).sort_values("order")["text"]) + "\n"


def _rocm_smi(data: pd.DataFrame, power_field: str = "Average") -> str:
    data = _ordered(data)
    fields = [("device", "card" + data["_gpu"].astype(str))]
    if "temperature" in data:
        fields.append(
            ("Temperature (Sensor junction) (C)", _numbers(data["temperature"], "{:.1f}"))
        )
    fields.append((f"{power_field} Graphics Package Power (W)", _numbers(data["power"], "{:.1f}")))
    if "utilization" in data:
        fields.append(("GPU use (%)", _numbers((data["utilization"] * 100).round(), "{:.0f}")))
    if "memory_used" in data:
        fields.append(("VRAM Total Memory (B)", pd.Series("206141652992", index=data.index)))
        used = _numbers((data["memory_used"] * 2**20).round(), "{:.0f}")
        fields.append(("VRAM Total Used Memory (B)", used))
    rows = fields[0][1]
    for _, values in fields[1:]:
        rows = rows + "," + values
    return _with_headers(",".join(n for n, _ in fields), rows, _polls(data), each=True)


def _amd_smi(
    data: pd.DataFrame, command: str = "metric", timestamps: bool = False, header: str = "each"
) -> str:
    data = _ordered(data)
    seconds = (pd.to_datetime(data["time"]).astype("int64") // 10**9).astype(str)
    fields = [("timestamp", seconds)] if timestamps else []
    fields.append(("gpu", data["_gpu"].astype(str)))
    power = _numbers(data["power"], "{:.0f}")
    use = (
        _numbers((data["utilization"] * 100).round(), "{:.0f}") if "utilization" in data else "N/A"
    )
    temp = _numbers(data["temperature"], "{:.0f}") if "temperature" in data else None
    memory = _numbers(data["memory_used"], "{:.0f}") if "memory_used" in data else None
    if command == "metric":  # its sections flattened to their keys, in amd-smi's order
        fields += [
            ("gfx_activity", use),
            ("umc_activity", "0"),
            ("mm_activity", "N/A"),
            ("vcn_activity", '"[0, 0, 0, 0]"'),
            ("socket_power", power),
            ("gfx_voltage", "N/A"),
            ("throttle_status", "UNTHROTTLED"),
            ("power_management", "ENABLED"),
        ]
        if temp is not None:
            fields += [("edge", "N/A"), ("hotspot", temp), ("mem", "40")]
        if memory is not None:
            fields += [("total_vram", "196592"), ("used_vram", memory)]
    else:
        fields += [("power_usage", power)]
        if temp is not None:
            fields += [("hotspot_temperature", temp), ("memory_temperature", "40")]
        fields += [("gfx", use), ("mem", "0")]
        if memory is not None:
            fields += [("vram_used", memory), ("vram_total", "196592")]
    rows = fields[0][1]
    for _, values in fields[1:]:
        rows = rows + "," + values
    head = ",".join(n for n, _ in fields)
    return _with_headers(head, rows, _polls(data), each=header == "each")


def _meter(data: pd.DataFrame, unit: str = "W", offset: bool = True) -> str:
    wide = data.pivot(index="time", columns="channel", values="power") / _UNITS[unit]
    stamp = pd.to_datetime(wide.index).strftime("%Y-%m-%dT%H:%M:%S.%f") + ("Z" if offset else "")
    lines = [",".join(["time"] + [f"{c} [{unit}]" for c in wide.columns])]
    cells = wide.map(lambda v: "" if np.isnan(v) else repr(float(v)))
    lines += [",".join([s, *row]) for s, row in zip(stamp, cells.to_numpy().tolist(), strict=True)]
    return "\n".join(lines) + "\n"


def _mlperf_power(data: pd.DataFrame, conversion_eff: float = 0.94) -> str:
    ms = pd.to_datetime(data["time"]).astype("int64") // 1_000_000
    where = '"metadata": {"file": "power_measurement.py", "lineno": 88, "host": "'

    def event(time_ms, kind: str, key: str, value: str, metadata: str = "{}") -> str:
        return (
            f':::MLLOG {{"namespace": "", "time_ms": {time_ms}, "event_type": "{kind}", '
            f'"key": "{key}", "value": {value}, "metadata": {metadata}}}'
        )

    first, last = int(ms.min()), int(ms.max())
    readings = (
        ':::MLLOG {"namespace": "", "time_ms": '
        + ms.astype(str)
        + ', "event_type": "POINT_IN_TIME", "key": "power_reading", "value": '
        + data["power"].map("{:.1f}".format)
        + ", "
        + where
        + data["channel"]
        + '"}}'
    )
    lines = [
        event(first, "INTERVAL_START", "power_measurement_start", "null"),
        event(
            first,
            "POINT_IN_TIME",
            "conversion_eff",
            f"{conversion_eff}",
            '{"measurement_type": "AC"}',
        ),
        *readings,
        event(last, "INTERVAL_END", "power_measurement_stop", "null"),
    ]
    return "\n".join(lines) + "\n"
