"""The scenario-key reference (issue 11): generated from the schema, so it covers every key."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from powermodel import cli
from powermodel.errors import ScenarioError
from powermodel.reference import keys, text
from powermodel.scenario import Scenario


def _leaves(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every value key of the schema, walked apart from the reference's own walk."""
    out = []
    for name, field in model.model_fields.items():
        tables = [
            a
            for a in (field.annotation, *getattr(field.annotation, "__args__", ()))
            for a in (a, *getattr(a, "__args__", ()))
            if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if tables:
            listed = "list" in str(field.annotation)
            # a tagged union (cooling's plant types): each member's keys, a shared key once
            for table in dict.fromkeys(tables):
                inner = _leaves(table, f"{prefix}{name}.{'N.' if listed else ''}")
                out += [k for k in inner if k not in out]
        else:
            out.append(f"{prefix}{name}")
    return out


def test_the_reference_covers_every_key_of_the_schema_once():
    listed = [k.key for k in keys()]
    assert sorted(listed) == sorted(_leaves(Scenario)) and len(set(listed)) == len(listed)
    assert len(listed) > 100  # 126 keys when the issue was filed; the schema has grown since


def test_each_key_says_its_type_unit_default_and_bounds():
    by_key = {k.key: k for k in keys()}
    stall = by_key["checkpoint.async_blocking_time"]  # schema: Field(1.0, ge=1e-3, le=3600)
    assert (stall.kind, stall.default, stall.bounds) == ("duration", "1s", ">= 1ms, <= 1h")
    fans = by_key["cluster.fans.power"]
    assert (fans.kind, fans.unit, fans.default) == ("number", "W/node", "required")
    assert fans.bounds == ">= 0, <= 100000" and "[" not in fans.description
    assert by_key["checkpoint.mode"].kind == "one of blocking, async"
    assert by_key["workload.phases.N.share"].unit == "1"


def test_each_plant_types_keys_are_listed_once_saying_which_types_take_them():
    by_key = {k.key: k for k in keys("cooling")}
    assert by_key["cooling.type"].kind == "one of outside-air-evaporative, liquid, chilled-water"
    assert not by_key["cooling.tau"].description.startswith("(")  # every plant has it
    assert by_key["cooling.supply_max"].description.startswith("(outside-air-evaporative only)")
    assert by_key["cooling.supply_max"].default == "required"  # by that plant
    loop = by_key["cooling.loop_delta_t"]
    assert loop.description == "(liquid or chilled-water only) Coolant loop range."
    assert (loop.unit, loop.bounds) == ("K", ">= 1, <= 50")
    assert by_key["cooling.chw_supply"].description.startswith("(chilled-water only)")


def test_powermodel_keys_prints_them_and_refuses_an_unknown_prefix(capsys):
    assert cli.main(["keys", "cluster.fans"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["key", "type", "unit", "default", "bounds", "source", "description"]
    assert len(out) == 5 and out[1].startswith("cluster.fans.power")
    assert text(keys("cluster.fans")).splitlines() == out
    with pytest.raises(ScenarioError, match="no scenario key starts with 'nope'"):
        keys("nope")
    assert cli.main(["keys", "nope"]) == 1
    assert "every key starts with one of campus, checkpoint, cluster" in capsys.readouterr().err


# Defaults that are settings of the run, not claims about the world: they need no source.
SETTINGS = {"simulation.seed", "reliability.rate_scale", "cooling.dt"}


def test_every_physical_default_says_where_it_comes_from():
    """A number or duration the schema fills in when a scenario is silent is a claim a planner
    may have to defend: it cites a source or says it is assumed ([A])."""
    silent = [
        k.key
        for k in keys()
        if k.key not in SETTINGS
        and k.kind in ("number", "integer", "duration", "duration or one of young-daly")
        and k.default not in ("", "required", "(computed)")
        and not k.source
    ]
    assert not silent, f"defaults with no source or [A]: {silent}"
    by_key = {k.key: k for k in keys()}
    assert by_key["checkpoint.interval"].source == "P, young; daly"
    assert by_key["mitigation.storage.N.efficiency"].source == "A"
    # the tag leaves the description; the unit stays in its column
    assert "[" not in by_key["site.synthetic.mean"].description
    assert by_key["site.synthetic.mean"].unit == "°C"
