"""The rows of the dashboard's tables: rules' verdicts, violations as events, numbers, costs.

Pure functions of rules' results, metrics and tables, each row as the page's grid shows it
(text for numbers, to a few digits): the grid view's compliance and violations (grouped into
events :data:`EVENT_GAP` apart), the thermal view's numbers, the compare view's metrics, the
mitigation view's costs, the campus and grid-events views' tables (numbers to four digits),
times and durations as a table writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from powermodel import rules as rules_mod
from powermodel import sizing


def compliance_rows(results: Sequence[rules_mod.RuleResult]) -> list[dict[str, Any]]:
    """One row per rule: verdict, limit, worst value and when, violations per day by cause."""
    rows = []
    for r in results:
        causes = ", ".join(
            f"{c} {n / r.days:.1f}/d" for c, n in sorted(r.by_cause.items(), key=lambda kv: -kv[1])
        )
        rows.append(
            {
                "rule": r.rule.name,
                "verdict": "violated" if len(r.violations) else "passes",
                "limit": f"{r.limit:.3g} {r.rule.unit}",
                "worst": f"{r.worst:.3g} {r.rule.unit}",
                "when": pd.Timestamp(r.worst_time).strftime("%Y-%m-%d %H:%M:%S"),
                "violations per day": causes or "none",
                "note": f"band cut at {r.resolved_to:g} Hz: a pass is not proven above it"
                if r.resolved_to
                else "",
            }
        )
    return rows


# Violations of one rule with one cause that follow each other within this gap are one event
# [A]: one restart's ramp gave 8 nprr1191-up violations 2 s apart, a week 12,936 rows
EVENT_GAP = 60.0  # [s]


def violation_events(table: pd.DataFrame, gap: float = EVENT_GAP) -> pd.DataFrame:
    """The violations of a table (:func:`powermodel.rules.violations_table`) grouped into
    events: those of one run, rule and cause each starting within ``gap`` [s] of the end of
    the one before. Columns ``rule``, ``start`` (the first's), ``end`` (the last's),
    ``violations`` (how many), ``worst`` (the largest), ``unit``, ``cause``; by start, then
    rule."""
    columns = ["rule", "start", "end", "violations", "worst", "unit", "cause"]
    if not len(table):
        return pd.DataFrame(columns=columns)
    run = table["run"] if "run" in table else pd.Series(1, index=table.index)
    t = table.assign(run=run.to_numpy(), start=pd.to_datetime(table["start"]))
    t = t.assign(end=pd.to_datetime(t["end"])).sort_values(
        ["run", "rule", "cause", "start"], kind="stable"
    )
    same = (
        (t["run"].to_numpy()[1:] == t["run"].to_numpy()[:-1])
        & (t["rule"].to_numpy()[1:] == t["rule"].to_numpy()[:-1])
        & (t["cause"].to_numpy()[1:] == t["cause"].to_numpy()[:-1])
    )
    # the latest end so far of the rule and cause: a long violation covers short ones in it
    keys = t.groupby(["run", "rule", "cause"], sort=False, observed=True)
    ends = keys["end"].cummax().to_numpy()
    after = (t["start"].to_numpy()[1:] - ends[:-1]) / np.timedelta64(1, "s")
    event = np.concatenate([[0], np.cumsum(~(same & (after <= gap)))])
    grouped = t.assign(event=event).groupby("event", sort=False)
    out = grouped.agg(
        rule=("rule", "first"),
        start=("start", "min"),
        end=("end", "max"),
        violations=("rule", "size"),
        worst=("worst", "max"),
        unit=("unit", "first"),
        cause=("cause", "first"),
    )
    return out.sort_values(["start", "rule"], kind="stable").reset_index(drop=True)[columns]


def violation_rows(events: pd.DataFrame, limit: int) -> list[dict[str, Any]]:
    """Rows of a table's violations grouped into events (:func:`violation_events`'s): all of
    them, or the ``limit`` largest where there are more, by start time. ``worst`` is a number
    (its unit beside it), so that the table sorts it as one."""
    if len(events) > limit:
        events = events.nlargest(limit, "worst").sort_values("start", kind="stable")
    when = "%Y-%m-%d %H:%M:%S"
    columns = {
        "rule": events["rule"].to_numpy(),
        "start": pd.to_datetime(events["start"]).dt.strftime(when).to_numpy(),
        "end": pd.to_datetime(events["end"]).dt.strftime(when).to_numpy(),
        "violations": events["violations"].to_numpy().astype(int),
        "worst": [float(f"{w:.4g}") for w in events["worst"]],
        "unit": events["unit"].to_numpy(),
        "cause": events["cause"].to_numpy(),
    }
    # each column as Python values at once (numpy's tolist): a frame's to_dict("records")
    # boxes them one by one, 0.5 s for the 7,000 events of a week
    values = [v if isinstance(v, list) else v.tolist() for v in columns.values()]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


# Headline numbers of a run as the comparison shows them: key, label, unit, format. A fraction
# is shown as a percentage, and its unit says of what.
METRICS = (
    ("it_energy_mwh", "IT energy", "MWh", "{:,.0f}"),
    ("it_mean_mw", "IT power, mean", "MW", "{:.2f}"),
    ("it_peak_mw", "IT power, peak", "MW", "{:.2f}"),
    ("grid_mean_mw", "grid power, mean", "MW", "{:.2f}"),
    ("grid_peak_mw", "grid power, peak", "MW", "{:.2f}"),
    ("grid_swing_5s_mw", "largest 5-s swing at the grid", "MW", "{:.2f}"),
    ("grid_swing_5s_training_mw", "largest 5-s swing at the grid while training", "MW", "{:.2f}"),
    (
        "grid_ramp_1min_average_slope_up_mw",
        "1-min ramp up at the grid (average slope)",
        "MW/min",
        "{:.2f}",
    ),
    (
        "grid_ramp_1min_average_slope_down_mw",
        "1-min ramp down at the grid (average slope)",
        "MW/min",
        "{:.2f}",
    ),
    ("grid_load_factor", "load factor at the grid (mean ÷ peak)", "%", "{:.1%}"),
    ("pue", "PUE (facility ÷ IT energy)", "", "{:.3f}"),
    ("wue_l_per_kwh", "WUE (water ÷ IT energy)", "L/kWh", "{:.3f}"),
    ("unexpected_interruptions", "unexpected interruptions", "count", "{:d}"),
    ("effective_training_time", "effective training time", "% of the run", "{:.1%}"),
    ("throughput_lost_to_heat", "throughput lost to heat", "% of tokens", "{:.2%}"),
    ("tokens", "tokens trained", "tokens", "{:.4g}"),
    ("grid_energy_per_token_j", "grid energy per token", "J", "{:.2f}"),
)


def thermal_numbers(
    metrics: dict[str, Any], swing: float, trough_hour: int | None, timezone: str
) -> list[tuple[str, str, str]]:
    """The thermal view's numbers: what, its value, and what it measures.

    Parameters
    ----------
    metrics
        :func:`powermodel.metrics` of the run.
    swing, trough_hour
        :func:`powermodel.analysis.diurnal_swing`: peak-to-trough over the mean [1], and the
        local hour of the trough (None: the run never trains).
    timezone
        The site's time zone (``site_timezone``), the clock of ``trough_hour``.
    """
    return [
        (
            "PUE over the run",
            f"{metrics['pue']:.3f}",
            "facility energy ÷ IT energy over the whole run (ISO/IEC 30134-2); the excess over 1 "
            "is cooling, electrical losses and other loads",
        ),
        (
            "WUE",
            f"{metrics['wue_l_per_kwh']:.3f} L/kWh",
            "water the cooling plant consumes (evaporation, blowdown) per kWh of IT energy",
        ),
        (
            "chiller hours",
            f"{metrics['chiller_hours']:.0f} h",
            "hours with the chillers running; in the others the plant cools without them",
        ),
        (
            "throughput lost to heat",
            f"{metrics['throughput_lost_to_heat']:.2%}",
            "tokens lost over the whole run because the supply rose above its setpoint and hot "
            "GPUs clocked lower, against the plant holding its setpoint all the time; cool hours "
            "lose nothing, so it is far below the daily swing",
        ),
        (
            "daily throughput swing",
            f"{swing:.2%}, lowest at {trough_hour}:00 ({timezone})"
            if trough_hour is not None
            else "none: the run never trains",
            "tokens per second of running time by local hour of day (the bars): the best hour "
            "less the worst, over the daily mean; one hour against another, not a loss over "
            "the run",
        ),
    ]


def metric_rows(metrics: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """A table of :data:`METRICS` for runs side by side; with two runs, the second's change."""
    rows = []
    for key, label, unit, fmt in METRICS:
        values = [m.get(key) for m in metrics]
        if any(v is None for v in values):
            continue
        row = {"metric": f"{label} [{unit}]" if unit else label}
        # a figure the run cannot give (NaN) says why, not "nan"
        row |= {
            column: fmt.format(v) if np.isfinite(v) else m.get("not_measured", {}).get(key, "")
            for column, v, m in zip(names, values, metrics, strict=True)
        }
        if len(values) == 2:
            a, b = (float(v) for v in values)
            row["change"] = f"{(b / a - 1):+.2%}" if a and np.isfinite(a) and np.isfinite(b) else ""
        rows.append(row)
    return rows


