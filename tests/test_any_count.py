"""Any GPU count on any preset, and a swapped GPU's own node (issue 28).

The hall's ``cluster.n_gpus`` is the user's: the job takes the largest count of whole replicas
in whole nodes it holds and the rest wait idle in the hall, at their idle power through the
supplies, counted in the nameplate; a catalogue GPU brings its node (presets/gpus.toml).
Expected values name where they come from: the presets' own numbers, the GPU catalogue, the
reference's Llama 3 layout [P, llama3 Table 4], or the layout's law worked by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tomli_w
from conftest import REFERENCE
from numpy.testing import assert_allclose

from powermodel import load_scenario
from powermodel.engine.derive import derive
from powermodel.engine.facility import design_day, design_it_power
from powermodel.engine.waveform import idle_power
from powermodel.errors import ScenarioError
from powermodel.models.workload import data_parallel_time, derived_step_time, layout_work
from powermodel.scenario import gpu_catalogue, loads_scenario, presets
from powermodel.simulate import simulate

GB200 = "gb200-nvl72-100k-campus"
# counts that are multiples of nothing in particular: one node, one over, a rack, two racks,
# round thousands, one over a power of two, NVL72-rack multiples, a million less one
COUNTS = (8, 9, 72, 144, 1_000, 4_097, 20_016, 30_000, 50_040, 99_936, 131_073, 999_999)
BATCH = 16_777_216  # the reference's tokens a step [P, llama3 Table 4]


def _members(sc):
    return sc.parts or [sc]


@pytest.mark.parametrize("preset", presets())
def test_every_preset_takes_any_count_of_a_node_or_more(preset):
    for hall in COUNTS:
        sc = load_scenario(preset, {"cluster.n_gpus": hall})
        for part in _members(sc):  # a campus's workloads: those without a count of their own
            cl, par = part.cluster, part.workload.parallelism
            assert cl.n_gpus % cl.gpus_per_node == 0, (preset, hall)
            size = 1 if par is None else par.tp * par.pp * par.cp
            assert cl.n_gpus % size == 0, (preset, hall)
            # the largest such job: less than one whole-node replica is left over
            assert cl.idle_gpus < math.lcm(size, cl.gpus_per_node, part.replica_gpus or 1)
            derive(part)  # the step, checkpoints and rates: within their bounds
        if sc.campus is None:
            assert sc.cluster.hall_gpus == hall


def test_the_job_and_the_idle_gpus_are_said_in_the_users_terms():
    # 1,000 H100 over the reference's 128-GPU replicas (TP 8, PP 16 [P, llama3 Table 4]):
    # seven replicas, 896 GPUs, and 104 idle
    sc = load_scenario(REFERENCE, {"cluster.n_gpus": 1000})
    assert (sc.cluster.n_gpus, sc.cluster.idle_gpus) == (896, 104)
    assert any(
        "job 896 GPUs, 104 idle in the hall" in n and "cluster.n_gpus = 1,000" in n
        for n in sc.notes
    )
    # written back, the hall is the user's 1,000, and loading it again fits the same job
    assert sc.to_dict()["cluster"]["n_gpus"] == 1000
    again = load_scenario(sc)
    assert (again.cluster.n_gpus, again.cluster.idle_gpus) == (896, 104)
    # 30,000: 234 replicas, 29,952 GPUs, 48 idle
    sc = load_scenario(REFERENCE, {"cluster.n_gpus": 30_000})
    assert (sc.cluster.n_gpus, sc.cluster.idle_gpus) == (29_952, 48)


def test_the_gb200_campus_takes_its_users_count():
    # the counts the issue tried: 20,016 and 50,040 are whole racks of 72, 72,000 and 144 too;
    # 99,936 is 1,388 racks
    for hall in (20_016, 50_040, 72_000, 99_936, 144):
        sc = load_scenario(GB200, {"cluster.n_gpus": hall})
        assert (sc.cluster.n_gpus, sc.cluster.idle_gpus) == (hall, 0)
        assert sc.reliability.scope == "replica"
        derive(sc)
    # one rack is one replica: a failure stops the job, as the note says
    sc = load_scenario(GB200, {"cluster.n_gpus": 100})
    assert (sc.cluster.n_gpus, sc.cluster.idle_gpus, sc.reliability.scope) == (72, 28, "job")
    assert any("fewer than two replicas of 72" in n for n in sc.notes)


def test_below_one_replica_the_layout_shrinks_and_the_batch_follows_the_gpus():
    # one node of the reference: TP 8 kept, PP 16 down to 1, the batch the reference's 1,024
    # tokens a GPU (16,777,216 / 16,384), one 8,192-token sequence
    sc = load_scenario(REFERENCE, {"cluster.n_gpus": 8})
    par = sc.workload.parallelism
    assert (par.tp, par.pp, sc.workload.tokens_per_step) == (8, 1, 8192)
    # by hand: the reference's step 6·N·D / (n·peak·MFU) at its own layout (PP 16, 8 virtual
    # stages, 16 micro-batches a replica, DP 128, 90 % overlap [P, llama3]) fixes the work W0
    # and the low-power time inside it, 0.325·t0 less bubble and exposed traffic; on one node
    # the tokens a GPU are the same, PP 1 has no bubble and DP 1 no traffic: the step is
    # 0.675·t0 plus that low-power time
    t0 = derived_step_time(405e9, BATCH, 16384, 989.4e12, 0.41)
    c0 = data_parallel_time(405e9, 6.0, 8, 16, 128, 50e9)
    w0 = layout_work(t0, 16, 16, c0, 8, 0.9)
    inner = 0.325 * t0 - 15 / (8 * 16) * w0 - (c0 - 0.9 * c0)
    assert_allclose(derive(sc).step_time, 0.675 * t0 + inner, rtol=1e-12)
    assert_allclose(derive(sc).step_time, 5.4569, atol=5e-5)


def test_a_replica_short_of_a_micro_batch_grows_the_batch_with_the_job():
    # 999,999 H100: 7,812 replicas of 128 (999,936 GPUs, 63 idle); the reference's 16M tokens
    # would give each 0.26 of a micro-batch, so the batch takes the reference's 1,024 tokens a
    # GPU over the job: 1,023,934,464 tokens, 16 micro-batches a replica as at 16K
    sc = load_scenario(REFERENCE, {"cluster.n_gpus": 999_999})
    assert (sc.cluster.n_gpus, sc.cluster.idle_gpus) == (999_936, 63)
    assert sc.workload.tokens_per_step == 1024 * 999_936
    assert sc.layout().microbatches == 16
    assert any("becomes 1,023,934,464" in n for n in sc.notes)
    assert sc.to_dict()["workload"]["tokens_per_step"] == BATCH  # the user's, written back


def test_what_a_hall_cannot_be_is_refused_naming_the_users_number():
    for preset, hall, node in ((REFERENCE, 4, 8), (GB200, 2, 4)):
        with pytest.raises(ScenarioError) as err:
            load_scenario(preset, {"cluster.n_gpus": hall})
        text = str(err.value)
        assert f"cluster.n_gpus = {hall} is less than one node of {node} GPUs" in text
        assert f"cluster.gpus_per_node = {hall}" in text and "\n" not in text
    # a layout whose reference contradicts its shares names the user's count too
    with pytest.raises(ScenarioError, match=r"cluster.n_gpus = 8,192: at 16,384 GPUs"):
        load_scenario(
            REFERENCE,
            {
                "cluster.n_gpus": 8192,
                "workload.phases": [
                    {"name": "fb", "kind": "compute", "share": 0.95},
                    {"name": "comm", "kind": "communication", "share": 0.05},
                ],
            },
        )


def test_the_nameplate_counts_every_gpu_in_the_hall():
    # 1,000 GPUs hold the job of 896 and 13 idle nodes: the nameplate grows by 13 nodes at
    # full power over that of a hall of 896, the job's network and storage the same
    hall, job = (load_scenario(REFERENCE, {"cluster.n_gpus": n}) for n in (1000, 896))
    fixed = job.cluster.network_load + job.cluster.storage_load
    per_node = (design_it_power(job) - fixed) / 112
    assert_allclose(design_it_power(hall), design_it_power(job) + 13 * per_node, rtol=1e-12)
    assert hall.cluster.network_load + hall.cluster.storage_load == fixed


def test_defaults_scale_with_the_job_not_the_hall():
    # nine GPUs are a one-node job and one idle GPU: the one-node teardown (5 s
    # [P, nvidia_resiliency]), no scale-out network, the failure rates of 8 GPUs
    nine, eight = (load_scenario(REFERENCE, {"cluster.n_gpus": n}) for n in (9, 8))
    assert nine.stall_time == 5.0 and nine.cluster.network_load == 0.0
    assert_allclose(derive(nine).rates, derive(eight).rates, rtol=1e-15)
    for hall in (512, 16_384, 100_000, 1_000_000):
        sc = load_scenario(REFERENCE, {"cluster.n_gpus": hall})
        job = sc.cluster.n_gpus
        assert sc.stall_time == 60.0  # across nodes [A]
        assert_allclose(sc.cluster.network_load, 30.0 * job)  # 30 W a GPU of the job [A]
        rate = derive(sc).rates[:-1].sum() * 3600  # unexpected, an hour
        assert_allclose(rate, 419 / 19_801_124.0 * job, rtol=1e-12)  # Table 5 [P, llama3]


def test_idle_gpus_draw_the_catalogues_idle_power_through_the_supplies():
    # a hall of 1,000 H100 beside one of 896 (the same job, the same seed): the IT power differs
    # by 104 GPUs at the catalogue's 80 W idle with 13 nodes' idle 1.3 kW rest of node, through
    # the supplies' curve, at every step; so do the hot spares, on the same path
    short = {"simulation.duration": "1h", "reliability.rate_scale": 0.0}
    hall = load_scenario(REFERENCE, {**short, "cluster.n_gpus": 1000})
    job = load_scenario(REFERENCE, {**short, "cluster.n_gpus": 896})
    idle = gpu_catalogue()["H100-SXM"]["idle"]
    node = hall.cluster.psu.input_power(8 * idle + hall.cluster.rest_power_idle)  # W AC
    expected = 104 / 8 * node / 1e6  # MW
    a, b = simulate(hall), simulate(job)
    assert_allclose(a["it_power"].values - b["it_power"].values, expected, atol=1e-9)
    assert_allclose(a["gpu_power"].values, b["gpu_power"].values, rtol=1e-12)
    assert (a.attrs["job_gpus"], a.attrs["idle_gpus"]) == (896, 104)
    assert_allclose(a.attrs["idle_power"], expected, rtol=1e-12)
    spared = load_scenario(
        REFERENCE, {**short, "cluster.n_gpus": 1000, "reliability.spare_nodes": 2}
    )
    assert_allclose(idle_power(spared), 15 * node / 1e6, rtol=1e-12)


@pytest.mark.parametrize(
    ("preset", "gpu", "built"),
    [
        (REFERENCE, "GB200", GB200),
        ("llama3-405b-8k-h100", "GB200", GB200),
        ("llama2-70b-lora-h100", "GB200", GB200),
        ("llama2-70b-lora-zero3-h100", "GB200", GB200),
        (GB200, "H100-SXM", REFERENCE),
    ],
)
def test_a_swapped_gpu_brings_its_node_and_the_design_peak_of_its_preset(preset, gpu, built):
    for hall in (8, 1_000, 20_016):
        swapped = load_scenario(preset, {"cluster.gpu": gpu, "cluster.n_gpus": hall})
        own = load_scenario(built, {"cluster.n_gpus": hall})
        for key in ("gpus_per_node", "rest_power_active", "rest_power_idle"):
            assert getattr(swapped.cluster, key) == getattr(own.cluster, key), key
        peak = design_day(swapped)["peak_facility_mw"]
        assert_allclose(peak, design_day(own)["peak_facility_mw"], rtol=0.02)
        assert any(f"cluster.gpu = {gpu!r} brings its node" in n for n in swapped.notes)
        # nothing kept against the new GPU (a model too large for a small hall is another
        # warning, about the model)
        assert not [w for w in swapped.warnings if "no such job fits" not in w]


def test_node_settings_kept_over_a_swap_are_warned_by_name():
    sc = load_scenario(
        REFERENCE, {"cluster.gpu": "GB200", "cluster.gpus_per_node": 8, "cluster.n_gpus": 16384}
    )
    assert sc.cluster.gpus_per_node == 8 and sc.cluster.rest_power_active == 1700.0
    (line,) = sc.warnings
    assert "cluster.gpus_per_node = 8 (the GB200's node: 4)" in line
    # a file that swaps the GPU and sets a node key keeps it (it is the user's), and says so;
    # the keys it leaves out are the new GPU's, not those of the file it extends
    text = 'extends = "llama3-405b-16k-h100"\n[cluster]\ngpu = "B200"\nrest_power_active = 3000.0\n'
    sc = loads_scenario(text)
    assert (sc.cluster.rest_power_active, sc.cluster.fans.power) == (3000.0, 850.0)
    assert "cluster.rest_power_active = 3000" in sc.warnings[0]
    # the preset built for the GPU sets its node as the catalogue has it: no note, no warning
    sc = load_scenario(GB200)
    assert not sc.notes and not sc.warnings


def test_a_campus_workloads_own_count_and_gpu():
    text = """
