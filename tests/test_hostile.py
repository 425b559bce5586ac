"""Hostile input (issue 10, acceptance point 2): every way in, fed what no one should send.

Each property names what it guards:

- **one-line refusal**: whatever a user or a browser sends, the answer is a result or a
  :class:`~powermodel.errors.PowerModelError` whose message is one line; the CLI exits 1 with
  exactly one ``powermodel: error:`` line (2 for argparse's usage errors, 3 for a violated rule)
  and never prints a traceback; a Dash callback returns or raises ``PreventUpdate``; the
  download route answers 200, 400, 404 or 503, never 500;
- **no hang**: every example runs under a wall-clock alarm (:func:`bounded`) as well as
  hypothesis' deadline, which only measures an example that returns;
- **physical profile**: a scenario that loads simulates to finite, non-negative powers, facility
  at least IT, hourly PUE at least 1, the grid below the facility only with a battery;
- **energy at every resolution** and **same seed, same bytes**.

Simulated runs are kept to minutes or hours (the strategies fix ``simulation.duration`` and
``simulation.dt``, or skip the run of a scenario over :data:`MAX_SIMULATED` steps); every other key
reaches the ends of its schema range and beyond. The examples per test come from the hypothesis
profile (``tests/conftest.py``): ``ci`` by default, ``HYPOTHESIS_PROFILE=deep`` for the long run.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import math
import re
import signal
import subprocess
import sys
import time
import tomllib
import typing
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import annotated_types
import dash
import numpy as np
import pytest
import tomli_w
import xarray as xr
from dash.exceptions import PreventUpdate
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from powermodel import cli, rules
from powermodel.analysis import resample
from powermodel.errors import PowerModelError
from powermodel.iotools.trace import read_trace
from powermodel.iotools.weather import read_epw, read_tmy3, read_weather, shipped_weather, site_of
from powermodel.scenario import Scenario, load_scenario, loads_scenario, presets
from powermodel.scenario.keys import holds_list, tables_of, union_members
from powermodel.simulate import simulate
from powermodel.webapp import controls, create_dashboard, downloads
from powermodel.webapp.cache import SimulationCache
from powermodel.webapp.callbacks import Dashboard
from powermodel.webapp.sidebar import MAX_STEPS

REFERENCE = "llama3-405b-16k-h100"
PRESET_TEXT = (
    Path(__file__).parents[1] / "powermodel" / "presets" / f"{REFERENCE}.toml"
).read_text()
PRESET = tomllib.loads(PRESET_TEXT)
MAX_SIMULATED = 40_000  # steps of a hostile run that is simulated (a few hours at 1 s)
HANG = 120  # s: an example still running after this is a hang (the alarm fires)
POWERS = ("gpu_power", "it_power", "facility_power", "cooling_power", "misc_power", "facility_loss")
FAST = settings(deadline=5_000, suppress_health_check=[HealthCheck.too_slow])
SIMULATING = settings(deadline=20_000, suppress_health_check=[HealthCheck.too_slow])


# --- the properties, as assertions -------------------------------------------------------------


def record(text: str) -> None:
    """Count an outcome in hypothesis' statistics (outside a property: nothing)."""
    if currently_in_test_context():
        event(text)


class Hang(Exception):
    """An example ran past :data:`HANG` seconds."""


@contextlib.contextmanager
def bounded(seconds: float = HANG):
    """Fail an example that runs longer than ``seconds`` (a hang), from a wall-clock alarm:
    hypothesis' deadline is checked only once an example returns."""

    def fire(*_):
        raise Hang(f"still running after {seconds} s")

    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer <= seconds:  # inside a shorter bound: that one holds
        yield
        return
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # the longer bound outside goes on counting
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3))


def assert_one_line(message: str) -> None:
    assert message.strip(), "an empty error message"
    assert "\n" not in message and "\r" not in message, f"a message of several lines: {message!r}"


def refused_or(call, *args, **kwargs) -> Any:
    """``call(*args)``, or None when it refuses with a one-line PowerModelError; any other
    exception is the defect and propagates (hypothesis shrinks and reports it)."""
    with bounded():
        try:
            result = call(*args, **kwargs)
        except PowerModelError as exc:
            assert_one_line(str(exc))
            record(f"{call.__name__}: refused")
            return None
    record(f"{call.__name__}: accepted")
    return result


def site_battery(scenario: Scenario) -> bool:
    return any(s.location == "site" for s in scenario.mitigation.storage)


def assert_physical(ds: xr.Dataset, scenario: Scenario) -> None:
    """The invariants of every simulated profile."""
    for name, var in ds.data_vars.items():
        if "time" in var.dims and np.issubdtype(var.dtype, np.number):
            assert np.isfinite(var.values).all(), f"{name} holds NaN or inf"
    for name in POWERS:
        assert ds[name].values.min() >= 0.0, f"{name} is negative: {ds[name].values.min()}"
    facility, it = ds["facility_power"].values, ds["it_power"].values
    assert (facility >= it * (1 - 1e-9)).all(), "facility power below IT power"
    assert ds["pue"].values.min() >= 1.0 - 1e-9, f"hourly PUE {ds['pue'].values.min()} below 1"
    if not site_battery(scenario):
        grid = ds["grid_power"].values
        assert (grid >= facility * (1 - 1e-9)).all(), "grid below facility without a battery"


def simulated(scenario: Scenario) -> xr.Dataset | None:
    """The profile of a scenario short enough to simulate here, None if it refuses to run."""
    if scenario.simulation.n_steps > MAX_SIMULATED:
        record("simulate: too long to run here")
        return None
    return refused_or(simulate, scenario)


# --- the schema, as data -------------------------------------------------------------------------


def schema_fields(model: type[BaseModel] = Scenario, prefix: str = "") -> dict[str, Any]:
    """Every dotted key of the schema -> its FieldInfo; a table in a list at index 0."""
    out = {}
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        out[key] = field
        inner = f"{key}.0." if holds_list(field.annotation) else f"{key}."
        for table in tables_of(field.annotation):  # each member of a tagged union (cooling)
            out = schema_fields(table, inner) | out
        tags = union_members(field)
        if tags:  # the tag takes every member's
            out[f"{inner}{field.discriminator}"] = FieldInfo.from_annotation(Literal[tuple(tags)])
    return out


FIELDS = schema_fields()
SCHEMA_KEYS = sorted(FIELDS)
# keys a simulated run must not take from the strategy: they set its length
RUN_LENGTH = ("simulation.duration", "simulation.dt")


def _flatten(raw: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(raw, dict):
        out = {}
        for k, v in raw.items():
            out |= _flatten(v, f"{prefix}{k}.")
        return out
    if isinstance(raw, list) and raw and all(isinstance(v, dict) for v in raw):
        out = {}
        for i, v in enumerate(raw):
            out |= _flatten(v, f"{prefix}{i}.")
        return out
    return {prefix.rstrip("."): raw}


PRESET_VALUES = _flatten(PRESET)  # dotted key -> the reference preset's value
SHIPPED_WEATHER = ("synthetic", "sterling", "tampa", "chicago", "golden")
UNITS = ("ms", "s", "sec", "min", "h", "hr", "d", "day", "days", "w")


def _bounds(field: Any) -> tuple[float | None, float | None]:
    low = high = None
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge | annotated_types.Gt):
            low = float(m.ge if isinstance(m, annotated_types.Ge) else m.gt)
        if isinstance(m, annotated_types.Le | annotated_types.Lt):
            high = float(m.le if isinstance(m, annotated_types.Le) else m.lt)
    return low, high


def _is_duration(field: Any) -> bool:
    return "parse_duration" in repr(field.metadata) or "parse_duration" in repr(field.annotation)


