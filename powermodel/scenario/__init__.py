"""Scenarios: a validated schema, TOML files, presets loaded by name, and dotted overrides.

A scenario is built in layers, each overriding the one before:

1. the preset named by ``extends`` (recursively), if any;
2. the file (or the named preset) itself;
3. dotted overrides (``cluster.n_gpus=131072``) from the API or ``--set`` on the CLI;
4. the ``[gpu]`` table is filled from the GPU catalogue entry named by ``cluster.gpu``; keys given
   explicitly under ``[gpu]`` win over the catalogue.

Durations are written as strings with a unit (``"54d"``, ``"1s"``, ``"100ms"``, ``"10min"``) and
held as seconds.

The package, in the order a scenario is made:

- :mod:`~powermodel.scenario.base`: the Section base, durations, labels and bounds;
- :mod:`~powermodel.scenario.tables`: raw TOML tables, dotted keys, merging, overrides;
- :mod:`~powermodel.scenario.keys`: the schema's fields at a key, errors said in keys;
- :mod:`~powermodel.scenario.fitting`: the job a hall holds and its layout's step (pure arithmetic);
- :mod:`~powermodel.scenario.job`, :mod:`~powermodel.scenario.facility`,
  :mod:`~powermodel.scenario.campus`: the schema's tables;
- :mod:`~powermodel.scenario.catalogues`: the catalogues that fill tables by name;
- :mod:`~powermodel.scenario.root`: :class:`Scenario` and its cross-checks;
- :mod:`~powermodel.scenario.load`: presets, files, uploads and overrides loaded.
"""

from powermodel.durations import format_duration, parse_duration
from powermodel.scenario.base import shorten
from powermodel.scenario.catalogues import catalogue, gpu_catalogue, names_a_file, presets
from powermodel.scenario.job import is_timezone
from powermodel.scenario.load import load_scenario, loads_scenario
from powermodel.scenario.root import Scenario, is_duration
from powermodel.scenario.tables import parse_overrides, parse_toml

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "catalogue",
    "format_duration",
    "gpu_catalogue",
    "is_duration",
    "is_timezone",
    "load_scenario",
    "loads_scenario",
    "names_a_file",
    "parse_duration",
    "parse_overrides",
    "parse_toml",
    "presets",
    "Scenario",
    "shorten",
]
