"""Checking a profile against rules: :class:`StreamedCheck` accumulates each rule's
verdict over a run's pieces, and :func:`check` / :func:`check_each` feed it a whole profile's
cache-sized blocks, so that an in-memory run and a streamed one are judged by the same code.

The third stage of a check: it measures by :mod:`powermodel.rules.measurement`, finds running
medians by :mod:`powermodel.rules.median`; :mod:`powermodel.stream` feeds it a streamed run's
chunks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import xarray as xr

from powermodel.analysis import blocks, step_seconds
from powermodel.errors import PowerModelError
from powermodel.models import signal
from powermodel.models.events import State
from powermodel.piecewise import Neighbours, Windowed
from powermodel.rules.measurement import (
    _STATE_CODE,
    CAUSES,
    LABELS,
    Refusal,
    RuleResult,
    _attribute,
    _judgeable,
    _result,
    _runs,
    _signed,
    _stages,
    _warm_up,
)
from powermodel.rules.median import _histogram, _medians, _running_median
from powermodel.rules.rule import Rule, RuleError


def check(
    ds: xr.Dataset, rules: list[Rule], registered_demand: float | None = None
) -> list[RuleResult]:
    """Measure a profile by each rule.

    Parameters
    ----------
    ds
        A simulated Dataset or a trace from :func:`read_trace`.
    rules
        From :func:`load_rules`.
    registered_demand
        Overrides the Dataset's ``registered_demand`` attribute. [MW]

    Raises
    ------
    RuleError
        For a verdict the data cannot support: a window or averaging shorter than five steps, a
        band whose low edge lies above half the Nyquist frequency, a missing signal (the first
        such rule, in the order given), or a signal whose every reading is NaN.
    """
    results, refused = _in_blocks(ds, rules, step_seconds(ds), registered_demand, refuse=True)
    if refused:  # found by the measurement itself: every reading missing
        raise RuleError(refused[0].reason)
    return results


def check_each(
    ds: xr.Dataset, rules: list[Rule], registered_demand: float | None = None
) -> tuple[list[RuleResult], list[Refusal]]:
    """:func:`check` rule by rule: the verdicts the profile supports, and the rules it cannot
    judge with the reason, so that one refused rule does not hide the others' results."""
    try:
        dt = step_seconds(ds)
    except PowerModelError as exc:  # no step: no rule can be judged
        return [], [Refusal(rule, str(exc)) for rule in rules]
    return _in_blocks(ds, rules, dt, registered_demand)


def _in_blocks(
    ds: xr.Dataset,
    rules: list[Rule],
    dt: float,
    registered_demand: float | None,
    refuse: bool = False,
) -> tuple[list[RuleResult], list[Refusal]]:
    """:func:`check_each` of a whole profile, measured as a streamed run's chunks are, in
    cache-sized blocks (:func:`powermodel.analysis.blocks`): the same verdicts to the bit, in
    time and memory that grow with the profile's length alone. With ``refuse``, the first rule
    the profile cannot support is raised before any work."""
    attrs = {**ds.attrs, "dt": dt}
    measured = StreamedCheck(rules, ds.sizes["time"], attrs, set(ds.data_vars), registered_demand)
    if refuse and measured.errors:
        raise measured.errors[min(measured.errors)]
    pieces = lambda: blocks(ds, StreamedCheck.NAMES, measured.least())  # noqa: E731
    if "job_state" in ds and np.any(ds["job_state"].values == State.CHECKPOINT):
        # the signals' running medians first (what a checkpoint is held at), so that every
        # rule is measured in one pass: a streamed run finds them after its first pass, from
        # histograms (:func:`_medians`); here np.median of the running samples, one signal's
        # copy at a time, takes a third of the time of those two passes
        running = ds["job_state"].values == State.RUNNING
        medians = {name: _running_median(ds[name].values, running) for name in measured.signals()}
        # a signal with NaN (np.median's is NaN): the histograms' median, NaN ordered past the
        # infinities as a streamed run orders them
        odd = {name for name, median in medians.items() if median is None}
        if odd:
            states = lambda: blocks(ds, ("job_state", *odd), measured.least())  # noqa: E731
            histograms: dict[str, np.ndarray] = {}
            for columns, _, _ in states():
                _histogram(histograms, columns, odd)
            medians.update(_medians(states, histograms, odd))
        measured.use_medians(medians)
    if len(measured.errors) < len(rules):
        for piece in pieces():
            measured.feed(*piece)
    return measured.finish(pieces)


