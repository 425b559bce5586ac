"""``powermodel reproduce``: the model against the published anchors (issues 12 and 27).

The anchors compute the model at run time: the tests pin each anchor's kind (a prediction
against a measurement, a calibration, an identity or a formula) and its verdict, check their
numbers against the papers' closed forms and the shipped data, that a changed default moves them,
that the whole command prints the table and exits by its verdict, that the guide's runtime is
the measured one, and that the report opens offline in headless Chromium with one figure per
anchor.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from conftest import REFERENCE, pytest_setup_options
from plotly.offline import get_plotlyjs
from selenium import webdriver
from selenium.webdriver.common.by import By

from powermodel import load_scenario, reproduce
from powermodel.cli import main
from powermodel.errors import PowerModelError
from powermodel.iotools import data_dir
from powermodel.reproduce import gpu_levers, llama3, node, reliability, runner
from powermodel.reproduce.anchor import CALIBRATION, FORMULA, IDENTITY, PREDICTION, SEEDS

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "reproduce.md"
# Every anchor's kind and verdict at this commit (issue 27: a change either way is seen). A
# prediction has no coefficient fitted on its measurement; a calibration has; an identity gives
# the model the source's own figure; a formula has no measurement. The misses are
# reproduce.MISSES, each with its reason.
EXPECTED = {
    # fitted: the rates on Table 5's counts, each cause's on its own
    "Llama 3 interruptions in 54 days": (CALIBRATION, True),
    "Llama 3 interruptions by category": (CALIBRATION, True),
    # measured "higher than 90 %", nothing fitted on it: 91.1 %, P5 90.6 %
    "Llama 3 effective training time": (PREDICTION, True),
    # the MFU input is the same Table 4 row's 41 %: 6.13 s against 6.22 s
    "Llama 3 step time, 16,384 GPUs": (IDENTITY, True),
    # Table 4's 8K row, calibrated at 16K only: 43.4 % against 43 %
    "Llama 3 MFU, 8,192 GPUs": (PREDICTION, True),
    # the leakage coefficient is fitted on it
    "Llama 3 diurnal throughput swing": (CALIBRATION, True),
    # "tens of megawatts": 12.8 MW
    "Llama 3 power swings": (PREDICTION, True),
    # Kokolis' rate through Kokolis' closed form: 1.81 h and 0.227 h
    "Kokolis MTTF projections": (IDENTITY, True),
    # the rate at ~100K GPUs is fitted on the 44 %
    "Synchronous training at ~100K GPUs": (CALIBRATION, True),
    # 74.6 % (71.9-77.5 % over the stall as printed) against 80 %
    "Fault-tolerant HSDP at ~100K GPUs": (PREDICTION, False),
    # the simulated optimum against √(2·MTBF·C): 221 s against 243 s
    "Young/Daly optimum by simulation": (FORMULA, True),
    # rest_power_active is derived from Latif's 8.4 kW
    "H100 node peak": (CALIBRATION, True),
    # Newkirk's 76 % of the rating: 76.7 %
    "H100 node mean while training": (PREDICTION, True),
    # the preset llama2-70b-lora-h100's trough depth and wait level are fitted on the 1- and
    # 8-node running AC node power (7,218 and 6,117 W: the model 7,217 and 6,116 W)
    "MLPerf Training v4.0 running node power, Llama 2 70B LoRA, 1 and 8 nodes": (CALIBRATION, True),
    # held out of that fit: 5,887 ± 148 W measured at 64 nodes, the model 5,850 W (-0.6 %)
    "MLPerf Training v4.0 running node power, Llama 2 70B LoRA, 64 nodes": (PREDICTION, True),
    # running DC 6,856 W AC / 1.0158 = 6.75 kW at 64 nodes against the model's 6.80 (+0.7 %)
    "MLPerf Training v4.0 node power, GPT-3 175B": (PREDICTION, True),
    # NLR's 16-node drops, on the run the preset is calibrated on: 164 against 159 (+3.1 %),
    # 2.6 s long against 2.6 s
    "NLR ZeRO-3 LoRA drops, 16 nodes": (CALIBRATION, True),
    # the whole run's spread: 143.2 / 166.4 / 198.9 W against the five runs' 125.0-141.3 /
    # 140.0-170.5 / 170.9-182.0 W a GPU, inside on 4 nodes only
    "NLR ZeRO-3 LoRA spread, 2-8 nodes": (PREDICTION, False),
    # the supplies' losses are scaled to these runs' AC/DC
    "Node AC/DC energy ratio": (CALIBRATION, True),
    # Meta's -16.7 % power and -5 % performance: the model's mean -12.3 %, throughput -4.3 %
    "GB200 cap 1,200 to 1,000 W: mean power": (PREDICTION, False),
    "GB200 cap 1,200 to 1,000 W: performance": (PREDICTION, True),
    # Choukse's +10.5 % inside the model's +2.8 to +12.7 %
    "90 % smoothing floor energy": (PREDICTION, True),
    # the outside-air plant's fans are fitted on Meta's 1.08; the others' plants are not fitted
    "PUE, outside-air-evaporative plant": (CALIBRATION, True),
    "PUE, liquid plant": (PREDICTION, True),
    "PUE, chilled-water plant": (PREDICTION, True),
    # 0.091 L/kWh against Meta's 0.22 until Prineville's climate and water balance are shipped
    "WUE, outside-air-evaporative plant": (PREDICTION, False),
}
OPEN = {name for name, (_, passed) in EXPECTED.items() if not passed}


@pytest.fixture(scope="module")
def command(tmp_path_factory):
    """One run of the whole command: its exit code, what it printed and the report."""
    report = tmp_path_factory.mktemp("reproduce") / "report.html"
    # what the command prints to stdout (its progress and errors go to stderr, left to pytest).
    # Not by replacing builtins.print: numba, when first imported inside the command, registers
    # whatever builtins.print is then and fails on a stand-in, leaving itself half imported.
    out = io.StringIO()
    runner.clear_caches()  # its anchors' shared runs afresh (other modules' caches stay warm)
    start, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out):
        code = main(["reproduce", "-o", str(report)])
    return code, out.getvalue(), report, time.perf_counter() - start, time.process_time() - cpu


@pytest.fixture(scope="module")
def anchors(command):
    """The anchors' records (the command's caches make this second run cheap for most: it runs
    after the command, so that the command's time is that of a first run)."""
    return {a.name: a for a in reproduce.run_anchors()}


