"""The scenario written back (:func:`fitted_toml`): a TOML file that ``extends`` the
preset with the fitted values, each tagged ``[C]`` with the trace it was fitted to, and a comment
for each value kept at the preset's saying why. The GPU, checkpoint, failure and start-up keys
are written here, the workload's by :mod:`powermodel.fit.workload_keys`. The fit's last stage.
"""

from __future__ import annotations

import re

import numpy as np
import tomli_w

from powermodel.durations import format_duration
from powermodel.fit.result import Fit
from powermodel.fit.timeline import _whole_startups
from powermodel.fit.workload_keys import MIN_SPREAD, _drawable, _share_at_least, _workload_keys
from powermodel.models.events import State
from powermodel.scenario import (
    MAX_RECOVERY,
    load_scenario,
)
from powermodel.simulate import derive

# A trace that shows no checkpoint at all bounds the interval from below only (longer than the
# trace): the interval is written as this many times the trace's span, at most MAX_RECOVERY,
# so that no run of the trace's span draws one, nor a hold-out's (whose fitted part is at least
# 1 - fit_report.MAX_HOLDOUT, a tenth, of the trace) [A]
UNSEEN_SPANS = 10.0


def _startup_spread(result: Fit, written: float, spell: float, put) -> None:
    """Write ``workload.startup_cv``: the spread of the trace's start-ups, as seeded variation.

    The trace's start-up spell (mean ``spell`` [s]) holds the model's start-up (``written``
    [s], what ``workload.startup_time`` was given) and its checkpoint read, whose length the
    model holds fixed; so the spells' spread in seconds is put on the start-up: its CV is the
    spells' standard deviation over ``written``, at most 3 (the key's bound). One start-up seen,
    or none of length, writes 0, saying why.
    """
    n = int(np.count_nonzero(_whole_startups(result.timeline)))
    spread = result.value("start-up spread")
    if spread is None:
        put(
            "workload.startup_cv",
            0.0,
            f"only {n} start-up seen: the spread of start-up lengths is not seen (0: every "
            "start-up the fitted length)",
        )
        return
    if spread < MIN_SPREAD or written <= 0.0:
        why = (
            f"no spread above {MIN_SPREAD:g} measured over the {n} start-ups"
            if spread < MIN_SPREAD
            else f"the {n} start-ups' spread ({spread:.3g}) falls on the checkpoint read (the "
            "start-up written is 0 s), which the model holds fixed"
        )
        put("workload.startup_cv", 0.0, why)
        return
    cv = spread * spell / written
    capped = f", capped at 3 from {cv:.3g}" if cv > 3.0 else ""
    put(
        "workload.startup_cv",
        round(min(cv, 3.0), 4),
        f"spread of the {n} start-ups' lengths (lognormal, seeded): their standard deviation "
        f"{spread * spell:.3g} s over the {written:.4g}-s start-up{capped}",
    )