def _literals(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    return [v for a in typing.get_args(annotation) for v in _literals(a)]


# --- values: extreme, wrong-typed, garbage -------------------------------------------------------

EXTREME_NUMBERS = [
    0, -0.0, 1, -1, 0.5, 1e-300, 5e-324, -5e-324, 1e-9, 1e9, 1e300, -1e300, 1.7976931348623157e308,
    2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30, 1e16, 1e18, 86400, 3660 * 86400,
]  # fmt: skip
numbers = st.one_of(
    st.sampled_from(EXTREME_NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e6, max_value=1e6),
)
# TOML floats and integers only: TOML integers stop at 64 bits
toml_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([v for v in EXTREME_NUMBERS if not isinstance(v, int) or abs(v) < 2**63]),
)
duration_texts = st.one_of(
    st.builds(
        lambda x, space, unit: f"{x}{space}{unit}",
        st.one_of(numbers, st.sampled_from(["1e400", "-1", ".5", "1e-400", "nan", "inf", "0x10"])),
        st.sampled_from(["", " "]),
        st.sampled_from([*UNITS, "", "S", "MIN", "µs", "years", "ｓ"]),
    ),
    st.sampled_from(
        ["54d", "1s", "10min", "100ms", "2h", "1w", "young-daly", "", " ", "s", "1 2s"]
    ),
)
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", " ", "\x00", "é", "\u2028", "𝟙𝟘", "Ω", "H100-SXM", "synthetic", "sterling", "../../x"]
    ),
)
scalars = st.one_of(
    st.none(), st.booleans(), numbers, duration_texts, texts, st.datetimes(), st.dates()
)
nested = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


class Deep(list):
    """An array nested ``levels`` deep, alternating tables and arrays, that prints short
    (hypothesis' report would recurse as deep as the value)."""

    def __init__(self, levels: int) -> None:
        leaf: Any = 1
        for i in range(levels - 1):
            leaf = {"k": leaf} if i % 2 else [leaf]
        super().__init__([leaf])
        self.levels = levels

    def __repr__(self) -> str:
        return f"Deep({self.levels})"


def deep(levels: int) -> Any:
    """A value nested ``levels`` deep (:class:`Deep`)."""
    return Deep(levels)


deeply_nested = st.integers(min_value=5, max_value=3000).map(deep)


def mutated(value: Any) -> st.SearchStrategy:
    """A reference value changed a little, a lot, or to another type."""
    options = [st.just(value), nested, st.just(str(value)), st.just([value])]
    if isinstance(value, bool):
        options.append(st.just(not value))
    elif isinstance(value, int | float):
        factors = st.sampled_from(
            [0, -1, 1e-12, 1e-3, 0.5, 2, 1e3, 1e12, 1e300, math.inf, math.nan]
        )
        options += [factors.map(lambda f: value * f), st.just(value + 1e-12), st.just(-value)]
        if isinstance(value, int):
            options.append(st.integers())
    elif isinstance(value, str):
        options += [
            st.just(""),
            st.just(value.upper()),
            st.just(value * 50),
            st.text(max_size=5).map(lambda t: value + t),
            st.just(value[:-1]),
        ]
        if value[:1].isdigit():  # a duration: another number with its unit
            options.append(numbers.map(lambda x: f"{x}{value.lstrip('0123456789.')}"))
    elif isinstance(value, list):
        options += [st.just([]), st.just(value * 40), st.just(value[::-1]), st.just(value[:1])]
    return st.one_of(options)


def valid_value(field: Any) -> st.SearchStrategy:
    """Values the schema allows for a field, reaching its bounds."""
    annotation = field.annotation
    tables = tables_of(annotation)
    if tables:
        one = st.one_of([valid_table(table) for table in tables])
        return st.lists(one, max_size=3) if holds_list(annotation) else one
    literals = _literals(annotation)
    low, high = _bounds(field)
    open_low = any(isinstance(m, annotated_types.Gt) for m in field.metadata)
    open_high = any(isinstance(m, annotated_types.Lt) for m in field.metadata)
    if _is_duration(field):
        low, high = max(low or 0.0, 0.0), min(high or 86400.0, 86400.0)
        ends = [low] * (not open_low) + [high, 1e-3, 1.0, 60.0]
        seconds = st.one_of(
            st.sampled_from([s for s in ends if low < s <= high or s == low and not open_low]),
            st.floats(min_value=low, max_value=high, exclude_min=open_low),
        )
        durations = seconds.map(lambda s: f"{s!r}s")
        return st.one_of(durations, st.sampled_from(literals)) if literals else durations
    if literals:
        return st.sampled_from(literals)
    if annotation is bool or bool in typing.get_args(annotation):
        return st.booleans()
    if annotation is datetime:
        return st.datetimes(min_value=datetime(1677, 9, 22), max_value=datetime(2262, 4, 10))
    if annotation is int or int in typing.get_args(annotation):
        lo = -(2**63) if low is None else math.ceil(low)
        hi = 2**63 - 1 if high is None else math.floor(high)
        return st.one_of(st.sampled_from([lo, hi]), st.integers(min_value=lo, max_value=hi))
    if annotation is float or float in typing.get_args(annotation):
        lo, hi = -1e6 if low is None else low, 1e6 if high is None else high
        ends = [x for x, shut in ((lo, not open_low), (hi, not open_high)) if shut]
        inside = st.floats(min_value=lo, max_value=hi, exclude_min=open_low, exclude_max=open_high)
        return st.one_of(st.sampled_from(ends), inside) if ends else inside
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    shape = typing.get_origin(args[0]) if args else None
    if typing.get_origin(annotation) is list or shape is list:
        inner = typing.get_args(annotation if typing.get_origin(annotation) is list else args[0])
        if inner and inner[0] is str:
            return st.lists(texts, max_size=4)
        return st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=3, max_size=8)
    if typing.get_origin(annotation) is tuple or shape is tuple:
        return st.lists(st.floats(min_value=0.0, max_value=1e3), min_size=2, max_size=2).map(sorted)
    return texts


def valid_table(model: type[BaseModel]) -> st.SearchStrategy:
    required = {
        n: st.deferred(lambda f=f: valid_value(f))
        for n, f in model.model_fields.items()
        if f.is_required()
    }
    optional = {
        n: st.deferred(lambda f=f: valid_value(f))
        for n, f in model.model_fields.items()
        if not f.is_required()
    }
    return st.fixed_dictionaries(required, optional=optional)


schema_keys = st.sampled_from(SCHEMA_KEYS)
keys = st.one_of(
    schema_keys,
    st.sampled_from(sorted(PRESET_VALUES)),
    schema_keys.map(lambda k: k.replace("_", "")),  # a typo
    schema_keys.map(lambda k: k.upper()),
    schema_keys.map(lambda k: k + ".x"),
    st.sampled_from(
        ["workload.phases.2.share", "reliability.causes.99.count", "workload.phases.-1"]
    ),
    st.sampled_from([".", "..", "a..b", "cluster.", ".cluster", "extends", "__class__"]),
    st.text(max_size=30),
)


def hostile_value(key: str) -> st.SearchStrategy:
    """For a dotted key: its reference value mutated, a value at its schema bounds, or garbage."""
    options = [nested, deeply_nested]
    if key in PRESET_VALUES:
        options.append(mutated(PRESET_VALUES[key]))
    if key in FIELDS:
        options.append(valid_value(FIELDS[key]))
    return st.one_of(options)


@st.composite
def override_maps(draw, keys=keys, max_size: int = 5) -> dict[str, Any]:
    chosen = draw(st.lists(keys, max_size=max_size, unique=True))
    return {k: draw(hostile_value(k)) for k in chosen}


