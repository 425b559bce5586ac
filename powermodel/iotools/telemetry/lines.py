"""A telemetry file as lines: its text, read only after its size and rows are checked against
:mod:`~powermodel.iotools.telemetry.limits`, split into numbered lines, and the rows a reader
finds bad refused by line (or, the last line cut while the log was written, dropped with a
warning). Every reader starts here; the CSV logs (nvidia-smi, rocm-smi, amd-smi) share the
header and field checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits


def read_log(path: Path) -> str:
    """The file's text, after checking its size, rows and encoding."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such file; give the path of a telemetry file") from None
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc})") from None
    if size > limits.MAX_BYTES:
        raise DataFileError(
            f"{path}: {size:,} bytes is over the {limits.MAX_BYTES:,} a telemetry file "
            "may have; split it by time (e.g. a day per file) or record fewer GPUs or a longer "
            "period"
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc.strerror})") from None
    if not raw.strip():
        raise DataFileError(f"{path}: the file is empty; give a telemetry log with its rows")
    if b"\x00" in raw[: 1 << 20]:
        raise DataFileError(f"{path}: a binary file, not telemetry text; give the text log")
    lines = raw.count(b"\n")
    if lines > limits.MAX_SAMPLES:
        raise DataFileError(
            f"{path}: {lines:,} lines is over the {limits.MAX_SAMPLES:,} samples a file may have; "
            "split it by time or record a longer period"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataFileError(f"{path}: line {line} is not UTF-8 text; save it as UTF-8") from None


def split_lines(text: str) -> tuple[pd.Series, bool]:
    """The file's lines (Arrow strings, index = line number from 1) and whether the last one
    ends without a line break (cut mid-way while written, if it does not parse)."""
    parts = re.split(r"\r\n?|\n", text)
    cut = parts[-1] != ""
    if not cut:
        parts.pop()
    lines = pd.Series(parts, dtype=pd.ArrowDtype(pa.string()))
    lines.index = np.arange(1, len(parts) + 1)
    return lines, cut


def bad_rows(bad: np.ndarray, lines: pd.Series, cut: bool, log: list, path: Path, want: str):
    """Rows flagged bad: a cut last line is dropped with a warning; any other is an error."""
    if not bad.any():
        return bad
    rows = np.flatnonzero(bad)
    last = len(lines) - 1
    if cut and rows.size == 1 and rows[0] == last:
        log.append(f"line {lines.index[last]} is cut short ({lines.iloc[last][:40]!r}): dropped")
        return bad
    i = rows[0]
    raise DataFileError(
        f"{path}: line {lines.index[i]}: {lines.iloc[i][:80]!r} is not {want} ({rows.size} such "
        f"line{'s' if rows.size > 1 else ''}); mend or delete {'it' if rows.size == 1 else 'them'}"
    )


def refuse_line(bad: np.ndarray, lines, path: Path, problem: Callable[[int], str]) -> None:
    """Refuse the first row flagged ``bad``: an error naming ``path``, the row's line (of
    ``lines``, each row's line number) and ``problem(i)`` (the row's i); nothing where none is."""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFileError(f"{path}: line {lines[i]}: {problem(i)}")


def header_rows(lines: pd.Series, heads: np.ndarray, path: Path, why: str) -> np.ndarray:
    """Which of a CSV log's ``lines`` repeat its first line, the header (the tool restarted in
    a loop); a line ``heads`` flags as a header unlike it is refused, ``why`` saying why."""
    first = lines.iloc[0].strip()
    is_header = (lines.str.strip() == first).to_numpy(dtype=bool)
    refuse_line(
        heads & ~is_header,
        lines.index,
        path,
        lambda i: f"a header {lines.iloc[i][:60]!r} unlike line {lines.index[0]}'s: {why}",
    )
    return is_header


def csv_fields(
    body: pd.Series, width: int, cut: bool, log: list, path: Path, want: str
) -> tuple[pd.Series, pd.DataFrame, np.ndarray]:
    """A CSV log's rows of ``width`` comma-separated fields (``want`` names them): the rows
    kept, their fields (index: line numbers) and which rows were not (a cut last line, dropped;
    any other is refused)."""
    count = body.str.count(",").to_numpy() + 1
    bad = bad_rows(count != width, body, cut, log, path, want)
    body = body[~bad]
    if body.empty:
        raise DataFileError(f"{path}: a header and no samples; give a log with its rows")
    return body, body.str.split(",", expand=True), bad
