"""Rules' verdicts over runs, as tables: one row a rule (:func:`summary`), violations per
day by cause (:func:`by_cause`), and every violation (:func:`violations_table`), written as
CSV (:func:`write_violations`).

The last stage of a check: it reads the verdicts :mod:`powermodel.rules.streamed` gives, of
one run or of several seeds (:func:`powermodel.sensitivity.check_seeds`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import PowerModelError
from powermodel.output import check_folder, staged
from powermodel.rules.measurement import CAUSES, Refusal, RuleResult


def summary(per_seed: list[list[RuleResult]], refused: list[Refusal] = ()) -> pd.DataFrame:
    """One row per rule: verdict (failing runs), worst value (P50 and P95 over runs) and when
    it happened in the first run, the limit, violations per day (P50 and P95), the share of the
    run over the limit [%]; then a "cannot say" row for each refused rule, with the reason."""
    rows = []
    for results in zip(*per_seed, strict=True):
        first = results[0]
        worst = np.array([r.worst for r in results])
        daily = np.array([sum(r.per_day().values()) for r in results])
        rows.append(
            {
                "rule": first.rule.name,
                "status": first.rule.status,
                "verdict": "pass" if all(r.passed for r in results) else "FAIL",
                "failing runs": f"{sum(not r.passed for r in results)}/{len(results)}",
                "worst p50": np.percentile(worst, 50),
                "worst p95": np.percentile(worst, 95),
                "limit": first.limit,
                "unit": first.rule.unit,
                "worst at (run 1)": f"{pd.Timestamp(first.worst_time):%Y-%m-%d %H:%M:%S}",
                "violations/day p50": np.percentile(daily, 50),
                "violations/day p95": np.percentile(daily, 95),
                "time over limit p50 [%]": 100.0
                * np.percentile(
                    [sum(r.seconds_by_cause.values()) / (r.days * 86400.0) for r in results], 50
                ),
                "note": (
                    f"band cut at {first.resolved_to:g} Hz: a pass is not proven above it"
                    if first.resolved_to
                    else ""
                ),
            }
        )
    rows += [
        {
            "rule": no.rule.name,
            "status": no.rule.status,
            "verdict": "cannot say",
            "unit": no.rule.unit,
            "note": no.reason,
        }
        for no in refused
    ]
    return pd.DataFrame(rows)


def violations_table(per_seed: list[list[RuleResult]]) -> pd.DataFrame:
    """Every violation of every run, by start time: ``run`` (from 1, as :func:`summary` counts
    them), ``rule``, ``start``, ``end``, ``worst`` and its ``unit``, ``cause``."""
    columns = ["run", "rule", "start", "end", "worst", "unit", "cause"]
    frames = [
        r.violations.assign(run=i, rule=r.rule.name, unit=r.rule.unit)
        for i, results in enumerate(per_seed, start=1)
        for r in results
        if len(r.violations)
    ]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames)[columns].sort_values(["run", "start"], kind="stable")


def check_violations_path(path: str | Path) -> Path:
    """Where :func:`write_violations` is to write, checked before any run: a ``.csv`` name in
    a folder that exists and can be written (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        raise PowerModelError(
            f"cannot write {str(path)!r}: the violations are written as CSV: give a .csv name"
        )
    return check_folder(path)


def write_violations(table: pd.DataFrame, path: str | Path) -> None:
    """A :func:`violations_table` as CSV, its times in ISO 8601 UTC ending in ``Z`` as the
    profile CSV writes them (fractions of a second only where there are some); whole or not
    at all (:func:`powermodel.output.staged`)."""
    out = table.copy()
    for column in ("start", "end"):
        text = pd.to_datetime(out[column]).dt.strftime("%Y-%m-%dT%H:%M:%S.%f")
        out[column] = text.str.rstrip("0").str.rstrip(".") + "Z"
    with staged(check_violations_path(path)) as temporary:
        out.to_csv(temporary, index=False)


def by_cause(per_seed: list[list[RuleResult]]) -> pd.DataFrame:
    """Violations per day of each rule by cause, P50 and P95 over runs (causes seen only)."""
    rows = []
    for results in zip(*per_seed, strict=True):
        causes = sorted({c for r in results for c in r.by_cause}, key=_cause_order)
        for cause in causes:
            daily = np.array([r.per_day().get(cause, 0.0) for r in results])
            share = [r.seconds_by_cause.get(cause, 0.0) / (r.days * 86400.0) for r in results]
            rows.append(
                {
                    "rule": results[0].rule.name,
                    "cause": cause,
                    "per day p50": np.percentile(daily, 50),
                    "per day p95": np.percentile(daily, 95),
                    "time over limit p50 [%]": 100.0 * np.percentile(share, 50),
                }
            )
    columns = ["rule", "cause", "per day p50", "per day p95", "time over limit p50 [%]"]
    return pd.DataFrame(rows, columns=columns)


def _cause_order(cause: str) -> int:
    return CAUSES.index(cause) if cause in CAUSES else len(CAUSES)
