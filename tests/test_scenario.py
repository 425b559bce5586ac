"""Scenario schema, presets, files, overrides and the errors a user gets."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from powermodel import ScenarioError, load_scenario, presets
from powermodel.scenario import format_duration, gpu_catalogue, parse_duration
from powermodel.scenario.job import Gpu

REFERENCE = "llama3-405b-16k-h100"
DATA = Path(__file__).resolve().parent.parent / "data"


def test_reference_preset_loads_with_sourced_numbers():
    sc = load_scenario(REFERENCE)
    # Llama 3 paper §3.3.4 and Table 4: 16,384 H100 at 700 W, 8 GPUs per server, 54-day snapshot.
    assert sc.cluster.n_gpus == 16384
    assert sc.cluster.gpus_per_node == 8
    assert sc.gpu.name == "H100-SXM" and sc.gpu.tdp == 700.0
    assert sc.simulation.duration == 54 * 86400
    assert sc.simulation.dt == 1.0
    assert sc.workload.mfu == 0.41
    assert REFERENCE in presets()


def test_reference_causes_are_table_5_counts():
    # data/published/llama3_interruptions.csv: Llama 3 paper, Table 5, transcribed.
    with open(DATA / "published" / "llama3_interruptions.csv") as f:
        table = {
            row["component"]: (row["category"], float(row["count"])) for row in csv.DictReader(f)
        }
    causes = {c.name: (c.category, c.count) for c in load_scenario(REFERENCE).reliability.causes}
    assert causes == table
    assert sum(count for _, count in causes.values()) == 419
    assert load_scenario(REFERENCE).reliability.planned_count == 47


def test_gpu_catalogue_entries_validate_and_match_references():
    catalogue = gpu_catalogue()
    # Board power of each part [P, nvidia_h100], [P, nvidia_a100], [S, nvidia_blackwell].
    tdp = {
        "H100-SXM": 700,
        "A100-SXM": 400,
        "A100-PCIe": 250,
        "H200": 700,
        "B200": 1000,
        "GB200": 1200,
        "GB300": 1400,
        "MI300X": 750,
    }
    assert {name: entry["tdp"] for name, entry in catalogue.items()} == tdp
    for entry in catalogue.values():
        gpu = Gpu.model_validate(entry)
        assert gpu.power_cap_min < gpu.tdp
    # [P, nvidia_nvml], [P, nvidia_gb300_power]: the H100 has no power smoothing; GB200/GB300 do;
    # only GB300 stores energy.
    assert "power_smoothing" not in catalogue["H100-SXM"]["levers"]
    assert "power_smoothing" in catalogue["GB200"]["levers"]
    assert "energy_storage" in catalogue["GB300"]["levers"]
    assert "energy_storage" not in catalogue["GB200"]["levers"]


def test_changing_the_gpu_refills_the_gpu_table():
    sc = load_scenario(REFERENCE, {"cluster.gpu": "GB200"})
    assert sc.gpu.tdp == 1200.0 and sc.gpu.name == "GB200"
    sc = load_scenario(REFERENCE, {"cluster.gpu": "GB200", "gpu.stalled": 300.0})
    assert sc.gpu.stalled == 300.0
    # starting from a full scenario (its [gpu] table written for the H100)
    again = load_scenario(load_scenario(REFERENCE), {"cluster.gpu": "B200", "gpu.idle": 120.0})
    assert again.gpu.name == "B200" and again.gpu.tdp == 1000.0 and again.gpu.idle == 120.0


def test_overrides_as_mapping_and_as_strings_agree():
    # 131,072 GPUs: whole replicas of the preset's 128-GPU layout (100,000 leave 32 idle)
    a = load_scenario(REFERENCE, {"cluster.n_gpus": 131072, "simulation.duration": "7d"})
    b = load_scenario(REFERENCE, ["cluster.n_gpus=131072", "simulation.duration=7d"])
    assert a == b
    assert a.cluster.n_gpus == 131072 and a.simulation.duration == 7 * 86400


def test_override_into_an_array_of_tables():
    sc = load_scenario(REFERENCE, ["workload.phases.0.share=0.6", "workload.phases.1.share=0.4"])
    assert [p.share for p in sc.workload.phases] == [0.6, 0.4]


def test_file_extends_a_preset_and_overrides_keys(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'extends = "llama3-405b-16k-h100"\nname = "mine"\n'
        '[cluster]\nn_gpus = 8192\n[simulation]\nduration = "2d"\n'
    )
    sc = load_scenario(path)
    assert sc.name == "mine"
    assert sc.cluster.n_gpus == 8192
    assert sc.cluster.gpus_per_node == 8  # inherited
    assert sc.simulation.duration == 2 * 86400
    assert load_scenario(str(path), {"cluster.n_gpus": 4096}).cluster.n_gpus == 4096


def test_toml_round_trip(tmp_path):
    sc = load_scenario(REFERENCE)
    path = tmp_path / "again.toml"
    path.write_text(sc.to_toml())
    assert load_scenario(path) == sc


def test_durations():
    assert parse_duration("54d") == 4665600.0
    assert parse_duration("100ms") == pytest.approx(0.1)
    assert parse_duration("1min") == 60.0
    assert format_duration(4665600.0) == "54d"
    assert format_duration(0.1) == "100ms"
    with pytest.raises(ValueError, match="unit"):
        parse_duration("5 parsecs")
    # issue 10: a bare number is seconds or days to different readers; a unit is required
    with pytest.raises(ValueError, match="has no unit"):
        parse_duration(2.5)
    for bad, why in (("1e400s", "not a finite"), ("-1s", "negative"), ("nans", "cannot read")):
        with pytest.raises(ValueError, match=why):
            parse_duration(bad)


def test_durations_round_trip_exactly():
    # issue 10: the TOML round trip rounded durations to 6 digits (327 of 500 changed)
    rng = np.random.default_rng(0)
    seconds = rng.uniform(0, 1e6, 500) * rng.choice([1e-3, 1.0, 60.0], 500)
    assert all(parse_duration(format_duration(x)) == x for x in seconds)
    assert [format_duration(x) for x in (600.0, 0.25, 2.8, 86400.0 * 7)] == [
        "10min",
        "250ms",
        "2.8s",
        "7d",
    ]


@pytest.mark.parametrize(
    ("source", "overrides", "expected"),
    [
        ("no-such-preset", None, r"unknown preset 'no-such-preset'"),
        ("llama3-405b-16k-h10", None, r"did you mean 'llama3-405b-16k-h100'"),
        (
            REFERENCE,
            {"cluster.n_gpu": 5},
            r"unknown key 'cluster.n_gpu' \(did you mean 'cluster.n_gpus'",
        ),
        (REFERENCE, {"simulaton.seed": 5}, r"did you mean 'simulation'"),
        (REFERENCE, {"cluster.n_gpus": "many"}, r"cluster.n_gpus: Input should be a valid integer"),
        (
            REFERENCE,
            {"cluster.n_gpus": -5},
            r"cluster.n_gpus: Input should be greater than 0 \(got -5\)",
        ),
        (REFERENCE, {"workload.phases.0.share": 0.5}, r"phase shares must sum to 1, got 0.825"),
        (REFERENCE, {"simulation.dt": "2d", "simulation.duration": "1d"}, r"dt \(2d\) is longer"),
        (REFERENCE, {"simulation.dt": "7s", "simulation.duration": "1min"}, r"whole number of dt"),
        (REFERENCE, {"simulation.dt": "1fortnight"}, r"cannot read '1fortnight' as a duration"),
        (REFERENCE, {"cluster.gpu": "H10"}, r"unknown GPU 'H10' \(did you mean 'H100-SXM'"),
        (REFERENCE, {"site.timezone": "Mars/Olympus"}, r"unknown timezone"),
        (REFERENCE, {"simulation.start": "2024-07-01T00:00:00+02:00"}, r"timezone offset"),
        (REFERENCE, {"gpu.idle": 900.0}, r"idle <= stalled <= tdp"),
        # 12 GPUs are a node's job and 4 idle (tests/test_any_count.py); under a node is no hall
        (REFERENCE, {"cluster.n_gpus": 4}, r"cluster.n_gpus = 4 is less than one node of 8"),
        (REFERENCE, {"checkpoint.interval": "0s"}, r"interval must be positive"),
        (REFERENCE, {"electrical.ups_efficiency": [1.5, 1, 1, 1]}, r"must lie in \[0.5, 1\]"),
        (REFERENCE, {"cooling.plant": "chiled"}, r"unknown cooling plant 'chiled'"),
        (REFERENCE, {"mitigation.power_cap": 100.0}, r"outside the H100-SXM's settable range"),
        (REFERENCE, ["cluster.n_gpus"], r"not of the form key.path=value"),
    ],
)
def test_bad_input_is_one_clear_value_error(source, overrides, expected):
    with pytest.raises(ScenarioError, match=expected) as info:
        load_scenario(source, overrides)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_toml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('extends = "llama3-405b-16k-h100"\n[workload\nmfu = 0.4\n')
    with pytest.raises(ScenarioError, match=r"broken.toml: TOML syntax error.*line 2"):
        load_scenario(path)


def test_missing_file_and_extends_loop(tmp_path):
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario(tmp_path / "absent.toml")
    path = tmp_path / "loop.toml"
    path.write_text("extends = 5\n")
    with pytest.raises(ScenarioError, match="'extends' must be a preset name"):
        load_scenario(path)


@pytest.mark.parametrize("name", presets())
def test_every_preset_validates_and_runs(name):
    from powermodel import metrics, simulate

    ds = simulate(load_scenario(name, {"simulation.duration": "1h"}))
    result = metrics(ds)
    assert 0 < result["it_min_mw"] <= result["it_mean_mw"] <= result["it_peak_mw"]


def test_reading_the_shipped_files_leaves_presets_a_function():
    # found when the hostile-input suite first ran before this file: reading package data
    # through the module powermodel.presets rebound powermodel.presets from the function to
    # that module, and every later `from powermodel import presets` got a module
    import powermodel
    from powermodel import rules
    from powermodel.scenario import catalogue

    rules.load_rules("ercot-5s")
    catalogue("gpu")
    load_scenario(REFERENCE)
    assert callable(powermodel.presets) and REFERENCE in powermodel.presets()


def test_checkpoint_write_time_and_node_input_power():
    sc = load_scenario("llama3-405b-16k-h100")
    # The preset: 5,670 GB at 2,000 GB/s is a 2.835 s blocking write; a given blocking_time wins.
    assert sc.checkpoint.write_time == pytest.approx(2.835, rel=1e-12)
    given = load_scenario("llama3-405b-16k-h100", {"checkpoint.blocking_time": "10s"})
    assert given.checkpoint.write_time == 10.0
    # The preset's supply curve at 50 % of the node's 19.8 kW: 98.09 % efficient (Titanium's 96 %
    # with its loss scaled to MLPerf's measured AC/DC), 9.9 kW out needs 10.093 kW.
    assert sc.cluster.psu.input_power(9900.0) == pytest.approx(9900.0 / 0.9809, rel=1e-12)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"cooling.type": "bogus"}, "cooling.type: Input should be 'outside-air-evaporative', "),
        ({"cooling.type": 5}, r"or 'chilled-water' \(got 5\)"),
        ({"cooling.type": "liquid"}, "missing key 'cooling.rejection_approach'; missing key"),
        (
            {"cooling.plant": "liquid-tower", "cooling.loop_delta_t": 0.5},
            r"^cooling.loop_delta_t: Input should be greater than or equal to 1 K \(got 0.5\)$",
        ),
        (
            {"cooling.plant": "liquid-tower", "cooling.tau": "3d"},
            r"^cooling.tau: must be at most 1d",
        ),
        (
            {"cooling.plant": "enterprise-chilled-water", "cooling.chw_suply": 7},
            r"^unknown key 'cooling.chw_suply' \(did you mean 'cooling.chw_supply'\?\)$",
        ),
        # an unknown key spelt like a plant type is still the user's key, not a union tag
        ({"cooling.liquid": 3}, r"^unknown key 'cooling.liquid' \(did you mean 'cooling.dt'\?\)$"),
        ({"cooling.liquid.chiller": "x"}, r"^unknown key 'cooling.liquid'"),
    ],
)
def test_a_plant_types_errors_name_the_key_without_pydantics_union_tag(overrides, expected):
    with pytest.raises(ScenarioError, match=expected) as info:
        load_scenario(REFERENCE, overrides)
    assert "\n" not in str(info.value)
    for tag in ("outside-air-evaporative.", "liquid.", "chilled-water."):
        assert f"cooling.{tag}" not in str(info.value)


def test_each_plant_type_is_its_own_table_with_only_its_keys():
    from powermodel.scenario import Scenario, catalogue
    from powermodel.scenario.facility import ChilledWaterPlant, LiquidPlant, OutsideAirPlant

    for name, entry in catalogue("cooling").items():
        plant = load_scenario(REFERENCE, {"cooling.plant": name}).cooling
        model = {"liquid": LiquidPlant, "chilled-water": ChilledWaterPlant}.get(entry["type"])
        assert type(plant) is (model or OutsideAirPlant)
    assert "chw_supply" not in LiquidPlant.model_fields
    assert "supply_max" not in ChilledWaterPlant.model_fields
    assert LiquidPlant.model_fields["loop_delta_t"].is_required()  # the plant needs it
    schema = Scenario.model_json_schema()
    members = {ref["$ref"].split("/")[-1] for ref in schema["properties"]["cooling"]["oneOf"]}
    assert members == {"OutsideAirPlant", "LiquidPlant", "ChilledWaterPlant"}
    assert "heat_rejection" in schema["$defs"]["LiquidPlant"]["required"]


def test_a_key_of_another_plant_type_is_refused_but_old_saved_files_load(tmp_path):
    # economizer and cycles_of_concentration had defaults on every plant before plant types
    # were their own tables: every scenario saved then carries them, and loads as it did (every
    # plant now takes cycles_of_concentration, at that default)
    path = tmp_path / "saved.toml"
    path.write_text(
        f'extends = "{REFERENCE}"\n[cooling]\neconomizer = true\ncycles_of_concentration = 4.0\n'
    )
    saved = load_scenario(path)
    assert saved == load_scenario(REFERENCE)
    # a key the plant does not take would change nothing: refused, with who takes it
    with pytest.raises(ScenarioError, match=r"^cooling: supply_max is a key of outside-air-eva"):
        load_scenario(REFERENCE, {"cooling.plant": "liquid-tower", "cooling.supply_max": 30.0})
    with pytest.raises(ScenarioError, match=r"loop_delta_t is a key of liquid or chilled-water"):
        load_scenario(REFERENCE, {"cooling.loop_delta_t": 10.0})
    with pytest.raises(ScenarioError, match=r"rejection_approach is a key of liquid or"):
        load_scenario(REFERENCE, {"cooling.rejection_approach": 4.0})
    # switching the plant leaves the old plant's keys behind; the result reloads as itself
    switched = load_scenario(REFERENCE, {"cooling.plant": "liquid-tower"})
    assert not hasattr(switched.cooling, "supply_max")
    assert load_scenario(switched) == switched


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        # a limit is said in the key's unit, and a number with a unit glued on is told which
        ({"mitigation.power_cap": 0.6}, r"greater than or equal to 1 W \(got 0.6\)$"),
        ({"mitigation.power_cap": "0.6kW"}, r"a plain number in W \(got '0.6kW'\)$"),
        ({"cooling.supply_setpoint": 90}, r"less than or equal to 70 °C \(got 90\)$"),
        # a fraction has no unit to say
        ({"workload.mfu": 2}, r"less than or equal to 1 \(got 2\)$"),
    ],
)
def test_a_bound_or_a_number_is_explained_in_the_keys_unit(override, expected):
    with pytest.raises(ScenarioError, match=expected):
        load_scenario(REFERENCE, override)


def test_old_storage_key_is_refused_naming_the_new_one(tmp_path):
    # storage_power was MW for the whole job: read as W per GPU it would be a million times off,
    # so a scenario saved with it is refused with the conversion, from the API and from a file
    with pytest.raises(ScenarioError, match=r"storage_power_per_gpu.*1e6 / n_gpus.*15\.3 W/GPU"):
        load_scenario("llama3-405b-16k-h100", {"cluster.storage_power": 0.25})
    saved = tmp_path / "old.toml"
    saved.write_text('extends = "llama3-405b-16k-h100"\n[cluster]\nstorage_power = 0.25\n')
    with pytest.raises(ScenarioError, match="cluster.storage_power_per_gpu"):
        load_scenario(saved)


def test_scenario_rule_and_sweep_files_are_bounded_before_they_are_read(tmp_path):
    # one reader for the user's text files (powermodel.iotools.read_text): a file over 1 MiB is
    # refused from its size, a folder is not a file, bytes that are not UTF-8 say so
    from powermodel.errors import PowerModelError
    from powermodel.rules import RuleError, load_rules
    from powermodel.sweep import read_sweep

    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * 120_000)  # 1.2 MB of comments
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    latin = tmp_path / "latin.toml"
    latin.write_bytes('name = "Caf\xe9"\n'.encode("latin-1"))
    for path, said in (
        (big, "1,200,000 bytes, more than the 1,048,576 a scenario file needs"),
        (folder, "not a file: give a scenario file"),
        (latin, "not a text file in UTF-8: save the scenario file as UTF-8"),
    ):
        with pytest.raises(ScenarioError, match=said):
            load_scenario(path)
    with pytest.raises(RuleError, match="more than the 1,048,576 a rule file needs"):
        load_rules(str(big))
    with pytest.raises(PowerModelError, match="not a file: give a sweep file"):
        read_sweep(folder)


@pytest.mark.parametrize("idle", [106.4, 80.0, 17.3, 120.3, 99.9])
def test_a_start_up_share_written_at_the_idle_loads(idle):
    # A fit writes the start-up level as a share of TDP rounded up to four places
    # (fit._share_at_least) where the trace's start-up sits at idle; the share times the TDP
    # can fall a rounding error short of the idle it equals (0.152 x 700 W is
    # 106.39999999999999 W): MLPerf logs fitted by bench/bench_real_logs.py were refused so.
    share = math.ceil(idle / 700.0 * 1e4) / 1e4
    scenario = load_scenario(
        "llama3-405b-16k-h100", {"gpu.idle": idle, "workload.startup_power": share}
    )
    assert scenario.workload.startup_power * scenario.gpu.tdp == pytest.approx(idle, abs=0.07)
    with pytest.raises(ScenarioError, match="below its idle"):
        load_scenario(
            "llama3-405b-16k-h100", {"gpu.idle": idle, "workload.startup_power": share - 2e-4}
        )
