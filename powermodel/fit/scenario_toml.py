"""The scenario written back (:func:`fitted_toml`): a TOML file that ``extends`` the
preset with the fitted values, each tagged ``[C]`` with the trace it was fitted to, and a comment
for each value kept at the preset's saying why. The GPU, checkpoint, failure and start-up keys
are written here, the workload's by :mod:`powermodel.fit.workload_keys`. The fit's last stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import tomli_w

from powermodel.durations import format_duration
from powermodel.engine.derive import derive
from powermodel.fit.result import Fit, GpuChoice
from powermodel.fit.timeline import _whole_startups
from powermodel.fit.workload_keys import MIN_SPREAD, _drawable, _share_at_least, _workload_keys
from powermodel.models.events import State
from powermodel.scenario import Scenario, load_scenario
from powermodel.scenario.base import MAX_RECOVERY

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


@dataclass
class _Written:
    """What a fitted scenario writes: each table's keys as ``(name, value, note)``, the notes
    tagged ``tag`` (``[C]`` and the trace's name), and a comment line for each key kept at the
    preset's, with why."""

    tag: str
    tables: dict[str, list[tuple[str, object, str]]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)

    def put(self, key: str, value: object, note: str) -> None:
        table, name = key.rsplit(".", 1)
        self.tables.setdefault(table, []).append((name, value, f"{self.tag}: {note}"))

    def keep(self, key: str, why: str) -> None:
        self.kept.append(f"# {key}: the preset's value is kept; {why}")


def fitted_toml(result: Fit, preset: str, trace_name: str) -> str:
    """A scenario that ``extends`` ``preset`` with the fitted values, each tagged ``[C]`` with
    the trace it was fitted to; unresolved values stay at the preset's, with why."""
    given = load_scenario(preset)
    base = _written_base(result.gpu, given)
    trace_name = re.sub(r"[\x00-\x1f\x7f]", "?", trace_name)[:100]  # a name is one comment line
    out = _Written(f"[C] fit of {trace_name}")
    idle = _gpu_keys(result, base, given, trace_name, out)
    _workload_keys(result, base, out.put, out.keep, idle)
    _checkpoint_keys(result, base, out)
    _failure_keys(result, out)
    if result.value("job end") is not None:
        out.kept.append(f"# the job's end: {result.quantities['job end'].how}")
    _startup_keys(result, base, given, idle, out)
    return _toml_text(result, preset, trace_name, out)


def _written_base(choice: GpuChoice, given: Scenario) -> Scenario:
    """The preset ``given`` on the GPU the fit writes: a GPU built from the trace with its
    keys, and the preset's start-up, as the model holds it, at least the built idle."""
    overrides = {f"gpu.{k}": v for k, (v, _) in choice.table.items()}
    if choice.table:
        idle_share = _share_at_least(overrides["gpu.idle"], overrides["gpu.tdp"])
        overrides["workload.startup_power"] = max(given.workload.startup_power, idle_share)
    return load_scenario(given, {"cluster.gpu": choice.name, **overrides})


def _gpu_keys(
    result: Fit, base: Scenario, given: Scenario, trace_name: str, out: _Written
) -> float:
    """The ``[gpu]`` keys (and ``cluster.gpu``, ``cluster.rest_power_idle``): a GPU built from
    the trace whole, else the fitted idle and stalled levels; each held level refused if the
    GPU cannot draw it (:func:`_drawable`). Returns the idle [W] the scenario holds: built, the
    preset's, or fitted."""
    choice, gpu = result.gpu, base.gpu
    idle = result.value("idle level")
    stalled = result.value("checkpoint stall level") or result.value("teardown level")
    if choice.table or idle is None:
        written_idle = gpu.idle
    else:
        written_idle = round(min(max(idle, 1.0), gpu.tdp), 1)
    start_up = result.value("start-up level")
    for name, level in (("idle", idle), ("stalled", stalled), ("start-up", start_up)):
        if level is not None:
            _drawable(level, f"{name} level", base)
    if choice.named and choice.name != given.cluster.gpu:
        out.put("cluster.gpu", choice.name, "--gpu, the catalogue's")
    if choice.table:  # a GPU built from the trace: its levels are the fitted ones
        out.put(
            "gpu.source",
            f"built by powermodel fit from {trace_name}: idle {gpu.idle:g} W, TDP {gpu.tdp:g} W "
            f"(the highest sustained level); peak FLOP/s, levers and cooling the {gpu.name}'s",
            "what the built GPU rests on",
        )
        for key, (value, note) in choice.table.items():
            out.put(f"gpu.{key}", value, note)
    else:
        _held_keys(result, base, idle, stalled, written_idle, out)
    return written_idle


def _held_keys(
    result: Fit,
    base: Scenario,
    idle: float | None,
    stalled: float | None,
    written_idle: float,
    out: _Written,
) -> None:
    """The preset's GPU's idle and stalled levels [W] as fitted (``idle``, ``stalled``; None:
    not seen), the stalled at least the ``written_idle``, and a node's idle rest of node where
    it idles under the preset's."""
    gpu = base.gpu
    if idle is not None:
        out.put("gpu.idle", written_idle, "median idle level")
    else:
        out.keep("gpu.idle", result.quantities["idle level"].how)
    idle_rest = result.value("idle rest of node")
    if idle_rest is not None:  # a node idling under the preset's rest of node
        out.put("cluster.rest_power_idle", idle_rest, "the idle node's power beyond its GPUs")
    if stalled is not None:
        out.put(
            "gpu.stalled",
            round(min(max(stalled, written_idle), gpu.tdp), 1),
            "median stalled level",
        )
    elif gpu.stalled < written_idle:  # a GPU stalls at its idle at least (idle <= stalled)
        out.put("gpu.stalled", written_idle, "the preset's stalled level raised to the fitted idle")
    else:
        out.keep("gpu.stalled", result.quantities["checkpoint stall level"].how)


def _checkpoint_keys(result: Fit, base: Scenario, out: _Written) -> None:
    """The checkpoint's blocking time and its spread, as the stalls' mean and spread, and its
    interval (:func:`_interval_key`)."""
    stall = result.value("checkpoint stall")
    if stall is not None:
        key = "checkpoint.blocking_time"
        if base.checkpoint.mode == "async":
            key = "checkpoint.async_blocking_time"
        n_ck = int(result.value("checkpoint count", 0))
        out.put(key, format_duration(round(stall, 3)), f"mean of {n_ck} stalls, edge to edge")
        spread = result.value("checkpoint stall spread")
        if spread is not None and spread >= MIN_SPREAD:
            # seeded variation of the stalls' lengths, not their median alone
            out.put(
                "checkpoint.blocking_cv",
                round(min(spread, 3.0), 4),
                f"spread of the {n_ck} stalls' lengths (lognormal, seeded)",
            )
        else:
            out.keep(
                "checkpoint.blocking_cv",
                f"no spread above {MIN_SPREAD:g} measured"
                if spread is not None
                else result.quantities["checkpoint stall spread"].how,
            )
    else:
        out.keep("checkpoint.blocking_time", result.quantities["checkpoint stall"].how)
    _interval_key(result, out)


def _interval_key(result: Fit, out: _Written) -> None:
    """The checkpoint interval: the median training between two stalls; with no checkpoint
    seen, :data:`UNSEEN_SPANS` x the trace's span."""
    interval = result.value("checkpoint interval")
    if interval is not None:
        out.put(
            "checkpoint.interval",
            format_duration(round(interval, 2)),
            "median training between two stalls",
        )
    elif not np.any(result.timeline.state == State.CHECKPOINT):
        # none seen: an interval longer than the trace, not the preset's (which would draw
        # checkpoints the trace does not have)
        span = result.timeline.duration
        unseen = min(UNSEEN_SPANS * span, MAX_RECOVERY)
        out.put(
            "checkpoint.interval",
            format_duration(round(unseen, 1)),
            f"{result.quantities['checkpoint interval'].how}; written as {UNSEEN_SPANS:g} x the "
            f"trace's {format_duration(round(span, 1))} span, so that a run of it draws none",
        )
    else:
        out.keep("checkpoint.interval", result.quantities["checkpoint interval"].how)


def _failure_keys(result: Fit, out: _Written) -> None:
    """A failure's teardown (survivors spinning) and restart wait, as their medians."""
    teardown, wait = result.value("teardown"), result.value("restart wait")
    if teardown is not None:
        out.put("reliability.stall_time", format_duration(round(teardown, 2)), "median teardown")
    else:
        out.keep("reliability.stall_time", result.quantities["teardown"].how)
    if wait is not None:
        out.put("reliability.restart_time", format_duration(round(wait, 2)), "median idle wait")
    else:
        out.keep("reliability.restart_time", result.quantities["restart wait"].how)


def _startup_keys(result: Fit, base: Scenario, given: Scenario, idle: float, out: _Written) -> None:
    """The start-up's length (less the checkpoint read), level and spread; or, none seen, the
    preset's level raised to the ``idle`` [W] the scenario holds where it is under it."""
    gpu = base.gpu
    # the start-up spell holds the model's start-up and its checkpoint read, both at its level
    up, level = result.value("start-up time"), result.value("start-up level")
    if up is not None and level is not None:
        reload = derive(base).reload_time
        out.put(
            "workload.startup_time",
            format_duration(round(max(up - reload, 0.0), 2)),
            f"{result.quantities['start-up time'].how}, less the preset's {reload:.3g}-s "
            "checkpoint read",
        )
        out.put(
            "workload.startup_power",
            _share_at_least(min(max(level, idle), gpu.tdp), gpu.tdp),
            "median start-up level / TDP",
        )
        _startup_spread(result, max(up - reload, 0.0), up, out.put)
        return
    out.keep("workload.startup_time", result.quantities["start-up time"].how)
    out.keep("workload.startup_cv", result.quantities["start-up spread"].how)
    if given.workload.startup_power * gpu.tdp < idle:
        # the model's start-up holds at least idle: the preset's level under the fitted
        # idle would not load (a trace that begins at launch has no idle before its start-up)
        out.put(
            "workload.startup_power",
            _share_at_least(idle, gpu.tdp),
            "the preset's start-up level raised to the fitted idle",
        )


def _toml_text(result: Fit, preset: str, trace_name: str, out: _Written) -> str:
    """The file: a header saying what was fitted, the kept keys' comments, ``extends``, then
    each table's keys with their notes."""
    head = [
        f"# Fitted by `powermodel fit` to {trace_name} ({result.kind} trace, {result.n_gpus} "
        f"GPUs, sampled every {format_duration(round(result.period, 6))}, seen through the "
        f"{result.sensor.key!r} sensor chain).",
        "# [C]: a value calibrated on that trace; what the trace does not resolve keeps the "
        f"preset's value ({preset}), with why.",
        *out.kept,
        tomli_w.dumps(
            {
                "extends": preset,
                "name": f"fit of {trace_name}"[:200],
                "description": f"{preset} calibrated on the trace {trace_name}"[:200],
            }
        ).rstrip(),
    ]
    body = []
    for table, entries in out.tables.items():
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