def as_set_text(value: Any) -> st.SearchStrategy:
    """The ``--set`` text of a value: as TOML where it is one, else its str, or garbage."""
    try:
        toml = tomli_w.dumps({"v": value}).strip().removeprefix("v = ")
        plain = str(value)
    except (TypeError, ValueError):  # None: no TOML value
        toml = plain = str(value)
    except RecursionError:  # nested deeper than tomli_w goes: write it as TOML would
        toml = plain = deep_text(value.levels)
    return st.sampled_from([toml, plain, toml[: len(toml) // 2]])


def deep_text(levels: int) -> str:
    """TOML text of a value nested ``levels`` deep, as :func:`deep` builds it."""
    opening = "".join("{k = " if i % 2 else "[" for i in reversed(range(levels - 1)))
    closing = "".join("}" if i % 2 else "]" for i in range(levels - 1))
    return "[" + opening + "1" + closing + "]"


@st.composite
def set_strings(draw) -> list[str]:
    """``key=value`` strings as ``--set`` takes them, and broken ones."""
    out = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        key = draw(keys)
        value = draw(as_set_text(draw(hostile_value(key))))
        out.append(draw(st.sampled_from([f"{key}={value}", f"{key} = {value}", key, f"={value}"])))
    out += draw(st.lists(st.text(max_size=30), max_size=1))
    return out


# simulated runs: every key but the run's length, within the schema and at its bounds
SIMULATED_KEYS = [k for k in SCHEMA_KEYS if not k.startswith(RUN_LENGTH) and "sensitivity" not in k]
RUN_LENGTHS = st.sampled_from(
    [
        {"simulation.duration": "10min", "simulation.dt": "1s"},
        {"simulation.duration": "1h", "simulation.dt": "1s"},
        {"simulation.duration": "3h", "simulation.dt": "1s"},
        {"simulation.duration": "2h", "simulation.dt": "250ms"},
        {"simulation.duration": "6h", "simulation.dt": "10s"},
        {"simulation.duration": "1min", "simulation.dt": "1ms"},
        {"simulation.duration": "30min", "simulation.dt": "5s"},
    ]
)


@st.composite
def runnable_overrides(draw) -> dict[str, Any]:
    """Overrides at the ends of the schema's ranges, on a run of minutes to hours."""
    chosen = draw(st.lists(st.sampled_from(SIMULATED_KEYS), max_size=5, unique=True))
    out = {k: draw(valid_value(FIELDS[k])) for k in chosen}
    garbage = draw(st.sampled_from([{}, {}, {}, draw(override_maps(max_size=1))]))
    return {**out, **garbage, **draw(RUN_LENGTHS)}


# --- 1. dotted overrides: the API and --set -------------------------------------------------------


@FAST
@given(override_maps())
def test_api_overrides_load_or_refuse_in_one_line(overrides):
    refused_or(load_scenario, REFERENCE, overrides)


@FAST
@given(set_strings())
def test_set_strings_load_or_refuse_in_one_line(strings):
    refused_or(load_scenario, REFERENCE, strings)


@SIMULATING
@given(runnable_overrides())
def test_overridden_scenarios_simulate_to_physical_profiles(overrides):
    scenario = refused_or(load_scenario, REFERENCE, overrides)
    assume(scenario is not None)
    ds = simulated(scenario)
    if ds is not None:
        assert_physical(ds, scenario)


@SIMULATING
@given(runnable_overrides())
def test_energy_is_the_same_at_every_resolution(overrides):
    scenario = refused_or(load_scenario, REFERENCE, overrides)
    assume(scenario is not None and scenario.simulation.duration % 60 == 0)
    assume(60 % scenario.simulation.dt == 0 or scenario.simulation.dt == 1e-3)
    ds = simulated(scenario)
    assume(ds is not None)
    coarse = resample(ds, "1min")
    n = round(60 / scenario.simulation.dt)
    for name in (*POWERS, "grid_power", "grid_reactive_power"):
        native, means = ds[name].values.sum(), coarse[name].values.sum() * n
        assert math.isclose(means, native, rel_tol=1e-9, abs_tol=1e-9), name


@SIMULATING
@given(runnable_overrides())
def test_same_seed_gives_the_same_bytes(overrides):
    scenario = refused_or(load_scenario, REFERENCE, overrides)
    assume(scenario is not None)
    first = simulated(scenario)
    assume(first is not None)
    second = simulate(load_scenario(scenario))
    assert json.dumps(first.attrs, default=str) == json.dumps(second.attrs, default=str)
    for name, var in first.variables.items():
        assert np.array_equal(var.values, second[name].values, equal_nan=var.dtype.kind == "f"), (
            name
        )


# --- 2. scenario files: valid-looking and garbage TOML ----------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """One folder for the files of every example (each written under a name of its content)."""
    return tmp_path_factory.mktemp("hostile")


def write(folder: Path, content: str | bytes, suffix: str) -> Path:
    """``content`` in ``folder`` under a name of its hash: an example never rewrites a file
    another one read (readers may keep what they read by path)."""
    raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    path = folder / f"{hashlib.sha1(raw).hexdigest()[:16]}{suffix}"
    path.write_bytes(raw)
    return path


def _set(raw: dict, key: str, value: Any) -> None:
    """Set (None: delete) a dotted key in nested tables, making tables on the way."""
    *parents, last = key.split(".")
    node: Any = raw
    for part in parents:
        if isinstance(node, list):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else {}
            continue
        if not isinstance(node.get(part), dict | list):
            node[part] = {}
        node = node[part]
    if isinstance(node, dict):
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value


@st.composite
def scenario_tables(draw) -> dict[str, Any]:
    """Whole scenarios as tables: the preset or a short file extending it, with keys changed,
    removed, added, retyped."""
    if draw(st.booleans()):
        raw: dict[str, Any] = copy.deepcopy(PRESET)
    else:
        raw = {"extends": draw(st.sampled_from([REFERENCE, *presets()]))}
    edits = draw(st.lists(st.tuples(keys, st.booleans()), max_size=6))
    for key, delete in edits:
        _set(raw, key, None if delete else draw(hostile_value(key)))
    if draw(st.booleans()):
        _set(raw, "simulation.duration", draw(st.sampled_from(["10min", "1h"])))
    if draw(st.integers(0, 9)) == 0:
        raw["extends"] = draw(
            st.one_of(nested, st.sampled_from(["no-such-preset", "", "/", "..", "self.toml"]))
        )
    return raw


def toml_text(table: dict[str, Any]) -> str:
    """TOML text of a table, None values left out (TOML has no null); a :class:`Deep` value,
    deeper than tomli_w recurses, is written by :func:`deep_text`."""

    def strip(value: Any) -> Any:
        if isinstance(value, Deep):
            return f"@deep:{value.levels}@"
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [strip(v) for v in value if v is not None]
        return value

    try:
        text = tomli_w.dumps(strip(table))
    except (TypeError, ValueError):
        return ""
    return re.sub(r'"@deep:(\d+)@"', lambda m: deep_text(int(m[1])), text)


GARBAGE = [
    "[", "]", "[[", "=", '"', "'''", "\x00", "\ufeff", "\ud800", "é", "\u2028", "{", "}", "#",
    "x = 1\nx = 2\n", "[cluster]\n", "1e400", "-inf", "nan", "9" * 400, "\n[simulation]\n",
    "duration = 7\n", 'extends = "llama3-405b-16k-h100"\n', "\t", "\r", "\\", "\\u0000",
]  # fmt: skip


@st.composite
def text_mutations(draw, text: str) -> str:
    """``text`` with slices deleted, garbage inserted, lines duplicated or swapped."""
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 200)))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "replace", "swap"]))
        junk = draw(st.one_of(st.sampled_from(GARBAGE), st.text(max_size=20)))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + junk + text[i:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif kind == "replace":
            text = text[:i] + junk + text[j:]
        else:
            lines = text.splitlines(keepends=True)
            if len(lines) > 1:
                a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
                lines[a], lines[b] = lines[b], lines[a]
                text = "".join(lines)
    return text


scenario_texts = st.one_of(
    scenario_tables().map(toml_text),
    text_mutations(PRESET_TEXT),
    scenario_tables().map(toml_text).flatmap(text_mutations),
    st.integers(1, 100_000).map(lambda n: f"x = {'[' * n}{']' * n}\n"),
    st.integers(1, 100_000).map(lambda n: "a." * n + "b = 1\n"),
    st.integers(1, 200_000).map(lambda n: "x = {" + "a." * n + "b = 1}\n"),
    st.integers(1, 5_000).map(lambda n: "x = " + "{a = " * n + "1" + "}" * n + "\n"),
    st.text(max_size=200),
)


@FAST
@given(text=scenario_texts, encoding=st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16"]))
def test_scenario_files_load_or_refuse_in_one_line(folder, text, encoding):
    raw = (
        text.encode(encoding, "replace")
        if "\ud800" not in text
        else text.encode("utf-8", "surrogatepass")
    )
    scenario = refused_or(load_scenario, write(folder, raw, ".toml"))
    uploaded = refused_or(loads_scenario, text)  # the dashboard's upload
    if scenario is not None and encoding == "utf-8" and scenario.site.weather in SHIPPED_WEATHER:
        assert uploaded == scenario


def as_table(overrides: dict[str, Any], extends: bool) -> dict[str, Any]:
    """The file that says what ``overrides`` say: the preset's tables, or ``extends`` it."""
    raw: dict[str, Any] = {"extends": REFERENCE} if extends else copy.deepcopy(PRESET)
    for key, value in overrides.items():
        _set(raw, key, value)
    return raw


@SIMULATING
@given(st.builds(as_table, runnable_overrides(), st.booleans()).map(toml_text))
def test_scenario_files_that_load_simulate_to_physical_profiles(folder, text):
    scenario = refused_or(load_scenario, write(folder, text, ".toml"))
    assume(scenario is not None)
    ds = simulated(scenario)
    if ds is not None:
        assert_physical(ds, scenario)


# --- 3. weather files: mutations of a shipped EPW, and a TMY3 made from it ---------------------


def _lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return raw.decode("latin-1").splitlines()


EPW_LINES = _lines(shipped_weather()["sterling"])
EPW_HEADER = 8


def _tmy3_lines() -> list[str]:
    """The Sterling EPW as a TMY3 CSV: site line, column names, 8,760 rows (NREL's layout)."""
    names = ["Date (MM/DD/YYYY)", "Time (HH:MM)", "ETR (W/m^2)"]
    for quantity in ("Dry-bulb (C)", "Dew-point (C)", "RHum (%)", "Pressure (mbar)"):
        stem = quantity.split(" (")[0]
        names += [quantity, f"{stem} source", f"{stem} uncert (%)"]
    lines = ['724030,"WASHINGTON DC DULLES INT\'L AR",VA,-5.0,38.933,-77.450,88', ",".join(names)]
    for row in EPW_LINES[EPW_HEADER:]:
        f = row.split(",")
        date = f"{int(f[1]):02d}/{int(f[2]):02d}/{f[0]}"
        values = [f[6], f[7], f[8], f"{float(f[9]) / 100:.1f}"]
        lines.append(",".join([date, f"{int(f[3]):02d}:00", "0", *(f"{v},A,0" for v in values)]))
    return lines


TMY3_LINES = _tmy3_lines()
HOSTILE_CELLS = [
    "nan", "NaN", "inf", "-inf", "1e400", "-1e30", "1e30", "text", "", " ", "0x10", "1_000",
    "１２", "٣", "99.9", "999999", "-9900", "273.15", "1e-400", "+", "-", ".", "1,5", '"', "\x00",
]  # fmt: skip
cells = st.one_of(st.sampled_from(HOSTILE_CELLS), numbers.map(str), st.text(max_size=8))


class Mutated(typing.NamedTuple):
    """A file made from a shipped one by ``edits`` (what hypothesis prints), and its bytes."""

    suffix: str
    edits: tuple
    raw: bytes

    def __repr__(self) -> str:
        return f"Mutated({self.suffix!r}, edits={self.edits!r}, {len(self.raw)} bytes)"


@st.composite
def line_mutations(draw, lines: list[str], header: int) -> tuple[list[str], list[tuple]]:
    """``lines`` with cells replaced, rows dropped, duplicated or swapped, header lines broken,
    the file cut short; and the edits made."""
    lines, edits = list(lines), []
    for _ in range(draw(st.integers(1, 4))):
        row = st.integers(header, len(lines) - 1)
        kind = draw(
            st.sampled_from(["cell", "column", "drop", "duplicate", "swap", "header", "cut", "add"])
        )
        if kind in ("cell", "column"):
            i = draw(st.integers(0, header - 1)) if draw(st.integers(0, 3)) == 0 else draw(row)
            width = lines[i].count(",") + 1
            k, value = draw(st.integers(0, width)), draw(cells)
            edits.append((kind, i, k, value))
            targets = [i] if kind == "cell" else range(header, len(lines))
            for t in targets:
                fields = lines[t].split(",")
                if k < len(fields):
                    fields[k] = value
                lines[t] = ",".join(fields)
        elif kind == "drop":
            i = draw(row)
            edits.append((kind, i))
            del lines[i]
        elif kind == "duplicate":
            i = draw(row)
            edits.append((kind, i))
            lines.insert(i, lines[i])
        elif kind == "swap":
            a, b = draw(row), draw(row)
            edits.append((kind, a, b))
            lines[a], lines[b] = lines[b], lines[a]
        elif kind == "header":
            i = draw(st.integers(0, header - 1))
            lines[i] = draw(st.one_of(text_mutations(lines[i]), st.text(max_size=30)))
            edits.append((kind, i, lines[i][:80]))
        elif kind == "cut":
            n = draw(st.integers(0, len(lines)))
            edits.append((kind, n))
            lines = lines[:n]
        else:
            i, text = draw(st.integers(0, len(lines))), draw(st.text(max_size=40))
            edits.append((kind, i, text))
            lines.insert(i, text)
        if len(lines) <= header:
            break
    return lines, edits


@st.composite
def weather_files(draw) -> Mutated:
    """The shipped EPW or the TMY3 made from it, mutated."""
    epw = draw(st.booleans())
    lines, edits = draw(line_mutations(EPW_LINES if epw else TMY3_LINES, EPW_HEADER if epw else 2))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = ending.join(lines) + draw(st.sampled_from(["", ending, ending * 3]))
    encoding = draw(st.sampled_from(["utf-8", "latin-1", "utf-8-sig"]))
    edits += [("ending", ending), ("encoding", encoding)]
    return Mutated(".epw" if epw else ".csv", tuple(edits), text.encode(encoding, "replace"))


EPW_COLUMNS = {
    6: (-90.0, 65.0, 99.9),
    7: (-100.0, 40.0, 99.9),
    8: (0.0, 110.0, 999.0),
    9: (30e3, 115e3, 999999.0),
}
SITE_FIELDS = {6: (-90.0, 90.0), 7: (-180.0, 180.0), 8: (-12.0, 14.0), 9: (-500.0, 9000.0)}


@st.composite
def readable_weather_files(draw) -> Mutated:
    """The shipped EPW with values at the ends of what the reader takes: whole columns or single
    hours at the plausible bounds or missing, the site at the ends of the Earth, the design
    conditions garbled."""
    lines, edits = list(EPW_LINES), []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["column", "hours", "site", "design"]))
        if kind in ("column", "hours"):
            k = draw(st.sampled_from(sorted(EPW_COLUMNS)))
            low, high, missing = EPW_COLUMNS[k]
            value = draw(st.one_of(st.sampled_from([low, high, missing]), st.floats(low, high)))
            first = draw(st.integers(EPW_HEADER, len(lines) - 1))
            count = len(lines) if kind == "column" else draw(st.integers(1, 4000))
            edits.append((kind, k, value, first, count))
            for i in range(first, min(len(lines), first + count)):
                fields = lines[i].split(",")
                fields[k] = f"{value:.6g}"
                lines[i] = ",".join(fields)
        elif kind == "site":
            k = draw(st.sampled_from(sorted(SITE_FIELDS)))
            value = draw(st.one_of(st.sampled_from(SITE_FIELDS[k]), st.floats(*SITE_FIELDS[k])))
            edits.append((kind, k, value))
            fields = lines[0].split(",")
            fields[k] = repr(value)
            lines[0] = ",".join(fields)
        else:
            fields = lines[1].split(",")
            k, value = draw(st.integers(0, len(fields) - 1)), draw(cells)
            edits.append((kind, k, value))
            fields[k] = value
            lines[1] = ",".join(fields)
    return Mutated(".epw", tuple(edits), "\n".join(lines).encode("utf-8"))