class StreamedCheck:
    """:func:`check_each` accumulated over a run's chunks, without the run held whole.

    Feed each piece of the run in order (:class:`powermodel.analysis.Pieces` over
    :data:`NAMES`), then :meth:`finish` with a ``replay`` that gives the run's chunks again
    from its start. Each rule's statistic is carried across pieces exactly (the rolling mean's
    cumulative sum, the band filters' state, the windows' last samples, the states either side
    of an interval), so worst values, their times, violations, causes and verdicts are the
    in-memory :func:`check`'s to the bit (which measures a whole profile so, in blocks). The
    rules alike but for direction and limit share their statistics (:class:`_Chain`). A rule
    whose violations a checkpoint may have caused needs the running median of its signal over
    the whole run: known before the first piece (:meth:`use_medians`), or else a pass over the
    replay finds it exactly (the values in its 1/256-wide bucket of a histogram taken in the
    first pass), and a second decides the samples it waited on (:class:`_Waiting`, kept in
    ``folder``: None, the temporary folder) from the statistics held at it alone: what the
    first pass measured is not measured again.
    """

    NAMES = (
        "grid_power",
        "grid_reactive_power",
        "facility_power",
        "it_power",
        "cooling_power",
        "job_state",
        "grid_event",
    )

    def __init__(
        self,
        rules: list[Rule],
        size: int,
        attrs: dict,
        names: object,
        registered_demand: float | None = None,
        folder: str | Path | None = None,
    ) -> None:
        self.rules, self.size, self.attrs, self.folder = rules, size, attrs, folder
        self.dt = float(attrs["dt"])
        self.states = "job_state" in names
        self.plant = "cooling_power" in names
        reference = registered_demand or attrs.get("registered_demand")
        self.judged: dict[int, tuple[float, int]] = {}
        self.errors: dict[int, PowerModelError] = {}  # why each rule refused is
        for i, rule in enumerate(rules):
            try:
                self.judged[i] = _judgeable(rule, names, size, self.dt, reference)
            except PowerModelError as exc:
                self.errors[i] = exc
        self._start({i: None for i in self.judged})
        self.histograms: dict[str, np.ndarray] = {}
        self.tallying = True  # the first pass: the running samples' histograms, for medians

    def use_medians(self, medians: dict[str, float]) -> None:
        """Measure with the signals' running medians known before the first piece (a whole
        profile's, :func:`check`): every rule in one pass, no histograms tallied."""
        self._start({i: medians.get(self.rules[i].signal) for i in self.judged})
        self.tallying = False

    def signals(self) -> set[str]:
        """The signals the rules judged measure."""
        return {self.rules[i].signal for i in self.judged}

    def replayed(self) -> tuple[str, ...]:
        """The columns :meth:`finish`'s ``replay`` must give, a rule that needs the running
        median may need them (none without the job's states: no checkpoint is held): the
        signals and the states, to find the medians and hold the checkpoints at them."""
        if not self.states or not self.judged:
            return ()
        return (*sorted(self.signals()), "job_state")

    def least(self) -> int:
        """The samples a piece needs at least: every rule's reach and the dies' warm-up."""
        reach = [lookback for _, lookback in self.judged.values()]
        return 2 * (max(reach, default=0) + _warm_up(self.attrs, self.dt) + 2)

    def _start(self, medians: dict[int, float | None]) -> None:
        self.measured = {
            i: _Measured(self.rules[i], *self.judged[i], self.dt, self.folder) for i in medians
        }
        self.chains: dict[tuple, _Chain] = {}
        for i, median in medians.items():
            rule, lookback = self.rules[i], self.judged[i][1]
            if _chain(rule) not in self.chains:
                self.chains[_chain(rule)] = _Chain(rule, lookback, self.dt, median, self.plant)
        self.codes = _PieceCodes(_warm_up(self.attrs, self.dt)) if self.states else None
        self.stalled = Neighbours()  # the checkpoints' neighbours, for the chains held

    def feed(self, columns: dict[str, np.ndarray], at: int, after: dict | None) -> None:
        """Take the run's samples from ``at`` (a piece)."""
        if self.states and self.tallying:
            _histogram(self.histograms, columns, self.signals())
        codes = None if self.codes is None else self.codes(columns, after)
        inputs = _Inputs(columns, after, self.stalled)
        statistics = {key: chain(inputs, at, codes) for key, chain in self.chains.items()}
        for i, measured in self.measured.items():
            measured.feed(statistics[_chain(self.rules[i])], at, columns["time"])

    def _decide(self, replay: Callable[[], Iterator], again: dict[int, _Measured]) -> None:
        """The causes the rules ``again`` waited on, from their statistics with the checkpoints
        held at the running medians (found first): one pass over the ``replay``, only those
        statistics made."""
        medians = _medians(replay, self.histograms, {self.rules[i].signal for i in again})
        held = {}
        for i in again:
            rule = self.rules[i]
            if _chain(rule) not in held:
                held[_chain(rule)] = (rule.signal, medians[rule.signal], _stages(rule, self.dt))
        stalled = Neighbours()
        for columns, at, after in replay():
            inputs = _Inputs(columns, after, stalled)
            statistics = {
                key: stages.some(inputs.held(name, median), at)
                for key, (name, median, stages) in held.items()
            }
            for i, measured in again.items():
                measured.waiting.decide(statistics[_chain(self.rules[i])], at)

    def finish(
        self, replay: Callable[[], Iterator[tuple[dict, int, dict | None]]]
    ) -> tuple[list[RuleResult], list[Refusal]]:
        """Each rule's verdict, and the rules refused with why, as :func:`check_each` gives."""
        self.tallying = False
        again = {i: m for i, m in self.measured.items() if m.waiting.size}
        if again:
            self._decide(replay, again)
        results = {i: m.result(self.size) for i, m in self.measured.items()}
        for i, result in list(results.items()):
            if np.isnan(result.worst):  # no reading at all: NaN compares over no limit
                del results[i]
                self.errors[i] = RuleError(
                    f"rule {self.rules[i].name}: every reading of {self.rules[i].signal} is "
                    "missing (NaN), so the profile has no verdict"
                )
        ordered = [results[i] for i in range(len(self.rules)) if i in results]
        refused = [Refusal(self.rules[i], str(self.errors[i])) for i in sorted(self.errors)]
        return ordered, refused