extends = "llama3-405b-16k-h100"
[[campus.workloads]]
name = "hopper"
set = { "cluster.n_gpus" = 4097 }
[[campus.workloads]]
name = "blackwell"
set = { "cluster.gpu" = "GB200", "cluster.n_gpus" = 30001 }
"""
    sc = loads_scenario(text)
    hopper, blackwell = sc.parts
    assert (hopper.cluster.n_gpus, hopper.cluster.idle_gpus) == (4096, 1)
    assert blackwell.cluster.gpus_per_node == 4  # the GB200's tray [S, nvidia_blackwell]
    assert blackwell.cluster.hall_gpus == 30_001
    assert blackwell.cluster.n_gpus % 128 == 0  # whole reference replicas in whole trays
    assert any(n.startswith("campus workload 'blackwell': ") for n in sc.notes)
    assert np.isfinite(design_it_power(sc))


def test_an_inference_fleet_serves_on_whole_nodes():
    # the mixed campus's fleet at 10,001 GB200: 2,500 trays of 4 and one GPU idle, not the
    # training layout's replicas of 128 (which would leave 17 idle)
    sc = load_scenario(
        "mixed-campus-hopper-blackwell",
        {"campus.workloads.3.set": {"cluster.gpu": "GB200", "cluster.n_gpus": 10_001}},
    )
    fleet = sc.parts[3]
    assert (fleet.cluster.n_gpus, fleet.cluster.idle_gpus) == (10_000, 1)
    assert fleet.workload.parallelism is None
    # at its own 9,216 the campus is as it was: every workload its own count, none idle
    own = load_scenario("mixed-campus-hopper-blackwell")
    counts = [(p.cluster.n_gpus, p.cluster.idle_gpus) for p in own.parts]
    assert counts == [(16_384, 0), (36_864, 0), (512, 0), (9_216, 0)]


@pytest.mark.parametrize(
    ("n_gpus", "warned"),
    # 405e9 parameters at 16 bytes (mixed-precision Adam [P, rajbhandari]) are 6,480 GB; an
    # H100 holds 80 GB (its datasheet [P, nvidia_h100]): 81 GPUs at least, 88 in whole nodes
    [(8, True), (64, True), (80, True), (88, False), (16_384, False)],
)
def test_a_job_whose_training_state_cannot_fit_its_gpus_is_warned(n_gpus, warned):
    scenario = load_scenario(REFERENCE, {"cluster.n_gpus": n_gpus})
    found = [w for w in scenario.warnings if "no such job fits" in w]
    assert bool(found) == warned
    if warned:
        assert f"{n_gpus:,} H100-SXM hold {80 * n_gpus:,} GB" in found[0]
        assert "needs about 6,480 GB" in found[0] and "88 GPUs or more" in found[0]
    assert scenario.cluster.n_gpus == n_gpus  # warned, not refused: the hall is the user's


def test_adapters_need_the_weights_alone_to_fit():
    # LoRA moves no gradient of the weights (bytes_per_param = 0): its 70e9 BF16 weights are
    # 140 GB, which one 8-GPU node's 640 GB holds; full training would need 1,120 GB
    lora = load_scenario("llama2-70b-lora-h100")
    assert lora.workload.parallelism.bytes_per_param == 0 and lora.warnings == []
    full = load_scenario("llama2-70b-lora-h100", {"workload.parallelism.bytes_per_param": 6.0})
    assert any("needs about 1,120 GB" in w for w in full.warnings)
    small = load_scenario(
        "llama2-70b-lora-h100",
        {"cluster.gpu": "A100-PCIe", "cluster.gpus_per_node": 2, "cluster.n_gpus": 2},
    )
    # two 40-GB cards hold 80 GB, short of the 140 GB of weights
    assert any("needs about 140 GB" in w and "hold 80 GB" in w for w in small.warnings)


CAMPUSES = [p for p in presets() if load_scenario(p).campus is not None]


@pytest.mark.parametrize("preset", CAMPUSES)
@pytest.mark.parametrize("hall", [72, 1_000, 4_097, 20_016, 99_936])
def test_every_campus_workload_takes_any_count_of_its_own(preset, hall):
    # each workload's own count (its `set`, as a user's file gives it), not the site's default:
    # the mixed campus's GB200 job refused every count but its own before it ran 14 virtual
    # stages (its 1F1B bubble was longer than the communication phases of its step)
    raw = load_scenario(preset).to_dict()
    for w in raw["campus"]["workloads"]:
        w.setdefault("set", {})["cluster.n_gpus"] = hall
    sc = loads_scenario(tomli_w.dumps(raw))
    for part in sc.parts:
        cl = part.cluster
        assert cl.hall_gpus == hall and cl.n_gpus % cl.gpus_per_node == 0, (preset, hall)
        derive(part)  # the step, checkpoints and rates: within their bounds