PLAUSIBLE = {
    "temp_air": (-90.0, 65.0),
    "temp_dew": (-100.0, 40.0),
    "relative_humidity": (0.0, 110.0),
    "pressure": (30e3, 115e3),
}


@FAST
@given(weather_files())
def test_weather_files_read_as_a_year_or_refuse_in_one_line(folder, weather):
    suffix = weather.suffix
    path = write(folder, weather.raw, suffix)
    refused_or(site_of, path)
    reader = read_epw if suffix == ".epw" else read_tmy3
    for read in (reader, read_weather):
        found = refused_or(read, path)
        if found is not None:
            data, meta = found
            assert data.shape == (8760, 4)
            assert np.isfinite(data.to_numpy()).all()
            for name, (low, high) in PLAUSIBLE.items():
                assert data[name].between(low, high).all(), name
            assert np.isfinite([meta[k] for k in ("latitude", "longitude", "utc_offset")]).all()


@SIMULATING
@given(readable_weather_files(), st.sampled_from(["10min", "1h"]))
def test_weather_files_that_read_simulate_to_physical_profiles(folder, weather, duration):
    path = write(folder, weather.raw, weather.suffix)
    assume(refused_or(read_weather, path) is not None)
    scenario = refused_or(
        load_scenario, REFERENCE, {"site.weather": str(path), "simulation.duration": duration}
    )
    assume(scenario is not None)
    ds = simulated(scenario)
    if ds is not None:
        assert_physical(ds, scenario)


