"""The GPUs of an nvidia-smi log without ``index``, told apart by their place in each poll.

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
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits
from powermodel.iotools.telemetry.tidy import gpu_channels

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
# The fields whose repeating per-GPU values tell the GPUs of a log without index apart, the
# steadiest first: the memory a GPU holds, its temperature, its idle power level. Utilisation
# and clocks are left out: GPUs in step share them, and a periodic workload makes them repeat
# with the iteration, not with the GPUs.
_SIGNATURE = {"memory_used": "memory.used", "temperature": "temperature.gpu", "power": "power"}


# The fix named when the GPUs of a log without index cannot be told apart
_FIX = (
    "give the GPUs per poll, --gpus N (gpus=N), or record with "
    "--query-gpu=timestamp,index,... so each line names its GPU"
)


def gpu_polls(
    raw: pd.DataFrame, run: np.ndarray, gpus: int | None, path: Path, log: list, meta: dict
) -> pd.DataFrame:
    """Name the GPUs of a log without ``index`` by their place in each poll: line k of a
    logger run (``run``: each row's) is GPU k mod N, N ``gpus`` or inferred (see the module's
    docstring); ``meta`` gets ``gpus`` and ``gpus_from``."""
    t = raw["time"].to_numpy().astype(np.int64)
    size, place = _places(run)
    found, per, starts = _signature(raw, run, path)
    if gpus is not None:
        _check_given(gpus, int(size.max()), found, path)
        source = "given"
    elif found:
        gpus, source = _count_found(found, path)
    else:
        largest = min(limits.MAX_NODE_GPUS, int(size.max()))
        gpus, source = _count_by_times(t, run, place, largest, path), "times"
    _divisor_change(raw, run, per, starts, gpus, path)
    run = _restarts(raw, run, gpus, found, log)
    size, place = _places(run)
    back = _backward(t, run, gpus)
    if back > limits.MAX_JUMPS * gpus:
        said = "given" if source == "given" else f"from {source}"
        raise DataFileError(
            f"{path}: with {gpus} GPUs per poll ({said}) their times go back {back} times, "
            f"more than clock jumps do: the count is wrong or the lines are out of order; {_FIX}"
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
    return raw.assign(channel=gpu_channels(place[complete] % gpus))


def _places(run: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lines of each logger run (one a run) and each line's place in its run (from 0)."""
    start = np.r_[0, np.flatnonzero(np.diff(run)) + 1]
    size = np.diff(np.r_[start, len(run)])
    return size, np.arange(len(run)) - np.repeat(start, size)


def _repeating(found: dict[str, int]) -> str:
    """The fields ``found`` and every how many lines each repeats, in words."""
    return ", ".join(f"{_SIGNATURE[v]} every {n} lines" for v, n in found.items())


