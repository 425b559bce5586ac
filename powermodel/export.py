"""Writing profiles: CSV (pyarrow), Parquet, NetCDF. The format follows the file extension."""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import xarray as xr

from powermodel.analysis import resample as coarsen
from powermodel.analysis import step_seconds
from powermodel.errors import PowerModelError
from powermodel.output import DirectFile, check_folder, netcdf, staged, staged_folder
from powermodel.scenario import is_timezone, parse_duration, shorten
from powermodel.variables import Q_SIGN, header

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "check_path",
    "check_timezone",
    "CSV_DIGITS",
    "CsvFile",
    "DATASET_FILES",
    "decimal_text",
    "DEFAULT_GRID",
    "export_tool",
    "FORMATS",
    "iso_times",
    "parquet_writer",
    "profile_table",
    "significant",
    "Tool",
    "TOOLS",
    "write",
    "writing",
]

FORMATS = (".csv", ".parquet", ".nc")


def profile_table(ds: xr.Dataset, headers: bool = True) -> pa.Table:
    """The ``time`` variables of a Dataset as an Arrow table, its attrs as Arrow metadata.

    ``time`` is UTC. Each field carries its variable's attrs (``units``, ``long_name``,
    ``description``, ``cell_methods``) and the schema the Dataset's (``scenario``, ``dt``,
    ``site_timezone``, ...): Parquet keeps both. With ``headers`` the columns are named
    ``name [units]`` (:func:`powermodel.variables.header`), for CSV, which keeps no metadata.
    ``job_state`` is written as state names. The columns are the Dataset's own arrays where
    their types allow (numbers and times are not copied).
    """
    time = pa.array(ds["time"].values.astype("datetime64[ns]", copy=False))
    time = time.cast(pa.timestamp("ns", tz="UTC"))
    fields, arrays = [pa.field("time", time.type, metadata=_metadata(ds["time"].attrs))], [time]
    for name, var in ds.data_vars.items():
        if var.dims != ("time",):
            continue
        if "flag_meanings" in var.attrs:
            names = np.array(var.attrs["flag_meanings"].split())
            array = pa.DictionaryArray.from_arrays(_codes(var), names)
        else:
            array = pa.array(var.values)
        label = header(name, var.attrs.get("units")) if headers else name
        fields.append(pa.field(label, array.type, metadata=_metadata(var.attrs)))
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=_metadata(ds.attrs)))


def _codes(var: xr.DataArray) -> pa.Array:
    """A flag variable's values as indices into its ``flag_meanings`` (int8): the values
    themselves where its ``flag_values`` count 0, 1, 2, ..."""
    flags = np.asarray(var.attrs["flag_values"])
    values = var.values
    if values.dtype == np.int8 and np.array_equal(flags, np.arange(flags.size)):
        return pa.array(values)
    return pa.array(np.searchsorted(flags, values), pa.int8())


def _metadata(attrs: dict) -> dict[str, str]:
    """Attrs as Arrow metadata, which holds text: strings as they are, numbers and lists as JSON."""
    return {
        key: value if isinstance(value, str) else json.dumps(np.asarray(value).tolist())
        for key, value in attrs.items()
    }


def iso_times(time: pa.Array, dt: float) -> pa.Array:
    """ISO-8601 UTC strings (``2024-07-01T00:00:00Z``), with fractions only where ``dt`` needs them.

    Casting naive timestamps and patching the separator is 20 times faster than ``strftime``.
    """
    unit = _time_unit(dt)
    text = pc.cast(time.cast(pa.timestamp(unit, tz="UTC")).cast(pa.timestamp(unit)), pa.string())
    text = pc.replace_substring(text, " ", "T", max_replacements=1)
    return pc.binary_join_element_wise(text, pa.scalar("Z"), "")


def _time_unit(dt: float) -> str:
    """The unit a step's times are written in: seconds, or milliseconds where ``dt`` has a
    fraction."""
    return "s" if float(dt).is_integer() else "ms"