def fitted_toml(result: Fit, preset: str, trace_name: str) -> str:
    """A scenario that ``extends`` ``preset`` with the fitted values, each tagged ``[C]`` with
    the trace it was fitted to; unresolved values stay at the preset's, with why."""
    choice, given = result.gpu, load_scenario(preset)
    overrides = {f"gpu.{k}": v for k, (v, _) in choice.table.items()}
    if choice.table:  # the preset's start-up, as the model holds it, at least the built idle
        idle_share = _share_at_least(overrides["gpu.idle"], overrides["gpu.tdp"])
        overrides["workload.startup_power"] = max(given.workload.startup_power, idle_share)
    base = load_scenario(given, {"cluster.gpu": choice.name, **overrides})
    trace_name = re.sub(r"[\x00-\x1f\x7f]", "?", trace_name)[:100]  # a name is one comment line
    tag = f"[C] fit of {trace_name}"
    tables: dict[str, list[tuple[str, object, str]]] = {}
    kept: list[str] = []

    def put(key: str, value: object, note: str) -> None:
        table, name = key.rsplit(".", 1)
        tables.setdefault(table, []).append((name, value, f"{tag}: {note}"))

    def keep(key: str, why: str) -> None:
        kept.append(f"# {key}: the preset's value is kept; {why}")

    def v(name: str) -> float | None:
        return result.value(name)

    gpu = base.gpu
    idle, stalled = v("idle level"), v("checkpoint stall level") or v("teardown level")
    if choice.table or idle is None:  # the idle the scenario holds: built, the preset's, fitted
        written_idle = gpu.idle
    else:
        written_idle = round(min(max(idle, 1.0), gpu.tdp), 1)
    for name, level in (("idle", idle), ("stalled", stalled), ("start-up", v("start-up level"))):
        if level is not None:
            _drawable(level, f"{name} level", base)
    if choice.named and choice.name != given.cluster.gpu:
        put("cluster.gpu", choice.name, "--gpu, the catalogue's")
    if choice.table:  # a GPU built from the trace: its levels are the fitted ones
        put(
            "gpu.source",
            f"built by powermodel fit from {trace_name}: idle {gpu.idle:g} W, TDP {gpu.tdp:g} W "
            f"(the highest sustained level); peak FLOP/s, levers and cooling the {gpu.name}'s",
            "what the built GPU rests on",
        )
        for key, (value, note) in choice.table.items():
            put(f"gpu.{key}", value, note)
    else:
        if idle is not None:
            put("gpu.idle", written_idle, "median idle level")
        else:
            keep("gpu.idle", result.quantities["idle level"].how)
        idle_rest = v("idle rest of node")
        if idle_rest is not None:  # a node idling under the preset's rest of node
            put("cluster.rest_power_idle", idle_rest, "the idle node's power beyond its GPUs")
        if stalled is not None:
            put(
                "gpu.stalled",
                round(min(max(stalled, written_idle), gpu.tdp), 1),
                "median stalled level",
            )
        elif gpu.stalled < written_idle:  # a GPU stalls at its idle at least (idle <= stalled)
            put("gpu.stalled", written_idle, "the preset's stalled level raised to the fitted idle")
        else:
            keep("gpu.stalled", result.quantities["checkpoint stall level"].how)
    _workload_keys(result, base, put, keep, written_idle)
    stall = v("checkpoint stall")
    if stall is not None:
        key = "checkpoint.blocking_time"
        if base.checkpoint.mode == "async":
            key = "checkpoint.async_blocking_time"
        n_ck = int(result.value("checkpoint count", 0))
        put(key, format_duration(round(stall, 3)), f"mean of {n_ck} stalls, edge to edge")
        spread = v("checkpoint stall spread")
        if spread is not None and spread >= MIN_SPREAD:
            # seeded variation of the stalls' lengths, not their median alone
            put(
                "checkpoint.blocking_cv",
                round(min(spread, 3.0), 4),
                f"spread of the {n_ck} stalls' lengths (lognormal, seeded)",
            )
        else:
            keep(
                "checkpoint.blocking_cv",
                f"no spread above {MIN_SPREAD:g} measured"
                if spread is not None
                else result.quantities["checkpoint stall spread"].how,
            )
    else:
        keep("checkpoint.blocking_time", result.quantities["checkpoint stall"].how)
    interval = v("checkpoint interval")
    if interval is not None:
        put(
            "checkpoint.interval",
            format_duration(round(interval, 2)),
            "median training between two stalls",
        )
    elif not np.any(result.timeline.state == State.CHECKPOINT):
        # none seen: an interval longer than the trace, not the preset's (which would draw
        # checkpoints the trace does not have)
        span = result.timeline.duration
        unseen = min(UNSEEN_SPANS * span, MAX_RECOVERY)
        put(
            "checkpoint.interval",
            format_duration(round(unseen, 1)),
            f"{result.quantities['checkpoint interval'].how}; written as {UNSEEN_SPANS:g} x the "
            f"trace's {format_duration(round(span, 1))} span, so that a run of it draws none",
        )
    else:
        keep("checkpoint.interval", result.quantities["checkpoint interval"].how)
    teardown, wait = v("teardown"), v("restart wait")
    if teardown is not None:
        put("reliability.stall_time", format_duration(round(teardown, 2)), "median teardown")
    else:
        keep("reliability.stall_time", result.quantities["teardown"].how)
    if wait is not None:
        put("reliability.restart_time", format_duration(round(wait, 2)), "median idle wait")
    else:
        keep("reliability.restart_time", result.quantities["restart wait"].how)
    if v("job end") is not None:
        kept.append(f"# the job's end: {result.quantities['job end'].how}")
    # the start-up spell holds the model's start-up and its checkpoint read, both at its level
    up, level = v("start-up time"), v("start-up level")
    if up is not None and level is not None:
        reload = derive(base).reload_time
        put(
            "workload.startup_time",
            format_duration(round(max(up - reload, 0.0), 2)),
            f"{result.quantities['start-up time'].how}, less the preset's {reload:.3g}-s "
            "checkpoint read",
        )
        put(
            "workload.startup_power",
            _share_at_least(min(max(level, written_idle), gpu.tdp), gpu.tdp),
            "median start-up level / TDP",
        )
        _startup_spread(result, max(up - reload, 0.0), up, put)
    else:
        keep("workload.startup_time", result.quantities["start-up time"].how)
        keep("workload.startup_cv", result.quantities["start-up spread"].how)
        if given.workload.startup_power * gpu.tdp < written_idle:
            # the model's start-up holds at least idle: the preset's level under the fitted
            # idle would not load (a trace that begins at launch has no idle before its start-up)
            put(
                "workload.startup_power",
                _share_at_least(written_idle, gpu.tdp),
                "the preset's start-up level raised to the fitted idle",
            )
    head = [
        f"# Fitted by `powermodel fit` to {trace_name} ({result.kind} trace, {result.n_gpus} "
        f"GPUs, sampled every {format_duration(round(result.period, 6))}, seen through the "
        f"{result.sensor.key!r} sensor chain).",
        "# [C]: a value calibrated on that trace; what the trace does not resolve keeps the "
        f"preset's value ({preset}), with why.",
        *kept,
        tomli_w.dumps(
            {
                "extends": preset,
                "name": f"fit of {trace_name}"[:200],
                "description": f"{preset} calibrated on the trace {trace_name}"[:200],
            }
        ).rstrip(),
    ]
    body = []
    for table, entries in tables.items():
        body.append(f"\n[{table}]")
        # plain keys before any array of tables: a key after one would belong to its last table
        for name, value, note in sorted(entries, key=lambda e: isinstance(e[1], list)):
            if isinstance(value, list):  # the phases: an array of tables, one per phase
                body += [
                    f"\n[[{table}.{name}]]  # {note}\n{tomli_w.dumps(p).strip()}" for p in value
                ]
                continue
            line = tomli_w.dumps({name: value}).strip()
            body.append(f"{line:<34} # {note}")
    return "\n".join(head + body) + "\n"
