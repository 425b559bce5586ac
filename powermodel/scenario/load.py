"""Loading a scenario: a preset by name, a TOML file and the chain of files it ``extends``,
TOML text from an upload (data only), a Scenario again; each with dotted overrides.

Stage: the entry point of the scenario package (:func:`load_scenario`, :func:`loads_scenario`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from powermodel.errors import ScenarioError
from powermodel.iotools import exists, is_file, read_text
from powermodel.iotools.weather import SHIPPED
from powermodel.scenario.base import did_you_mean, packaged, shorten
from powermodel.scenario.catalogues import names_a_file, presets, swap_node, weather_brings_site
from powermodel.scenario.root import Scenario, build_scenario
from powermodel.scenario.tables import merge_tables, parse_toml

MAX_EXTENDS = 16  # files in a chain of `extends`


def load_scenario(
    name_or_path: str | Path | Scenario,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
) -> Scenario:
    """Load a scenario from a preset name, a TOML file or a Scenario, with dotted overrides.

    Parameters
    ----------
    name_or_path
        A preset name (see :func:`presets`), a path to a TOML file, or a Scenario.
    overrides
        ``{"cluster.n_gpus": 100000}`` or ``["cluster.n_gpus=100000", ...]``; values given as
        strings are read as TOML values when they parse as one (``100000``, ``true``, ``"54d"``).

    Raises
    ------
    ScenarioError
        With one line naming the problem and the fix.
    """
    if isinstance(name_or_path, Scenario):
        raw = name_or_path.to_dict()
    else:
        raw = _load_raw(name_or_path, seen=())
    return build_scenario(raw, overrides)


def loads_scenario(
    text: str,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    label: str = "scenario",
) -> Scenario:
    """Load a scenario from TOML text (an upload), as :func:`load_scenario` does from a file.

    Only data is read: the text is parsed as TOML, never evaluated, and ``extends`` may name a
    preset but not a file, so an uploaded scenario cannot make the server read its files.
    """
    raw = parse_toml(text, label)
    site = raw.get("site")
    weather = site.get("weather") if isinstance(site, dict) else None
    if weather is not None and (not isinstance(weather, str) or names_a_file(weather)):
        raise ScenarioError(
            f"{label}: site.weather {shorten(weather)}: a scenario read from text may name a "
            f"shipped weather file ({', '.join(SHIPPED)}) or synthetic, not a path"
        )
    base_name = raw.pop("extends", None)
    if base_name is not None:
        if not isinstance(base_name, str) or base_name not in presets():
            raise ScenarioError(
                f"{label}: 'extends' must name a preset ({', '.join(presets())}), got "
                f"{shorten(base_name)}"
            )
        raw = _extended_by(_load_raw(base_name, seen=(base_name,)), raw)
    return build_scenario(raw, overrides)


def _load_raw(
    name_or_path: str | Path, seen: tuple[str, ...], folder: Path | None = None
) -> dict[str, Any]:
    """The raw tables of a preset or file with what it ``extends`` merged under it. A relative
    path in ``extends`` or ``site.weather`` is relative to the file that names it, as in an
    include (an override's weather path, from the API or the CLI, to the working folder)."""
    text, label, where = _read_source(name_or_path, folder)
    raw = parse_toml(text, label)
    site = raw.get("site")
    if isinstance(site, dict) and "weather" in site:
        weather = site["weather"]
        if where is not None and isinstance(weather, str) and names_a_file(weather):
            site["weather"] = str(where / Path(weather).expanduser())  # as `extends` is
        weather_brings_site(site["weather"], site)
    base_name = raw.pop("extends", None)
    if base_name is None:
        return raw
    if not isinstance(base_name, str):
        raise ScenarioError(
            f"{label}: 'extends' must be a preset name or a file, got {shorten(base_name)}"
        )
    key = str((where / base_name).resolve()) if _is_file_name(base_name, where) else base_name
    if key in seen:
        raise ScenarioError(f"{label}: 'extends' loops back to {base_name!r}")
    if len(seen) >= MAX_EXTENDS:
        raise ScenarioError(f"{label}: more than {MAX_EXTENDS} files deep in 'extends'")
    return _extended_by(_load_raw(base_name, seen + (key,), where), raw)


def _extended_by(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """A file's tables over those of the file it extends (:func:`merge_tables`); where it chooses
    another GPU, the node keys below it were that GPU's (:func:`swap_node`)."""
    merged = merge_tables(base, top)
    swap_node(merged, base, top)
    return merged


def _is_file_name(name: str | Path, folder: Path | None) -> bool:
    """Whether ``name`` is a TOML file (else a preset). A preset's name is always the preset,
    whatever files lie in the working folder."""
    if isinstance(name, str) and name in presets():
        return False
    path = Path(folder or ".") / name
    return Path(name).suffix == ".toml" or len(Path(name).parts) > 1 or exists(path)


def _read_source(
    name_or_path: str | Path, folder: Path | None = None
) -> tuple[str, str, Path | None]:
    """Text, label and folder (None for a preset) of a preset name or a TOML file."""
    if _is_file_name(name_or_path, folder):
        path = Path(folder or ".") / name_or_path
        if not is_file(path) and not exists(path):
            raise ScenarioError(f"scenario file {str(path)!r} does not exist")
        return read_text(path, "scenario file", ScenarioError), str(path), path.resolve().parent
    name = str(name_or_path)
    if name not in presets():
        raise ScenarioError(
            f"unknown preset {name!r}{did_you_mean(name, presets())}; "
            f"presets: {', '.join(presets())} (or give a path to a .toml file)"
        )
    return packaged(f"{name}.toml").read_text(), name, None
