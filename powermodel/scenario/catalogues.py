"""The catalogues that fill a scenario's tables by name (GPUs and their nodes, cooling plants,
electrical chains, disturbance sequences), and the raw tables prepared for validation: the
overrides set, a weather file's site, the entries and the GPU's node filled (:func:`prepare`).

Stage: loading, between the raw tables (:mod:`~powermodel.scenario.tables`) and the schema.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from powermodel.errors import DataFileError, ScenarioError
from powermodel.iotools.weather import SHIPPED, site_of
from powermodel.scenario.base import did_you_mean, packaged, shorten
from powermodel.scenario.facility import CURVES_FILE, REQUIREMENTS_FILE, plant_type
from powermodel.scenario.tables import (
    drop_dotted,
    flat_keys,
    get_dotted,
    merge_tables,
    parse_overrides,
    parse_toml,
    set_dotted,
)


class Catalogue(NamedTuple):
    """A catalogue that fills a scenario section from a named entry."""

    table: str
    """Table of the key naming the entry (``cluster`` for ``cluster.gpu``)."""
    key: str
    """Key naming the entry in that table."""
    file: str
    """Catalogue file in ``presets/``, without ``.toml``."""
    what: str
    """What an entry is, in messages."""
    field: str
    """The section's own field holding the entry's name."""


CATALOGUES = {
    "gpu": Catalogue("cluster", "gpu", "gpus", "GPU", "name"),
    "cooling": Catalogue("cooling", "plant", "plants", "cooling plant", "plant"),
    "electrical": Catalogue("electrical", "chain", "electrical", "electrical chain", "chain"),
    "disturbance": Catalogue(
        "disturbance", "sequence", "disturbances", "disturbance sequence", "sequence"
    ),
}


def presets() -> list[str]:
    """Names of the scenario presets shipped in the package."""
    catalogues = {f"{entry.file}.toml" for entry in CATALOGUES.values()}
    catalogues |= {"rules.toml", CURVES_FILE, REQUIREMENTS_FILE}
    return sorted(
        f.name.removesuffix(".toml")
        for f in packaged("").iterdir()
        if f.name.endswith(".toml") and f.name not in catalogues
    )


def catalogue(section: str) -> dict[str, dict[str, Any]]:
    """A catalogue (``"gpu"``: GPUs, ``"cooling"``: cooling plants): name -> raw table (a copy:
    the caller may change it)."""
    return copy.deepcopy(_catalogue(section))


@lru_cache(maxsize=len(CATALOGUES))
def _catalogue(section: str) -> dict[str, dict[str, Any]]:
    """A catalogue parsed once (every scenario loaded fills three sections from them: parsing
    was half of loading a scenario from another); :func:`catalogue` hands out copies."""
    entry = CATALOGUES[section]
    raw = parse_toml(packaged(f"{entry.file}.toml").read_text(), f"{entry.file}.toml")
    return {
        name: {entry.field: name, **{k: v for k, v in table.items() if k != NODE_TABLE}}
        for name, table in raw.items()
    }


def gpu_catalogue() -> dict[str, dict[str, Any]]:
    """The GPU catalogue: name -> raw table."""
    return catalogue("gpu")


# A GPU's node in its catalogue entry (presets/gpus.toml, [NAME.node]): these cluster keys,
# taken unless the user sets them where the GPU is chosen, or after
NODE_TABLE = "node"


NODE_KEYS = ("gpus_per_node", "rest_power_active", "rest_power_idle", "fans.power", "psu.capacity")


# where the chain of files and overrides chose another GPU than the one below: a marker on the
# raw tables, popped before they are validated
_SWAPPED = "\x00gpu swapped"


@lru_cache(maxsize=1)
def gpu_nodes() -> dict[str, dict[str, Any]]:
    """Each catalogue GPU's node: name -> {dotted cluster key: value, ``"source"``: text}."""
    raw = parse_toml(packaged("gpus.toml").read_text(), "gpus.toml")
    return {name: dict(flat_keys(table.get(NODE_TABLE, {}))) for name, table in raw.items()}


