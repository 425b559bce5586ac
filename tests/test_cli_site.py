"""The command line and the exports as a site engineer first meets them (issue 28): durations
as people write them, the utility's rules by default, the catalogues' choices, aligned lists,
a value not seen said so, CSV at the precision the model resolves with local time beside UTC,
a PyPSA folder that states its version, and a template of the site's first keys.

Expected values come from the simulation itself, pandas' own timezone conversion, the shipped
catalogues and rule file, and PyPSA's reader.
"""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from powermodel import load_scenario, simulate
from powermodel.cli import main
from powermodel.durations import parse_duration
from powermodel.errors import ScenarioError
from powermodel.export import CSV_DIGITS, export_tool, profile_table, significant, write
from powermodel.iotools.weather import SHIPPED
from powermodel.reference import keys
from powermodel.rules import RuleError, rule_names, site_rules
from powermodel.scenario import catalogue, presets
from powermodel.template import FIRST_KEYS, site_template

REFERENCE = "llama3-405b-16k-h100"
HOUR = {"simulation.duration": "1h"}
WEEK = 7 * 86400.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1 week", WEEK),
        ("2 weeks", 2 * WEEK),
        ("1w", WEEK),
        ("3 days", 3 * 86400.0),
        ("1 day", 86400.0),
        ("90 minutes", 5400.0),
        ("1.5 hours", 5400.0),
        ("2 hrs", 7200.0),
        ("10 seconds", 10.0),
        ("100 milliseconds", 0.1),
        ("54D", 54 * 86400.0),
    ],
)
def test_a_duration_reads_in_the_units_people_write(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-15)
    scenario = load_scenario(REFERENCE, {"simulation.duration": text, "simulation.dt": "100ms"})
    assert scenario.simulation.duration == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("text", ["1 fortnight", "7", "1 month", "week"])
def test_a_duration_without_a_known_unit_says_which_units_are(text):
    with pytest.raises(ValueError, match="ms, s, min, h, d, w"):
        parse_duration(text)


