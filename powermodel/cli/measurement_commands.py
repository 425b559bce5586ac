"""``powermodel fit``, ``predict`` and ``reproduce``: the model against measurements, a trace
it is calibrated on or predicts, and every published anchor.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from powermodel import fit_report, output, reproduce
from powermodel.cli.codes import VIOLATED
from powermodel.cli.common import _progress, _warn, _wrote
from powermodel.cli.tables import _table
from powermodel.errors import PowerModelError
from powermodel.fit import summary
from powermodel.fit_report import comparison_table, fit_trace
from powermodel.scenario import parse_duration


def _period(text: str | None) -> float | None:
    """``--period`` in seconds: a duration with its unit, 1 ms to 1 day."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise PowerModelError(
            f"--period {text!r}: {exc}; the sampling period, e.g. --period 100ms"
        ) from None
    if not 1e-3 <= seconds <= 86400.0:
        raise PowerModelError(
            f"--period {text!r} is not within 1 ms to 1 day: give the sampling period with its "
            "unit, e.g. --period 100ms"
        )
    return seconds


def _holdout(text: str) -> float:
    """``--holdout``: a finite number (its range is :func:`fit_trace`'s to check)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise PowerModelError(
            f"--holdout {text!r} is not a number: give the share of the trace held out at its "
            "end, e.g. --holdout 0.5, or 0 for none"
        )
    return value


def _read_options(args: argparse.Namespace) -> dict[str, Any]:
    """How ``fit`` and ``predict`` read the trace (:func:`_trace_arguments`), its sensor and
    the report: the keywords both take."""
    return {
        "format": args.format,
        "period": _period(args.period),
        "gpus_per_node": args.gpus_per_node,
        "gpus": args.gpus,
        "sensor": args.sensor,
        "report": args.report,
    }


def _fit(args: argparse.Namespace) -> int:
    run = fit_trace(
        args.trace,
        args.output,
        preset=args.preset,
        gpu=args.gpu,
        holdout=_holdout(args.holdout),
        **_read_options(args),
    )
    _warn(run.result.warnings)
    print(_table(summary(run.result)))
    print(f"\n{fit_report.prediction_words(run.predicted)}")
    print(_table(fit_report.proof_table(run.result, run.predicted, run.replayed)))
    if isinstance(run.holdout, fit_report.Prediction):
        print(f"\nhold-out: {fit_report.holdout_words(run.holdout)}")
        print(_table(comparison_table(run.holdout.numbers)))
    elif run.holdout:
        print(f"\n{run.holdout}")
    _wrote(args.output, args.report)
    return 0


def _predict(args: argparse.Namespace) -> int:
    run = fit_report.predict_trace(args.scenario, args.trace, args.overrides, **_read_options(args))
    _warn(run.result.warnings)
    changed = f" with {', '.join(args.overrides)}" if args.overrides else ""
    print(f"{args.scenario}{changed} against {args.trace}:")
    print(fit_report.prediction_words(run.predicted))
    print(_table(comparison_table(run.predicted.numbers)))
    _wrote(args.report)
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    path = reproduce.check_report_path(args.output)
    anchors = reproduce.run_anchors(progress=lambda a: _progress(f"{a.name}: {a.seconds:.1f} s"))
    print(_table(reproduce.table(anchors)))
    output.write_text(path, reproduce.report_html(anchors))
    passed = sum(a.passed for a in anchors)
    print(f"\n{passed} of {len(anchors)} anchors pass; wrote {path}")
    return 0 if passed == len(anchors) else VIOLATED