def cost_rows(costs: dict[str, float]) -> list[dict[str, str]]:
    """:func:`powermodel.sizing.costs` as table rows: changes against the run without the
    mitigations, each value with its unit."""
    return [
        {"cost": sizing.COSTS[k][0], "value": sizing.COSTS[k][1].format(v)}
        for k, v in costs.items()
        if k in sizing.COSTS
    ]


def duration_text(seconds: float) -> str:
    """A time span as a table shows it: in s below 2 min, in min below 2 h, else in h, to
    three digits; blank where there is none (NaN)."""
    if not np.isfinite(seconds):
        return ""
    if abs(seconds) < 120.0:
        return f"{seconds:.3g} s"
    if abs(seconds) < 7200.0:
        return f"{seconds / 60.0:.3g} min"
    return f"{seconds / 3600.0:.3g} h"


def times_text(times: pd.Series) -> np.ndarray:
    """Instants as a table shows them: to the millisecond, on one line."""
    return pd.to_datetime(times).dt.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3].to_numpy()


def records(table: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """A table's ``columns`` as the rows a grid takes, every cell text."""
    return table[list(columns)].astype(str).to_dict("records")


def quantity_row(name: str, value: Any) -> dict[str, Any]:
    """A row of a quantity and its value, as text: a time in seconds in s, min or h (its unit
    out of its name), other numbers to four digits."""
    if name.endswith(" [s]") and isinstance(value, float | int):
        return {"quantity": name.removesuffix(" [s]"), "value": duration_text(value)}
    # text throughout: the table takes a column's type from its first row (a count), and
    # showed "Invalid Number" for every value written to four digits below it
    return {"quantity": name, "value": f"{value:.4g}" if isinstance(value, float) else str(value)}


def rounded_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows for a grid, numbers to four digits."""
    return [
        {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()}
        for row in table.to_dict("records")
    ]


def in_percent(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """A table with a share column [1] written in % (one decimal), as the summary writes it."""
    return table.assign(**{column: [f"{100 * v:.1f} %" for v in table[column]]})
