"""The tidy frame every reader's rows become, and the checks and repairs common to all
formats: channels bounded, samples without power dropped, readings that cannot be (not
finite, negative, over a GPU's or a meter's most) refused by line, each channel's clock jumps
repaired and its repeated times dropped, a forward jump over a day refused, the sampling step
found, and channels that start late, stop early, leave gaps or are absent reported.

The frame is long: ``time`` (datetime64[ns], UTC), ``channel``, ``power`` [W] and the
:data:`OPTIONAL` variables a file has; sorted by channel, then time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits
from powermodel.iotools.telemetry.lines import refuse_line

# The variables a file may have besides power: utilisation [1], SM clock [MHz], temperature
# [°C], memory used [MiB].
OPTIONAL = ("utilization", "sm_clock", "temperature", "memory_used")
METER_FORMATS = ("meter", "mlperf-power")  # formats whose channels are meters, not GPUs
# A time moving forward by more than this within a channel is not lost samples but a clock
# set wrong or files of different runs joined [A]: refused, naming the line.
_MAX_GAP = np.timedelta64(1, "D")
# Steps back by under half a step (the stamps' jitter) put in time order: a few in a log (seven
# at most in MLPerf's node logs, 0.8 % of its readings), so a channel whose steps go back more
# often than this share of its steps, and more than MAX_JUMPS times, is a file out of order
# (reversed, shuffled, or joined in the wrong order) whose order no repair should guess [A].
_OUT_OF_ORDER = 0.05
# A channel that starts or stops this many of its steps away from the trace's ends is reported.
_LATE = 3


def gpu_channels(ids: np.ndarray) -> np.ndarray:
    """The channel of each GPU id (whole numbers): ``gpu<i>``."""
    return np.char.add("gpu", ids.astype(str))


def finish(
    raw: pd.DataFrame, meta: dict, log: list, path: Path, gpus_per_node: int | None
) -> tuple[pd.DataFrame, dict]:
    """The tidy frame of a reader's rows (``raw``: ``line``, ``time``, ``channel``, ``power``
    and what else the file has, in file order) after the common checks and repairs, and
    ``meta`` completed (``kind``, ``channels``, ``step``, ``start``, ``warnings``)."""
    kind = "meter" if meta["format"] in METER_FORMATS else "gpu"
    raw = _with_power(raw, kind, path, log)
    raw = raw.sort_values(["channel", "line"], kind="stable").reset_index(drop=True)
    raw = _jumps(raw, path, log)
    if raw.empty or len(raw) < 2:
        raise DataFileError(
            f"{path}: fewer than two samples with a power reading; a trace needs two or more"
        )
    steps = _steps(raw)
    step = float(np.median(list(steps.values())))
    if not np.isfinite(step):
        raise DataFileError(f"{path}: no channel has two samples: no sampling period")
    _coverage(
        raw, steps, kind, log, gpus_per_node, meta.get("gpus") if "gpus_from" in meta else None
    )
    columns = ["time", "channel", "power"] + [c for c in OPTIONAL if c in raw]
    data = raw[columns].reset_index(drop=True)
    data["channel"] = data["channel"].astype(object)
    data["power"] = data["power"].astype(np.float64)
    data.attrs["step"] = step
    names = sorted(pd.unique(data["channel"]))
    meta.update(
        kind=kind,
        channels=names,
        step=step,
        start=pd.Timestamp(data["time"].min()).to_datetime64(),
        warnings=list(log),
    )
    if gpus_per_node is not None:
        meta["gpus_per_node"] = gpus_per_node
    return data, meta


def _with_power(raw: pd.DataFrame, kind: str, path: Path, log: list) -> pd.DataFrame:
    """``raw`` without its samples that read no power; refused: more channels than
    :data:`~powermodel.iotools.telemetry.limits.MAX_CHANNELS`, a power not finite, negative
    or over the most one GPU (or, ``kind`` ``"meter"``, one meter) can read."""
    channels = pd.unique(raw["channel"])
    if len(channels) > limits.MAX_CHANNELS:
        raise DataFileError(
            f"{path}: {len(channels)} channels is over the {limits.MAX_CHANNELS} a "
            "file may have; split it by node"
        )
    missing = np.isnan(raw["power"].to_numpy())
    if missing.any():
        log.append(
            f"{int(missing.sum())} sample(s) without a power reading (first at line "
            f"{raw['line'].iloc[int(np.flatnonzero(missing)[0])]}): dropped"
        )
        raw = raw[~missing]
    power = raw["power"].to_numpy()
    _refuse(
        ~np.isfinite(power),
        raw,
        path,
        "not a finite number",
        "a reading is a number of watts; mend the line or leave it empty for a missing reading",
    )
    _refuse(
        power < 0,
        raw,
        path,
        "negative power",
        "a meter of load reads zero or more; negate an export meter's column or drop it",
    )
    if kind == "gpu":
        top, what = limits.MAX_GPU_POWER, "one GPU"
    else:
        top, what = limits.MAX_METER_POWER, "one meter"
    _refuse(
        power > top,
        raw,
        path,
        f"over {top / 1e3:,.0f} kW for {what}",
        "a value in a larger unit than its column's? convert it or head the column with its unit",
    )
    return raw


def _refuse(bad: np.ndarray, raw: pd.DataFrame, path: Path, what: str, fix: str) -> None:
    """Refuse the first sample flagged ``bad``, its power ``what`` it cannot be, and ``fix``."""
    refuse_line(
        bad,
        raw["line"].to_numpy(),
        path,
        lambda i: (
            f"{raw['channel'].iloc[i]} reads {raw['power'].iloc[i]:g} W, {what} "
            f"({int(bad.sum())} such sample(s)); {fix}"
        ),
    )


def _jumps(raw: pd.DataFrame, path: Path, log: list) -> pd.DataFrame:
    """Repair each channel's backward time steps (clock jumps), drop its repeated times,
    refuse a forward jump over a day; raw is in file order within each channel."""
    t = raw["time"].to_numpy().astype(np.int64)
    same = _same_channel(raw)
    d = np.where(same, np.diff(t), 1)
    typical = (
        pd.Series(np.where(same & (d > 0), d, np.nan))
        .groupby(raw["channel"].to_numpy()[1:])
        .transform("median")
        .to_numpy()
    )
    # A step back by less than half the channel's step is the stamps' jitter (a logger that
    # stalled stamps its next reading a few ms before the one it held back: MLPerf's node logs
    # after a pause, by 2-130 ms in 2-s steps): put in time order, where moving the times after
    # it by a step would misplace the rest of the log by that step [A]
    # (a channel that never steps forward has no step: NaN, and nothing of it is jitter)
    with np.errstate(invalid="ignore"):
        jitter = same & (d < 0) & (-d < 0.5 * typical)
    back = same & (d < 0) & ~jitter
    _refuse_out_of_order(raw, same, d, back, path)
    if jitter.any():
        i = int(np.flatnonzero(jitter)[0]) + 1
        log.append(
            f"{int(jitter.sum())} sample(s) stamped up to {-d[jitter].min() / 1e9:g} s before the "
            f"sample before (first at line {raw['line'].iloc[i]}; under half a step: the stamps' "
            "jitter): put in time order"
        )
    if back.any():
        shift = np.where(back, -d + np.nan_to_num(typical).astype(np.int64), 0)
        cum = pd.Series(np.r_[0, shift]).groupby(raw["channel"].to_numpy()).cumsum().to_numpy()
        i = int(np.flatnonzero(back)[0]) + 1
        log.append(
            f"time goes back {int(back.sum())} time(s) (a clock jump; first at line "
            f"{raw['line'].iloc[i]}, by {-d[i - 1] / 1e9:g} s): the times after each are moved "
            "to follow the sample before by one step"
        )
        t = t + cum
        raw = raw.assign(time=t.astype("datetime64[ns]"))
        d = np.where(same, np.diff(t), 1)
    dup = np.r_[False, same & (d == 0)]
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        log.append(
            f"{int(dup.sum())} sample(s) repeat their channel's time (first at line "
            f"{raw['line'].iloc[i]}, {raw['channel'].iloc[i]}): the later dropped"
        )
        raw = raw[~dup]
        t = t[~dup]
        same = _same_channel(raw)
        d = np.where(same, np.diff(t), 1)
    refuse_line(
        np.r_[False, same & (d > _MAX_GAP.astype("m8[ns]").astype(np.int64))],
        raw["line"].to_numpy(),
        path,
        lambda i: (
            f"{raw['channel'].iloc[i]}'s time jumps forward {d[i - 1] / 86400e9:.1f} "
            "days: a clock set wrong or files of different runs joined; split the file there"
        ),
    )
    return raw.sort_values(["channel", "time"], kind="stable").reset_index(drop=True)


def _same_channel(raw: pd.DataFrame) -> np.ndarray:
    """Whether each row after the first is of the row before's channel."""
    return raw["channel"].to_numpy()[1:] == raw["channel"].to_numpy()[:-1]