def swap_node(merged: dict[str, Any], base: Any, top: Mapping[str, Any]) -> None:
    """Where ``top`` (a file's tables over the file it extends, or the overrides as dotted
    keys) chooses another GPU than ``base``, the node keys ``base`` set were for the GPU it
    named: dropped from ``merged``, for the new GPU's catalogue node to fill, unless ``top``
    sets them itself."""
    flat = flat_keys(dict(top))  # the dotted keys top sets, its tables walked
    chosen = flat.get("cluster.gpu")
    if not isinstance(chosen, str) or chosen == get_dotted(base, "cluster.gpu"):
        return
    for key in NODE_KEYS:
        if f"cluster.{key}" not in flat:
            drop_dotted(merged.get("cluster"), key)
    swap = {"gpu": chosen}
    # a plant that cannot cool the new GPU (a liquid-cooled one in an air hall, or the other
    # way) was the old GPU's too: the new GPU's node brings a plant of its kind
    plant, new = get_dotted(merged, "cooling.plant"), gpu_nodes().get(chosen, {}).get("plant")
    cooling = merged.get("cooling")
    if "cooling.plant" not in flat and isinstance(new, str) and isinstance(cooling, dict):
        if _plant_kind(merged) not in (None, _plant_kind({"cooling": {"plant": new}})):
            for key in list(cooling):
                if f"cooling.{key}" not in flat:
                    del cooling[key]
            cooling["plant"] = new
            swap["plant"] = f"{plant}"
    merged[_SWAPPED] = swap


def _plant_kind(raw: Any) -> str | None:
    """Whether a scenario's plant cools liquid-cooled GPUs (``"liquid"``) or air-cooled ones
    (``"air"``); None where the plant is not named or not known."""
    kind = get_dotted(raw, "cooling.type")
    if kind is None:
        plant = get_dotted(raw, "cooling.plant")
        kind = _catalogue("cooling").get(plant, {}).get("type") if isinstance(plant, str) else None
    return None if not isinstance(kind, str) else "liquid" if kind == "liquid" else "air"


