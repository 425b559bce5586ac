"""The entry point: :func:`read_telemetry` checks its options, reads the file's text within
the bounds (:mod:`~powermodel.iotools.telemetry.lines`), detects its format from the first
lines when none is given, hands it to that format's reader, and passes the reader's rows
through the common checks and repairs (:mod:`~powermodel.iotools.telemetry.tidy`), issuing
each repair as a :class:`TelemetryWarning`."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits
from powermodel.iotools.telemetry.amd import read_device_csv
from powermodel.iotools.telemetry.dcgm import read_dcgm_exporter, read_dcgmi_dmon
from powermodel.iotools.telemetry.lines import read_log
from powermodel.iotools.telemetry.meter import read_meter
from powermodel.iotools.telemetry.mlperf_power import MLLOG, read_mlperf_power
from powermodel.iotools.telemetry.nvidia_smi import read_nvidia_smi
from powermodel.iotools.telemetry.tidy import finish

FORMATS = (
    "nvidia-smi",
    "dcgmi-dmon",
    "dcgm-exporter",
    "rocm-smi",
    "amd-smi",
    "meter",
    "mlperf-power",
)


class TelemetryWarning(UserWarning):
    """A defect of a telemetry file that was repaired: the data read is usable, and the
    message says what was changed."""


# Its public home, where users filter it (``-W error::powermodel.iotools.telemetry.
# TelemetryWarning``) and where the docs describe it once
TelemetryWarning.__module__ = "powermodel.iotools.telemetry"


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
        The file: UTF-8 text written by one of the tools :mod:`powermodel.iotools.telemetry`
        lists, with the commands that record each.
    format
        One of :data:`FORMATS`; detected from the first lines when None.
    period
        The sampling period of a file without times: ``dcgmi dmon``'s ``-d`` over 1000, the
        scrape interval, or the loop's that ran rocm-smi or amd-smi; a file with times is
        timed by them, not by this. [s]
    gpus_per_node
        GPUs per node, passed to ``meta`` for the fitter; a GPU file with more channels than
        a whole number of nodes is reported.
    columns
        The fields of an nvidia-smi log written with ``noheader``, in the order of its
        ``--query-gpu`` list (default :data:`NVIDIA_SMI_QUERY`).
    gpus
        GPUs per poll of an nvidia-smi log without ``index`` (the node's); inferred when None
        (:mod:`~powermodel.iotools.telemetry.nvidia_smi_polls`). Logs that name each line's GPU
        do not use it.

    Returns
    -------
    data : pandas.DataFrame
        ``time``, ``channel``, ``power`` [W], and ``utilization`` [1], ``sm_clock`` [MHz],
        ``temperature`` [°C], ``memory_used`` [MiB] where the file has them; sorted by
        ``(channel, time)``. ``data.attrs["step"]`` is ``meta["step"]``.
    meta : dict
        ``format``, ``kind`` (``"gpu"`` or ``"meter"``), ``channels``, ``step`` (the median
        over channels of each channel's median sampling period [s]), ``source`` (the file
        name), ``start`` (the first time), ``timezone`` (how times became UTC), ``timed``
        (False where the file has no times and ``period`` timed it), ``warnings`` (the repairs
        made, each also issued as a :class:`TelemetryWarning`), ``power_field`` (the field
        read as power), ``gpus_per_node`` when given, ``conversion_eff`` where an MLPerf power
        log states one; for an nvidia-smi log without ``index``, ``gpus`` (GPUs per poll) and
        ``gpus_from`` (how it was known: ``"given"``, the field whose values repeat, or
        ``"times"``); for rocm-smi or amd-smi read per MI200-class package, ``power_per``
        (``"package"``), ``gcds_per_package`` (2), ``packages`` and ``package_devices``.

    Raises
    ------
    DataFileError
        A file that is missing, empty, binary, not UTF-8, over the bounds of
        :mod:`~powermodel.iotools.telemetry.limits` (bytes, samples, channels), of no known
        format, or with a defect that cannot be repaired (named by line and column, with the
        fix).
    """
    path = Path(path)
    _check_options(path, format, period, gpus, gpus_per_node)
    text = read_log(path)
    if format is None:
        format = _detect(text, path)
    log: list[str] = []
    meta = {"format": format, "source": path.name, "timezone": "UTC (as written)", "timed": True}
    raw = _read_format(text, path, format, period, columns, gpus, log, meta)
    data, meta = finish(raw, meta, log, path, gpus_per_node)
    for message in log:
        warnings.warn(f"{path.name}: {message}", TelemetryWarning, stacklevel=2)
    return data, meta


def _check_options(
    path: Path,
    format: str | None,
    period: float | None,
    gpus: int | None,
    gpus_per_node: int | None,
) -> None:
    """Refuse a wrong option before a byte of the file is read."""
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
        ("gpus", gpus, limits.MAX_NODE_GPUS, "(one node's); give the GPUs the log's node has"),
        (
            "gpus_per_node",
            gpus_per_node,
            limits.MAX_CHANNEL_GPUS,
            "; give the GPUs behind a channel",
        ),
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


def _read_format(
    text: str,
    path: Path,
    format: str,
    period: float | None,
    columns: Sequence[str] | None,
    gpus: int | None,
    log: list,
    meta: dict,
) -> pd.DataFrame:
    """The rows of ``text`` read by its ``format``'s reader, each with its ``line``."""
    if format == "nvidia-smi":
        return read_nvidia_smi(text, path, columns, gpus, log, meta)
    if format == "dcgmi-dmon":
        return read_dcgmi_dmon(text, path, period, log, meta)
    if format == "dcgm-exporter":
        return read_dcgm_exporter(text, path, period, log, meta)
    if format == "mlperf-power":
        return read_mlperf_power(text, path, log, meta)
    if format in ("rocm-smi", "amd-smi"):
        return read_device_csv(text, path, format, period, log, meta)
    return read_meter(path, text, log, meta)


def _detect(text: str, path: Path) -> str:
    """The format of a file given none, from its first 64 kB."""
    head = text[:65536]
    # first: a result log's job output may hold lines like the other formats'
    if re.search(rf"^\s*(?:\d+: )?{MLLOG} ", head, re.M):
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