def _refuse_out_of_order(
    raw: pd.DataFrame, same: np.ndarray, d: np.ndarray, back: np.ndarray, path: Path
) -> None:
    """Refuse a channel whose time goes back (``d``: each step [ns]; ``same``: within a
    channel; ``back``: by more than jitter) more often than clock jumps do."""
    channel = raw["channel"].to_numpy()[1:]
    counts = pd.DataFrame({"back": back, "any": same & (d < 0), "steps": same}).groupby(channel)
    per = counts.sum()
    order = (per["back"] > limits.MAX_JUMPS) | (
        per["any"] > np.maximum(limits.MAX_JUMPS, _OUT_OF_ORDER * per["steps"])
    )
    if order.any():
        name = order.index[np.argmax(order.to_numpy())]
        refuse_line(
            np.r_[False, (channel == name) & (d < 0)],
            raw["line"].to_numpy(),
            path,
            lambda i: (
                f"{name}'s time goes back {int(per.loc[name, 'any'])} times in "
                f"{int(per.loc[name, 'steps'])} steps: not clock jumps or the stamps' jitter but a "
                "file out of order; sort it by time"
            ),
        )


def _steps(raw: pd.DataFrame) -> dict:
    """Each channel's median sampling period [s] (NaN for a channel of one sample)."""
    t = raw["time"].to_numpy().astype(np.int64)
    channel = raw["channel"].to_numpy()
    same = channel[1:] == channel[:-1]
    d = pd.Series(np.where(same, np.diff(t) / 1e9, np.nan))
    return d.groupby(channel[1:]).median().reindex(pd.unique(channel)).to_dict()