def _check_given(gpus: int, longest: int, found: dict[str, int], path: Path) -> None:
    """Refuse ``gpus`` given for a log whose longest run has fewer lines, or that a field
    repeating (``found``) contradicts."""
    if gpus > longest:
        raise DataFileError(
            f"{path}: --gpus {gpus} is more than the {longest} lines of the log's "
            f"longest run: no poll is whole; {_FIX}"
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
        raise DataFileError(
            f"{path}: --gpus {gpus} is {gpus // shown} times the {shown} GPUs the log "
            f"shows ({_repeating(found)}, throughout): read with {gpus}, each GPU's lines would "
            f"be split over {gpus // shown} channels; give --gpus {shown}, or record with "
            "--query-gpu=timestamp,index,... if the node has more GPUs than its fields tell"
        )


def _count_found(found: dict[str, int], path: Path) -> tuple[int, str]:
    """The GPUs per poll the fields that repeat (``found``) show, and the field that showed
    it. The steadiest field decides (power also repeats with a periodic workload); another
    whose count is neither a divisor nor a multiple of it leaves the count ambiguous."""
    field = next(iter(found))
    gpus = found[field]
    if any(gpus % m and m % gpus for m in found.values()):
        raise DataFileError(
            f"{path}: a log without index whose GPU count is ambiguous: {_repeating(found)}; {_FIX}"
        )
    return gpus, _SIGNATURE[field]


def _count_by_times(
    t: np.ndarray, run: np.ndarray, place: np.ndarray, largest: int, path: Path
) -> int:
    """The smallest count of GPUs up to ``largest`` that gives regular polls (:func:`_regular`)
    of a log where no field repeats with the GPUs."""
    regular = next((g for g in range(1, largest + 1) if _regular(t, run, place, g)), None)
    if regular is None:
        raise DataFileError(
            f"{path}: a log without index whose GPUs cannot be told apart: no field "
            "(memory.used, temperature.gpu, power) repeats with the GPUs and no count of "
            f"GPUs gives regular polls whose lines come close together; {_FIX}"
        )
    return regular


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


class _Change(NamedTuple):
    """The windows of a log that may change its GPUs per poll to a divisor ``fewer`` of its
    count: those showing the divisor (``short``) and those showing the count (``full``),
    whether the divisor's come after (``later``), each window's first row (``starts``) and
    the windows' ``width`` in lines."""

    short: np.ndarray
    full: np.ndarray
    later: bool
    fewer: int
    starts: np.ndarray
    width: int

    def rows(self, windows: np.ndarray) -> np.ndarray:
        """The rows of ``windows``, each once."""
        return np.unique((self.starts[windows][:, None] + np.arange(self.width)).ravel())


def _divisor_change(
    raw: pd.DataFrame,
    run: np.ndarray,
    per: dict[str, np.ndarray],
    starts: np.ndarray,
    gpus: int,
    path: Path,
) -> None:
    """Refuse a log whose GPUs per poll change to (or from) a divisor of ``gpus`` (8 GPUs, then
    4: a GPU off the bus or the node re-configured). Read with 8, each later GPU's lines would
    be split over two channels, in silence: every field still repeats every 8 lines. Told from
    GPUs that share a value now and then by the windows (:func:`_divisor_windows`) and line by
    line in one field (:func:`_repeats`). The line is where the lines M apart in that field
    stop (or start) differing: the change point of their differences."""
    change = _divisor_windows(per, starts, gpus, len(run))
    if change is None:
        return
    fewer = change.fewer
    # Confirmed line by line, by medians (a window's trimmed mean can show a divisor where
    # most of its lines are alike, as at idle with the little memory every GPU holds): in the
    # windows of the divisor M, lines M apart match and lines fewer apart differ; in those
    # of the count N, lines M apart differ and lines N apart match.
    var = _field_showing(raw, run, per, change, change.short, fewer, range(1, fewer))
    if var is None or _field_showing(raw, run, per, change, change.full, gpus, (fewer,)) is None:
        return
    at = _change_row(raw[var].to_numpy(dtype=float), run, per[var], change, gpus)
    line = int(raw["line"].iloc[at])
    then, now = (gpus, fewer) if change.later else (fewer, gpus)
    raise DataFileError(
        f"{path}: line {line}: the GPUs per poll change from {then} to {now} here "
        f"({_SIGNATURE[var]} repeats every {then} lines before this line and every {now} from "
        f"it: a GPU lost, the node re-configured); read with {gpus}, each "
        f"GPU's lines of the {fewer}-GPU part would be split over {gpus // fewer} channels. "
        f"Split the file at line {line} and read each part, or record with "
        "--query-gpu=timestamp,index,... so each line names its GPU"
    )


def _divisor_windows(
    per: dict[str, np.ndarray], starts: np.ndarray, gpus: int, n: int
) -> _Change | None:
    """The windows of a log of ``n`` lines that show a divisor of ``gpus`` and those that show
    ``gpus`` (``per``: each field's count in each window, from :func:`_signature`; a window's
    count is the least common multiple of its fields'), where they may be a change of count:
    those showing a divisor M of the count and none showing the count itself are one block,
    two windows or more (or the log's last or first window alone), at the start or the end of
    the windows that show a count, and those showing the count are two or more. None where
    they are not."""
    if not per:
        return None
    stack = np.stack(list(per.values()))
    together = np.lcm.reduce(np.where(stack > 0, stack, 1), axis=0) * (stack > 0).any(axis=0)
    has = together > 0
    short = has & (together < gpus) & (gpus % np.maximum(together, 1) == 0)
    full = has & (together % gpus == 0)
    if not short.any() or full.sum() < 2:
        return None
    i_short, i_full = np.flatnonzero(short), np.flatnonzero(full)
    later = i_short[0] > i_full[-1]  # gpus, then fewer
    if not (later or i_short[-1] < i_full[0]):
        return None  # a divisor now and then, among windows of the full count: GPUs sharing one
    # one window of the divisor will do where it is the log's last (or first): a part of
    # fewer GPUs at the end, shorter than two windows, is no less misread
    if i_short.size < 2 and i_short[0] != (together.size - 1 if later else 0):
        return None
    fewer = int(np.lcm.reduce(together[short]))
    if fewer >= gpus:
        return None
    width = min(n, _WINDOW_POLLS * min(2 * limits.MAX_NODE_GPUS, n // 4))
    return _Change(i_short, i_full, bool(later), fewer, starts, width)


def _field_showing(
    raw: pd.DataFrame,
    run: np.ndarray,
    per: dict[str, np.ndarray],
    change: _Change,
    windows: np.ndarray,
    count: int,
    others: Sequence[int],
) -> str | None:
    """The first field that repeats every ``count`` lines, not every ``others``, line by line
    (:func:`_repeats`) in those of ``windows`` where it shows a count of its own (memory says
    nothing at idle, power nothing in training); None where none does."""
    return next(
        (
            v
            for v, counts in per.items()
            if (counts[windows] > 0).any()
            and _repeats(
                raw[v].to_numpy(dtype=float),
                run,
                change.rows(windows[counts[windows] > 0]),
                count,
                others,
            )
        ),
        None,
    )


def _change_row(
    whole: np.ndarray, run: np.ndarray, counts: np.ndarray, change: _Change, gpus: int
) -> int:
    """The row where a field's values (``whole``; ``counts``: its count in each window) change
    from repeating every ``gpus`` lines to every ``change.fewer`` (or back)."""
    later, fewer, short, full = change.later, change.fewer, change.short, change.full
    one, other = (full[-1], short[0]) if later else (short[-1], full[0])
    lo, hi = int(change.starts[one]), min(len(run), int(change.starts[other]) + change.width)
    d = _lag_differences(whole[lo:hi], run[lo:hi], fewer)
    # tau: halfway between what lines M apart differ by in the windows of the full count
    # (different GPUs) and in those of the divisor (one GPU a poll apart), each the median over
    # the lines that differ from one of the poll's (none at idle, where every GPU may hold the
    # same memory), and over all of each side's windows where the field shows a count (the two
    # next to the change hold lines of both sides)
    seen = full[counts[full] > 0]
    tau = 0.5 * (
        _lag_median(whole, run, change.rows(seen if seen.size else full), fewer, gpus)
        + _lag_median(whole, run, change.rows(short[counts[short] > 0]), fewer, gpus)
    )
    if not np.isfinite(tau):
        return lo if later else hi - 1
    # The change point of lines M apart differing (over tau) on the full count's side
    # and matching on the divisor's: the extreme of the running count of lines that
    # differ less those that match, so a step of every GPU at once (memory allocated: M
    # lines that differ by 60 GiB) or a few near GPUs on the full side move it by no more
    # than their lines. The first M lines of a poll of M still differ from the poll of N
    # before, and the first M of a poll of N still match the poll of M before: the
    # change is M lines before the extreme's end.
    excess = np.cumsum(np.nan_to_num(np.sign(d - tau), nan=0.0))
    end = int(np.argmax(excess) if later else np.argmin(excess)) + 1
    return lo + int(np.clip(end - fewer, 0, hi - lo - 1))


def _lag_differences(x: np.ndarray, run: np.ndarray, lag: int) -> np.ndarray:
    """Each line's difference from the line ``lag`` before it (NaN for the first ``lag``
    lines and across logger runs)."""
    d = np.full(len(x), np.nan)
    if lag < len(x):
        d[lag:] = np.where(run[lag:] == run[:-lag], np.abs(x[lag:] - x[:-lag]), np.nan)
    return d


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: no median, no repeat
        told = _told(x, run, rows, count)
        same = np.nanmedian(_apart(x, run, rows, count)[told])
        least = np.nanmin(np.stack([_apart(x, run, rows, lag) for lag in others]), axis=0)
        differ = np.nanmedian(least[told])
    return bool(differ > 0 and differ > _CONTRAST * same)


def _lag_median(x: np.ndarray, run: np.ndarray, rows: np.ndarray, lag: int, gpus: int) -> float:
    """The median over ``rows`` of the difference between lines ``lag`` apart, among the lines
    that differ from one of the ``gpus`` - 1 lines before them (NaN where none does)."""
    rows = rows[rows >= gpus]
    if rows.size == 0:
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: no median
        told = _told(x, run, rows, gpus)
        return float(np.nanmedian(_apart(x, run, rows, lag)[told])) if told.any() else np.nan


def _apart(x: np.ndarray, run: np.ndarray, rows: np.ndarray, lag: int) -> np.ndarray:
    """The difference of each of ``rows`` from the line ``lag`` before it (NaN across runs)."""
    return np.where(run[rows] == run[rows - lag], np.abs(x[rows] - x[rows - lag]), np.nan)


def _told(x: np.ndarray, run: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Which of ``rows`` differ from one of the ``count`` - 1 lines before them (all-NaN rows
    warn: the callers silence it)."""
    return np.nanmax(np.stack([_apart(x, run, rows, k) for k in range(1, count)]), axis=0) > 0


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
    for i, k, field in list(zip(at, cut, by, strict=True))[: limits.LISTED]:
        log.append(
            f"line {lines[i]}: the per-GPU signature ({field}) shifts by {k} line(s) there: "
            f"the logger restarted after {k} of the {gpus} lines of a poll with no header to "
            f"mark it (noheader), {(t[i] - t[i - 1]) / 1e9:g} s after the line before; counted "
            "from GPU 0 again from that line"
        )
    if at.size > limits.LISTED:
        log.append(
            f"{at.size - limits.LISTED} more restart(s) without a header found and re-phased"
        )
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

    def window(d: np.ndarray) -> np.ndarray:  # the sum of d over the N lines from each line
        s = np.full(n, np.nan)
        m = n - gpus + 1
        total = np.r_[0.0, np.cumsum(np.nan_to_num(d, nan=0.0))]
        holes = np.r_[0, np.cumsum(np.isnan(d))]
        s[:m] = np.where(holes[gpus:] - holes[:m] == 0, total[gpus:] - total[:m], np.nan)
        return s

    d_n = _lag_differences(x, run, gpus)
    s_n = window(d_n)
    best, cut = np.full(n, np.inf), np.zeros(n, dtype=np.int64)
    for k in range(1, gpus):  # each cut length (at most 63), over all lines
        s_k = window(_lag_differences(x, run, gpus + k))
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
    lags = min(2 * limits.MAX_NODE_GPUS, n // 4)
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