def _fill_node(raw: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The chosen GPU's catalogue node where the scenario leaves its keys unset; the notes
    naming what it took, and the warnings naming what a GPU swap kept against it."""
    swapped = raw.pop(_SWAPPED, None)
    cluster, name = raw.get("cluster"), get_dotted(raw, "cluster.gpu")
    node = gpu_nodes().get(name) if isinstance(name, str) else None
    if not isinstance(cluster, dict) or not node:
        return [], []
    taken, kept, notes, warnings = [], [], [], []
    if swapped is not None:
        cools = _catalogue("gpu")[name].get("cooling")
        if "plant" in swapped:
            notes.append(
                f"cooling.plant = {get_dotted(raw, 'cooling.plant')!r}: the {cools}-cooled "
                f"{name}'s, from the GPU catalogue ({swapped['plant']!r} cannot cool it)"
            )
        elif _plant_kind(raw) not in (None, cools):
            warnings.append(
                f"cluster.gpu = {name!r} is {cools}-cooled, and cooling.plant "
                f"{shorten(get_dotted(raw, 'cooling.plant'))} is not: give a plant of its kind "
                f"(e.g. cooling.plant = {node.get('plant')!r}), or leave cooling.plant out to "
                "take it"
            )
    for key in NODE_KEYS:
        if key not in node:
            continue
        value = get_dotted(cluster, key)
        parent = get_dotted(cluster, key.rpartition(".")[0]) if "." in key else cluster
        if value is None and (isinstance(parent, dict) or parent is None):
            set_dotted(raw, f"cluster.{key}", node[key])
            taken.append(f"cluster.{key} = {node[key]:,g}")
        elif swapped is not None and value != node[key]:
            kept.append(f"cluster.{key} = {shorten(value)} (the {name}'s node: {node[key]:,g})")
    if taken:
        notes.insert(
            0, f"cluster.gpu = {name!r} brings its node from the GPU catalogue: {', '.join(taken)}"
        )
    if kept:
        warnings.insert(
            0,
            f"cluster.gpu = {name!r} keeps node settings given for another GPU or by you: "
            f"{'; '.join(kept)}: set them to the {name}'s node, or leave them out to take it",
        )
    return notes, warnings


def names_a_file(weather: str) -> bool:
    """Whether ``site.weather`` names a file, not a shipped weather file or synthetic (in any
    case, as the weather reader takes them: ``Sterling`` is ``sterling``)."""
    return weather.strip().lower() not in {*SHIPPED, "synthetic"}


def weather_brings_site(weather: Any, site: dict[str, Any]) -> None:
    """A weather file is a place: where a layer of the scenario names one, the site's name and
    time zone come with it, unless the same layer sets them (``site`` is that layer's table)."""
    if not isinstance(weather, str) or weather == "synthetic":
        return  # validation names a weather that is not text
    try:
        name, zone = site_of(weather)
    except DataFileError as exc:
        raise ScenarioError(f"site.weather: {exc}") from None
    site.setdefault("name", name)
    if zone is None and "timezone" not in site:
        raise ScenarioError(
            f"site.weather: {shorten(weather)} keeps standard time a fraction of an hour from "
            "UTC that no zone without daylight saving keeps: set site.timezone beside it (an "
            "IANA name, e.g. America/St_Johns)"
        )
    site.setdefault("timezone", zone)


def _fill_from_catalogue(raw: dict[str, Any], section: str, overrides: dict[str, Any]) -> None:
    """Fill a section from the catalogue entry it names; keys given explicitly win.

    When the overrides choose another entry (``cluster.gpu=B200``), the section's old keys were
    written for the old entry: only the keys the overrides set are kept over the new entry.
    """
    entry = CATALOGUES[section]
    table, what = entry.table, entry.what
    selector = f"{table}.{entry.key}"
    name = raw.get(table, {}).get(entry.key) if isinstance(raw.get(table), dict) else None
    if not isinstance(name, str):
        return  # validation reports the missing or mistyped selector
    entries = _catalogue(section)  # read only: the chosen entry is copied below
    if name not in entries:
        raise ScenarioError(
            f"{selector}: unknown {what} {name!r}{did_you_mean(name, entries)}; "
            f"the catalogue has {', '.join(entries)}"
        )
    explicit = raw.get(section, {})
    if not isinstance(explicit, dict):
        raise ScenarioError(f"{section} must be a table")
    if selector in overrides:
        prefix = f"{section}."
        explicit = {k: v for k, v in explicit.items() if f"{prefix}{k}" in overrides}
    chosen = copy.deepcopy(entries[name])
    if "type" in explicit and explicit["type"] != chosen.get("type"):
        # another plant type than the entry's: of the entry, only what that type takes
        plant = plant_type(explicit["type"])
        chosen = {k: v for k, v in chosen.items() if plant and k in plant.model_fields}
    raw[section] = merge_tables(chosen, explicit)


def prepare(
    raw: dict[str, Any], overrides: Mapping[str, Any] | Iterable[str] | None
) -> tuple[list[str], list[str]]:
    """Raw tables made ready for validation, in place: the overrides set (a weather file
    bringing its site), the catalogues' entries and the chosen GPU's node filled. The notes and
    the warnings of what the node filling chose (:func:`_fill_node`)."""
    parsed = parse_overrides(overrides)
    if "site.weather" in parsed:
        # the site as the overrides set it: what they set is kept, the rest the file brings
        brought = {k: parsed[f"site.{k}"] for k in ("name", "timezone") if f"site.{k}" in parsed}
        weather_brings_site(parsed["site.weather"], brought)
        for key, value in brought.items():
            parsed.setdefault(f"site.{key}", value)
    base = copy.deepcopy(raw.get("cluster")) if "cluster.gpu" in flat_keys(parsed) else None
    for key, value in parsed.items():
        set_dotted(raw, key, value)
    if base is not None:
        swap_node(raw, {"cluster": base}, parsed)
    for section in CATALOGUES:
        _fill_from_catalogue(raw, section, parsed)
    return _fill_node(raw)  # after the plant's entry: its type is the plant's