def test_command_prints_the_table_and_exits_by_its_verdict(command, anchors):
    code, out, report, *_ = command
    header = out.splitlines()[0].split()
    for column in ("anchor", "source", "published", "model", "tolerance", "kind", "result"):
        assert column in header
    failed = {name for name, a in anchors.items() if not a.passed}
    # every anchor passes but the listed misses, each with its reason
    assert failed == OPEN == set(reproduce.MISSES)
    assert code == (0 if not failed else 3)
    assert f"{len(anchors) - len(failed)} of {len(anchors)} anchors pass" in out
    assert out.count(" FAIL ") == len(failed)
    assert report.is_file()


@pytest.mark.parametrize("name", EXPECTED)
def test_each_anchor_keeps_its_kind_and_verdict(anchors, name):
    a = anchors[name]
    assert (a.kind, a.passed) == EXPECTED[name]
    assert a.fitted  # what the coefficients behind it were fitted on, said for every anchor


def test_the_anchors_are_the_pinned_ones_with_ten_predictions(anchors):
    assert set(anchors) == set(EXPECTED)
    kinds = [a.kind for a in anchors.values()]
    # issue 27: at least 10 predictions against measurements; every kind in use
    assert kinds.count(PREDICTION) == 14
    assert set(kinds) == set(reproduce.KINDS)
    # the guide's count of each kind is this run's
    stated = re.search(
        r"There are (\d+) predictions, (\d+) calibrations, (\d+) identities and (\d+) formula",
        " ".join(GUIDE.read_text(encoding="utf-8").split()),
    )
    assert stated, "docs/guides/reproduce.md counts the anchors of each kind"
    assert [int(n) for n in stated.groups()] == [kinds.count(k) for k in reproduce.KINDS]
    # an anchor of no known kind is refused, not left out of the report's sections
    with pytest.raises(ValueError, match="kind is one of prediction, calibration"):
        reproduce.Anchor("a", "b", "1", "1", "±0", "predicted", "-", True, go.Figure())


def test_the_whole_run_fits_the_budget(command, anchors):
    # issue 12: under 5 minutes here
    assert command[3] < 300
    assert all(a.seconds > 0 for a in anchors.values())
    # the guide's runtime is this run's: its CPU time (what the load of other work on the cores
    # does not change, as it does the wall time) within a factor 2 of the figure it states
    guide = " ".join(GUIDE.read_text(encoding="utf-8").split())
    stated = re.search(r"The anchors take about (\d+) s of CPU time", guide)
    assert stated, "docs/guides/reproduce.md states the command's CPU time"
    assert 0.5 <= command[4] / float(stated[1]) <= 2.0, (command[4], stated[1])