# --- 4. measured traces: time formats, units in headers, values ------------------------------

TIME_FORMATS = (
    "iso-z", "iso", "iso-offset", "iso-mixed", "s", "ms", "min", "h", "bare", "date", "garbage",
)  # fmt: skip
POWER_HEADERS = ["P", "power", "grid_power", "facility_power", "p", "Power", "P_meter", "Q"]
POWER_UNITS = [
    "[MW]", "[kW]", "(kW)", "[W]", "[GW]", "[mW]", "[MWh]", "", "[ MW ]", "[]", "[MW", "(MW) [kW]",
]  # fmt: skip
STARTS = [
    datetime(2025, 7, 1), datetime(1677, 9, 22), datetime(2262, 4, 11), datetime(1970, 1, 1),
    datetime(9999, 12, 31), datetime(1, 1, 1),
]  # fmt: skip


def _time_text(kind: str, start: datetime, seconds: float, i: int) -> str:
    if kind in ("s", "ms", "min", "h", "bare"):
        scale = {"s": 1, "ms": 1e-3, "min": 60, "h": 3600, "bare": 1}[kind]
        return repr(seconds / scale)
    if kind == "garbage":
        return ["yesterday", "", "12:00", "2025-13-01T00:00Z", "NaT"][i % 5]
    try:
        import pandas as pd

        t = pd.Timestamp(start) + pd.Timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        return f"{start.isoformat()}+{seconds}s"
    text = t.isoformat()
    if kind == "date":
        return t.date().isoformat()
    if kind == "iso-z":
        return text + "Z"
    if kind == "iso-offset":
        return text + "+02:00"
    if kind == "iso-mixed":
        return text + ("Z" if i % 3 else "")
    return text


