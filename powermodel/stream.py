"""Long runs streamed: simulated in time chunks, each written to the output file as it is made,
so that a run far larger than memory (a year at 100 ms) never is held whole.

Each chunk is rendered once (:class:`Course`): its plant-step means advance the plant path
(causal: its lags carried from chunk to chunk), the chunk's electrical path is completed from
it, and the one Dataset feeds every consumer: the file's writer (in a thread of its own), the
metrics and each rule's statistics; what a rule may read again after the run (the running
median's passes) is kept compactly on disk (:class:`Retained`), not rendered again. The file
holds the same values as one written from :func:`powermodel.simulate.simulate`
(``tests/test_stream.py``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, nullcontext
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from powermodel.analysis import Pieces, StreamedMetrics, step_seconds
from powermodel.engine.facility import PlantPath
from powermodel.engine.preflight import BYTES_PER_STEP, available_memory, preflight, streamable
from powermodel.engine.run import Run, job_totals, prepare, share_of
from powermodel.engine.series import ORDER
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.export import ChunkFile, ChunkWriter, check_path, check_timezone
from powermodel.models import plants
from powermodel.output import staged
from powermodel.rules import Refusal, Rule, RuleResult, StreamedCheck, check_each
from powermodel.scenario import Scenario, format_duration
from powermodel.simulate import memory_estimate, simulate

__all__ = [
    "checked",
    "chunk_steps",
    "Course",
    "describe",
    "Measures",
    "Retained",
    "STREAMED",
    "stream",
]

STREAMED = (".parquet", ".csv")  # formats written a chunk at a time
# The most steps a chunk takes (1,048,576: about 0.35 GB of the run's peak per step,
# BYTES_PER_STEP), so that a streamed run's peak stays near 1 GB whatever its length; twice as
# many took 1.6-3x as long here (54 days at 1 s: 4.75 s against 1.35 s; 4 days at 100 ms:
# 2.6-4.7 s against 1.6 s), their arrays past the allocator's reuse of freed memory
MAX_CHUNK_STEPS = 1 << 20
MIN_CHUNK_STEPS = 1 << 12


def chunk_steps(budget: float) -> int:
    """Steps a streamed run renders at a time within a memory ``budget`` [B]: a sixth of it
    at the in-memory run's peak per step (a chunk is made while the one before is written and
    measured, each by a thread of its own: three alive at the most), within 4,096 and
    1,048,576 steps."""
    return int(np.clip(budget / 6 / BYTES_PER_STEP, MIN_CHUNK_STEPS, MAX_CHUNK_STEPS))


def stream(
    scenario: Scenario,
    path: str | Path | None,
    chunk: int = MAX_CHUNK_STEPS,
    progress: Callable[[int], None] | None = None,
    measures: Measures | None = None,
    timezone: str | None = None,
) -> Path | None:
    """Simulate a scenario in chunks of about ``chunk`` steps, writing its profile to ``path``
    (None: nothing written, the run only measured into ``measures``).

    Parameters
    ----------
    scenario
        The scenario. Filters that run over the whole run in order (power smoothing's ramp
        limits, burn on job stop, batteries) cannot be carried across chunks: such a run is
        refused, with the fix (a shorter run or a coarser step, to run it in memory).
    path
        ``.parquet`` or ``.csv`` (:data:`STREAMED`): the same columns, names and metadata
        :func:`powermodel.export.write` gives the whole Dataset. Its chunks go to a temporary
        file beside it, renamed to ``path`` after the last chunk and the writer's close
        (:func:`powermodel.output.staged`): a run that fails or is interrupted leaves no part
        of itself under the name, and an earlier file of the name as it was. A chunk is
        encoded in a thread of its own while the next is computed.
    chunk
        Steps rendered at a time [1]; each chunk starts at a clock hour (hourly PUE).
    progress
        Called with the number of steps each chunk has just done (the run's steps in all).
    measures
        Given, the run's metrics and rule verdicts are accumulated as its chunks are made
        (:class:`Measures`).
    timezone
        A CSV's local-time column, as :func:`powermodel.export.write`'s.

    Returns
    -------
    pathlib.Path or None
        The file written.
    """
    path = _checked_target(scenario, path, timezone)
    if measures is not None and measures.folder is None and path is not None:
        measures.folder = path.parent  # the samples the rules read again beside the file
    done = progress or (lambda steps: None)
    run = prepare(scenario, *preflight(scenario, memory=False))
    n = scenario.simulation.n_steps
    course = Course(run, n, chunk)
    throughput = _write_chunks(course.chunks(), path, timezone, measures, n, done)
    if measures is not None:
        plant = course.path
        realised = run.realised(np.zeros((3, 0))) if run.steps is None else course.realised()
        # the in-memory run's totals (a streamed run meets no disturbance: sequential)
        totals = xr.Dataset(job_totals(run, plant, realised, np.array([throughput])))
        measures.finish(totals)
    return path


class Course:
    """A run rendered once, chunk by chunk (:meth:`Run.chunks`), its plant path advancing with
    it: each chunk's whole plant steps' means go through the plant path from the state the
    steps before left its lags in (:class:`powermodel.models.plants.Lags`: the whole path's
    values to the bit), and a chunk is completed into its profile once the path covers it (a
    plant step cut by the chunk's end waits for the next chunk's first steps).

    The job timeline and the plant path are small even over a year (the plant steps a
    minute): :attr:`path` holds the whole run's, filled as the run advances.
    """

    def __init__(self, run: Run, n: int, chunk: int) -> None:
        self.run, self.n, self.chunk = run, n, chunk
        self.lags = plants.Lags()
        self.path: PlantPath | None = None
        self.known = 0  # plant steps whose path is known
        self.tail = np.empty((run.tables.shape[0], 0))  # steps rendered past them
        # the tokens over the run, trained and nominal, summed over ranges of whole plant
        # steps of about ``chunk`` steps (as they always were: the same sums to the bit)
        self.tokens = _Sums(max(chunk // run.k, 1) * run.k)

    def chunks(self) -> Iterator[xr.Dataset]:
        """The run's chunks, each rendered once and completed into its profile's Dataset."""
        run, pending = self.run, []
        for lo, hi in self.ranges():
            means = run.render(lo, hi)
            self.tokens.add(means)
            self._advance(means)
            pending.append((lo, means))
            while pending and (pending[0][0] + pending[0][1].shape[1] <= self.known * run.k):
                lo, means = pending.pop(0)
                part = run.profile(self.path, means, lo)
                yield run.dataset(
                    self.path, {name: part[name] for name in ORDER if name in part}, lo
                )

    def ranges(self) -> Iterator[tuple[int, int]]:
        """The chunks' steps (:meth:`Run.chunks`): the first an eighth of :attr:`chunk`, each
        after it twice the one before up to :attr:`chunk`, so that what takes the chunks
        (the file's writer, the measures) starts on the first within a few hundredths of a
        second of the run's start, not a whole chunk's render later."""
        lo, size = 0, max(self.chunk // 8, MIN_CHUNK_STEPS)
        while lo < self.n:
            ranges = self.run.chunks(lo, self.n, size)
            if size >= self.chunk or len(ranges) == 1:
                yield from ranges
                return
            yield ranges[0]
            lo, size = ranges[0][1], min(2 * size, self.chunk)

    def realised(self) -> float:
        """The share of the nominal token rate the run trained (:meth:`Run.realised`)."""
        return share_of(*self.tokens.totals())

    def _advance(self, means: np.ndarray) -> None:
        """The plant path over the whole plant steps the rendered ``means`` (the steps after
        :attr:`tail`) complete."""
        run, k = self.run, self.run.k
        joined = means if not self.tail.shape[1] else np.concatenate((self.tail, means), axis=1)
        whole = joined.shape[1] // k * k
        self.tail = joined[:, whole:].copy()
        if not whole:
            return
        piece = run.plant(*run.plant_means(joined[:, :whole]), self.known, self.lags)
        if self.path is None:  # the whole run's arrays, filled as the path advances
            self.path = replace(
                piece,
                **{
                    f.name: np.zeros(self.n // k, getattr(piece, f.name).dtype)
                    for f in fields(piece)
                    if isinstance(getattr(piece, f.name), np.ndarray)
                },
            )
        for f in fields(piece):
            if isinstance(getattr(piece, f.name), np.ndarray):
                getattr(self.path, f.name)[self.known : self.known + whole // k] = getattr(
                    piece, f.name
                )
        self.known += whole // k


class _Sums:
    """The tokens rendered (:meth:`Run.render`'s means: nominal, and trained under
    variation), summed over ranges of ``size`` steps, the ranges' sums added."""

    def __init__(self, size: int) -> None:
        self.size, self.held = size, []
        self.trained, self.nominal = 0.0, 0.0

    def add(self, means: np.ndarray) -> None:
        """Take the next rendered steps."""
        rows = means[2:4]
        self.held.append(rows)
        while sum(r.shape[1] for r in self.held) >= self.size:
            joined = self.held[0] if len(self.held) == 1 else np.concatenate(self.held, axis=1)
            self._sum(joined[:, : self.size])
            self.held = [joined[:, self.size :]]

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """The tokens over the run, trained and nominal (one-element arrays)."""
        if any(r.shape[1] for r in self.held):
            self._sum(np.concatenate(self.held, axis=1))
            self.held = []
        return np.array([self.trained]), np.array([self.nominal])

    def _sum(self, rows: np.ndarray) -> None:
        self.trained += float(rows[1].sum()) if rows.shape[0] > 1 else 0.0
        self.nominal += float(rows[0].sum())


def _checked_target(
    scenario: Scenario, path: str | Path | None, timezone: str | None
) -> Path | None:
    """The file a streamed run of ``scenario`` is to write (None: none), checked before any
    work: a name that can be written in a format written a chunk at a time, and a run whose
    filters can be carried across chunks."""
    path = None if path is None else check_path(path)
    if path is not None:
        check_timezone(timezone, path)
    if path is not None and path.suffix not in STREAMED:
        raise PowerModelError(
            f"a run streamed in parts writes {' or '.join(STREAMED)}, not {path.suffix}: "
            "write -o FILE.parquet"
        )
    why = streamable(scenario)
    if why is not None:
        need = memory_estimate(scenario) / 1e9
        raise ScenarioError(
            f"{why} filters the whole run in order, which a run streamed in parts cannot carry "
            f"across them: run it in memory (about {need:.1f} GB), shortening "
            "simulation.duration or lengthening simulation.dt to fit"
        )
    return path


def _write_chunks(
    chunks: Iterable[xr.Dataset],
    path: Path | None,
    timezone: str | None,
    measures: Measures | None,
    size: int,
    done: Callable[[int], None],
) -> float:
    """Each chunk appended to the file at ``path`` (through a temporary file, renamed after
    the writer's close; None: nothing written) and fed to ``measures`` (``size``: the run's
    steps in all), each by a thread of its own (:class:`powermodel.export.ChunkWriter`) while
    the next chunk is made; the tokens of the run's ``throughput`` summed. (14 days at 100 ms
    with three rule sets on two quiet cores: 8.9 s so, 10.7 s with the measures taken here.)
    Once the last chunk is made, the measures' thread judges the rules (:meth:`Measures.close`)
    while the file's writer ends."""
    throughput = 0.0
    ended: list[bool] = []  # every chunk made: the rules judged (not after a failure)
    with nullcontext() if path is None else staged(path) as temporary, ExitStack() as stack:
        consumers = []
        if temporary is not None:
            file = ChunkFile(temporary, path.suffix, timezone)
            consumers.append(stack.enter_context(ChunkWriter(file.take, file.close)))
        if measures is not None:
            measured = ChunkWriter(
                lambda ds: measures.feed(ds, size),
                lambda: ended and measured.error is None and measures.close(),
            )
            consumers.append(stack.enter_context(measured))
        for ds in chunks:
            for consumer in consumers:
                consumer.put(ds)
            throughput += float(ds["throughput"].values.sum())
            done(ds.sizes["time"])
        ended.append(True)
    return throughput


def checked(
    scenario: Scenario,
    rule_list: list[Rule],
    registered_demand: float | None = None,
    budget: float | None = None,
) -> tuple[list[RuleResult], list[Refusal]]:
    """:func:`powermodel.rules.check_each` on a run of the scenario: simulated in memory where
    its estimate fits ``budget`` [B] (default: the memory available), else streamed in chunks,
    nothing written, its rules judged across them (:class:`Measures`: the same results). A run
    that can neither fit nor stream is refused by :func:`~powermodel.simulate.check_memory`."""
    budget = available_memory() if budget is None else budget
    if memory_estimate(scenario) <= budget or streamable(scenario) is not None:
        return check_each(simulate(scenario), rule_list, registered_demand)
    measures = Measures(rule_list, registered_demand)
    stream(scenario, None, chunk_steps(budget), measures=measures)
    return measures.results, measures.refused


def describe(scenario: Scenario, budget: float) -> str:
    """One line on why and how a run streams: its estimate against the ``budget`` [B]."""
    sim = scenario.simulation
    return (
        f"{sim.n_steps:,} steps of {format_duration(sim.dt)} need about "
        f"{memory_estimate(scenario) / 1e9:.1f} GB, over the {budget / 1e9:.1f} GB budget: "
        f"streaming to the file in chunks of {chunk_steps(budget) * sim.dt / 3600:.3g} h"
    )


class Measures:
    """A streamed run's metrics (:func:`powermodel.analysis.metrics`) and rule verdicts
    (:func:`powermodel.rules.check_each`), accumulated from its chunks in order.

    After the run, :attr:`metrics`, :attr:`results` and :attr:`refused` hold what the
    in-memory functions give on the whole run: peaks, minima, swings, ramps, counts and every
    rule's worst value and time, violations, causes and verdict to the bit; energies, means
    and PUE (sums added chunk by chunk) within 1e-12 relative (``tests/test_stream.py``).
    Nothing is left out: the spectra (:func:`powermodel.analysis.band_variances`) are not
    among the metrics, and the band filters' state is carried exactly.
    """

    def __init__(
        self,
        rules: list[Rule] = (),
        registered_demand: float | None = None,
        folder: str | Path | None = None,
    ) -> None:
        self.rules, self.registered_demand = list(rules), registered_demand
        # where the samples the rules read again are kept (:class:`Retained`): by default
        # beside a streamed run's file (the disk chosen for the run's output; a temporary
        # folder may be memory, tmpfs), else in the temporary folder
        self.folder = folder
        self.metrics: dict[str, Any] = {}
        self.results: list[RuleResult] = []
        self.refused: list[Refusal] = []
        self.attrs: dict = {}  # the profile's attrs, as the in-memory run's Dataset has them
        self._started = False
        self._closed = False
        self._retained: Retained | None = None

    def _start(self, ds: xr.Dataset, size: int) -> None:
        names = set(ds.data_vars)
        self.attrs = dict(ds.attrs)
        dt = step_seconds(ds)
        self._metrics = StreamedMetrics(dt, size, ds.attrs)
        self._check = StreamedCheck(
            self.rules, size, ds.attrs, names, self.registered_demand, self.folder
        )
        least = max(self._check.least(), self._metrics.least())
        self._names = tuple(dict.fromkeys(StreamedMetrics.NAMES + StreamedCheck.NAMES))
        self._pieces = Pieces(self._names, least)
        replayed = self._check.replayed()
        self._retained = Retained(replayed, self.folder) if replayed else None
        self._started = True

    def feed(self, ds: xr.Dataset, size: int) -> None:
        """Take the run's next chunk (``size``: the run's samples in all)."""
        if not self._started:
            self._start(ds, size)
        self._take(self._pieces.feed(ds))

    def close(self) -> None:
        """Take the run's last piece and judge the rules (their replay, :class:`Retained`),
        once the last chunk is fed: in the measures' own thread while the file's writer ends
        (:func:`stream`), else at :meth:`finish`."""
        if self._closed:
            return
        self._take(self._pieces.finish())
        with self._retained or nullcontext():
            self.results, self.refused = self._check.finish(self._replay)
        self._closed = True

    def finish(self, totals: xr.Dataset) -> None:
        """Complete the measures: ``totals`` the run's scalars and events."""
        self.close()
        self.metrics = self._metrics.result(totals)

    def _replay(self) -> Iterator[tuple[dict, int, dict | None]]:
        """The run's pieces again, as the rules read them (for one that needs the running
        median): from :class:`Retained`, not rendered again."""
        if self._retained is None:
            return iter(())
        return self._retained.replay()

    def _take(self, pieces: Iterable[tuple[dict, int, dict | None]]) -> None:
        """Feed each piece to the metrics and to the rules, in order."""
        for piece in pieces:
            self._metrics.feed(*piece)
            self._check.feed(*piece)
            if self._retained is not None:
                self._retained.add(*piece)


class Retained:
    """The samples a streamed run's rules may read again after its last chunk (the running
    median's pass and the statistics held at it, :meth:`StreamedCheck.finish`): the columns
    they read (``names``: the signals and the job's states), each piece's as the run gave it,
    in files of ``folder`` (None: the temporary folder), float64 as the run has them (a year
    at 100 ms keeps 9 B a step, 2.8 GB, which memory cannot hold), read back a piece at a
    time.

    The files have no name (:func:`tempfile.TemporaryFile`: unlinked as they are made), so
    whatever ends the run, a SIGKILL too, the system frees them with the process; they are
    closed at the context's end."""

    def __init__(self, names: tuple[str, ...], folder: str | Path | None = None) -> None:
        self.names = names
        self.folder = folder
        self.files = {
            n: tempfile.TemporaryFile(prefix="powermodel-retained-", dir=folder) for n in names
        }  # noqa: SIM115
        self.pieces: list[tuple[int, int, dict | None]] = []
        self.dtypes: dict[str, np.dtype] = {}

    def add(self, columns: dict[str, np.ndarray], at: int, after: dict | None) -> None:
        """Keep a piece (:class:`powermodel.analysis.Pieces`'): its columns and the sample
        after it."""
        for name in self.names:
            if name in columns:
                values = np.ascontiguousarray(columns[name])
                self.dtypes.setdefault(name, values.dtype)
                self.files[name].seek(0, 2)  # at the end, also after a replay
                self.files[name].write(values.view(np.uint8))
        # copied: the next sample is a view of the chunk's columns, which it would keep whole
        kept = None if after is None else {n: v.copy() for n, v in after.items() if n in self.files}
        self.pieces.append((columns["time"].size, at, kept))

    def replay(self) -> Iterator[tuple[dict[str, np.ndarray], int, dict | None]]:
        """The pieces kept, in order, as :meth:`add` took them (each read at its own offset,
        so replays may be read side by side)."""
        offset = 0
        for size, at, after in self.pieces:
            columns = {}
            for name, dtype in self.dtypes.items():
                columns[name] = np.empty(size, dtype)
                file = self.files[name]
                file.seek(offset * dtype.itemsize)
                if file.readinto(columns[name].view(np.uint8)) != columns[name].nbytes:
                    raise OSError(f"the samples kept for the rules ({name}) were cut short")
            offset += size
            yield columns, at, after

    def __enter__(self) -> Retained:
        return self

    def __exit__(self, *exc: object) -> None:
        for file in self.files.values():
            file.close()
