"""The fit on every node power log of an MLPerf Training results checkout, against the truth
its result logs give: how many logs are fitted, refused (one line) or crash, and for those
fitted the running level (as node AC power) against the mean of the raw readings inside the
training blocks (``run_start`` to ``run_stop`` less the evaluation spells), per system and
benchmark. One node per run (the first ``node_*.txt``), with ``--gpus-per-node 8`` and the
default preset; the tests hold the shipped excerpts (``tests/test_real_traces.py``).

Usage: ``python bench/bench_real_logs.py CHECKOUT`` where CHECKOUT holds
``<submitter>/results/<system>/<benchmark>/result_<r>.txt`` and their ``power/result_<r>/``
folders, e.g. a clone of github.com/mlcommons/training_results_v4.0 (its ``smc-ac-power``
submission: 148 runs; on 2 December 2026 all 148 fitted, 133 of them within 5 %, none
refused or crashed, as at the stop before; earlier, 72 fitted and 75 refused).
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import PowerModelError
from powermodel.fit_report import fit_trace
from powermodel.iotools.telemetry import TelemetryWarning
from powermodel.models.events import State
from powermodel.simulate import rest_power

GPUS_PER_NODE = 8
SPANS = ("run_start", "run_stop", "eval_start", "eval_stop")


def events(path: Path, keys) -> dict[str, list[int]]:
    """The times [ms] of a log's MLLOG events of ``keys`` (each once, however many ranks
    logged it)."""
    found: dict[str, set[int]] = {k: set() for k in keys}
    for line in path.read_text(errors="replace").splitlines():
        if ":::MLLOG" in line:
            try:
                event = json.loads(line.split(":::MLLOG", 1)[1])
            except ValueError:
                continue
            if event.get("key") in found:
                found[event["key"]].add(int(event["time_ms"]))
    return {k: sorted(v) for k, v in found.items()}


def readings(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = [
        json.loads(line.split(":::MLLOG", 1)[1])
        for line in path.read_text().splitlines()
        if '"power_reading"' in line
    ]
    return np.array([r["time_ms"] for r in rows]), np.array([r["value"] for r in rows], float)


def one(node: Path, result: Path, folder: Path) -> dict:
    spans = events(result, SPANS)
    if not (spans["run_start"] and spans["run_stop"]):
        return {"status": "no run in the result log", "why": result.name}
    ms, watts = readings(node)
    training = (ms >= spans["run_start"][0]) & (ms < spans["run_stop"][-1])
    for start, stop in zip(spans["eval_start"], spans["eval_stop"], strict=False):
        training &= ~((ms >= start) & (ms < stop))
    row = {"evals": len(spans["eval_start"]), "truth_w": watts[training].mean()}
    try:
        run = fit_trace(node, folder / "fit.toml", gpus_per_node=GPUS_PER_NODE)
    except PowerModelError as exc:
        return {**row, "status": "refused", "why": str(exc).replace(str(node), node.name)[:90]}
    except Exception as exc:  # a defect: counted and named, the sweep goes on
        return {**row, "status": "crash", "why": repr(exc)[:80]}
    cl = run.scenario.cluster
    level = run.result.value("running mean")
    node_w = float(cl.psu.input_power(cl.gpus_per_node * level + rest_power(cl)[State.RUNNING]))
    return {
        **row,
        "status": "fitted",
        "level_error": node_w / row["truth_w"] - 1.0,
        "stalls": run.result.value("checkpoint count"),
    }


def main(checkout: Path) -> pd.DataFrame:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        for power in sorted(checkout.glob("*/results/*/*/power/result_*")):
            nodes = sorted(power.glob("node_*.txt"))
            result = power.parent.parent / f"{power.name}.txt"
            if not nodes or not result.exists() or "_raw_" in power.name:
                continue
            system, benchmark = power.parts[-4], power.parts[-3]
            rows.append(
                {"system": system, "benchmark": benchmark, **one(nodes[0], result, Path(tmp))}
            )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    table = main(Path(sys.argv[1]))
    fitted = table[table["status"] == "fitted"]
    summary = table.groupby(["system", "benchmark", "status"]).size().unstack(fill_value=0)
    summary["level error P50"] = fitted.groupby(["system", "benchmark"])["level_error"].median()
    summary["|level error| max"] = fitted.groupby(["system", "benchmark"])["level_error"].apply(
        lambda e: e.abs().max()
    )
    print(summary.to_string(float_format="{:+.1%}".format))
    print(
        f"{len(table)} logs: {len(fitted)} fitted, "
        f"{int((fitted['level_error'].abs() <= 0.05).sum())} within 5 % of the training blocks' "
        f"mean; {int((table['status'] == 'refused').sum())} refused, "
        f"{int((table['status'] == 'crash').sum())} crashed"
    )
    if "why" in table:  # the reasons of those refused or crashed, if any were
        print(table[table["status"] != "fitted"]["why"].value_counts().head(8).to_string())
