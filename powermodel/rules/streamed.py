"""Checking a profile against rules: :class:`StreamedCheck` accumulates each rule's
verdict over a run's pieces, and :func:`check` / :func:`check_each` feed it a whole profile's
cache-sized blocks, so that an in-memory run and a streamed one are judged by the same code.

The third stage of a check: it measures by :mod:`powermodel.rules.measurement`, finds running
medians by :mod:`powermodel.rules.median`; :mod:`powermodel.stream` feeds it a streamed run's
chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

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


class _HeldUnknown(Exception):
    """A checkpoint's sample needs the running median, which the first pass does not know."""


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
    first pass), and a second measures those rules again with it.
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
    ) -> None:
        self.rules, self.size, self.attrs = rules, size, attrs
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
        median may need them (none without the job's states: no checkpoint is held)."""
        if not self.states or not self.judged:
            return ()
        signals = sorted(self.signals())
        rest = self.plant and any(s in ("grid_power", "facility_power") for s in signals)
        return (*signals, *(("cooling_power",) if rest else ()), "job_state", "grid_event", "time")

    def least(self) -> int:
        """The samples a piece needs at least: every rule's reach and the dies' warm-up."""
        reach = [lookback for _, lookback in self.judged.values()]
        return 2 * (max(reach, default=0) + _warm_up(self.attrs, self.dt) + 2)

    def _start(self, medians: dict[int, float | None]) -> None:
        self.measured = {i: _Measured(self.rules[i], *self.judged[i], self.dt) for i in medians}
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
        # a rule that needs the running median is measured again from the run's start (the
        # replay, :meth:`finish`), and so are the rules that share its chain (their statistics
        # made once, there): until then none of them is fed
        again = self._again()
        live = {i: m for i, m in self.measured.items() if _chain(self.rules[i]) not in again}
        if not live:
            return
        codes = None if self.codes is None else self.codes(columns, after)
        read = {_chain(self.rules[i]) for i in live}
        inputs = _Inputs(columns, after, self.stalled)
        statistics = {key: self.chains[key](inputs, at, codes) for key in read}
        for i, measured in live.items():
            measured.feed(statistics[_chain(self.rules[i])], at, columns["time"])

    def _again(self) -> set[tuple]:
        """The chains (:func:`_chain`) of the rules that need the running median."""
        return {_chain(self.rules[i]) for i, m in self.measured.items() if m.needs_held}

    def finish(
        self, replay: Callable[[], Iterator[tuple[dict, int, dict | None]]]
    ) -> tuple[list[RuleResult], list[Refusal]]:
        """Each rule's verdict, and the rules refused with why, as :func:`check_each` gives."""
        self.tallying = False
        chains = self._again()
        again = [i for i in self.measured if _chain(self.rules[i]) in chains]
        results = {i: m.result(self.size) for i, m in self.measured.items() if i not in again}
        if again:
            medians = _medians(replay, self.histograms, {self.rules[i].signal for i in again})
            self._start({i: medians[self.rules[i].signal] for i in again})
            for piece in replay():
                self.feed(*piece)
            results |= {i: m.result(self.size) for i, m in self.measured.items()}
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
        rest = None if self.rest is None else self.rest(inputs.rest(self.name), at)
        held = None
        if self.held is not None:
            held = self.held(inputs.held(self.name, self.median), at)
        strongest = None if codes is None else self.strongest(codes, at)
        return self.value(inputs.signal(self.name), at), rest, held, strongest


class _Measured:
    """One rule measured piece by piece from its chain's statistics (:class:`StreamedCheck`)."""

    def __init__(self, rule: Rule, limit: float, lookback: int, dt: float) -> None:
        self.rule, self.limit, self.lookback, self.dt = rule, limit, lookback, dt
        self.needs_held = False
        self.best: tuple[float, np.datetime64] | None = None
        self.counts = np.zeros(len(LABELS), np.int64)
        # the violations (start, end, worst, cause code) found in each piece, as arrays
        self.rows: list[tuple[np.ndarray, ...]] = []
        self.open: tuple | None = None  # the last of the piece before, if it reached its end

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
            try:
                cause = _attribute(
                    cause,
                    np.ones(over.size, bool),
                    limit,
                    lambda: _signed(_known(held)[over], rule),
                    lambda: value[over] if rest is None else _signed(rest[over], rule),
                )
            except _HeldUnknown:  # measured again once the median is known
                self.needs_held = True
        self._tally(value, over, cause, times)

    def _tally(
        self, value: np.ndarray, over: np.ndarray, cause: np.ndarray, times: np.ndarray
    ) -> None:
        at = int(np.argmax(value))
        if self.best is None or value[at] > self.best[0]:
            self.best = (float(value[at]), times[at])
        first, stop, worst, code = _runs(value, over, cause)
        self.counts += np.bincount(code, weights=stop - first, minlength=len(LABELS)).astype(int)
        start, end = times[first], times[stop - 1]
        if self.open is not None:  # the piece before's last run reached its end
            if first.size and first[0] == 0 and code[0] == self.open[3][0]:  # one run
                start[0], worst[0] = self.open[0][0], max(self.open[2][0], worst[0])
            else:
                self.rows.append(self.open)
        self.open = None
        if stop.size and stop[-1] == value.size:  # it may go on in the next piece
            self.open, (start, end, worst, code) = (
                (start[-1:], end[-1:], worst[-1:], code[-1:]),
                (start[:-1], end[:-1], worst[:-1], code[:-1]),
            )
        self.rows.append((start, end, worst, code))

    def result(self, size: int) -> RuleResult:
        if self.open is not None:
            self.rows.append(self.open)
            self.open = None
        violations = tuple(np.concatenate(c) for c in zip(*self.rows, strict=True))
        return _result(self.rule, self.limit, self.best, violations, self.counts, size, self.dt)


def _known(held: np.ndarray | None) -> np.ndarray:
    if held is None:
        raise _HeldUnknown
    return held
