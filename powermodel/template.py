"""A site's own scenario to start from: ``powermodel init [PRESET] -o my-site.toml``.

The file extends a preset and sets the keys a site engineer changes first (where the site is,
its weather, GPUs, plant, connection and the run's length), each at the preset's value with
its description, unit, bounds and the choices a catalogue offers, so that the file loads as the
preset does until it is edited; the keys changed less often are written commented out.
"""

from __future__ import annotations

import textwrap

import tomli_w

from powermodel.engine.facility import design_it_power
from powermodel.iotools.weather import SHIPPED
from powermodel.reference import Key, keys
from powermodel.scenario import load_scenario

__all__ = ["FIRST_KEYS", "site_template"]

# The keys a site engineer changes first, by table, and whether each is set (True) or written
# commented out (False): set keys hold the preset's value, so the file is the preset until edited.
FIRST_KEYS: dict[str, tuple[tuple[str, bool], ...]] = {
    "simulation": (("duration", True), ("dt", False), ("seed", False)),
    "site": (("name", True), ("timezone", True), ("weather", True)),
    "cluster": (("gpu", True), ("n_gpus", True)),
    "cooling": (("plant", True),),
    "electrical": (("chain", False),),
    "grid": (
        ("short_circuit", True),
        ("x_r", True),
        ("registered_demand", False),
        ("rules", False),
    ),
    "mitigation": (("power_cap", False),),
}


def site_template(preset: str, name: str = "my-site") -> str:
    """The TOML text of a site scenario named ``name`` extending ``preset``: :data:`FIRST_KEYS`
    at the preset's values, each with its reference line (:func:`powermodel.reference.keys`);
    a key the preset leaves unset is written commented out with an example value.

    A campus preset's GPUs are its workloads' (``[[campus.workloads]]``): its template says so
    in place of ``cluster.n_gpus``.

    Raises
    ------
    ScenarioError
        ``preset`` is not a preset.
    """
    scenario = load_scenario(preset)  # refuses a name that is not a preset, naming them
    values = scenario.to_dict()
    described = {k.key: k for k in keys()}
    lines = [
        f"# A site of your own, starting from the preset {preset!r} "
        f"({scenario.description or 'no description'}).",
        "# Every key below is the preset's value: edit what differs at your site; a key left",
        "# out (or commented out) stays the preset's. All keys: `powermodel keys [PREFIX]`;",
        "# check the file with `powermodel validate FILE`, run it with `powermodel run FILE`.",
        "",
        f"extends = {_toml(preset)}",
        f"name = {_toml(name)}",
        f"description = {_toml(f'{name}, from {preset}')}",
    ]
    examples = {
        "grid.registered_demand": round(design_it_power(scenario) / 1e6 * 1.2, 1),
        "grid.rules": ["ercot-5s", "nprr1191"],
        "mitigation.power_cap": round(0.9 * scenario.gpu.tdp),
    }
    for table, entries in FIRST_KEYS.items():
        lines += ["", f"[{table}]"]
        for field, setting in entries:
            key = f"{table}.{field}"
            if key == "cluster.n_gpus" and scenario.campus is not None:
                lines.append(
                    "# n_gpus: a campus's GPUs are its workloads' ([[campus.workloads]] n_gpus, "
                    "in the preset): extend it with your own workloads"
                )
                continue
            value = values.get(table, {}).get(field)
            lines += [f"# {line}" for line in _about(described[key])]
            if value is None:
                example = examples[key]
                lines.append(f"# {field} = {_toml(example)}  # an example: unset in the preset")
            else:
                lines.append(f"{'' if setting else '# '}{field} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _about(key: Key) -> list[str]:
    """A key's reference as comment lines: its description, unit, bounds and default."""
    parts = [key.description.strip()]
    if key.unit and key.unit != "1":
        parts.append(f"Unit: {key.unit}.")
    if key.bounds:
        parts.append(f"Bounds: {key.bounds}.")
    if key.key == "site.weather":
        parts.append(
            f"Shipped: {', '.join(SHIPPED)}, or synthetic, or the path of an EPW or TMY3 file "
            "(relative to this file)."
        )
    text = " ".join(p for p in parts if p)
    return textwrap.wrap(text, 96) or [""]


def _toml(value: object) -> str:
    """A value as TOML writes it on the right of ``=``, on one line (a list inline)."""
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return tomli_w.dumps({"v": value}).strip().removeprefix("v = ")
