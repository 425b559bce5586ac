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

The formats (:data:`FORMATS`), each read by its own module:

- ``nvidia-smi`` (:mod:`~powermodel.iotools.telemetry.nvidia_smi`): ``nvidia-smi
  --query-gpu=timestamp,index,power.draw,utilization.gpu,clocks.sm,temperature.gpu,memory.used
  --format=csv -lms 100``, with or without ``index``, ``noheader`` or ``nounits``;
  ``power.draw.instant`` (preferred) or ``power.draw.average`` may replace ``power.draw``.
  Without ``index`` line k of a logger run is GPU k mod N
  (:mod:`~powermodel.iotools.telemetry.nvidia_smi_polls`). Timestamps are read as UTC.
- ``dcgmi-dmon`` (:mod:`~powermodel.iotools.telemetry.dcgm`): ``dcgmi dmon -e
  155,203,100,150 -d 100`` output; it prints no times, so ``period`` is required.
- ``dcgm-exporter`` (:mod:`~powermodel.iotools.telemetry.dcgm`): concatenated Prometheus
  scrapes of dcgm-exporter (``DCGM_FI_DEV_POWER_USAGE``, ``_GPU_UTIL``, ``_SM_CLOCK``,
  ``_GPU_TEMP``; other metrics are ignored); samples without a timestamp need ``period``.
- ``rocm-smi`` (:mod:`~powermodel.iotools.telemetry.amd`): ``rocm-smi --showpower --showuse
  --showtemp --showmeminfo vram --csv`` run in a loop: a ``device`` column (``card0``...),
  fields headed with their unit, ``Average Graphics Package Power (W)`` or ``Current Socket
  Graphics Package Power (W)``; it prints no times, so ``period`` (the loop's) is required.
  MI250/MI250X GCD pairs that print their package's power on one GCD only are read per
  package.
- ``amd-smi`` (:mod:`~powermodel.iotools.telemetry.amd`): ``amd-smi metric --csv``
  (``socket_power``, ``gfx_activity``, ``hotspot``, ``used_vram``) or ``amd-smi monitor --csv``
  (``power_usage``, ``gfx``, ``gfx_clk``, ``hotspot_temperature``, ``vram_used``), a ``gpu``
  column; with ``-w`` (watch) a ``timestamp`` column (Unix seconds) times it, else ``period``.
- ``meter`` (:mod:`~powermodel.iotools.telemetry.meter`): a CSV of a time column and one power
  column per meter, each headed with its unit, ``rack1 [kW]``; times as
  :func:`powermodel.iotools.trace.read_trace` reads them.
- ``mlperf-power`` (:mod:`~powermodel.iotools.telemetry.mlperf_power`): an MLPerf Training
  power log (``power/<result>/node_<i>.txt`` of a submission): ``:::MLLOG {...}`` lines whose
  ``power_reading`` events carry a node meter's reading [W] and its Unix time in ms; one
  channel per ``host`` the readings' metadata name (``node`` where they name none), read as
  meters.

Repaired, with a warning (:mod:`~powermodel.iotools.telemetry.tidy` and the readers): a last
line cut mid-way (dropped); a header repeated when the logger restarted; readings the tool
marks missing (``[N/A]``, ``N/A``: the sample is dropped when it is the power); times going
backwards within a channel (an NTP step: the times after it are moved to follow the sample
before by one median step); the same time twice for one channel (the later dropped); value
suffixes that differ from row to row where no header gives the unit (each converted by its own
suffix); channels that start late, stop early or leave gaps (kept as they are:
:func:`to_grid` shows NaN there). A time jumping forward cannot be told from lost samples and
is kept as a gap; past one day it is refused.

The package: :mod:`~powermodel.iotools.telemetry.read` (the entry point: options, detection,
dispatch), one module a source (above), and the pieces they share:
:mod:`~powermodel.iotools.telemetry.limits` (the bounds), :mod:`~powermodel.iotools.telemetry.lines`
(the text and its lines), :mod:`~powermodel.iotools.telemetry.units` (readings in the
vocabulary's units), :mod:`~powermodel.iotools.telemetry.timing` (times from stamps or a period),
:mod:`~powermodel.iotools.telemetry.tidy` (the common checks and repairs) and
:mod:`~powermodel.iotools.telemetry.grid` (:func:`to_grid`).
"""

from powermodel.iotools.telemetry.grid import to_grid
from powermodel.iotools.telemetry.nvidia_smi import NVIDIA_SMI_QUERY
from powermodel.iotools.telemetry.read import FORMATS, TelemetryWarning, read_telemetry

__all__ = ["FORMATS", "NVIDIA_SMI_QUERY", "TelemetryWarning", "read_telemetry", "to_grid"]
