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
- ``"meter"``: ``time`` (ISO 8601, ``Z``) and one ``"<channel> [<unit>]"`` column per
  channel; ``unit="W"`` (``"kW"``, ``"MW"``); ``offset=True`` (False writes naive times).
- ``"mlperf-power"``: an MLPerf Training power log as mlperf_logging's power_measurement.py
  writes it: ``:::MLLOG {...}`` events, the measurement's start, ``conversion_eff`` and stop
  around one ``power_reading`` per sample, its channel as the ``host`` of its metadata.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

_DMON_EVERY = 15  # dcgmi dmon prints its header again after 14 further polls
_UNITS = {"W": 1.0, "kW": 1e3, "MW": 1e6}


def write(data: pd.DataFrame, path: str | Path, format: str, **options) -> Path:
    """Write ``data`` (time, channel, power [W], optional utilization [1], sm_clock [MHz],
    temperature [°C]) to ``path`` in ``format``; returns the path."""
    path = Path(path)
    writer = {
        "nvidia-smi": _nvidia_smi,
        "dcgmi-dmon": _dcgmi_dmon,
        "dcgm-exporter": _exporter,
        "meter": _meter,
        "mlperf-power": _mlperf_power,
    }[format]
    path.write_text(writer(data.sort_values(["time", "channel"]), **options), encoding="utf-8")
    return path


def _gpu(channel: pd.Series) -> np.ndarray:
    return channel.str.extract(r"gpu(\d+)$")[0].astype(int).to_numpy()


def _ordered(data: pd.DataFrame) -> pd.DataFrame:
    """Rows by time, then GPU index: the order the tools print a poll in."""
    return data.assign(_gpu=_gpu(data["channel"])).sort_values(["time", "_gpu"])


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
    fields.append((power_field, "W", data["power"].map("{:.2f}".format)))
    if "utilization" in data:
        fields.append(("utilization.gpu", "%", (data["utilization"] * 100).round().astype(int)))
    if "sm_clock" in data:
        fields.append(("clocks.sm", "MHz", data["sm_clock"].round().astype(int)))
    if "temperature" in data:
        fields.append(("temperature.gpu", "", data["temperature"].round().astype(int)))
    columns = [v.astype(str) + (f" {u}" if units and u else "") for _, u, v in fields]
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