def test_check_without_rules_says_how_to_choose_them(capsys):
    assert main(["check", REFERENCE, "--set", "simulation.duration=1h"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err  # one line
    # every shipped rule is offered, by its utility (presets/rules.toml's titles)
    for name in ("ercot-5s", "nprr1191-up", "caiso-10min", "ieso-15s", "lipa-low", "aeso-1min"):
        assert name in err
    assert "ERCOT: ercot-5s, nprr1191-down, nprr1191-up" in err
    assert "set grid.rules in the scenario" in err


def test_check_measures_by_the_scenarios_utility_rules(capsys):
    given = main(["check", REFERENCE, "--set", "simulation.duration=1h", "--rules", "ercot-5s"])
    by_flag = capsys.readouterr().out
    site = ["--set", "simulation.duration=1h", "--set", 'grid.rules=["ercot-5s"]']
    assert main(["check", REFERENCE, *site]) == given
    assert capsys.readouterr().out == by_flag  # the same rule, the same verdict
    # --rules wins over the scenario's
    site += ["--rules", "ieso-1min"]
    main(["check", REFERENCE, *site])
    out = capsys.readouterr().out
    assert "ieso-1min" in out and "ercot-5s" not in out


@pytest.mark.parametrize("name", ["../rules.toml", "/etc/passwd", "Rules.toml", "a b"])
def test_a_scenarios_rules_are_names_never_files(name):
    with pytest.raises(ScenarioError, match="is not a rule name"):
        load_scenario(REFERENCE, {"grid.rules": [name]})


def test_a_scenarios_unknown_rule_is_named_with_the_choices():
    scenario = load_scenario(REFERENCE, {"grid.rules": ["ercot-5s", "pjm-1min"]})
    with pytest.raises(RuleError, match="'pjm-1min', not a shipped rule") as caught:
        site_rules(scenario)
    assert all(name in str(caught.value) for name in rule_names())
    rules = site_rules(load_scenario(REFERENCE, {"grid.rules": ["nprr1191"]}))
    assert [r.name for r in rules] == ["nprr1191-down", "nprr1191-up"]  # the group's two


@pytest.mark.parametrize(
    ("key", "section"),
    [("cooling.plant", "cooling"), ("cluster.gpu", "gpu"), ("electrical.chain", "electrical")],
)
def test_keys_lists_a_catalogues_choices(key, section, capsys):
    (found,) = [k for k in keys(key) if k.key == key]
    names = list(catalogue(section))
    assert len(names) >= 2
    assert found.description.endswith("One of: " + ", ".join(names) + ".")
    assert main(["keys", key]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in names)


def test_presets_align_every_description_after_the_longest_name(capsys):
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = presets()
    column = max(map(len, names)) + 2
    starts = [line for line in lines if not line.startswith(" ")]
    assert [line.split()[0] for line in starts] == names
    for line in lines:  # each description, first line or continued, starts in one column
        assert line[:column].strip() in ("", *names) and line[column] != " "
        assert len(line) <= 100


@pytest.fixture(scope="module")
def day():
    return simulate(load_scenario(REFERENCE, {"simulation.duration": "6h"}))


def test_a_csv_keeps_seven_significant_digits_and_half_the_bytes(day, tmp_path):
    path = write(day, tmp_path / "day.csv")
    table, text = pd.read_csv(path), pd.read_csv(path, dtype=str)
    for name in ("grid_power", "it_power", "grid_voltage", "pue", "gpu_temp", "throughput"):
        units = day[name].attrs["units"]
        written = table[f"{name} [{units}]"].to_numpy()
        # each value to half a unit of its 7th significant digit, and no further digits
        np.testing.assert_allclose(written, day[name].values, rtol=0.5 * 10.0 ** (1 - CSV_DIGITS))
        mantissas = text[f"{name} [{units}]"].str.lstrip("-").str.split("e").str[0]
        digits = mantissas.str.replace(".", "").str.strip("0").str.len()
        assert digits.max() <= CSV_DIGITS
    # every digit a float holds (pyarrow's shortest round trip) is the file's size before
    full = tmp_path / "full.csv"
    pacsv.write_csv(profile_table(day), full)
    assert path.stat().st_size < 0.7 * full.stat().st_size


def test_significant_digits_round_each_value_to_its_nearest_decimal():
    values = np.array(
        [15.881234567, -1.23456789e-4, 1234567890123.0, 0.0, np.nan, -np.inf, 9.99999999]
    )
    out = significant(values, 7)
    assert list(out[:3]) == [15.88123, -1.234568e-4, 1234568000000.0]
    assert out[3] == 0.0 and np.isnan(out[4]) and out[5] == -np.inf and out[6] == 10.0
    rng = np.random.default_rng(28)
    wide = rng.lognormal(0.0, 8.0, 20_000) * rng.choice([-1.0, 1.0], 20_000)
    rounded = significant(wide, 7)
    np.testing.assert_allclose(rounded, wide, rtol=5e-7, atol=0)
    shown = [repr(abs(float(v))).split("e")[0].replace(".", "").strip("0") for v in rounded]
    assert max(map(len, shown)) <= 7


def test_a_csvs_local_time_is_the_sites_through_a_dst_change(tmp_path):
    # 2024-11-03 06:00 UTC is 02:00 EDT turning 01:00 EST in America/New_York: the hour repeats
    scenario = load_scenario(
        REFERENCE,
        {
            "simulation.start": "2024-11-03T04:00:00",
            "simulation.duration": "4h",
            "simulation.dt": "1min",
        },
    )
    ds = simulate(scenario)
    out = tmp_path / "local.csv"
    args = ["run", REFERENCE, "--set", "simulation.start=2024-11-03T04:00:00"]
    args += ["--set", "simulation.duration=4h", "--set", "simulation.dt=1min"]
    assert main([*args, "-o", str(out), "--timezone", "site"]) == 0
    table = pd.read_csv(out)
    column = "local time (America/New_York)"
    assert list(table.columns[:2]) == ["time", column]
    utc = pd.DatetimeIndex(ds["time"].values).tz_localize("UTC")
    expected = utc.tz_convert("America/New_York").strftime("%Y-%m-%d %H:%M:%S")
    assert list(table[column]) == list(expected)
    assert (table[column] == "2024-11-03 01:30:00").sum() == 2  # the repeated hour, twice
    assert table[column].iloc[0] == "2024-11-03 00:00:00"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "x.parquet", "--timezone", "UTC"], "adds a local-time column to a CSV"),
        (["-o", "x.csv", "--timezone", "Mars/Olympus"], "unknown timezone 'Mars/Olympus'"),
        (["--timezone", "UTC"], "give -o FILE.csv"),
    ],
)
def test_a_timezone_is_asked_of_a_csv_in_a_zone_that_exists(
    extra, message, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(["run", REFERENCE, "--set", "simulation.duration=1h", *extra]) == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # refused before any run or file


def test_pypsa_reads_the_folders_version_without_a_warning(day, tmp_path, caplog):
    pypsa = pytest.importorskip("pypsa")
    export_tool(day, "pypsa", tmp_path)
    network = pd.read_csv(tmp_path / "network.csv")
    assert network["pypsa_version"].iloc[0] != "0.0.0"
    with caplog.at_level(logging.WARNING, logger="pypsa"):
        n = pypsa.Network()
        n.import_from_csv_folder(str(tmp_path))
    assert not [r for r in caplog.records if "version" in r.getMessage()], caplog.text
    assert n.name == day.attrs["title"]


@pytest.mark.parametrize("preset", presets())
def test_init_writes_a_template_that_loads_as_its_preset(preset, tmp_path, capsys):
    path = tmp_path / "my-site.toml"
    assert main(["init", preset, "-o", str(path)]) == 0
    text = path.read_text()
    raw = tomllib.loads(text)
    assert raw["extends"] == preset and raw["name"] == "my-site"
    mine, theirs = load_scenario(path).to_dict(), load_scenario(preset).to_dict()
    for top in ("name", "description"):
        mine.pop(top), theirs.pop(top)
    assert mine == theirs  # until edited, the site is the preset
    for table, entries in FIRST_KEYS.items():
        for field, _ in entries:
            if (table, field) == ("cluster", "n_gpus") and theirs.get("campus"):
                assert "a campus's GPUs are its workloads'" in text  # said in its place
            else:
                assert f"{field} =" in text, (table, field)
    assert all(name in text for name in SHIPPED)  # the weather's choices
    assert all(name in text for name in catalogue("cooling"))  # the plants


def test_init_uncommented_example_keys_still_load(tmp_path):
    text = site_template(REFERENCE, "edited")
    text = text.replace("# rules = ", "rules = ").replace("# power_cap = ", "power_cap = ")
    path = tmp_path / "edited.toml"
    path.write_text(text)
    scenario = load_scenario(path)
    assert scenario.grid.rules == ["ercot-5s", "nprr1191"]
    assert scenario.mitigation.power_cap == pytest.approx(0.9 * scenario.gpu.tdp, abs=0.5)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["init", "nope", "-o", "a.toml"], "unknown preset 'nope'"),
        (["init", "-o", "a.txt"], "give -o a.toml"),
        (["init", "-o", "taken.toml"], "exists: init writes a new file"),
    ],
)
def test_init_refuses_what_it_cannot_write(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("taken.toml").write_text("kept")
    assert main(argv) == 1
    assert message in capsys.readouterr().err
    assert Path("taken.toml").read_text() == "kept" and not Path("a.toml").exists()


def test_a_csv_holds_what_pyarrow_reads_back_as_floats(day, tmp_path):
    # a rounded column keeps its type: floats stay float64, states stay labels
    path = write(day, tmp_path / "typed.csv")
    table = pacsv.read_csv(path)
    assert table.schema.field("grid_power [MW]").type == pa.float64()
    assert table.schema.field("job_state").type == pa.string()