class _PieceCodes:
    """:func:`_codes` piece by piece: the state after each piece from the next sample, the
    warm-up's window carried."""

    def __init__(self, warm: int) -> None:
        self.warm = Windowed(signal.rolling_max, warm + 1) if warm else None

    def __call__(self, columns: dict, after: dict | None) -> np.ndarray:
        code = _codes(columns)
        following = code[1:] if after is None else np.r_[code[1:], _codes(after)]
        np.minimum(code[: following.size], following, out=code[: following.size])
        if self.warm is not None:
            code[self.warm(code == _STATE_CODE[State.RAMP], 0)] = _STATE_CODE[State.RAMP]
        return code


def _codes(columns: dict) -> np.ndarray:
    """Each sample's cause code: its job state's, or a grid disturbance's where one acts."""
    code = _STATE_CODE[columns["job_state"]]
    if "grid_event" in columns:
        code = np.where(columns["grid_event"] > 0, CAUSES.index("grid disturbance"), code)
    return code


def _chain(rule: Rule) -> tuple:
    """What a rule's statistic depends on: rules alike here differ only in direction or limit."""
    return (rule.signal, rule.averaging, rule.band, rule.statistic, rule.window)


class _Inputs:
    """A piece's signals as the chains (:class:`_Chain`) read them: as is, less the cooling
    plant, and with the checkpoints' stalls held at the running median, each made once however
    many chains read it; the stalls (a checkpoint's intervals and those either side holding
    part of it) from the state ``stalled`` carries across pieces."""

    def __init__(self, columns: dict, after: dict | None, stalled: Neighbours) -> None:
        self.columns, self.after, self.neighbours = columns, after, stalled
        self.made: dict[tuple, np.ndarray] = {}

    def signal(self, name: str) -> np.ndarray:
        return self._once(("as is", name), lambda: np.asarray(self.columns[name], np.float64))

    def rest(self, name: str) -> np.ndarray:
        return self._once(("rest", name), lambda: self.signal(name) - self.columns["cooling_power"])

    def held(self, name: str, median: float) -> np.ndarray:
        return self._once(
            ("held", name, median), lambda: np.where(self._stalled(), median, self.signal(name))
        )

    def _stalled(self) -> np.ndarray:
        def stalled() -> np.ndarray:
            checkpoint = self.columns["job_state"] == State.CHECKPOINT
            after = self.after
            ahead = None if after is None else after["job_state"] == State.CHECKPOINT
            before, behind = self.neighbours(checkpoint, ahead, end=False)
            return checkpoint | before | behind

        return self._once(("stalled",), stalled)

    def _once(self, key: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
        if key not in self.made:
            self.made[key] = make()
        return self.made[key]


class _Chain:
    """One chain's statistics (:func:`_chain`: the rules alike but for direction and limit
    share them), piece by piece and unsigned: of the signal as is, with the cooling plant
    removed, with the checkpoints held at the running median (once known), and the strongest
    job event within the statistic's reach before each sample (:func:`_attribute`)."""

    def __init__(
        self, rule: Rule, lookback: int, dt: float, median: float | None, plant: bool
    ) -> None:
        self.name, self.median = rule.signal, median
        self.value = _stages(rule, dt)
        # the cooling plant is in what the grid and the facility draw, not in IT power
        plant = plant and rule.signal in ("grid_power", "facility_power")
        self.rest = _stages(rule, dt) if plant else None
        self.held = _stages(rule, dt) if median is not None else None
        self.strongest = Windowed(signal.rolling_min, lookback + 1)

    def __call__(
        self, inputs: _Inputs, at: int, codes: np.ndarray | None
    ) -> tuple[np.ndarray, ...]:
        """The piece's statistics: as is, plant removed, checkpoints held (None where not
        measured), and the strongest cause (None without the job's states)."""
        rest = None if self.rest is None else self.rest.some(inputs.rest(self.name), at)
        held = None
        if self.held is not None:
            held = self.held.some(inputs.held(self.name, self.median), at)
        strongest = None if codes is None else self.strongest(codes, at)
        return self.value(inputs.signal(self.name), at), rest, held, strongest


class _Measured:
    """One rule measured piece by piece from its chain's statistics (:class:`StreamedCheck`)."""

    def __init__(
        self, rule: Rule, limit: float, lookback: int, dt: float, folder: str | Path | None
    ) -> None:
        self.rule, self.limit, self.lookback, self.dt = rule, limit, lookback, dt
        self.best: tuple[float, np.datetime64] | None = None
        self.counts = np.zeros(len(LABELS), np.int64)
        # the violations (start, end, worst, cause code, first and stop index) of each piece
        self.rows: list[tuple[np.ndarray, ...]] = []
        self.open: tuple | None = None  # the last of the piece before, if it reached its end
        self.waiting = _Waiting(rule, limit, folder)

    def feed(self, statistics: tuple[np.ndarray, ...], at: int, times: np.ndarray) -> None:
        """Take a piece from ``at``: its chain's ``statistics`` (:class:`_Chain`)."""
        rule, limit = self.rule, self.limit
        stat, rest, held, strongest = statistics
        value = _signed(stat, rule)
        if rule.averaging:  # the run's first readings average fewer samples
            value[: max(min(self.lookback - 1 - at, value.size), 0)] = -np.inf
        # the samples over the limit and the cause of each, attributed among them alone
        over = np.flatnonzero(value > limit)
        if strongest is None:
            cause = np.full(over.size, len(CAUSES), np.int8)
        else:
            cause = strongest[over]
            rested = _Rested(value, over, cause, rest, rule)
            # with the median unknown, a checkpoint's samples wait for the replay to decide
            # them (a checkpoint's cause, or else the other causes as any sample's)
            waits = cause == CAUSES.index("checkpoint") if held is None else np.zeros(0, bool)
            if waits.any():
                self.waiting.add(over[waits], at, value[over[waits]], rested()[waits], times)
            cause = _attribute(
                cause,
                ~waits if waits.size else np.ones(over.size, bool),
                limit,
                lambda: _signed(held(over), rule),
                rested,
            )
        self.waiting.pieces.append(self.waiting.size)
        self._tally(value, over, cause, at, times)

    def _tally(
        self, value: np.ndarray, over: np.ndarray, cause: np.ndarray, at: int, times: np.ndarray
    ) -> None:
        best = int(np.argmax(value))
        if self.best is None or value[best] > self.best[0]:
            self.best = (float(value[best]), times[best])
        first, last = _runs(over, cause)
        start, stop, code = over[first], over[last] + 1, cause[first]
        worst = signal.segment_max(value, start, stop)
        self.counts += np.bincount(code, weights=stop - start, minlength=len(LABELS)).astype(int)
        row = [times[start], times[stop - 1], worst, code, start + at, stop + at]
        if self.open is not None:  # the piece before's last run reached its end
            if start.size and start[0] == 0 and code[0] == self.open[3][0]:  # one run
                row[0][0], row[2][0] = self.open[0][0], max(self.open[2][0], worst[0])
                row[4][0] = self.open[4][0]
            else:
                self.rows.append(self.open)
        self.open = None
        if stop.size and stop[-1] == value.size:  # it may go on in the next piece
            self.open = tuple(c[-1:] for c in row)
            row = [c[:-1] for c in row]
        self.rows.append(tuple(row))

    def result(self, size: int) -> RuleResult:
        if self.open is not None:
            self.rows.append(self.open)
            self.open = None
        violations = tuple(np.concatenate(c) for c in zip(*self.rows, strict=True))
        counts = self.counts
        if self.waiting.size:  # the samples waited on, decided: their runs among the others'
            violations, counts = self.waiting.merged(violations, counts)
        return _result(self.rule, self.limit, self.best, violations[:4], counts, size, self.dt)


class _Waiting:
    """The samples over a rule's limit whose cause waited on the running median (a checkpoint
    within the statistic's reach, :func:`_attribute`), kept on disk (a temporary file in
    ``folder``) a piece at a time: index, value, whether the signal less the cooling plant is
    within the limit, and time; then decided from the statistic held at the median
    (:meth:`decide`), as runs of one cause (:meth:`merged`)."""

    def __init__(self, rule: Rule, limit: float, folder: str | Path | None) -> None:
        self.rule, self.limit, self.folder = rule, limit, folder
        self.file = None
        self.record: np.dtype | None = None
        self.size = 0  # samples kept
        self.pieces: list[int] = []  # samples kept by the end of each piece fed
        self.read = 0  # pieces decided
        self.decided: list[tuple[np.ndarray, ...]] = []

    def add(
        self, index: np.ndarray, at: int, value: np.ndarray, rest: np.ndarray, times: np.ndarray
    ) -> None:
        """Keep the samples of the piece from ``at`` that wait (``index`` in it): ``value``, the
        signal less the cooling plant's signed ``rest``, and their time among ``times``."""
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="powermodel-waiting-", dir=self.folder)
            fields = [("index", np.int64), ("value", value.dtype), ("rest", bool)]
            self.record = np.dtype([*fields, ("time", times.dtype)])
        kept = np.empty(index.size, self.record)
        kept["index"], kept["value"], kept["rest"] = index + at, value, rest <= self.limit
        kept["time"] = times[index]
        kept.tofile(self.file)
        self.size += index.size

    def decide(self, stat: np.ndarray, at: int) -> None:
        """Decide the samples of the piece from ``at`` (the next, in the order fed) from the
        rule's statistic with the checkpoints held at the median (``stat``, unsigned), as
        :func:`_attribute` does: a checkpoint's cause where the sample would pass held, else
        an iteration swing's, or the weather's where the signal less the plant passes."""
        if self.read == 0:
            self.file.seek(0)
        begin = self.pieces[self.read - 1] if self.read else 0
        kept = np.fromfile(self.file, self.record, self.pieces[self.read] - begin)
        self.read += 1
        if not kept.size:
            return
        swing = _signed(stat(np.ascontiguousarray(kept["index"]) - at), self.rule) > self.limit
        code = np.where(swing, CAUSES.index("iteration swing"), CAUSES.index("checkpoint"))
        code = np.where(swing & kept["rest"], CAUSES.index("weather"), code).astype(np.int8)
        first, last = _runs(kept["index"], code)
        index, times = kept["index"], kept["time"]
        worst = signal.segment_max(np.ascontiguousarray(kept["value"]), first, last + 1)
        self.decided.append(
            (times[first], times[last], worst, code[first], index[first], index[last] + 1)
        )

    def merged(
        self, violations: tuple[np.ndarray, ...], counts: np.ndarray
    ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        """The rule's ``violations`` (start, end, worst, code, first and stop index) and
        samples over by cause (``counts``) with the runs decided in place of those waiting
        (the checkpoint's, in the first pass): runs of one cause side by side made one."""
        self.file.close()
        waited = violations[3] == CAUSES.index("checkpoint")
        counts = counts.copy()
        counts[CAUSES.index("checkpoint")] = 0
        for _, _, _, code, first, stop in self.decided:
            counts += np.bincount(code, weights=stop - first, minlength=len(LABELS)).astype(int)
        parts = [tuple(c[~waited] for c in violations), *self.decided]
        runs = [np.concatenate(c) for c in zip(*parts, strict=True)]
        order = np.argsort(runs[4], kind="stable")
        start, end, worst, code, first, stop = (c[order] for c in runs)
        if not first.size:
            return (start, end, worst, code, first, stop), counts
        new = np.ones(first.size, bool)
        new[1:] = (first[1:] != stop[:-1]) | (code[1:] != code[:-1])
        head = np.flatnonzero(new)
        tail = np.append(head[1:], first.size) - 1
        joined = (start[head], end[tail], np.maximum.reduceat(worst, head), code[head])
        return (*joined, first[head], stop[tail]), counts


class _Rested:
    """The signal less the cooling plant's statistic, signed, at a piece's samples over the
    limit (``over``) that :func:`_attribute` may read it at (those whose strongest ``cause`` is
    a checkpoint or an iteration swing; the others hold ``value``), made there alone and once
    (``rest``: its readings at given samples, :meth:`powermodel.piecewise.Chained.some`; None:
    no plant, ``value`` itself)."""

    def __init__(
        self,
        value: np.ndarray,
        over: np.ndarray,
        cause: np.ndarray,
        rest: Callable[[np.ndarray], np.ndarray] | None,
        rule: Rule,
    ) -> None:
        self.value, self.over, self.cause, self.rest, self.rule = value, over, cause, rest, rule
        self.made: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self.made is None:
            self.made = self.value[self.over]
            if self.rest is not None:
                read = (self.cause == CAUSES.index("checkpoint")) | (
                    self.cause == CAUSES.index("iteration swing")
                )
                at = np.flatnonzero(read)
                self.made[at] = _signed(self.rest(self.over[at]), self.rule)
        return self.made
