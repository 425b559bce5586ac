"""How the commands print: tables kept to a terminal, a run's summary, its sensors' swings and
its grid disturbances, one line each.

Called by every command that prints a result (``powermodel.cli.*_commands``); no model logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from powermodel.analysis import sensor_swings

# what a summary's value that was not seen means (powermodel.ride_through.summary)
NOT_SEEN = {"return ramp [s]": "none: the site never left the grid (its share never fell to 1 %)"}


def _print_ride_through(summary: dict[str, float]) -> None:
    """The disturbances' summary, one line each; a value not seen says why."""
    for key, value in summary.items():
        if isinstance(value, float) and not np.isfinite(value):
            shown = NOT_SEEN.get(key, "not measured")
        else:
            shown = _fmt(value) if isinstance(value, float) else value
        print(f"  {key}: {shown}")


def _sensor_rows(ds: Any, keys: Sequence[str]) -> list[tuple[str, str]]:
    """For each sensor, the largest 5-s swing of the exact signal beside the sensor's view
    (:func:`powermodel.analysis.sensor_swings`), as the summary prints it."""
    rows = []
    for row in sensor_swings(ds, list(keys)).itertuples():
        label = f"{row.variable} largest 5-s swing, exact / {row.sensor}"
        if not np.isfinite(row.exact):
            rows.append((label, row.not_measured))
        elif not np.isfinite(row.seen):
            rows.append((label, f"{row.exact:.2f} {row.units} / {row.not_measured}"))
        else:
            rows.append((label, f"{row.exact:.2f} / {row.seen:.2f} {row.units}"))
    return rows


def _print_summary(
    name: str,
    result: dict[str, Any],
    attrs: dict,
    elapsed: float,
    extra: Sequence[tuple[str, str]] = (),
) -> None:
    def shown(key: str, unit: str = "MW", digits: int = 2) -> str:
        value = result[key]
        return f"{value:.{digits}f} {unit}" if np.isfinite(value) else result["not_measured"][key]

    idle = float(attrs.get("idle_gpus", 0.0))
    gpus = (
        [
            (
                "GPUs",
                f"job {float(attrs['job_gpus']):,.0f}, {idle:,.0f} idle in the hall "
                f"({float(attrs['idle_power']):.3g} MW idle)",
            )
        ]
        if idle
        else []
    )
    rows = [
        ("scenario", name),
        *gpus,
        ("step time", f"{attrs['step_time']:.2f} s"),
        (
            "checkpoint interval",
            f"{attrs['checkpoint_interval']:.0f} s"
            if np.isfinite(attrs["checkpoint_interval"])
            else "none (no failures expected)",
        ),
        ("IT energy", f"{result['it_energy_mwh']:,.1f} MWh"),
        (
            "IT power mean / peak / min",
            "{it_mean_mw:.2f} / {it_peak_mw:.2f} / {it_min_mw:.2f} MW".format(**result),
        ),
        ("IT largest 5-s swing", shown("it_swing_5s_mw")),
        ("unexpected interruptions", f"{result['unexpected_interruptions']}"),
        ("planned interruptions", f"{result['planned_interruptions']}"),
        (
            "facility energy / peak",
            "{facility_energy_mwh:,.1f} MWh / {facility_peak_mw:.2f} MW".format(**result),
        ),
        ("PUE / WUE", "{pue:.3f} / {wue_l_per_kwh:.3f} L/kWh".format(**result)),
        (
            "grid power mean / peak / min",
            "{grid_mean_mw:.2f} / {grid_peak_mw:.2f} / {grid_min_mw:.2f} MW".format(**result),
        ),
        (
            "grid largest 5-s swing / its ΔV",
            f"{shown('grid_swing_5s_mw')} / {shown('grid_voltage_swing_5s_pct', '%', 3)}"
            if np.isfinite(result["grid_swing_5s_mw"])
            else result["not_measured"]["grid_swing_5s_mw"],
        ),
        ("grid largest 5-s swing while training", shown("grid_swing_5s_training_mw")),
        ("grid energy per token", shown("grid_energy_per_token_j", "J")),
        ("cooling energy", f"{result['cooling_energy_mwh']:,.1f} MWh"),
        ("throughput lost to heat", f"{100 * result['throughput_lost_to_heat']:.2f} %"),
        ("effective training time", f"{100 * result['effective_training_time']:.1f} %"),
        ("tokens trained", f"{result['tokens']:.4g}"),
        *extra,
        ("simulated in", f"{elapsed:.1f} s"),
    ]
    _print_rows(rows)
    by_category = result["interruptions_by_category"]
    if by_category:
        print("  by category: " + ", ".join(f"{k} {v}" for k, v in by_category.items()))


def _print_rows(rows: Sequence[tuple[str, str]]) -> None:
    """``key  value`` lines, the values in one column after the longest key."""
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def _fmt(value: float) -> str:
    return f"{value:.4g}"


TERMINAL = 120  # characters a wide table's lines keep to (check, ride-through)


def _table(frame: Any, width: int | None = None) -> str:
    """A table as the terminal shows it: four digits, a blank where there is no value (a
    sensitivity table's base row has no ``value``). With ``width``, a table wider than it is
    shown in blocks of its columns, each block led by the first column (the row's name)."""
    if "value" in frame:
        frame = frame.assign(value=frame["value"].fillna(""))

    def shown(columns: list) -> str:
        return frame[columns].to_string(index=False, float_format=_fmt, na_rep="")

    whole = shown(list(frame.columns))
    if width is None or len(frame.columns) < 3 or _widest(whole) <= width:
        return whole
    first, blocks = frame.columns[0], [[]]
    for column in frame.columns[1:]:
        if blocks[-1] and _widest(shown([first, *blocks[-1], column])) > width:
            blocks.append([])
        blocks[-1].append(column)
    return "\n\n".join(shown([first, *block]) for block in blocks)


def _widest(text: str) -> int:
    return max(map(len, text.splitlines()), default=0)
