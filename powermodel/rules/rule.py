"""What a rule is and where rules come from: the :class:`Rule` schema (a measurement chain
stated as data), the shipped rules (``presets/rules.toml``) and rule files read by name, and the
chain in words.

The first stage of a check: the rules read here are measured by
:mod:`powermodel.rules.measurement`, in blocks or streamed by :mod:`powermodel.rules.streamed`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from powermodel import variables
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.iotools import is_file, read_text
from powermodel.models import signal
from powermodel.scenario import Scenario, format_duration, parse_toml, shorten
from powermodel.scenario.base import DAY, Duration, Section, packaged
from powermodel.scenario.root import explain

Statistic = Literal["range", "net_change", "rate", "average_slope"]
PER_MINUTE = ("rate", "average_slope")  # statistics read per minute; the others per window


class RuleError(PowerModelError):
    """A rule that cannot be read or a verdict the data cannot support."""


class Rule(Section):
    """One utility rule, stated as a measurement chain."""

    name: str = Field(max_length=200)
    title: str = Field(max_length=1000)
    source: str = Field(max_length=2000)
    status: Literal["proposal", "in force", "quoted"]
    signal: Literal["grid_power", "grid_reactive_power", "facility_power", "it_power"] = (
        "grid_power"
    )
    averaging: Duration | None = Field(None, gt=0, le=DAY, description="Rolling mean first. [s]")
    # bands from a three-hour period (0.1 mHz) to 10 kHz: beyond, no meter measures and the
    # filters' state cannot be solved
    band: tuple[float, float] | None = Field(None, description="Filter band. [Hz]")
    window: Duration = Field(gt=0, le=DAY, description="Window of the statistic. [s]")
    statistic: Statistic
    direction: Literal["up", "down", "both"] = "both"
    limit: float | None = Field(None, gt=0, description="Limit in the statistic's unit.")
    limit_fraction: float | None = Field(None, gt=0, description="Limit over the reference.")
    reference: Literal["registered_demand"] | None = None
    choices: str = Field("", max_length=2000)
    groups: list[str] = Field([], max_length=100)

    @field_validator("band")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not 1e-4 <= value[0] < value[1] <= 1e4:
            raise ValueError(
                f"band must be two increasing frequencies within 0.0001-10000 Hz, got {value}"
            )
        return value

    @model_validator(mode="after")
    def _limited(self) -> Rule:
        if self.limit is None and self.limit_fraction is None:
            raise ValueError("a rule needs limit, limit_fraction or both")
        if self.limit_fraction is not None and self.reference is None:
            raise ValueError("limit_fraction needs a reference (registered_demand)")
        return self

    @property
    def per_minute(self) -> bool:
        return self.statistic in PER_MINUTE

    @property
    def unit(self) -> str:
        """The limit's unit: the signal's own (MW, or Mvar for reactive power), per minute
        for a rate."""
        return variables.attrs(self.signal)["units"] + ("/min" if self.per_minute else "")

    def threshold(self, reference: float | None) -> float:
        """The limit that applies: the lesser of the absolute and the relative one."""
        limits = [] if self.limit is None else [self.limit]
        if self.limit_fraction is not None:
            try:
                known = reference is not None and math.isfinite(reference) and reference > 0
            except (TypeError, OverflowError):
                known = False
            if not known:
                raise RuleError(
                    f"rule {self.name} refers to the registered demand: set "
                    "grid.registered_demand in the scenario (or --registered-demand for a trace)"
                )
            limits.append(self.limit_fraction * reference)
        return min(limits)


def rule_names() -> list[str]:
    """Names of the shipped rules and of their groups."""
    shipped = _shipped()
    groups = {g for r in shipped.values() for g in r.get("groups", [])}
    return sorted(set(shipped) | groups)


def site_rules(scenario: Scenario | None) -> list[Rule]:
    """The rules of the site's utility, as the scenario names them (``grid.rules``; shipped
    names only: a scenario names no rule file), for a command given no ``--rules``. Without
    them (or without a scenario: a measured trace) the refusal says how to choose: each
    utility and its shipped rules."""
    chosen = None if scenario is None else scenario.grid.rules
    if chosen is None:
        by_utility: dict[str, list[str]] = {}
        for name, table in _shipped().items():
            utility = table["title"].split()[0].rstrip(":")  # "ERCOT NPRR1191: ..."
            by_utility.setdefault(utility, []).append(name)
        offered = "; ".join(f"{who}: {', '.join(names)}" for who, names in by_utility.items())
        raise RuleError(
            "no rules to measure by: give --rules with your utility's (" + offered + "; or a "
            ".toml rule file)" + ("" if scenario is None else ", or set grid.rules in the scenario")
        )
    unknown = sorted(set(chosen) - set(rule_names()))
    if unknown:
        raise RuleError(
            f"grid.rules names {', '.join(map(repr, unknown))}, not a shipped rule or group: "
            f"choose from {', '.join(rule_names())} (a rule file is given with --rules)"
        )
    return load_rules(chosen)


def load_rules(names: str | list[str]) -> list[Rule]:
    """Rules by name, group name (``nprr1191``) or TOML file path, comma-separated or listed.
    A shipped rule's or group's name is always the shipped rule, whatever files lie in the
    working folder (as a preset's name is the preset): names checked by :func:`shipped` read
    no file."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise RuleError("no rules given: name one or more of " + ", ".join(rule_names()))
    shipped = _shipped()
    out: dict[str, Rule] = {}
    for name in names:
        if name in shipped:
            tables = {name: shipped[name]}
        else:
            tables = {k: v for k, v in shipped.items() if name in v.get("groups", [])}
        if not tables and (name.endswith(".toml") or is_file(name)):
            tables = _read_rule_file(Path(name))
        if not tables:
            raise RuleError(f"unknown rule {name!r}: choose from {', '.join(rule_names())}")
        for key, table in tables.items():
            if "name" in table:
                raise RuleError(
                    f"rule {key}: a rule is named by its table header [{key}]; remove its "
                    "'name' key"
                )
            try:
                out[key] = Rule.model_validate({**table, "name": key})
            except ValidationError as exc:
                raise RuleError(f"rule {key}: {explain(exc, Rule)}") from None
    return list(out.values())


@lru_cache(maxsize=1)
def _shipped() -> dict[str, dict]:
    """The shipped rules' tables, read once (callers copy what they change)."""
    text = packaged("rules.toml").read_text("utf-8")
    return parse_toml(text, "rules.toml")


def shipped(names: object) -> tuple[str, ...]:
    """Rule and group names that arrive from outside (a page, a link), each checked against
    the shipped set (a name is never read as a file) and given once, in the order given.

    Raises
    ------
    RuleError
        Not a list of names, or one that is not shipped.
    """
    known = set(rule_names())
    if not isinstance(names, list | tuple) or len(names) > len(known):
        raise RuleError(f"rules: give up to {len(known)} names of {', '.join(sorted(known))}")
    unknown = [n for n in names if not isinstance(n, str) or n not in known]
    if unknown:
        raise RuleError(
            f"unknown rule {shorten(unknown[0])}: choose from {', '.join(sorted(known))}"
        )
    return tuple(dict.fromkeys(names))


def _read_rule_file(path: Path) -> dict[str, dict]:
    text = read_text(path, "rule file", RuleError)
    try:
        tables = parse_toml(text, str(path))
    except ScenarioError as exc:
        raise RuleError(str(exc)) from None
    bad = [k for k, v in tables.items() if not isinstance(v, dict)]
    if bad:
        raise RuleError(f"{path}: each rule is a table [name]; {', '.join(bad)} is not")
    return tables


def describe(rule: Rule) -> str:
    """The measurement chain in words."""
    parts = [f"{rule.signal}"]
    if rule.averaging:
        parts.append(f"averaged over {format_duration(rule.averaging)}")
    if rule.band:
        parts.append(
            f"filtered to {rule.band[0]:g}-{rule.band[1]:g} Hz ({signal.step_advice(rule.band[1])})"
        )
    parts.append(
        f"{rule.statistic.replace('_', ' ')} ({rule.direction}) in {format_duration(rule.window)}"
    )
    limit = [f"{rule.limit:g} {rule.unit}"] if rule.limit else []
    if rule.limit_fraction:
        limit.append(f"{rule.limit_fraction:.1%} of {rule.reference}")
    return ", ".join(parts) + " <= " + " or ".join(limit) + (" (lesser)" if len(limit) > 1 else "")