@st.composite
def trace_texts(draw) -> str:
    """A trace CSV: a time column in one of many formats, power columns with (or without) units,
    values with non-finite and non-numeric cells, rows dropped, duplicated or swapped."""
    clean = draw(st.booleans())  # half the traces are well formed: the rules then measure them
    n = draw(st.integers(2 if clean else 0, 40))
    step = draw(st.sampled_from([1e-4, 1e-3, 0.02, 0.5, 1.0, 5.0, 60.0, 900.0, 3600.0, 3.15e7]))
    kind = draw(st.sampled_from(["iso-z", "iso", "s", "ms"] if clean else TIME_FORMATS))
    start = datetime(2025, 7, 1) if clean else draw(st.sampled_from(STARTS))
    unit = {"s": " [s]", "ms": " [ms]", "min": " [min]", "h": " [h]"}.get(kind, "")
    time_header = "time" if clean else draw(st.sampled_from(["time", "Time", "timestamp", ""]))
    time_header += unit
    units = POWER_UNITS[:5] if clean else POWER_UNITS
    power = draw(st.sampled_from(POWER_HEADERS[:4] if clean else POWER_HEADERS))
    power += " " + draw(st.sampled_from(units))
    headers = [time_header, power.strip()]
    if draw(st.booleans()):
        headers.append(draw(st.sampled_from(["Q [Mvar]", "Q [kvar]", "Q", "Q [MW]", "note"])))
    values = st.floats(-1e4, 1e4).map(repr)
    rows = [
        [_time_text(kind, start, i * step, i)] + [draw(values) for _ in headers[1:]]
        for i in range(n)
    ]
    for _ in range(0 if clean else draw(st.integers(0, 3))):
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        edit = draw(st.sampled_from(["cell", "drop", "duplicate", "swap", "short", "long"]))
        if edit == "cell" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(cells)
        elif edit == "drop":
            del rows[i]
        elif edit == "duplicate":
            rows.insert(i, list(rows[i]))
        elif edit == "swap":
            j = draw(st.integers(0, len(rows) - 1))
            rows[i], rows[j] = rows[j], rows[i]
        elif edit == "short":
            rows[i] = rows[i][:-1]
        else:
            rows[i] = [*rows[i], "1"]
    if draw(st.booleans()):
        order = draw(st.permutations(range(len(headers))))
        headers = [headers[k] for k in order]
        rows = [[r[k] for k in order if k < len(r)] for r in rows]
    sep = "," if clean else draw(st.sampled_from([",", ",", ",", ";", "\t"]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [sep.join(headers), *(sep.join(r) for r in rows)]
    return (
        draw(st.sampled_from(["", "\ufeff"]))
        + ending.join(lines)
        + draw(st.sampled_from(["", ending, ending * 3, ending + sep]))
    )


trace_files = st.one_of(
    trace_texts().map(lambda t: t.encode("utf-8", "surrogatepass")),
    trace_texts().map(lambda t: t.encode("latin-1", "replace")),
    st.binary(max_size=200),
    st.sampled_from([b"", b"\x00", b"time,P [MW]", b"time,P [MW]\n", b"\n\n\n"]),
)


@FAST
@given(trace_files)
def test_traces_read_as_uniform_finite_profiles_or_refuse_in_one_line(folder, raw):
    ds = refused_or(read_trace, write(folder, raw, ".csv"))
    if ds is None:
        return
    steps = np.diff(ds["time"].values) / np.timedelta64(1, "s")
    assert ds.sizes["time"] >= 2 and (steps > 0).all()
    assert ds.attrs["dt"] >= 1e-3 and np.allclose(steps, ds.attrs["dt"], rtol=1e-6)
    for name in ("grid_power", "grid_reactive_power"):
        if name in ds:
            assert np.isfinite(ds[name].values).all(), name
    shipped = rules.load_rules("ercot-5s,nprr1191,aeso-1min,ieso-15s")
    refused_or(rules.check_each, ds, shipped, 100.0)


# --- 5. rule files ----------------------------------------------------------------------------

RULE_KEYS = [k for k in rules.Rule.model_fields if k != "name"]


@st.composite
def rule_tables(draw) -> dict[str, Any]:
    """A rule file: rules at the ends of the schema's ranges, some fields broken or removed."""
    out = {}
    for _ in range(draw(st.integers(1, 3))):
        table = draw(valid_table(rules.Rule))
        table.pop("name", None)
        if draw(st.integers(0, 3)):  # a rule needs a limit, a relative one a reference
            table["limit"] = draw(valid_value(rules.Rule.model_fields["limit"]))
            if "limit_fraction" in table:
                table["reference"] = "registered_demand"
        broken = st.lists(st.sampled_from([*RULE_KEYS, "name", "x"]), max_size=2)
        for key in draw(st.one_of(st.just([]), broken)):
            table[key] = draw(st.one_of(nested, mutated(table.get(key, 1.0))))
        out[draw(st.sampled_from(["r1", "r2", "ercot-5s", "", "é", "a.b", "[x]"]))] = table
    return out


rule_texts = st.one_of(
    rule_tables().map(toml_text),
    rule_tables().map(toml_text).flatmap(text_mutations),
    st.text(max_size=100),
)


@pytest.fixture(scope="module")
def profiles() -> list[xr.Dataset]:
    """Short simulated profiles to measure: ten minutes at 1 s, a minute at 1 ms."""
    return [
        simulate(load_scenario(REFERENCE, {"simulation.duration": "10min"})),
        simulate(
            load_scenario(
                REFERENCE,
                {"simulation.duration": "1min", "simulation.dt": "1ms", "cooling.dt": "1s"},
            )
        ),
    ]


@FAST
@given(text=rule_texts, demand=st.one_of(st.none(), st.floats(), st.sampled_from([0, 1, 10**6])))
def test_rule_files_load_and_check_or_refuse_in_one_line(folder, profiles, text, demand):
    loaded = refused_or(rules.load_rules, str(write(folder, text, ".toml")))
    if loaded is None:
        return
    for rule in loaded:
        assert_one_line(rules.describe(rule))
    for ds in profiles:
        found = refused_or(rules.check_each, ds, loaded, demand)
        if found is not None:
            results, refused = found
            for no in refused:
                assert_one_line(no.reason)
            refused_or(rules.summary, [results], refused)
            refused_or(rules.by_cause, [results])
            refused_or(rules.violations_table, [results])


# --- 6. the command line ------------------------------------------------------------------------

OUTPUTS = [
    "out.csv", "out.parquet", "out.nc", "out.xlsx", "out", "OUT.CSV", "missing/out.csv", ".",
    "out.csv/", "profile.csv.tmp", "é.csv", " .csv",
]  # fmt: skip
RESAMPLES = ["1min", "10s", "7s", "1h", "0s", "-1min", "1e400s", "x", "", "1", "1ms", "15min"]
SHORT_RUNS = [("10min", "1s"), ("1min", "1s"), ("1h", "10s"), ("10s", "1ms")]


class Target(typing.NamedTuple):
    """What a command is given to read: a preset, a scenario or trace file (its text), text."""

    kind: str
    content: str

    def __repr__(self) -> str:
        return f"Target({self.kind!r}, {self.content[:200]!r})"


targets = st.one_of(
    st.sampled_from(presets()).map(lambda p: Target("name", p)),
    st.sampled_from(presets()).map(lambda p: Target("name", p)),
    st.builds(as_table, runnable_overrides(), st.booleans()).map(
        lambda t: Target("toml", toml_text(t))
    ),
    scenario_texts.map(lambda t: Target("toml", t)),
    trace_texts().map(lambda t: Target("csv", t)),
    st.text(max_size=30).map(lambda t: Target("name", t)),
)


rarely = st.sampled_from([False] * 9 + [True])  # hypothesis favours the first of a choice
OPTIONS = {  # each command's options; the first of check, size and export is required
    "run": ["-o", "--resample", "--sensitivity"],
    "validate": [],
    "check": [
        "--rules",
        "--seeds",
        "--registered-demand",
        "--power",
        "--violations",
        "--sensitivity",
    ],
    "size": ["--rules", "--registered-demand"],
    "export": ["--to", "-o", "--resample"],
    "presets": [],
}
TOOL_NAMES = ["opendss", "gridlabd", "pypsa", "pandapower", "playback", "csv", "parquet", "netcdf"]


@st.composite
def command_lines(draw) -> tuple[list[str], Target, str | None, tuple[str, str] | None]:
    """argv for ``powermodel``: a command, what it reads, its options with values valid and
    hostile, now and then one it does not take. The test writes the target and any rule file:
    the argv holds ``{target}`` and ``{rules}``."""
    command = draw(st.sampled_from([*OPTIONS, *OPTIONS, *OPTIONS, "x", ""]))
    if command == "":
        return [], Target("name", ""), None, None  # no command at all
    target = draw(targets)
    argv = [command] + (["{target}"] if command != "presets" and not draw(rarely) else [])
    if draw(rarely):
        for text in draw(set_strings()):
            argv += [f"--set={text}"] if text.startswith("-") else ["--set", text]
    own = OPTIONS.get(command, [])
    chosen = draw(st.lists(st.sampled_from(own), max_size=3, unique=True)) if own else []
    if command in ("check", "size", "export") and not draw(rarely):
        chosen = [own[0], *(o for o in chosen if o != own[0])]
    if command == "export" and "-o" not in chosen and not draw(rarely):
        chosen.append("-o")
    if draw(rarely):
        chosen.append(draw(st.sampled_from(["--bogus", "-h", "--to", "--rules", "--seeds"])))
    rule_text = None
    for option in chosen:
        if option == "-o":
            outputs = ["export", "export/sub", *OUTPUTS] if command == "export" else OUTPUTS
            argv += [option, draw(st.sampled_from(outputs))]
        elif option == "--violations":
            argv += [option, draw(st.sampled_from(OUTPUTS))]
        elif option == "--resample":
            argv += [option, draw(st.sampled_from(RESAMPLES))]
        elif option == "--rules":
            names = st.lists(
                st.sampled_from([*rules.rule_names(), "ercot", "", "{rules}"]),
                min_size=1,
                max_size=3,
            )
            argv += [option, ",".join(draw(names))]
            rule_text = draw(rule_texts)
        elif option == "--seeds":
            argv += [option, draw(st.sampled_from(["1", "2", "3", "1", "2", "0", "-1", "x", ""]))]
        elif option == "--registered-demand":
            demand = ["100", "1e-300", "1e300", "0", "-5", "nan", "inf", "1e400", "x"]
            argv += [option, draw(st.sampled_from(demand))]
        elif option == "--power":
            argv += [option, draw(st.sampled_from(["P", "P [MW]", "power", "x", ""]))]
        elif option == "--to":
            argv += [option, draw(st.sampled_from([*TOOL_NAMES, "x"]))]
        else:
            argv.append(option)
    run = (
        draw(st.sampled_from(SHORT_RUNS)) if command in ("run", "check", "size", "export") else None
    )
    return argv, target, rule_text, run


def run_cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """``powermodel argv`` in this process, in ``cwd``: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        bounded(),
    ):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors and --help
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def workdir(folder) -> Path:
    """The folder the command line runs in: every output it is given lies inside."""
    path = folder / "cli"
    path.mkdir()
    return path


@SIMULATING
@given(command_lines())
def test_command_line_exits_with_one_error_line_and_no_traceback(workdir, folder, command):
    argv, target, rule_text, run = command
    suffix = {"toml": ".toml", "csv": ".csv"}.get(target.kind)
    where = target.content if suffix is None else str(write(folder, target.content, suffix))
    rule_file = str(write(folder, rule_text, ".toml")) if rule_text is not None else ""
    argv = [a.replace("{target}", where).replace("{rules}", rule_file) for a in argv]
    if run is not None and suffix != ".csv":  # keep the run short: the last --set wins
        argv += ["--set", f"simulation.duration={run[0]}", "--set", f"simulation.dt={run[1]}"]
        argv += ["--set", "cooling.dt=1min"] if run[1] != "1ms" else ["--set", "cooling.dt=1s"]
    code, _, err = run_cli(argv, workdir)
    record(
        f"{argv[0] if argv else ''} exit {code}"
        + (f": {err.splitlines()[-1][:60]}" if code in (1, 2) else "")
    )
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if re.match(r"powermodel( \w+)?: error:", line)]
    said = [line for line in err.splitlines() if line and not line.startswith("  running ")]
    if code == 1:
        assert len(errors) == 1 and errors[0].startswith("powermodel: error:"), err
        assert said == errors, err
    elif code == 2:
        assert "usage:" in err and len(errors) == 1, err
    else:
        assert code in (0, 3) and not errors, (code, err)


# --- 7. the dashboard's callbacks, fed page states no page of it sends ---------------------------

json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
        texts,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=8,
)  # fmt: skip
DASHBOARD_DEFAULTS = {"simulation.duration": "1h"}
DASHBOARD_RUN = 200_000  # steps of a page state this suite lets the dashboard simulate
DURATION_TEXTS = [
    "1h", "10min", "2h", "30min", "", "54d", "1e400s", "-1h", "0s", "3661d", "7", "1 h",
]  # fmt: skip


def control_value(control: controls.Control, shown: Any) -> st.SearchStrategy:
    """What a browser might send for a control: what it shows, its range's ends and beyond, the
    other choices of a dropdown, garbage."""
    options = [st.just(shown), st.just(shown), st.just(None), st.just(""), json_values]
    if control.key == "simulation.duration":
        options.append(st.sampled_from(DURATION_TEXTS))
    elif control.kind == "dropdown":
        options.append(st.sampled_from([o["value"] for o in controls.options(control.key)]))
    elif control.kind in ("number", "slider"):
        ends = [v for v in (control.low, control.high) if v is not None]
        beyond = [e * f for e in ends for f in (-1, 0.999999, 1.000001, 10)]
        options.append(st.sampled_from([*ends, *beyond, 0, -1, 2**53, 1e308]))
        if ends:
            options.append(st.floats(min(ends), max(ends)))
    else:
        options.append(st.text(max_size=120))
    return st.one_of(options)


def _dashboard_shown() -> dict[str, Any]:
    scenario = load_scenario(REFERENCE, DASHBOARD_DEFAULTS)
    return controls.shown_values(scenario)


SHOWN = _dashboard_shown()
DATES = [
    "2024-07-01", "1677-09-22", "2262-04-10", "2262-04-11", "9999-12-31", "0001-01-01",
    "2024-02-30", "x", "",
]  # fmt: skip


@st.composite
def page_inputs(draw) -> tuple[Any, Any, Any]:
    """``assemble``'s inputs: a base, the controls' values and the date pickers'."""
    base = draw(
        st.one_of(
            st.just({"preset": REFERENCE}),
            st.sampled_from(presets()).map(lambda p: {"preset": p}),
            st.builds(
                lambda name, text: {"upload": name, "toml": text},
                st.one_of(st.just("s.toml"), texts),
                st.one_of(
                    st.builds(as_table, runnable_overrides(), st.just(True)).map(toml_text),
                    scenario_texts,
                ),
            ),
            json_values,
        )
    )
    values = [draw(control_value(c, SHOWN[c.key])) for c in controls.BY_PROP["value"]]
    dates = [draw(st.one_of(st.sampled_from(DATES), json_values)) for _ in controls.BY_PROP["date"]]
    if draw(rarely):
        values = draw(st.one_of(json_values, st.just(values[:-1]), st.just([*values, 1])))
    return base, values, dates


@pytest.fixture(scope="module")
def board(folder) -> Dashboard:
    return Dashboard(SimulationCache(), REFERENCE, DASHBOARD_DEFAULTS, folder / "board", 100_000)


def callback(call, *args) -> Any:
    """A callback's answer; None when it prevents the update. Any exception but PreventUpdate
    is the defect."""
    with bounded():
        try:
            result = call(*args)
        except PreventUpdate:
            record(f"{call.__name__}: PreventUpdate")
            return None
    record(f"{call.__name__}: answered")
    return result


def small(board: Dashboard, state: Any) -> bool:
    """Whether the dashboard would run the state's scenario in a time this suite allows."""
    try:
        return board.scenario(state).simulation.n_steps <= DASHBOARD_RUN
    except PowerModelError:
        return True  # refused at once


@FAST
@given(page_inputs())
def test_dashboard_assemble_returns_a_state_or_why_not(board, inputs):
    answer = callback(board.assemble, *inputs)
    if answer is None:
        return
    state, message = answer
    if message:
        assert message.startswith("not applied: ")
        assert_one_line(message)
        if state is dash.no_update:  # the base itself refused
            return
        # issue 28: the boxes refused are named, the run takes every other one
    scenario = board.scenario(state)  # a state the dashboard made is one it takes back
    assert scenario.simulation.n_steps <= MAX_STEPS
    assert state["key"] in board.cache.scenarios


@st.composite
def page_states(draw) -> Any:
    """A state as the page stores it, with its changes and base tampered with, or garbage."""
    changes = st.dictionaries(
        st.one_of(st.sampled_from([c.key for c in controls.CONTROLS]), st.text(max_size=20)),
        json_values,
        max_size=3,
    )
    base = st.one_of(
        st.just({"preset": REFERENCE}),
        json_values,
        st.builds(lambda t: {"upload": "x.toml", "toml": t}, scenario_texts),
    )
    return draw(
        st.one_of(
            st.fixed_dictionaries({"base": base, "changes": changes}),
            st.fixed_dictionaries(
                {"base": st.just({"preset": REFERENCE}), "changes": changes},
                optional={"key": texts, "name": json_values, "query": json_values},
            ),
            json_values,
            st.integers(0, 3000).map(lambda n: {"base": deep(n), "changes": {}}),
        )
    )


@FAST
@given(page_states())
def test_dashboard_scenario_of_a_state_or_one_line_refusal(board, state):
    scenario = refused_or(board.scenario, state)
    if scenario is not None:
        assert scenario.simulation.n_steps <= MAX_STEPS


@SIMULATING
@given(st.one_of(page_states(), page_inputs()))
def test_dashboard_summary_answers_or_prevents_the_update(board, given_state):
    state = given_state
    if isinstance(given_state, tuple):  # the state assemble makes of hostile inputs
        answer = callback(board.assemble, *given_state)
        state = answer[0] if answer and not answer[1] else None
    assume(state is not None and small(board, state))
    answer = callback(board.summarize, state)
    if answer is not None:
        name, text = answer[:2]  # then the state made ready for the views
        assert isinstance(name, str)
        if isinstance(text, str):
            assert_one_line(text)


@FAST
@given(
    st.one_of(page_states(), page_inputs()),
    st.one_of(st.sampled_from(list(downloads.FORMATS)), json_values),
    st.one_of(st.sampled_from([*downloads.INTERVALS, "1s", "7min", None]), json_values),
)
def test_dashboard_export_answers_or_prevents_the_update(board, given_state, fmt, interval):
    state = given_state
    if isinstance(given_state, tuple):
        answer = callback(board.assemble, *given_state)
        state = answer[0] if answer and not answer[1] else None
    answer = callback(board.export, state, fmt, interval)
    if answer is not None:
        choices, chosen, link, note = answer
        assert chosen in choices and isinstance(link, str)
        assert_one_line(note)


# --- 8. the download route ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Dashboard:
    return create_dashboard(overrides=DASHBOARD_DEFAULTS)


@pytest.fixture(scope="module")
def app(served):
    return served.app


@pytest.fixture(scope="module")
def shown_keys(served) -> list[str]:
    """Keys of scenarios the page has shown: at 1 s, at 100 ms, ten minutes long."""
    runs = [
        {},
        {"simulation.dt": "100ms", "simulation.duration": "10min"},
        {"simulation.duration": "10min"},
    ]
    return [
        served.cache.remember(load_scenario(REFERENCE, {**DASHBOARD_DEFAULTS, **r})) for r in runs
    ]


@SIMULATING
@given(
    key=st.one_of(st.integers(0, 2), texts),
    fmt=st.one_of(st.sampled_from(list(downloads.FORMATS)), texts),
    query=st.dictionaries(
        st.sampled_from(["interval", "rules", "x"]),
        st.one_of(
            st.sampled_from([*downloads.INTERVALS, "1s", "100ms", "7min", "ercot-5s,nprr1191"]),
            texts,
        ),
        max_size=3,
    ),
)
def test_download_route_answers_200_400_404_or_503(app, shown_keys, key, fmt, query):
    key = shown_keys[key] if isinstance(key, int) else key
    path = f"/download/{quote(key, safe='')}/{quote(fmt, safe='')}"
    with bounded():
        response = app.server.test_client().get(path, query_string=query)
    record(f"HTTP {response.status_code}")
    assert response.status_code in (200, 400, 404, 503), response.get_data(as_text=True)[:500]
    if response.status_code == 200:
        assert response.data
    elif response.status_code in (400, 503):
        assert_one_line(response.get_data(as_text=True).strip())


# --- regressions: the defects these properties found, each at its minimal input --------------
# D1-D27 (and D10b) were found by this suite and fixed; each stays here as a regression test.


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"checkpoint.size": 1e9, "checkpoint.read_bandwidth": 1e-300}, id="D3"),
        pytest.param({"gpu.peak_flops": 1e-323}, id="D4"),
        pytest.param({"cooling.dt": "1e-70s"}, id="D6"),
        pytest.param({"cooling.air_delta_t": 1e-38}, id="D15"),
        pytest.param({"workload.tokens_per_step": 5e-324}, id="D16-tokens"),
        pytest.param({"workload.model_params": 5e-324}, id="D16-params"),
        pytest.param({"workload.step_time": "5e-324s"}, id="D16-step"),
        pytest.param({"workload.startup_ramp": "5e-324s"}, id="D17"),
        pytest.param({"grid.other_power_factor": 1e-310}, id="D19-pf"),
        pytest.param(
            {"electrical.chain": "double-conversion", "electrical.input_power_factor": 5e-324},
            id="D19-ups",
        ),
        pytest.param({"grid.short_circuit": 5e-324}, id="D19-grid"),
        pytest.param({"mitigation.clock_lock": 2.2e-309}, id="D22"),
        pytest.param({"cluster.psu.capacity": 5e-324}, id="D23"),
        pytest.param(
            {"mitigation.storage": [{"location": "site", "power": 10, "energy": 5, "delay": "1h"}]},
            id="D24",
        ),
    ],
)
def test_vanishing_and_extreme_values_are_refused_or_simulate_physically(overrides):
    scenario = refused_or(load_scenario, REFERENCE, {"simulation.duration": "10min", **overrides})
    if scenario is not None:
        ds = refused_or(simulate, scenario)
        if ds is not None:
            assert_physical(ds, scenario)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        pytest.param(load_scenario, (REFERENCE, {"[": 1}), id="D1-bracket-key"),
        pytest.param(load_scenario, (REFERENCE, {"cluster.a(b": 1}), id="D1-bracket-in-key"),
        pytest.param(load_scenario, (REFERENCE, {"gpu.tdp": deep(1000)}), id="D2"),
        pytest.param(load_scenario, ("x" * 300,), id="D21-file"),
        pytest.param(load_scenario, (REFERENCE, {"site.weather": "x" * 300}), id="D21-weather"),
        pytest.param(rules.load_rules, ("x" * 300,), id="D21-rules"),
        pytest.param(read_weather, ("x" * 300,), id="D21-read"),
        pytest.param(loads_scenario, ("[site]\nweather = []\n",), id="D14"),
        pytest.param(
            load_scenario,
            (REFERENCE, {"workload.phases": [{"name": "a\nb", "kind": "compute", "share": 2}]}),
            id="D18",
        ),
        pytest.param(load_scenario, (REFERENCE, {"site.weather": "a\nb.epw"}), id="D20"),
    ],
)
def test_odd_keys_names_and_values_are_refused_in_one_line_naming_them(call, args):
    with pytest.raises(PowerModelError) as refused:
        call(*args)
    assert_one_line(str(refused.value))
    if args[-1] == {"cluster.a(b": 1}:
        assert "a(b" in str(refused.value)


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param(TMY3_LINES, id="D5-CR-endings"),
        pytest.param(["0\r" + TMY3_LINES[0][6:], *TMY3_LINES[1:]], id="D5-CR-in-the-site-line"),
    ],
)
def test_a_tmy3_site_line_reads_whatever_ends_it(folder, lines):
    ending = "\r" if lines is TMY3_LINES else "\n"
    refused_or(site_of, write(folder, ending.join(lines), ".csv"))