def test_ft_hsdp_replica_band_is_the_inputs_as_printed():
    # FT-HSDP [P, ft_hsdp]: 80 % with a 3-min stall. The band is the model over the stall as
    # printed (2.5-3.5 min: 71.9-77.5 %), not ±10 points: the 80 % falls outside it
    a = reliability.ft_hsdp_replicas()
    low, high = (float(x) for x in re.search(r"inside ([\d.]+)-([\d.]+) %", a.tolerance).groups())
    assert high - low < 10.0
    assert low < 74.6 < high < 80.0 and not a.passed
    short, long = (reliability.ft_hsdp_training_time("replica", s).mean() for s in (150.0, 210.0))
    assert short > reliability.ft_hsdp_training_time("replica").mean() > long


@pytest.mark.parametrize(
    ("mean", "peak", "passed"),
    # the anchor judges the mean (Meta's cluster power) and never the peak (the cap over TDP)
    [(-0.167, -0.123, True), (-0.123, -0.167, False), (-0.155, -0.17, True), (-0.18, -0.17, True)],
)
def test_gb200_cap_power_is_judged_on_the_mean(monkeypatch, mean, peak, passed):
    monkeypatch.setattr(
        gpu_levers, "gb200_cap_changes", lambda: {"mean": mean, "peak": peak, "work": -0.05}
    )
    assert gpu_levers.gb200_cap_power().passed is passed


def test_gb200_cap_changes_of_the_model():
    # a 1,000 W cap over a July day on the liquid plant: compute phases held at the cap, the
    # communication trough below it untouched, so the mean falls less than the peak
    found = gpu_levers.gb200_cap_changes()
    assert found["mean"] == pytest.approx(-0.123, abs=0.002)
    assert found["peak"] == pytest.approx(-0.170, abs=0.002)
    assert found["work"] == pytest.approx(-0.043, abs=0.002)


def test_mlperf_gpt3_runs_the_submissions_layout():
    # Sustainable Metal Cloud's config in mlcommons/training_results_v4.0: GPT-3 TP4 PP8 with
    # MINIBS 128 (DP 16, 2,048 sequences of 2,048) on 64 nodes
    scenario = node.mlperf_gpt3_scenario()
    layout = scenario.workload.parallelism
    assert scenario.cluster.n_gpus == 512
    assert (layout.tp, layout.pp, layout.cp) == (4, 8, 1)
    assert scenario.workload.tokens_per_step == 2048 * 2048


@pytest.mark.parametrize(("nodes", "sequences"), [(1, 8), (8, 8), (64, 64)])
def test_mlperf_lora_is_the_preset_at_the_submissions_sizes(nodes, sequences):
    # one LoRA scenario: the preset (its layout and calibration, tests/test_scale_laws.py)
    # carried to the submission's GPUs and global batch (data/published/mlperf_training_v4_
    # scaling.csv: 8, 8 and 64 sequences of 8,192 tokens), nothing else changed
    preset = load_scenario(node.LORA)
    scenario = node.mlperf_lora_scenario(nodes)
    assert scenario.cluster.n_gpus == 8 * nodes
    assert scenario.workload.tokens_per_step == sequences * 8192
    assert scenario.workload.parallelism == preset.workload.parallelism
    assert scenario.workload.trough_depth == preset.workload.trough_depth
    with pytest.raises(ValueError, match=r"on \[1, 8, 64\] nodes, not 16"):
        node.mlperf_lora_scenario(16)


def _lora_rows() -> pd.DataFrame:
    table = pd.read_csv(data_dir() / "published" / "mlperf_training_v4_scaling.csv")
    return table[table["benchmark"] == "llama2_70b_lora"].set_index("nodes")


