"""Long runs streamed: simulated in time chunks, each written to the output file as it is made,
so that a run far larger than memory (a year at 100 ms) never is held whole.

The job timeline and the plant path are small even over a year (the plant steps a minute), so
they are computed once for the whole run: a first pass renders the run chunk by chunk for the
plant-step means the plant needs, then the plant path runs, then a second pass renders each
chunk again and completes its electrical path. The file holds the same values as one written
from :func:`powermodel.simulate.simulate` (``tests/test_stream.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import xarray as xr

from powermodel.analysis import Pieces, StreamedMetrics, step_seconds
from powermodel.engine.facility import PlantPath
from powermodel.engine.preflight import BYTES_PER_STEP, available_memory, preflight, streamable
from powermodel.engine.run import Run, job_totals, prepare, share_of
from powermodel.engine.series import ORDER
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.export import (
    CSV_OPTIONS,
    check_path,
    check_timezone,
    csv_table,
    parquet_writer,
    profile_table,
)
from powermodel.output import staged
from powermodel.rules import Refusal, Rule, RuleResult, StreamedCheck, check_each
from powermodel.scenario import Scenario, format_duration
from powermodel.simulate import memory_estimate, simulate

__all__ = ["checked", "chunk_steps", "describe", "Measures", "STREAMED", "stream"]

STREAMED = (".parquet", ".csv")  # formats written a chunk at a time
# The most steps a chunk takes: about 0.7 GB of the run's peak per step (BYTES_PER_STEP), so
# that a streamed run's peak stays near 1 GB whatever its length
MAX_CHUNK_STEPS = 1 << 21
MIN_CHUNK_STEPS = 1 << 12


def chunk_steps(budget: float) -> int:
    """Steps a streamed run renders at a time within a memory ``budget`` [B]: half of it, at
    the in-memory run's peak per step, within 4,096 and 2,097,152 steps."""
    return int(np.clip(budget / 2 / BYTES_PER_STEP, MIN_CHUNK_STEPS, MAX_CHUNK_STEPS))


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
        of itself under the name, and an earlier file of the name as it was.
    chunk
        Steps rendered at a time [1]; each chunk starts at a clock hour (hourly PUE).
    progress
        Called with the number of steps each pass has just done (two passes: the run's steps
        twice in all).
    measures
        Given, the run's metrics and rule verdicts are accumulated as its chunks are made
        (:class:`Measures`); a rule that needs the running median renders the run again.
    timezone
        A CSV's local-time column, as :func:`powermodel.export.write`'s.

    Returns
    -------
    pathlib.Path or None
        The file written.
    """
    path = _checked_target(scenario, path, timezone)
    done = progress or (lambda steps: None)
    run = prepare(scenario, *preflight(scenario, memory=False))
    n = scenario.simulation.n_steps
    plant, trained, nominal = _plant_pass(run, n, chunk, done)

    def chunks() -> Iterator[xr.Dataset]:
        for lo, hi in run.chunks(0, n, chunk):
            part = run.profile(plant, run.render(lo, hi), lo)
            yield run.dataset(plant, {name: part[name] for name in ORDER if name in part}, lo)

    throughput = _write_chunks(chunks(), path, timezone, measures, n, done)
    if measures is not None:
        realised = (
            run.realised(np.zeros((3, 0))) if run.steps is None else share_of(trained, nominal)
        )
        # the in-memory run's totals (a streamed run meets no disturbance: sequential)
        totals = xr.Dataset(job_totals(run, plant, realised, np.array([throughput])))
        measures.finish(totals, chunks)
    return path


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


def _plant_pass(
    run: Run, n: int, chunk: int, done: Callable[[int], None]
) -> tuple[PlantPath, np.ndarray, np.ndarray]:
    """The first pass: the run of ``n`` steps rendered in whole plant steps of about ``chunk``
    steps for the plant-step means the plant path needs, then the plant path; with the tokens
    over the run, trained and nominal (one-element arrays)."""
    k = run.k
    plant_gpu, plant_heat = np.empty(n // k), np.empty(n // k)
    trained, nominal = np.zeros(1), np.zeros(1)  # tokens over the run, trained and nominal
    per_pass = max(chunk // k, 1) * k  # whole plant steps: each chunk's block means are whole
    for lo in range(0, n, per_pass):
        hi = min(lo + per_pass, n)
        means = run.render(lo, hi)
        plant_gpu[lo // k : hi // k], plant_heat[lo // k : hi // k] = run.plant_means(means)
        done(hi - lo)
        trained[0] += float(means[3].sum()) if means.shape[0] > 3 else 0.0
        nominal[0] += float(means[2].sum())
    return run.plant(plant_gpu, plant_heat), trained, nominal


def _write_chunks(
    chunks: Iterable[xr.Dataset],
    path: Path | None,
    timezone: str | None,
    measures: Measures | None,
    size: int,
    done: Callable[[int], None],
) -> float:
    """The second pass: each chunk appended to the file at ``path`` (through a temporary
    file, renamed after the writer's close; None: nothing written) and fed to ``measures``
    (``size``: the run's steps in all); the tokens of the run's ``throughput`` summed."""
    throughput = 0.0
    with nullcontext() if path is None else staged(path) as temporary:
        writer = None
        try:
            for ds in chunks:
                if temporary is not None:
                    writer = _write(writer, ds, temporary, path.suffix, timezone)
                throughput += float(ds["throughput"].values.sum())
                if measures is not None:
                    measures.feed(ds, size)
                done(ds.sizes["time"])
        finally:
            if writer is not None:
                writer.close()
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


def _write(
    writer: pq.ParquetWriter | pacsv.CSVWriter | None,
    ds: xr.Dataset,
    path: Path,
    suffix: str,
    timezone: str | None,
) -> pq.ParquetWriter | pacsv.CSVWriter:
    """Append a chunk's Dataset ``ds`` to the file at ``path`` in the format ``suffix`` names
    (``path`` is the temporary file), opening the writer at the first."""
    if suffix == ".parquet":
        table = profile_table(ds, headers=False)
        writer = writer or parquet_writer(path, table.schema)
    else:
        table = csv_table(ds, timezone)
        writer = writer or pacsv.CSVWriter(path, table.schema, write_options=CSV_OPTIONS)
    writer.write_table(table)
    return writer


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

    def __init__(self, rules: list[Rule] = (), registered_demand: float | None = None) -> None:
        self.rules, self.registered_demand = list(rules), registered_demand
        self.metrics: dict[str, Any] = {}
        self.results: list[RuleResult] = []
        self.refused: list[Refusal] = []
        self.attrs: dict = {}  # the profile's attrs, as the in-memory run's Dataset has them
        self._started = False

    def _start(self, ds: xr.Dataset, size: int) -> None:
        names = set(ds.data_vars)
        self.attrs = dict(ds.attrs)
        dt = step_seconds(ds)
        self._metrics = StreamedMetrics(dt, size, ds.attrs)
        self._check = StreamedCheck(self.rules, size, ds.attrs, names, self.registered_demand)
        least = max(self._check.least(), self._metrics.least())
        self._names = tuple(dict.fromkeys(StreamedMetrics.NAMES + StreamedCheck.NAMES))
        self._pieces = Pieces(self._names, least)
        self._started = True

    def feed(self, ds: xr.Dataset, size: int) -> None:
        """Take the run's next chunk (``size``: the run's samples in all)."""
        if not self._started:
            self._start(ds, size)
        self._take(self._pieces.feed(ds))

    def finish(self, totals: xr.Dataset, chunks: Callable[[], Iterable[xr.Dataset]]) -> None:
        """Complete the measures: ``totals`` the run's scalars and events, ``chunks`` gives
        the run's chunks again (for a rule that needs the running median)."""
        self._take(self._pieces.finish())
        self.metrics = self._metrics.result(totals)

        def replay() -> Iterator[tuple]:
            pieces = Pieces(self._names, self._pieces.least)
            for ds in chunks():
                yield from pieces.feed(ds)
            yield from pieces.finish()

        self.results, self.refused = self._check.finish(replay)

    def _take(self, pieces: Iterable[tuple[dict, int, dict | None]]) -> None:
        """Feed each piece to the metrics and to the rules, in order."""
        for piece in pieces:
            self._metrics.feed(*piece)
            self._check.feed(*piece)
