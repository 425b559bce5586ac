"""The scenario controls as data: the key each control sets, its unit, and the conversions.

The sidebar, the callback that turns the controls into a scenario and the URL that shares them
are all built from :data:`GROUPS`. A control shows its value in its own unit (minutes, billions
of parameters ...); ``scale`` turns that into the scenario's unit. The state of the page is a
*base* (a preset with the app's default overrides, or an uploaded file) and the controls'
*changes* against it: the URL carries exactly that.

Everything here reads values that arrive from a browser: each is checked for its type and the
control's range before it becomes a scenario key, and the message names the control.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple
from urllib.parse import parse_qsl, urlencode

from powermodel.errors import ScenarioError
from powermodel.iotools import SHIPPED
from powermodel.scenario import (
    Scenario,
    catalogue,
    format_duration,
    is_duration,
    load_scenario,
    loads_scenario,
    names_a_file,
    parse_duration,
    presets,
    shorten,
)
from powermodel.sizing import STORAGE_HOURS

COMPUTE_SHARE = "workload.compute_share"  # derived: rescales every phase's share
SITE_BATTERY = "mitigation.site_battery"  # derived: one site battery of this power
# the finest reach the rules' bands (ieso-sso's 5-55 Hz needs 2 ms), for short periods
STEPS = ("2ms", "10ms", "50ms", "100ms", "200ms", "500ms", "1s", "2s", "5s", "10s", "30s", "1min")
DURATIONS = {"simulation.duration", "simulation.dt"}
BASE = "base"  # ``Control.empty`` of a field that an emptied box returns to the base's value
TEXT_LIMIT = 100  # characters of a text control


@dataclass(frozen=True)
class Control:
    """One control of the sidebar."""

    key: str  # dotted scenario key, or a derived key above
    label: str
    unit: str = ""
    kind: Literal["number", "text", "slider", "dropdown", "date"] = "number"
    scale: float = 1.0  # scenario value = shown value * scale
    low: float | None = None
    high: float | None = None
    step: float | None = None
    empty: Any = BASE  # scenario value of an empty field: the base's (BASE), or None for unset
    hint: str = ""
    # low/high bound the box or slider; a `limit` bounds the scenario at every way into the
    # dashboard (a link, an upload, the page's state), where the rest is the schema's
    limit: bool = False

    @property
    def prop(self) -> str:
        """The component property holding the value (a date picker's is ``date``)."""
        return "date" if self.kind == "date" else "value"


GROUPS: tuple[tuple[str, tuple[Control, ...]], ...] = (
    (
        "Cluster",
        (
            Control("cluster.gpu", "GPU", kind="dropdown"),
            Control("cluster.n_gpus", "GPUs", low=1, high=10_000_000, step=1),
        ),
    ),
    (
        "Workload",
        (
            Control(
                "workload.step_time",
                "step time",
                "s",
                low=0.01,
                high=3600.0,
                empty=None,
                hint="empty: 6·N·D / MFU",
            ),
            Control(
                "workload.model_params", "model size", "B params", scale=1e9, low=0.001, high=1e6
            ),
            Control("workload.mfu", "MFU", kind="slider", low=0.05, high=0.8, step=0.01),
            Control(COMPUTE_SHARE, "compute share", kind="slider", low=0.05, high=0.95, step=0.025),
            # deeper than 0.85 takes a communication phase below idle power on every GPU of
            # the catalogue (idle is 11.4 % of TDP): refused
            Control(
                "workload.trough_depth",
                "trough depth",
                kind="slider",
                low=0.0,
                high=0.85,
                step=0.05,
            ),
        ),
    ),
    (
        "Checkpoints and failures",
        (
            Control(
                "checkpoint.interval",
                "checkpoint every",
                "min",
                scale=60.0,
                low=0.1,
                high=43200.0,
                empty="young-daly",
                hint="empty: Young/Daly",
            ),
            Control(
                "checkpoint.blocking_time",
                "checkpoint stall",
                "s",
                low=0.0,
                high=3600.0,
                empty=None,
                hint="empty: size / bandwidth",
            ),
            Control(
                "reliability.rate_scale",
                "failure rate ×",
                kind="slider",
                low=0.0,
                high=5.0,
                step=0.25,
                limit=True,  # failures set the timeline's size and what a run costs to draw
            ),
            Control(
                "reliability.restart_time", "restart time", "min", scale=60.0, low=0.0, high=1440.0
            ),
        ),
    ),
    (
        "Site and period",
        (
            Control("site.weather", "weather", kind="dropdown"),
            Control("simulation.start", "start", kind="date"),
            Control("simulation.duration", "period", kind="text", hint="e.g. 12h, 7d, 54d"),
            Control("simulation.dt", "step", kind="dropdown"),
            Control("simulation.seed", "seed", low=0, high=2**31 - 1, step=1),
            Control(
                "disturbance.sequence",
                "grid disturbance",
                kind="dropdown",
                empty=None,
                hint="5 min into the run; the grid events view",
            ),
        ),
    ),
    (
        "Cooling",
        (
            Control("cooling.plant", "plant", kind="dropdown"),
            Control("cooling.supply_setpoint", "supply setpoint", "°C", low=0.0, high=70.0),
        ),
    ),
    (
        "Mitigation",
        (
            Control("mitigation.power_cap", "power cap", "W", low=1.0, high=10e3, empty=None),
            Control(
                "mitigation.clock_lock",
                "clock lock",
                "× nominal",
                low=0.3,
                high=1.0,
                step=0.01,
                empty=None,
            ),
            Control(
                "mitigation.software_burn",
                "software burn",
                "× TDP",
                low=0.01,
                high=1.0,
                step=0.01,
                empty=None,
            ),
            Control("checkpoint.mode", "checkpoint writes", kind="dropdown"),
            Control("workload.startup_ramp", "start-up ramp", "s", low=0.0, high=86400.0),
            Control(SITE_BATTERY, "site battery, 15 min", "MW", low=0.01, high=1e4, empty=None),
            Control(
                "mitigation.smoothing.floor",
                "smoothing floor",
                "× TDP",
                low=0.0,
                high=0.9,
                step=0.01,
                empty=None,
                hint="GB200/GB300 only",
            ),
            Control(
                "mitigation.smoothing.ramp_up",
                "smoothing ramp up",
                "W/s",
                low=1.0,
                high=1e9,
                empty=None,
            ),
            Control(
                "mitigation.smoothing.ramp_down",
                "smoothing ramp down",
                "W/s",
                low=1.0,
                high=1e9,
                empty=None,
            ),
            Control(
                "mitigation.stop_burn.ramp_down",
                "burn on stop, ramp",
                "W/s",
                low=1.0,
                high=1e9,
                empty=None,
            ),
            Control(
                "mitigation.stop_burn.delay",
                "burn on stop, delay",
                "s",
                low=0.0,
                high=3600.0,
                empty=None,
                hint="0: hardware (GB300)",
            ),
        ),
    ),
)
# tables a mitigation (or the disturbance) lives in: emptying all of their fields removes it
OPTIONAL_TABLES = ("mitigation.smoothing", "mitigation.stop_burn", "disturbance")
CONTROLS: tuple[Control, ...] = tuple(c for _, group in GROUPS for c in group)
BY_KEY = {c.key: c for c in CONTROLS}
BY_PROP = {prop: tuple(c for c in CONTROLS if c.prop == prop) for prop in ("value", "date")}


def page_values(values: Mapping[str, Any]) -> tuple[list, list]:
    """Every control's value (by key) as the page's callbacks carry them: the controls holding
    a ``value``, then the date pickers."""
    return [values[c.key] for c in BY_PROP["value"]], [values[c.key] for c in BY_PROP["date"]]


def options(key: str, uploaded: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """Choices of a dropdown control; ``uploaded`` adds weather files: label -> token."""
    values: dict[str, str]
    if key == "cluster.gpu":
        values = {name: name for name in catalogue("gpu")}
    elif key == "cooling.plant":
        values = {name: name for name in catalogue("cooling")}
    elif key == "site.weather":
        values = {name: name for name in SHIPPED} | {"synthetic": "synthetic"}
        values |= {f"uploaded: {label}": token for label, token in (uploaded or {}).items()}
    elif key == "simulation.dt":
        values = {step: step for step in STEPS}
    elif key == "checkpoint.mode":
        values = {"blocking": "blocking", "async": "async"}
    elif key == "disturbance.sequence":
        values = {name: name for name in catalogue("disturbance")}
    else:
        raise KeyError(key)
    return [{"label": label, "value": value} for label, value in values.items()]


def shown(scenario: Scenario, control: Control, weather: Mapping[str, str] | None = None) -> Any:
    """What ``control`` shows for ``scenario``; None for an unset (empty) field. ``weather``
    maps the tokens of uploaded weather files to their paths: the control shows the token."""
    key = control.key
    if key == COMPUTE_SHARE:
        value: Any = scenario.compute_share
    elif key == SITE_BATTERY:
        value = sum(s.power for s in scenario.mitigation.storage if s.location == "site") or None
    elif key == "cluster.n_gpus":  # the hall's, as the user gave it: the job is its share
        value = scenario.cluster.hall_gpus
    else:
        value = value_at(scenario, key)
    if value is None or value == control.empty:
        return None
    if key == "site.weather":
        return next((t for t, path in (weather or {}).items() if path == value), value)
    if isinstance(value, datetime):
        return value.date().isoformat()
    if key in DURATIONS:
        return format_duration(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return float(f"{value / control.scale:.6g}")
    return value


def value_at(scenario: Scenario | dict, key: str) -> Any:
    """The value at a dotted key of a scenario (or of its ``to_dict()``); None inside an unset
    table."""
    value: Any = scenario
    for part in key.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        else:
            value = None if value is None else getattr(value, part)
    return value


def shown_values(scenario: Scenario, weather: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every control's value for ``scenario``."""
    return {c.key: shown(scenario, c, weather) for c in CONTROLS}


def same_value(a: Any, b: Any) -> bool:
    """Whether two values of a control are the same (numbers to a relative 1e-6)."""
    return _same(_blank(a), _blank(b))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b


def changes(
    values: Mapping[str, Any], base: Scenario, weather: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The controls whose value differs from the base scenario's: key -> shown value. An
    emptied box of a field without an optional setting is no change: it shows the base's. A
    value not of its control's kind is a change (:func:`overrides` refuses it, naming it)."""
    now = shown_values(base, weather)
    out = {}
    for key, value in values.items():
        control = BY_KEY.get(key)
        if control is None:
            continue
        try:
            if typed(control, value) is None and control.empty == BASE:
                continue
        except ScenarioError:
            out[key] = value  # a change, which :func:`overrides` refuses with its reason
            continue
        if not _same(_comparable(key, value), now[key]):
            out[key] = value
    return out


def _comparable(key: str, value: Any) -> Any:
    value = _blank(value)
    if key in DURATIONS and isinstance(value, str):
        try:
            return format_duration(parse_duration(value))
        except ValueError:
            return value  # validation names it
    return value


def _blank(value: Any) -> Any:
    return None if value == "" else value


def typed(control: Control, value: Any) -> Any:
    """A control's value as a browser sent it, checked for its kind; None for an empty box.

    Raises
    ------
    ScenarioError
        Naming the control: a number box holding text, a text too long, a date that is none.
    """
    value = _blank(value)
    if value is None:
        return None
    label = f"{control.label}: {shorten(value)}"
    if control.kind in ("number", "slider"):
        if not isinstance(value, int | float) or isinstance(value, bool) or not finite(value):
            raise ScenarioError(f"{label} is not a number")
        return value
    if not isinstance(value, str) or len(value) > TEXT_LIMIT:
        raise ScenarioError(f"{label} is not a text of up to {TEXT_LIMIT} characters")
    if control.kind == "date":
        try:
            datetime.fromisoformat(value[:10])
        except ValueError:
            raise ScenarioError(f"{label} is not a date (YYYY-MM-DD)") from None
    return value


def finite(value: float) -> bool:
    """Whether a number from the browser is finite as a float (JSON's integers have no bound:
    10**400 is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


def out_of_range(scenario: Scenario) -> str | None:
    """Why a scenario breaks one of the dashboard's own limits (the controls with ``limit``;
    the schema's bounds are checked first, in the command line's words); None if it keeps them."""
    for control in (c for c in CONTROLS if c.limit):
        value = shown(scenario, control)
        if value is None:
            continue
        if not control.low <= value <= control.high:
            unit = f" {control.unit}" if control.unit else ""
            return (
                f"{control.label}: {value:g}{unit} is outside the dashboard's range, "
                f"{control.low:g} to {control.high:g}{unit} (the command line takes up to what "
                "the schema allows)"
            )
    return None


def overrides(
    changed: Mapping[str, Any], base: Scenario, weather: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Dotted scenario overrides for the changed controls (:func:`changes`), each value checked
    (:func:`typed`). ``weather`` maps uploaded weather tokens to their paths: the weather
    control takes a shipped name, ``synthetic`` or one of those, never a path."""
    out: dict[str, Any] = {}
    share = None
    for key, raw in changed.items():
        control = BY_KEY.get(key)
        if control is None:
            raise ScenarioError(f"the dashboard has no control {shorten(key)}")
        value = typed(control, raw)
        if value is None:
            if control.empty == BASE:
                continue
            value = control.empty
        elif control.kind in ("number", "slider"):
            value = value * control.scale
            if not finite(value):
                raise ScenarioError(f"{control.label}: {shorten(raw)} is too large")
            if isinstance(shown(base, control), int) and float(value).is_integer():
                value = int(value)
            if is_duration(key):
                value = format_duration(value)
        elif control.kind == "date":
            value = datetime.combine(
                datetime.fromisoformat(value[:10]).date(), base.simulation.start.time()
            ).isoformat()
        elif key == "site.weather":
            value = _weather_source(value, weather or {})
        if key == COMPUTE_SHARE:
            share = value  # set below, at the size the other changes give
            continue
        out.update(_settings(control, value, base))
    for table in OPTIONAL_TABLES:
        fields = [c for c in CONTROLS if c.key.startswith(f"{table}.")]
        final = [_blank(changed[c.key]) if c.key in changed else shown(base, c) for c in fields]
        if any(c.key in changed for c in fields) and all(v is None for v in final):
            for c in fields:
                out.pop(c.key, None)
            out[table] = None
    if share is not None:
        # the share shown is the one at the scenario's size, which a parallel layout moves
        sized = load_scenario(base, out) if out and base.workload.parallelism else base
        out.update(_phase_shares(sized, share))
    return out


def _weather_source(value: str, weather: Mapping[str, str]) -> str:
    """``site.weather`` for the weather control's value: a shipped name, synthetic, or the
    path of an uploaded file given by its token."""
    if not names_a_file(value):
        return value
    if value in weather:
        return weather[value]
    raise ScenarioError(
        f"weather {shorten(value)}: choose a shipped file ({', '.join(SHIPPED)}), synthetic, "
        "or upload an EPW file (the server keeps the latest uploads: an older one may have "
        "gone)"
    )


def _settings(control: Control, value: Any, base: Scenario) -> dict[str, Any]:
    if control.key == SITE_BATTERY:
        others = [
            s.model_dump(mode="json") for s in base.mitigation.storage if s.location != "site"
        ]
        battery = (
            []
            if value is None
            else [{"location": "site", "power": value, "energy": value * STORAGE_HOURS}]
        )
        return {"mitigation.storage": others + battery}
    return {control.key: value}


def _phase_shares(base: Scenario, compute: float) -> dict[str, float]:
    """Shares of every phase with the compute phases together at ``compute`` at the scenario's
    size; each group keeps its phases' proportions. With a parallel layout the given shares hold
    at its reference size, and the compute share at any size is theirs times a factor the
    shares do not change (the layout's step is the same whatever they are): so the given
    compute shares scale by ``compute`` over the share shown."""
    now = base.compute_share
    if now >= 1.0:
        raise ScenarioError("the workload has no communication phase: add one to split the step")
    if not 0.0 < compute < 1.0:
        raise ScenarioError(f"compute share: {compute:g} must lie between 0 and 1")
    layout = base.layout()
    if layout is not None:
        # the communication phases hold the bubble, the exposed traffic and the wait at the
        # barrier at least
        idle = (layout.times.bubble + layout.times.exposed) / layout.step_time + layout.wait.sum()
        most = 1.0 - idle
        if compute > most:
            raise ScenarioError(
                f"compute share: {compute:g} leaves less of the step than the parallel layout's "
                f"pipeline bubble and exposed communication"
                + (" and wait at the barrier" if layout.wait.any() else "")
                + f" at {base.cluster.n_gpus:,} GPUs: at most {most:.3g}"
            )
    phases = base.workload.phases
    given = sum(p.share for p in phases if p.kind == "compute")
    target = compute * given / now  # the given compute share that shows ``compute``
    # rounded: the shares' sum is checked against 1, and 0.4000000000000001 reads badly
    return {
        f"workload.phases.{i}.share": round(
            p.share * (target / given if p.kind == "compute" else (1 - target) / (1 - given)), 12
        )
        for i, p in enumerate(phases)
    }


def parse_shown(key: str, text: str) -> Any:
    """A control's value from its text in the URL; ``""`` is an emptied field."""
    control = BY_KEY[key]
    if text == "":
        return None
    if control.kind in ("number", "slider"):
        try:
            number = float(text)
        except ValueError:
            raise ScenarioError(
                f"the link sets {key} to {shorten(text)}, which is not a number"
            ) from None
        typed(control, number)
        return int(number) if number.is_integer() and control.step == 1 else number
    typed(control, text)
    if key in DURATIONS:
        try:
            parse_duration(text)
        except ValueError as exc:
            raise ScenarioError(f"the link sets {key}: {exc}") from None
    return text


def base_scenario(base: Any, defaults: Mapping[str, Any] | None = None) -> Scenario:
    """The scenario a base names: a preset ``{"preset": name}`` (opened with the app's
    ``defaults``) or an upload ``{"upload": file name, "toml": text}``.

    A base arrives from the browser: a preset is taken by name only, never as a path, and an
    uploaded text is parsed as data (:func:`powermodel.scenario.loads_scenario`). A base that
    is both or neither, or holds a name or text that is not text, is none the page makes (the
    link, the title and the run would each read another part of it), and refused.
    """
    keys = (
        {k for k in ("preset", "upload", "toml") if k in base}
        if isinstance(base, Mapping)
        else None
    )
    if keys not in ({"preset"}, {"upload", "toml"}) or not all(
        isinstance(base[k], str) for k in keys
    ):
        raise ScenarioError("the page's state is not one this dashboard made: reload the page")
    if keys == {"upload", "toml"}:
        label = base["upload"] if len(base["upload"]) <= TEXT_LIMIT else "upload"
        return loads_scenario(base["toml"], label=label)
    name = base["preset"]
    if name not in presets():
        raise ScenarioError(f"unknown preset {shorten(name)}: choose one of {', '.join(presets())}")
    defaults = dict(defaults or {})
    period = defaults.get("simulation.duration")
    if period is not None:  # a period that shortens a preset, never one that lengthens it
        own = load_scenario(name).simulation.duration
        if own <= parse_duration(period):
            defaults.pop("simulation.duration")
    return load_scenario(name, defaults)


def to_query(base: dict[str, Any], changed: dict[str, Any], tab: str | None = None) -> str:
    """The URL query that reproduces the view: preset, changed controls, tab."""
    pairs = [("preset", base["preset"])] if "preset" in base else [("upload", base["upload"])]
    pairs += [(k, "" if v is None else str(v)) for k, v in changed.items()]
    if tab:
        pairs.append(("tab", tab))
    return "?" + urlencode(pairs)


class Link(NamedTuple):
    """What a URL query says: preset, changed controls, tab, and the name of an uploaded
    scenario it was made from (a link cannot carry the file itself)."""

    preset: str | None
    changed: dict[str, Any]
    tab: str | None
    upload: str | None


def from_query(search: str | None) -> Link:
    """The state a URL query links to; unknown keys, unknown presets and values that are not
    of their control's kind are errors."""
    fields: dict[str, Any] = {"preset": None, "changed": {}, "tab": None, "upload": None}
    for key, text in parse_qsl((search or "").lstrip("?"), keep_blank_values=True):
        if key in ("preset", "tab", "upload"):
            fields[key] = text[:TEXT_LIMIT]
        elif key in BY_KEY:
            fields["changed"][key] = parse_shown(key, text)
        else:
            raise ScenarioError(
                f"the link sets {shorten(key)}, which the dashboard has no control for"
            )
    if fields["preset"] is not None and fields["preset"] not in presets():
        raise ScenarioError(
            f"the link names preset {shorten(fields['preset'])}, which is not one of "
            f"{', '.join(presets())}"
        )
    return Link(**fields)


def opens(search: str | None, preset: str) -> bool:
    """Whether a URL query asks for ``preset`` as it is: no other preset, no box changed, no
    tab, no uploaded scenario (the link the page writes for it, or none)."""
    try:
        link = from_query(search)
    except (ScenarioError, ValueError):
        return False
    return not (link.changed or link.tab or link.upload) and link.preset in (None, preset)