def test_mlperf_anchors_compare_the_running_state_row_by_row(anchors):
    rows = _lora_rows()
    # each size's band is its measured spread: the runs' sd and a run's nodes' CV times the level,
    # in quadrature (10 W at 1 node; hypot(13, 0.0059 · 6,117) = 38 W at 8; hypot(26, 0.0247 ·
    # 5,887) = 148 W, 2.5 %, at 64)
    spread = np.hypot(rows.running_ac_sd, rows.running_node_cv.fillna(0.0) * rows.running_ac)
    assert spread.round().tolist() == [10.0, 38.0, 148.0]
    calibrated = anchors["MLPerf Training v4.0 running node power, Llama 2 70B LoRA, 1 and 8 nodes"]
    held_out = anchors["MLPerf Training v4.0 running node power, Llama 2 70B LoRA, 64 nodes"]
    assert calibrated.published == "7,218 W ±10 at 1; 6,117 W ±38 at 8 nodes (AC)"
    assert held_out.published == "5,887 W ±148 at 64 nodes (AC)"
    # docs/model/workload.md's table: 7,217, 6,116 W [C] and 5,850 W predicted
    lora = [node.mlperf_lora_power(n) for n in (1, 8, 64)]
    assert lora == pytest.approx([7217.0, 6116.0, 5850.0], abs=1.0)
    # what each was fitted on: the 64-node power is in neither fit, its step in the wait's law
    assert "running node power at 1 and 8 nodes" in calibrated.fitted
    assert "nothing on the 64-node power" in held_out.fitted
    # GPT-3: the running state too, through the run's own AC/DC (6,856 / 1.0158 = 6,749 W); the
    # whole log differs by 0.1 % here
    gpt3 = anchors["MLPerf Training v4.0 node power, GPT-3 175B"]
    assert gpt3.published.startswith("6.75 kW at 64 nodes (DC while training: 6.86 kW AC")
    assert node.mlperf_gpt3_power() == pytest.approx(6800.0, abs=5.0)
    # the old band (0.7-0.97 kW a GPU) is not what the file says: 0.54-0.88 kW of AC a GPU
    measured = pd.read_csv(data_dir() / "published" / "mlperf_training_v4_power.csv")
    per_gpu = measured["node_ac"] / 8
    assert per_gpu.min() == pytest.approx(544, abs=1) and per_gpu.max() == pytest.approx(881, abs=1)


@pytest.mark.parametrize(
    ("within", "passed"),
    # the model at each size moved to a share of its band from the measured level, either side
    [(0.9, True), (-0.9, True), (1.1, False), (-1.1, False)],
)
@pytest.mark.parametrize("anchor", ["mlperf_lora_calibrated", "mlperf_lora_held_out"])
def test_mlperf_lora_verdict_is_the_measured_spread(monkeypatch, anchor, within, passed):
    rows = _lora_rows()
    spread = np.hypot(rows.running_ac_sd, rows.running_node_cv.fillna(0.0) * rows.running_ac)
    model = (rows.running_ac + within * spread).to_dict()
    monkeypatch.setattr(node, "mlperf_lora_power", model.__getitem__)
    assert getattr(node, anchor)().passed is passed


def test_ft_hsdp_keeps_more_training_than_whole_job_restarts():
    # FT-HSDP [P, ft_hsdp]: 44 % synchronous (the failure rate fitted to it), 80 % with replica
    # restarts (predicted from the same rate and the published 3-min stall: 74.6 %)
    job, replica = (reliability.ft_hsdp_training_time(s) for s in ("job", "replica"))
    assert abs(job.mean() - 0.44) <= 0.02
    assert abs(replica.mean() - 0.80) <= 0.10
    assert np.all(replica > job + 0.25)


def test_kokolis_mttf_against_the_closed_form():
    # Kokolis et al.: MTTF = 1 / (nodes · 6.50 per 1,000 node-days): 1.803 h at 2,048 nodes,
    # 0.2254 h at 16,384; the timelines' mean up time between failures within 3 standard
    # errors of an exponential mean over the failures seen
    for n_gpus in (16384, 131072):
        closed = 24.0 / (n_gpus / 8 * 6.50e-3)
        model, failures = reliability.simulated_mttf(n_gpus, seeds=5)
        assert model == pytest.approx(closed, rel=3.0 / np.sqrt(failures))


def test_llama3_step_time_anchor():
    # [llama3] Table 4: 6·405e9·16,777,216 / (16,384 · 400e12) = 6.22 s; the model's 6.13 s
    a = llama3.llama3_step_time()
    assert a.published == "6.22 s"
    assert a.passed and a.model == "6.13 s"