def check_path(path: str | Path) -> Path:
    """The output path, if its extension names a format this module writes and a file can be
    made there (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise PowerModelError(
            f"cannot write {str(path)!r}: unknown extension {path.suffix!r}; use one of "
            + ", ".join(FORMATS)
        )
    return check_folder(path)


def check_timezone(timezone: str | None, path: Path) -> None:
    """A local-time column is asked for a CSV only, in a timezone that exists."""
    if timezone is None:
        return
    if path.suffix != ".csv":
        raise PowerModelError(
            f"--timezone adds a local-time column to a CSV; {path.name} is {path.suffix}: its "
            "times are UTC with the site's timezone in the metadata (site_timezone)"
        )
    if not is_timezone(timezone):
        raise PowerModelError(
            f"unknown timezone {shorten(timezone, 60)}: use an IANA name such as "
            "'America/New_York', or 'site' for the scenario's site.timezone"
        )


def write(
    ds: xr.Dataset, path: str | Path, resample: str | None = None, timezone: str | None = None
) -> Path:
    """Write a Dataset's profile to ``path``: ``.csv``, ``.parquet`` or ``.nc``.

    Parameters
    ----------
    ds
        A simulated Dataset.
    path
        Output file; its extension chooses the format.
    resample
        A coarser step (``"1min"``): interval means plus per-interval min and max.
    timezone
        CSV only: an IANA timezone (``"America/New_York"``) whose local time is written beside
        UTC (:func:`csv_table`).

    The file appears whole or not at all (:func:`powermodel.output.staged`): a write that fails
    or is interrupted leaves an earlier file of the name as it was.
    """
    with writing(ds, path, resample, timezone) as written:
        pass
    return written


@contextmanager
def writing(
    ds: xr.Dataset, path: str | Path, resample: str | None = None, timezone: str | None = None
) -> Iterator[Path]:
    """:func:`write` in a thread of its own while the block runs; yields the checked path.

    A command has more to do once its run is simulated (metrics, tables, the summary): the
    profile is written meanwhile, a row group (:data:`ROWS`) at a time, so that the command
    takes about the longer of the two, not their sum (NetCDF is written after the block, in
    the calling thread). The file is in place, whole, when the block ends, or absent: a write
    that fails raises its error there; a block that raises (a Ctrl-C among them) stops the
    writer at its next chunk, waits for it, and removes its temporary file.
    """
    path = check_path(path)
    check_timezone(timezone, path)
    if resample is not None:
        ds = coarsen(ds, resample)
    with staged(path) as temporary:
        if path.suffix == ".nc":
            yield path
            netcdf(ds, temporary)
            return
        file = ChunkFile(temporary, path.suffix, timezone)
        with ChunkWriter(file.take, file.close, ahead=None) as writer:
            rows = ROWS[path.suffix]
            for lo in range(0, max(ds.sizes["time"], 1), rows):
                writer.put(ds.isel(time=slice(lo, lo + rows)))
            yield path


# Rows a profile is written at a time: a Parquet row group (pyarrow's default length, so an
# in-memory run's file keeps the row groups it had), or a part of a CSV (its columns as the
# text's kernel reads them take some 170 B a row while its blocks are made, CsvFile)
ROWS = {".parquet": 1 << 20, ".csv": 1 << 18}


class ChunkFile:
    """A file the chunks are appended to (:func:`append_chunk`), opened at the first: ``sink``
    a temporary file's path, closed with the writer."""

    def __init__(self, sink: Path, suffix: str, timezone: str | None) -> None:
        self.args, self.writer = (sink, suffix, timezone), None

    def take(self, ds: xr.Dataset) -> None:
        """Append ``ds`` in equal parts of at most :data:`ROWS` rows (a streamed chunk of
        1,051,200 steps is two row groups of 525,600, not one of 1,048,576 and one of 2,624)."""
        n = ds.sizes["time"]
        parts = max(-(-n // ROWS[self.args[1]]), 1)
        rows = max(-(-n // parts), 1)
        for lo in range(0, max(n, 1), rows):
            part = ds.isel(time=slice(lo, lo + rows))
            self.writer = append_chunk(self.writer, part, *self.args)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class ChunkWriter:
    """The chunks taken in order (``take``, then ``close``) by a thread of its own: pyarrow's
    encoding and compression release the GIL, so the file's writer works on a chunk while
    the next is made (a streamed run), or while the command makes its summary (a run in
    memory, :func:`writing`). With ``ahead`` 1 a chunk is handed over once the one before is
    taken (the peak holds two chunks: the one taken and the one made); None hands every
    chunk over at once (views of a run in memory). An error in the thread is raised in the
    caller at the next chunk or at the end, and one in the caller stops the taking at the
    next chunk (a staged file is then removed)."""

    def __init__(
        self,
        take: Callable[[xr.Dataset], None],
        close: Callable[[], None] = lambda: None,
        ahead: int | None = 1,
    ) -> None:
        self.take, self.close = take, close
        self.queue: queue.Queue[xr.Dataset | None] = queue.Queue()
        # released as each chunk is taken; None: never waited for
        self.free = threading.Semaphore(ahead or sys.maxsize)
        self.error: BaseException | None = None
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="powermodel-chunks", daemon=True)

    def __enter__(self) -> ChunkWriter:
        self.thread.start()
        return self

    def put(self, ds: xr.Dataset) -> None:
        """Hand over the next chunk's Dataset (waiting for the one before to be taken)."""
        self.free.acquire()
        self._raise()
        self.queue.put(ds)

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> None:
        self.stopped = exc is not None
        self.queue.put(None)
        self.thread.join()
        if exc is None:
            self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            while True:
                ds = self.queue.get()
                if ds is None:
                    break
                if not self.stopped:
                    self.take(ds)
                ds = None  # not held while the next is waited for
                self.free.release()
        except BaseException as exc:  # raised in the caller; the queue is still drained
            self.error = exc
            self.free.release()
            while self.queue.get() is not None:
                self.free.release()
        finally:
            try:
                self.close()
            except BaseException as exc:
                self.error = self.error or exc


def parquet_writer(sink: str | Path | pa.NativeFile, schema: pa.Schema) -> pq.ParquetWriter:
    """A Parquet writer of profile tables (:func:`profile_table`) with the encodings their
    columns suit: dictionaries only for the state names (a float column's values are mostly
    distinct, and its dictionary was built only to be dropped), the times as their deltas
    (``DELTA_BINARY_PACKED``: a regular step takes bits, not Snappy's 6.3 bytes, a sixth of
    54 days' file, and 4 % less of its writer's time), Snappy, statistics kept."""
    names = [field.name for field in schema if pa.types.is_dictionary(field.type)]
    times = {"time": "DELTA_BINARY_PACKED"} if "time" in schema.names else None
    return pq.ParquetWriter(sink, schema, use_dictionary=names, column_encoding=times)


def append_chunk(
    writer: pq.ParquetWriter | CsvFile | None,
    ds: xr.Dataset,
    sink: Path,
    suffix: str,
    timezone: str | None,
) -> pq.ParquetWriter | CsvFile:
    """Append a chunk's Dataset ``ds`` to ``sink`` (a temporary file) in the format ``suffix``
    names, opening the writer at the first: a run written in row groups and a streamed run's
    chunks alike."""
    if suffix == ".parquet":
        table = profile_table(ds, headers=False)
        writer = writer or parquet_writer(sink, table.schema)
        writer.write_table(table)
    else:
        writer = writer or CsvFile(sink, timezone)
        writer.write(ds)
    return writer


# What a CSV value keeps: 7 significant digits, a part in ten million of the value (grid power
# of a 16 MW site to 10 W, of an 8-GPU node to a milliwatt; a voltage to 1e-6 pu; a temperature
# to 0.0001 K), finer than anything the model resolves, and half the file of all 17.
CSV_DIGITS = 7
# Rows a thread makes the text of at a time: about 9 MB of text, made while the block before
# is written
CSV_BLOCK = 1 << 16


class CsvFile:
    """A CSV written a part at a time (:meth:`write`), its header with the first: each part's
    rows are made into text by the compiled kernel (:func:`powermodel._csvtext.rows`), a
    block of :data:`CSV_BLOCK` rows at a time on each core, and written in order, a block
    once it is made, while the blocks after it (the next part's among them) are made.
    :meth:`close` writes the blocks still being made.

    The text is that of pyarrow's CSV writer with no quoting (the header's names quoted), of
    the table :func:`profile_table` gives with headers: ``time`` as ISO 8601 UTC
    (:func:`iso_times`); each float to :data:`CSV_DIGITS` significant digits
    (:func:`decimal_text`); every other column as pyarrow casts it to text (the state names;
    a null written empty); with a ``timezone`` (an IANA name) the local time beside ``time``
    as spreadsheets read it (``2024-06-30 20:00:00``, no offset: the UTC column says which of
    a repeated hour). A text with a comma, a quote or a line break is refused. The file at
    ``path`` is opened here (:class:`powermodel.output.DirectFile`) and closed by
    :meth:`close`.
    """

    def __init__(self, path: Path, timezone: str | None = None) -> None:
        from powermodel import _csvtext  # noqa: PLC0415 - numba, for a CSV only

        self.kernel, self.timezone = _csvtext, timezone
        self.sink = DirectFile(path)
        self.names: list[str] | None = None
        self.free: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()  # buffers to reuse
        # the blocks handed to the threads and not yet written, in order: two a core at most
        self.made: deque[Future[tuple[np.ndarray, int]]] = deque()
        self.ahead = 2 * _cores()

    def write(self, ds: xr.Dataset) -> None:
        """Append the rows of ``ds`` (the first part also writes the header)."""
        names, columns = self._columns(ds)
        if self.names is None:
            self.names = names
            header = ",".join('"' + n.replace('"', '""') + '"' for n in names) + "\n"
            self.sink.write(header.encode())
        elif names != self.names:
            raise PowerModelError(f"a part's columns {names} are not the file's {self.names}")
        n = columns[-1].shape[1] - 1
        for lo in range(0, n, CSV_BLOCK):
            while len(self.made) >= self.ahead:
                self._write_next()
            self.made.append(_pool().submit(self._block, columns, lo, min(lo + CSV_BLOCK, n)))

    def close(self) -> None:
        """Write the blocks still being made; then close the file."""
        try:
            while self.made:
                self._write_next()
        finally:
            for block in self.made:  # after a failed write: none left running
                block.cancel() or block.exception()
            self.sink.close()

    def _write_next(self) -> None:
        buffer, used = self.made[0].result()
        self.made.popleft()
        self.sink.write(memoryview(buffer)[:used])
        self.free.put(buffer)

    def _columns(self, ds: xr.Dataset) -> tuple[list[str], tuple]:
        """The part's header names and the kernel's columns (:func:`_csvtext.rows`): each
        column's kind and index, the floats as rows of doubles, the times [ns since 1970]
        and whether they are written to the millisecond, the texts' bytes joined, and each
        text's field offsets into them (a row a text)."""
        kernel, table = self.kernel, profile_table(ds)
        utc, dt = table["time"], step_seconds(ds)
        times = utc.cast(pa.int64()).to_numpy()
        millis = _time_unit(dt) == "ms" or bool(np.any(times % 1_000_000_000))
        names, kinds, which, floats, texts = [], [], [], [], []

        def add(name: str, kind: int, column: object) -> None:
            group = floats if kind == kernel.NUMBER else texts
            names.append(name)
            kinds.append(kind)
            which.append(len(group) if kind != kernel.TIME else 0)
            if kind != kernel.TIME:
                group.append(column)

        for i, field in enumerate(table.schema):
            column = table.column(i)
            if i == 0:
                add(field.name, kernel.TIME, None)
                if self.timezone is not None:
                    local = _local_times(utc, dt, self.timezone)
                    add(f"local time ({self.timezone})", kernel.TEXT, local)
            elif pa.types.is_floating(field.type):
                add(field.name, kernel.NUMBER, column)
            else:
                add(field.name, kernel.TEXT, _unquoted(column, field.name))
        n = table.num_rows
        stacked = np.empty((len(floats), n))
        for k, column in enumerate(floats):
            stacked[k] = column.to_numpy()
        data, starts, base = [], np.empty((len(texts), n + 1), np.int64), 0
        for k, text in enumerate(texts):
            text = pc.fill_null(text, "").cast(pa.large_string()).combine_chunks()
            offsets = np.frombuffer(text.buffers()[1], np.int64)[text.offset : text.offset + n + 1]
            data.append(np.frombuffer(text.buffers()[2], np.uint8)[offsets[0] : offsets[-1]])
            starts[k] = offsets - offsets[0] + base
            base += data[-1].size
        joined = np.concatenate(data) if data else np.empty(0, np.uint8)
        columns = (np.array(kinds, np.int64), np.array(which, np.int64), stacked, times, millis)
        return names, (*columns, joined, starts)

    def _block(self, columns: tuple, lo: int, hi: int) -> tuple[np.ndarray, int]:
        """Rows ``lo`` to ``hi``'s text in a buffer (one reused where it is large enough) and
        its length: on a thread of the pool, the kernel without the GIL."""
        kinds, _, floats, _, millis, _, starts = columns
        size = int(starts[:, hi].sum() - starts[:, lo].sum()) if starts.size else 0
        widest = self.kernel.widest(CSV_DIGITS)
        width = floats.shape[0] * widest + self.kernel.TIME_WIDTH + kinds.size  # and commas
        bound = size + (hi - lo) * width
        try:
            buffer = self.free.get_nowait()
        except queue.Empty:
            buffer = np.empty(0, np.uint8)
        if buffer.size < bound:
            buffer = np.empty(bound, np.uint8)
        return buffer, self.kernel.rows(*columns, lo, hi, CSV_DIGITS, buffer)


def _unquoted(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    """A column's text as pyarrow casts it, as it is written unquoted: a text with a comma, a
    quote or a line break is refused (a state name, say, that would shift the columns after
    it). A dictionary's values are checked, not each row's."""
    dictionary = pa.types.is_dictionary(column.type)
    shown = column.combine_chunks().dictionary if dictionary else column
    shown = pc.fill_null(pc.cast(shown, pa.string()), "")
    bad = pc.match_substring_regex(shown, '[,"\r\n]')
    if pc.any(bad).as_py():
        value = shown.filter(bad)[0].as_py()
        raise PowerModelError(
            f"column {name!r} holds {shorten(value, 40)!r}, which a CSV cannot hold unquoted "
            "(a comma, a quote or a line break): write Parquet, or rename the value"
        )
    return pc.cast(column, pa.string())


def _local_times(utc: pa.ChunkedArray, dt: float, timezone: str) -> pa.ChunkedArray:
    """Local times in ``timezone`` as spreadsheets read them (``2024-06-30 20:00:00``, with
    the fraction where ``dt`` has one)."""
    unit = _time_unit(dt)
    local = pc.cast(utc.cast(pa.timestamp(unit, tz="UTC")), pa.timestamp(unit, tz=timezone))
    return pc.strftime(local, "%Y-%m-%d %H:%M:%S")


def decimal_text(values: np.ndarray, digits: int) -> pa.Array:
    """Each value as text to ``digits`` significant digits: its nearest decimal of as many,
    trailing zeros dropped, as pyarrow prints a double (``15.88123``, ``0.0001234568``,
    ``1.234568e+12``, exponents from 10 and below -6; ``0``, ``-0``, ``nan``, ``inf``).

    The text :func:`significant`'s doubles print as, where they hold the decimal (below 1e-16
    they do not: ``10.0 ** d`` is inexact there, and this is still the decimal). The CSV
    writer's own text of each number (:class:`CsvFile`); compiled (numba).
    """
    from powermodel import _csvtext  # noqa: PLC0415 - numba, for a CSV only

    if not 1 <= digits <= 15:  # a double holds 15 decimal digits whatever its value
        raise ValueError(f"decimal_text keeps 1 to 15 significant digits, not {digits}")
    values = np.ascontiguousarray(values)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    n, width = values.size, _csvtext.widest(digits)
    array, offset = (
        (pa.StringArray, np.int32) if n * width < 2**31 else (pa.LargeStringArray, np.int64)
    )
    data, offsets = np.empty(n * width, np.uint8), np.empty(n + 1, offset)
    used = _csvtext.numbers(values, digits, data, offsets)
    return array.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data[:used].copy()))


def _cores() -> int:
    """The cores this process may run on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


@cache
def _pool() -> ThreadPoolExecutor:
    """Threads for a CSV's text, one a core: it is made without the GIL."""
    return ThreadPoolExecutor(_cores(), thread_name_prefix="powermodel-csv")


def significant(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits, each the double nearest its
    decimal (so it prints with at most ``digits``); zeros, NaN and infinities as they are."""
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    shown = np.isfinite(values) & (values != 0.0)
    x = values[shown]
    decimals = digits - 1 - np.floor(np.log10(np.abs(x))).astype(np.int64)
    fine = decimals >= 0  # divide by an exact power of ten, never multiply by an inexact one
    d = np.minimum(decimals, 300)
    x[fine] = np.round(x[fine] * 10.0 ** d[fine]) / 10.0 ** d[fine]
    k = (-decimals[~fine]).astype(np.float64)
    x[~fine] = np.round(x[~fine] / 10.0**k) * 10.0**k
    out[shown] = x
    return out


# --- grid tools --------------------------------------------------------------------------------
# What the grid sees (grid_power, grid_reactive_power) in the forms grid planners' tools read.
# Each tool gets a resolution it is built for; a coarser export carries the min and max of each
# interval beside its mean, so peaks are not lost to averaging.

LOAD = "datacenter"  # the load's name in every tool
# The connection the OpenDSS example (example.dss) feeds the load from where the profile carries
# no scenario (a measured trace) and so no [grid]: the reference preset's typical transmission
# connection, a 10 kA fault level at 138 kV. The file says when it was used.
DEFAULT_GRID = {"short_circuit": 2400.0, "x_r": 10.0}  # MVA, and X/R [1]
DBL_POINTS = 100_000  # longer OpenDSS shapes go to binary doubles, read far faster than text


def export_tool(
    ds: xr.Dataset, tool: str, directory: str | Path, resample: str | None = None
) -> list[Path]:
    """Write the grid-side profile for a grid tool into ``directory``; returns the files.

    Parameters
    ----------
    ds
        A simulated Dataset (with ``grid_power`` and ``grid_reactive_power``).
    tool
        One of :data:`TOOLS`.
    directory
        Made if missing (itself, not its parents). Its files appear together once all are
        written (:func:`powermodel.output.staged_folder`): an export that fails or is
        interrupted adds none, and leaves the folder's earlier files as they were.
    resample
        Step of the export; by default the tool's (:attr:`Tool.step`), or the Dataset's own
        where the tool takes any step. Coarser exports add each interval's min and max.

    Notes
    -----
    OpenDSS's ``example.dss`` feeds the load from a source of the scenario's short-circuit
    strength (``[grid]``). A profile without a scenario (a measured trace) has none: the example
    then uses :data:`DEFAULT_GRID` (2,400 MVA, X/R 10) and says so in a comment.
    """
    if tool not in TOOLS:
        raise PowerModelError(f"unknown export format {tool!r}: use one of {', '.join(TOOLS)}")
    directory = Path(directory)
    if TOOLS[tool].file is not None:
        name = Path(TOOLS[tool].file)
        ds = ds if resample is None else coarsen(ds, resample)
        with staged_folder(directory) as stage:
            write(ds, stage / name)
        return [directory / name]
    for name in ("grid_power", "grid_reactive_power"):
        if name not in ds:
            raise PowerModelError(f"the profile has no {name}: export a simulated Dataset")
    step = resample or TOOLS[tool].step
    dt = step_seconds(ds)
    if step is not None and abs(parse_duration(step) - dt) > 1e-9 * dt:
        ds = coarsen(ds[["grid_power", "grid_reactive_power"]], step)
    with staged_folder(directory) as stage:
        files = TOOLS[tool].writer(ds, stage)
    return [directory / file.name for file in files]


def _grid(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
    return ds["grid_power"].values, ds["grid_reactive_power"].values, step_seconds(ds)


def _header(ds: xr.Dataset, comment: str, tool: str) -> str:
    """What every grid-tool export states, as ``comment`` lines: the source, the start (UTC), the
    step, and the sign of Q."""
    start = np.datetime_as_string(ds["time"].values[0], unit="s")
    lines = (
        f"powermodel {ds.attrs.get('powermodel_version', '')}: "
        f"{ds.attrs.get('title', 'profile')}; grid_power and grid_reactive_power at the point "
        f"of interconnection, from {start}Z (UTC), step {step_seconds(ds):g} s, "
        f"{ds.sizes['time']} points, each the mean of the interval it starts",
        f"reactive power {Q_SIGN}: the sign of {TOOLS[tool].reactive}, so written unchanged",
    )
    return "".join(f"{comment} {line}\n" if comment else f"{line}\n" for line in lines)


def _readme(ds: xr.Dataset, directory: Path, tool: str, files: list[str]) -> Path:
    """README.txt beside data files that cannot hold comments: the header, then what each holds."""
    envelope = (
        ["grid_power_min, grid_power_max [MW]: each interval's minimum and maximum of grid_power"]
        if "grid_power_min" in ds
        else []
    )
    path = directory / "README.txt"
    path.write_text(_header(ds, "", tool) + "".join(f"{line}\n" for line in files + envelope))
    return path


def _opendss(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    n = p.size
    binary = n > DBL_POINTS
    files, refs = [], []
    for name, values in (("p", p * 1000.0), ("q", q * 1000.0)):  # kW, kvar
        path = directory / f"{LOAD}_{name}.{'dbl' if binary else 'csv'}"
        if binary:
            values.astype("<f8").tofile(path)
        else:
            np.savetxt(path, values, fmt="%.6f")
        refs.append(f"({'dblfile' if binary else 'file'}={path.name})")
        files.append(path)
    shape = directory / "loadshape.dss"
    shape.write_text(
        _header(ds, "!", "opendss")
        + f"! {files[0].name} P [kW], {files[1].name} Q [kvar], actual values (useactual=yes): "
        + "whatever kW the load has, it follows these\n"
        + f"New LoadShape.{LOAD} npts={n} sinterval={dt:g} mult={refs[0]} qmult={refs[1]} "
        + "useactual=yes\n"
    )
    example = directory / "example.dss"
    short_circuit, x_r, strength = _grid_strength(ds)
    example.write_text(
        _header(ds, "!", "opendss")
        + "! A source with the site's short-circuit strength feeding the datacenter at its POI.\n"
        + f"! short-circuit strength: {strength}\n"
        + "Clear\n"
        + f"New Circuit.powermodel basekv=138 pu=1.0 phases=3 bus1=poi MVAsc3={short_circuit:g} "
        + f"MVAsc1={short_circuit:g} x1r1={x_r:g} x0r0={x_r:g}\n"
        + "Redirect loadshape.dss\n"
        + f"New Load.{LOAD} bus1=poi phases=3 kv=138 kw={p.max() * 1000:.3f} pf=1 model=1 "
        + f"vminpu=0.7 duty={LOAD} daily={LOAD} yearly={LOAD}\n"
        + f"New Monitor.poi element=Load.{LOAD} terminal=1 mode=1 ppolar=no\n"
        + "Set voltagebases=[138]\nCalcVoltageBases\n"
        + f"Set mode=duty stepsize={dt:g}s number={n}\n"
        + "Solve\n"
    )
    return [*files, shape, example]


def _grid_strength(ds: xr.Dataset) -> tuple[float, float, str]:
    """Short-circuit MVA and X/R of the Dataset's scenario, or :data:`DEFAULT_GRID` where it has
    none (a measured trace), and a line saying which."""
    grid = json.loads(ds.attrs.get("scenario", "{}")).get("grid")
    if grid is None:
        return (
            DEFAULT_GRID["short_circuit"],
            DEFAULT_GRID["x_r"],
            f"the profile has no scenario [grid] (a measured trace): the default "
            f"{DEFAULT_GRID['short_circuit']:,g} MVA, X/R {DEFAULT_GRID['x_r']:g} "
            "(powermodel.export.DEFAULT_GRID); replace them with the utility's figures",
        )
    return float(grid["short_circuit"]), float(grid["x_r"]), "the scenario's [grid]"


def _gridlabd(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    if dt < 1.0 or not float(dt).is_integer():
        raise PowerModelError(
            f"GridLAB-D players step in whole seconds; the profile's step is {dt:g} s: export with "
            "--resample 1s or coarser"
        )
    stamps = np.datetime_as_string(ds["time"].values, unit="s")
    stamps = np.char.replace(stamps, "T", " ")
    per_phase = [
        f"{s},{a:+.3f}{b:+.3f}j" for s, a, b in zip(stamps, p * 1e6 / 3, q * 1e6 / 3, strict=True)
    ]
    player = directory / f"{LOAD}.player"
    player.write_text(
        _header(ds, "#", "gridlabd")
        + "# per phase: a third of P + jQ [VA], at times in UTC\n"
        + "\n".join(per_phase)
        + "\n"
    )
    start = str(stamps[0])
    stop = str(
        np.datetime_as_string(ds["time"].values[-1] + np.timedelta64(int(dt), "s"), unit="s")
    ).replace("T", " ")
    model = directory / "example.glm"
    players = "\n".join(
        f'  object player {{ property constant_power_{ph}; file "{player.name}"; }};'
        for ph in "ABC"
    )
    model.write_text(
        _header(ds, "//", "gridlabd")
        + "// The datacenter as a constant-power load (per phase: a third of P + jQ, in VA) at a\n"
        + "// swing bus; the recorder writes what the grid sees at each step.\n"
        + f"clock {{\n  timezone \"UTC0\";\n  starttime '{start}';\n  stoptime '{stop}';\n}}\n"
        + "module tape;\nmodule powerflow { solver_method NR; }\n"
        + "object meter {\n  name poi;\n  bustype SWING;\n  phases ABCN;\n"
        + "  nominal_voltage 79674;\n}\n"
        + f"object load {{\n  name {LOAD};\n  parent poi;\n  phases ABCN;\n"
        + f"  nominal_voltage 79674;\n{players}\n}}\n"
        + "object recorder {\n  parent poi;\n"
        + '  property "measured_real_power,measured_reactive_power";\n'
        + f'  file "poi.csv";\n  interval {int(dt)};\n}}\n'
    )
    return [player, model]


def _envelope_columns(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Each interval's min and max of ``grid_power`` where resampled, headed ``name [units]``."""
    return {
        header(name, ds[name].attrs.get("units")): ds[name].values
        for name in ("grid_power_min", "grid_power_max")
        if name in ds
    }


# The PyPSA the folder's layout is tested with (tests/test_exports.py): network.csv says it, or
# the installed PyPSA's version where that is newer, so the import does not warn of a folder
# "from PyPSA version v0.0.0" (what PyPSA assumes of a folder without network.csv).
PYPSA_TESTED = "1.2.4"


def _pypsa_version() -> str:
    """The PyPSA version network.csv states: the installed one if newer than the tested one."""
    try:
        installed = metadata.version("pypsa")
    except metadata.PackageNotFoundError:
        return PYPSA_TESTED

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version)[:3])

    return max(PYPSA_TESTED, installed, key=key)


def _pypsa(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    index = pd.DatetimeIndex(ds["time"].values, name="snapshot")
    title = ds.attrs.get("title") or "powermodel"
    files = {
        "network.csv": pd.DataFrame({"name": [title], "pypsa_version": [_pypsa_version()]}),
        "snapshots.csv": pd.DataFrame({"snapshot": index, "weightings": dt / 3600.0}),
        "buses.csv": pd.DataFrame({"name": ["poi"], "v_nom": [138.0]}),
        "loads.csv": pd.DataFrame({"name": [LOAD], "bus": ["poi"]}),
        "loads-p_set.csv": pd.DataFrame({LOAD: p}, index=index),
        "loads-q_set.csv": pd.DataFrame({LOAD: q}, index=index),
    }
    envelope = _envelope_columns(ds)
    if envelope:
        files["powermodel-envelope.csv"] = pd.DataFrame(envelope, index=index)
    out = []
    for name, frame in files.items():
        path = directory / name
        frame.to_csv(path, index=not name.startswith(("network", "snapshots", "buses", "loads.")))
        out.append(path)
    notes = [
        "network.csv: the network's name and the PyPSA version its layout is written for",
        "snapshots.csv: snapshot, the start of each interval in UTC (timezone-naive, as PyPSA "
        "reads it); weightings [h]",
        "buses.csv: v_nom [kV]",
        f"loads-p_set.csv [MW], loads-q_set.csv [Mvar]: the load {LOAD!r}",
    ]
    return [*out, _readme(ds, directory, "pypsa", notes)]


def _pandapower(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    time = iso_times(pa.array(ds["time"].values.astype("datetime64[ns]")), dt)
    frame = pd.DataFrame(
        {"time": time.to_numpy(zero_copy_only=False), "p_mw": p, "q_mvar": q}
        | _envelope_columns(ds)
    )
    frame.index.name = "time_step"
    path = directory / "profile.csv"
    frame.to_csv(path)
    notes = [
        "profile.csv: time_step, the row DFData reads; time, the start of the interval (ISO 8601, "
        "UTC); p_mw [MW] and q_mvar [Mvar], pandapower's names for ConstControl"
    ]
    return [path, _readme(ds, directory, "pandapower", notes)]


def _playback(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    table = pa.table(
        {
            "t [s]": np.arange(p.size) * dt,
            "P [MW]": p,
            "Q [Mvar]": q,
            **_envelope_columns(ds),
        }
    )
    path = directory / "playback.csv"
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="needed"))
    notes = ["playback.csv: t [s] since the start above, P [MW], Q [Mvar]"]
    return [path, _readme(ds, directory, "playback", notes)]


class Tool(NamedTuple):
    """An export format: its default step, what it is for, and what writes it."""

    step: str | None
    """Default step; None keeps the Dataset's own (the tool takes any)."""
    description: str
    """What the tool is for, as the CLI's help and the dashboard say it."""
    file: str | None = None
    """The one file of a whole-Dataset format, written by :func:`write` (its extension chooses
    the format); None for a grid tool."""
    writer: Callable[[xr.Dataset, Path], list[Path]] | None = None
    """A grid tool's writer: its files from ``grid_power`` and ``grid_reactive_power``, into a
    folder."""
    reactive: str = ""
    """Where a grid tool reads a load's reactive power. Every one takes Q positive absorbed, as
    we do, so Q is written unchanged (OpenDSS, GridLAB-D, PyPSA and pandapower manuals on
    loads)."""


TOOLS = {
    "opendss": Tool(
        None,
        "OpenDSS LoadShape for duty-cycle (native step) or daily/yearly runs",
        writer=_opendss,
        reactive="a Load's kvar in OpenDSS",
    ),
    "gridlabd": Tool(
        "1min",
        "GridLAB-D player files and a runnable .glm",
        writer=_gridlabd,
        reactive="the Q of a GridLAB-D load's constant_power (P + jQ)",
    ),
    "pypsa": Tool(
        "1h",
        "PyPSA CSV folder (import_from_csv_folder)",
        writer=_pypsa,
        reactive="a PyPSA Load's q_set",
    ),
    "pandapower": Tool(
        "15min",
        "pandapower time-series profile (DFData/ConstControl)",
        writer=_pandapower,
        reactive="a pandapower load's q_mvar (consumer reference system)",
    ),
    "playback": Tool(
        None,
        "time/P/Q playback CSV for dynamic-simulation tools (PSS/E, PowerFactory)",
        writer=_playback,
        reactive="a load's Q in PSS/E and PowerFactory",
    ),
    "csv": Tool(
        None,
        "the whole profile, profile.csv (with min/max columns when resampled)",
        file="profile.csv",
    ),
    "parquet": Tool(None, "the whole profile, profile.parquet", file="profile.parquet"),
    "netcdf": Tool(
        None,
        "the whole Dataset with the scenario in its attributes, profile.nc",
        file="profile.nc",
    ),
}
DATASET_FILES = {name: tool.file for name, tool in TOOLS.items() if tool.file is not None}