@pytest.mark.parametrize(
    ("field", "value"),
    [pytest.param(24, "1e9", id="D7-wet-bulb-above-dry"), pytest.param(22, "", id="D7-empty")],
)
def test_garbled_design_conditions_give_no_design_day_and_a_physical_run(folder, field, value):
    lines = list(EPW_LINES)
    fields = lines[1].split(",")
    fields[field] = value
    lines[1] = ",".join(fields)
    weather = str(write(folder, "\n".join(lines), ".epw"))
    scenario = load_scenario(REFERENCE, {"simulation.duration": "10min", "site.weather": weather})
    assert_physical(simulate(scenario), scenario)


def test_empty_unit_brackets_in_a_trace_header_are_refused_in_words(folder):  # D25
    text = "time,P []\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,1\n"
    with pytest.raises(PowerModelError, match="unit"):
        read_trace(write(folder, text, ".csv"))


def test_rule_bands_near_zero_and_huge_demands_are_refused_in_words(folder, profiles):  # D8, D9
    text = 'r = {title = "", source = "", status = "proposal", window = "10s", '
    text += 'statistic = "range", band = [1e-20, 1.0], limit = 1.0}\n'
    assert refused_or(rules.load_rules, str(write(folder, text, ".toml"))) is None
    refused_or(rules.check, profiles[0], rules.load_rules("nprr1191"), 2**64)