def test_llama3_8k_row_is_predicted_from_the_16k_calibration():
    # [llama3] Table 4: 43 % MFU at 8,192 GPUs, 6·405e9·16,777,216 / (8,192 · 989.4e12 · 0.43)
    # = 11.70 s; the reference's layout, calibrated at 16,384 GPUs only, gives 43.4 % and
    # 11.59 s (tests/test_layout.py checks the arithmetic)
    a = llama3.llama3_8k_row()
    assert a.kind == PREDICTION
    assert a.published == "43 % (11.70 s a step)"
    assert a.passed and a.model == "43.4 % (11.59 s)"
    # the 16K row is the calibration, the 8K preset its own published point: not used twice
    assert not any("8,192 against 16,384" in what for what, _ in reproduce.NOT_USED)


def test_node_anchors_follow_the_scenario(tmp_path, monkeypatch):
    # Latif: 8.4 kW peak; the preset's rest_power_active (2.6 kW) was derived from it
    assert node.node_peak().passed
    # the anchors read the model at run time: a node with 400 W more of rest fails both
    changed = tmp_path / "changed.toml"
    changed.write_text(
        f'extends = "{REFERENCE}"\nname = "changed"\n[cluster]\nrest_power_active = 3000.0\n'
    )
    monkeypatch.setattr(node, "REFERENCE", str(changed))
    peak, share = node.node_peak(), node.node_training_share()
    assert not peak.passed and not share.passed
    # 400 W more DC through the supplies at ~98 % (the measured curve) is about 0.41 kW more AC
    assert float(peak.model.split()[0]) == pytest.approx(8.78, abs=0.02)


def test_young_daly_grid_brackets_the_optimum(anchors):
    # the 10-point grid spans 0.4-2.5 times √(2·MTBF·C) in equal ratios (1.226), so two of
    # its points lie within 20 % of it and the anchor can fail on either side
    grid = reliability.YOUNG_DALY_GRID
    assert grid.size == 10 and SEEDS >= 200
    assert np.sum(np.abs(grid - 1.0) <= 0.2) == 2
    assert anchors["Young/Daly optimum by simulation"].passed


def test_choukse_anchor_states_its_waveform(anchors):
    a = anchors["90 % smoothing floor energy"]
    # a two-phase step, compute at the limit 67.5 % of it, communication 30 % lower: a 90 %
    # floor raises its mean from 0.9025 to 0.9675 of the limit (+7.2 %) less the edges' share
    assert "67.5 % compute, 30 % trough" in a.model
    assert gpu_levers._floor_cost(0.675, 0.30) == pytest.approx(0.072, abs=0.008)


def test_report_path_must_be_html(tmp_path, capsys):
    with pytest.raises(PowerModelError, match="name it .html"):
        reproduce.check_report_path(tmp_path / "report.csv")
    (tmp_path / "a.html").mkdir()
    with pytest.raises(PowerModelError, match="is a folder"):
        reproduce.check_report_path(tmp_path / "a.html")
    # refused before any anchor runs: one line, exit 1
    assert main(["reproduce", "-o", str(tmp_path / "nowhere" / "r.html")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_report_is_offline_and_tells_kinds_apart(command, anchors):
    text = command[2].read_text(encoding="utf-8")
    bundle = get_plotlyjs()  # embedded once; the page loads nothing else
    assert text.count(bundle) == 1
    rest = text.replace(bundle, "")
    assert "<script src" not in rest and "cdn.plot.ly" not in rest
    assert rest.count("Plotly.newPlot(") == len(anchors)
    for kind in ("Prediction", "Calibration", "Identity", "Formula"):
        assert f"<h2>{kind} anchors</h2>" in text
    for what, _ in reproduce.NOT_USED:
        assert what.split(":")[0].replace("'", "&#x27;") in text
    # each miss with its reason, in the list of misses before the sections
    misses = text.split("<h2>Anchors the model misses</h2>")[1].split("<h2>")[0]
    assert misses.count("<li>") == len(OPEN)
    for name, why in reproduce.MISSES.items():
        assert f"<li>{name}: {why}".replace("'", "&#x27;") in misses


def test_report_in_headless_chromium(command, anchors):
    options = pytest_setup_options()
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options)
    try:
        browser.get(command[2].as_uri())
        figures = browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        assert len(figures) == len(anchors)
        for kind in reproduce.KINDS:
            shown = browser.find_elements(By.CSS_SELECTOR, f"section.{kind} .js-plotly-plot")
            assert len(shown) == sum(a.kind == kind for a in anchors.values())
        # each figure drew its data, not an empty frame
        assert all(f.find_elements(By.CSS_SELECTOR, ".main-svg") for f in figures)
        assert browser.get_log("browser") == []
    finally:
        browser.quit()