def _coverage(
    raw: pd.DataFrame, steps: dict, kind: str, log: list, gpus_per_node, poll: int | None = None
) -> None:
    """Report channels that start late, stop early or leave gaps, and GPUs absent; ``poll``
    the GPUs of a log read by count (its polls' lines, one a GPU: a GPU with a reading in the
    first or last poll is there from the start or to the end, however far a slow poll spread
    that poll's stamps)."""
    t = raw["time"]
    span = t.groupby(raw["channel"]).agg(["min", "max", "size"])
    line = raw["line"].groupby(raw["channel"]).agg(["first", "last"])
    step = pd.to_timedelta(pd.Series(steps).fillna(0), unit="s")
    late = span["min"] - t.min() > _LATE * step
    early = t.max() - span["max"] > _LATE * step
    if poll:
        numbers = np.sort(raw["line"].unique())
        late &= ~line["first"].isin(numbers[:poll])
        early &= ~line["last"].isin(numbers[-poll:])
    # One message per channel, the first few: a file of thousands would flood the log.
    for name in span.index[late][: limits.LISTED]:
        log.append(
            f"{name} first reports at {span.at[name, 'min']} (line "
            f"{line.at[name, 'first']}), {(span.at[name, 'min'] - t.min()).total_seconds():g}"
            " s after the trace starts: missing before"
        )
    for name in span.index[early][: limits.LISTED]:
        log.append(
            f"{name} stops at {span.at[name, 'max']} (line {line.at[name, 'last']}), "
            f"{(t.max() - span.at[name, 'max']).total_seconds():g} s before the trace "
            "ends: it dropped out (NaN in to_grid)"
        )
    unlisted = max(int(late.sum()) - limits.LISTED, 0) + max(int(early.sum()) - limits.LISTED, 0)
    if unlisted:
        log.append(f"{unlisted} more channel(s) start late or stop early")
    channel = raw["channel"].to_numpy()
    same = channel[1:] == channel[:-1]
    d = np.diff(t.to_numpy().astype(np.int64)) / 1e9
    gap = same & (d > 1.5 * pd.Series(steps).reindex(channel[1:]).to_numpy())
    if gap.any():
        i = int(np.flatnonzero(gap)[0]) + 1
        log.append(
            f"{int(gap.sum())} gap(s) longer than 1.5 steps, the longest {d[gap].max():g} s "
            f"(first at line {raw['line'].iloc[i]}, {channel[i]}): kept as gaps (a forward "
            "clock jump cannot be told from lost samples)"
        )
    if kind == "gpu":
        index = pd.Series(span.index).str.extract(r"^(?:(.*)/)?gpu(\d+)$")
        for host, ids in index.groupby(index[0].fillna(""))[1]:
            ids = ids.astype(int)
            if ids.max() >= 4 * limits.MAX_CHANNELS:  # an index this large is no GPU's: not listed
                continue
            absent = sorted(set(range(int(ids.max()) + 1)) - set(ids))
            if absent:
                where = f" on {host}" if host else ""
                log.append(
                    f"no samples of GPU index {', '.join(map(str, absent))}{where} "
                    f"(the file has {', '.join(map(str, sorted(ids)))}): missing GPUs"
                )
        if gpus_per_node and len(span) % gpus_per_node:
            log.append(f"{len(span)} GPUs is not a whole number of nodes of {gpus_per_node}")