def test_a_long_dotted_key_is_refused_in_bounded_memory(folder):  # D10: 60 kB took 3.7 GB
    path = write(folder, "a." * 30_000 + "b = 1\n", ".toml")
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000,) * 2)\n"
        "from powermodel import load_scenario, PowerModelError\n"
        f"try: load_scenario({str(path)!r})\n"
        "except PowerModelError: print('refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "refused", done.stderr[-300:]


def test_a_long_dotted_key_in_an_inline_table_is_refused_at_once():  # D10b
    # 240 kB took 8.5 s, 480 kB 70 s: an upload under the dashboard's 5 MB limit took hours
    with bounded(3), pytest.raises(PowerModelError, match="dotted parts"):
        loads_scenario("x = {" + "a." * 120_000 + "b = 1}\n")


def test_no_command_is_a_usage_error(workdir):  # D11
    code, _, err = run_cli([], workdir)
    assert code == 2 and "usage:" in err and "Traceback" not in err


def _reference_state(board: Dashboard) -> dict:
    values = controls.shown_values(board.base({"preset": REFERENCE}))
    state, message = board.assemble({"preset": REFERENCE}, *controls.page_values(values))
    assert message == ""
    return state


def test_export_of_a_list_as_format_answers(board):  # D12
    callback(board.export, _reference_state(board), [], "10s")


def test_a_number_box_at_1e308_minutes_is_refused_in_words(board):  # D13
    values = controls.shown_values(board.base({"preset": REFERENCE}))
    values["checkpoint.interval"] = 1e308
    state, message = callback(board.assemble, {"preset": REFERENCE}, *controls.page_values(values))
    assert message.startswith("not applied: ")
    assert_one_line(message)


def test_an_upload_label_with_a_newline_stays_one_line(board):  # D26
    with pytest.raises(PowerModelError) as refused:
        board.scenario({"base": {"upload": "a\nb", "toml": "0"}, "changes": {}})
    assert_one_line(str(refused.value))


def test_a_doubled_slash_in_a_download_path_is_no_download(app):  # D27
    # a key ending in "/" made /download/0//%0A: werkzeug redirected it (HTTP 308) to a
    # path with one slash, a download the page never offered
    assert app.server.test_client().get("/download/0%2F/%0A").status_code == 404
