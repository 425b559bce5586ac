"""MLPerf Training's node power logs (``power/<result>/node_<i>.txt`` of a submission):
``:::MLLOG {...}`` lines, as mlperf_logging's ``mllog`` writes them, whose ``power_reading``
events carry a node meter's reading [W] and its Unix time in ms; one channel per ``host`` the
readings' metadata name (``node`` where they name none), read as meters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry.lines import bad_rows, refuse_line, split_lines
from powermodel.iotools.telemetry.timing import ms_times
from powermodel.iotools.telemetry.units import FLOAT, POWER, readings
from powermodel.iotools.trace import to_floats

MLLOG = ":::MLLOG"  # the tag of MLPerf's log lines (mlperf_logging's mllog)


def read_mlperf_power(text: str, path: Path, log: list, meta: dict) -> pd.DataFrame:
    """The readings of an MLPerf power log: each ``power_reading`` line's ``value`` [W] at its
    ``time_ms``. The other events (the measurement's start and stop, ``conversion_eff``) are no
    samples; ``conversion_eff``, the efficiency MLPerf's result summarizer multiplies the
    energy by, is kept in ``meta`` but not applied: the readings are the meter's."""
    rows, key = _events(text, path, log)
    reading = key == '"power_reading"'
    eff = to_floats(_mllog_field(rows[key == '"conversion_eff"'], "value", FLOAT))
    if eff.size:
        meta["conversion_eff"] = float(eff[0])
    samples = rows[reading]
    # whole milliseconds of 15 digits at most (to the year 33658): a longer one is no time
    ms = to_floats(_mllog_field(samples, "time_ms", r"-?\d{1,15}", after=r"\s*[,}]"))
    value = _mllog_field(samples, "value", r'"[^"]*"|[^,}\s]+')
    missing = np.isnan(ms) | value.isna().to_numpy(dtype=bool)
    refuse_line(
        missing,
        samples.index,
        path,
        lambda i: (
            f'a power_reading without its "time_ms" or "value" ({int(missing.sum())} '
            "such); mend or delete the line"
        ),
    )
    number = samples.index.to_numpy()
    power = readings(value.str.strip('"'), POWER, "W", "power_reading value", number, path, log)
    host = _hosts(samples, np.cumsum(key == '"power_measurement_start"')[reading], path)
    meta["power_field"] = "power_reading"
    meta["timezone"] = "UTC (Unix times in ms)"
    return pd.DataFrame(
        {
            "line": number,
            "time": ms_times(ms.astype(np.int64)),
            "channel": host.to_numpy(dtype=str),
            "power": power,
        }
    )


def _mllog_field(rows: pd.Series, name: str, value: str, after: str = "") -> pd.Series:
    """The text of one JSON field of each MLLOG line (NaN where a line has none, or its text
    does not match ``value`` followed by ``after``), matched by pattern rather than parsed line
    by line: a field's place in the line varies by logger."""
    return rows.str.extract(rf'"{name}"\s*:\s*(?P<v>{value}){after}')["v"]


def _events(text: str, path: Path, log: list) -> tuple[pd.Series, np.ndarray]:
    """The log's events (its MLLOG lines, index: line numbers) and each one's ``key`` (quoted).
    Refused: a log without power readings (a result or switch log), a line that is no event
    (but a cut last line, dropped)."""
    lines, cut = split_lines(text)
    strip = lines.str.strip()
    # srun --label puts the task's rank before each line of a job's output: "0: :::MLLOG {"
    tagged = strip.str.contains(rf"^(?:\d+: )?{MLLOG} ").to_numpy(dtype=bool)
    blank = (strip == "").to_numpy(dtype=bool)
    key = _mllog_field(strip, "key", r'"[^"]*"').fillna("").to_numpy(dtype=str)
    if not (tagged & (key == '"power_reading"')).any():
        found = ", ".join(pd.unique(np.char.strip(key[tagged & (key != "")], '"'))[:4])
        raise DataFileError(
            f"{path}: an MLPerf log without power_reading events (its events: {found}): a "
            "result or switch log, not a node's power log; give power/<result>/node_<i>.txt"
        )
    # an event is one JSON object with its key: anything else is junk, or the last line cut
    whole = tagged & (key != "") & strip.str.endswith("}").to_numpy(dtype=bool)
    bad = bad_rows(
        ~(whole | blank), lines, cut, log, path, f"an MLPerf log event ('{MLLOG} {{...}}')"
    )
    return lines[whole & ~bad], key[whole & ~bad]


def _hosts(samples: pd.Series, measurement: np.ndarray, path: Path) -> pd.Series:
    """Each reading's channel: the host it names, kept to a label's characters. Refused: two
    hosts that would be one channel, and a host's readings under two measurements
    (``measurement``: each reading's count of ``power_measurement_start`` events before it)."""
    # the host a reading names is a channel's label, never a path: kept to word characters
    written = _mllog_field(samples, "host", r'"[^"]*"').fillna('"node"').str.strip('"')
    host = written.str.replace(r"[^\w.\-]", "_", regex=True).str.slice(0, 64)
    host = host.where(host != "", "node")  # a host written empty names no meter
    names = pd.DataFrame({"host": host, "written": written}).drop_duplicates()
    twice = names["host"].duplicated(keep=False).to_numpy(dtype=bool)
    if twice.any():
        one, other = names["written"][twice].iloc[:2]
        raise DataFileError(
            f"{path}: the hosts {one[:30]!r} and {other[:30]!r} would be one channel "
            f"({names['host'][twice].iloc[0]!r}: a channel's name keeps letters, digits, '.', "
            "'-' and '_', 64 at most): two meters' readings mixed; give one node's log per file"
        )
    # Logs joined into one file (cat node_*.txt) repeat the measurement's start: readings of
    # one host under two starts are two meters, or two runs, that one channel would mix.
    mixed = (
        pd.DataFrame({"host": host.to_numpy(dtype=str), "run": measurement})
        .groupby("host")["run"]
        .nunique()
    )
    if (mixed > 1).any():
        name = str(mixed.index[np.argmax(mixed.to_numpy() > 1)])
        again = np.flatnonzero(np.diff(measurement) != 0)
        number = samples.index.to_numpy()
        line = number[again[0] + 1] if again.size else number[0]
        raise DataFileError(
            f"{path}: line {line}: the readings of {name!r} continue under another "
            f"power_measurement_start ({int(mixed.max())} measurements in the file): logs "
            "joined without their host; give one node's log per file"
        )
    return host
