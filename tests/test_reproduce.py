"""``powermodel reproduce``: the model against the published anchors (issue 12).

The anchors compute the model at run time: the tests check their numbers against the papers'
closed forms, that a changed default moves them, that the whole command prints the table and
exits by its verdict, and that the report opens offline in headless Chromium with one figure per
anchor.
"""

from __future__ import annotations

import contextlib
import io
import time

import numpy as np
import pytest
from conftest import REFERENCE, pytest_setup_options
from plotly.offline import get_plotlyjs
from selenium import webdriver
from selenium.webdriver.common.by import By

from powermodel import reproduce
from powermodel.cli import main
from powermodel.errors import PowerModelError

# Anchors that fail at this commit: the outside-air plant's water (0.091 L/kWh from Prineville
# building 1's published settings at Golden, against Meta's 0.22). Remove the name when it passes.
OPEN = {"WUE, outside-air-evaporative plant"}


@pytest.fixture(scope="module")
def command(tmp_path_factory):
    """One run of the whole command: its exit code, what it printed and the report."""
    report = tmp_path_factory.mktemp("reproduce") / "report.html"
    # what the command prints to stdout (its progress and errors go to stderr, left to pytest).
    # Not by replacing builtins.print: numba, when first imported inside the command, registers
    # whatever builtins.print is then and fails on a stand-in, leaving itself half imported.
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["reproduce", "-o", str(report)])
    return code, out.getvalue(), report, time.perf_counter() - start


@pytest.fixture(scope="module")
def anchors():
    """The anchors' records (the command's caches make this second run cheap for most)."""
    return {a.name: a for a in reproduce.run_anchors()}


def test_command_prints_the_table_and_exits_by_its_verdict(command, anchors):
    code, out, report, _ = command
    header = out.splitlines()[0].split()
    for column in ("anchor", "source", "published", "model", "tolerance", "kind", "result"):
        assert column in header
    failed = {name for name, a in anchors.items() if not a.passed}
    # every anchor passes but the ones other branches of issue 12 fix (see OPEN)
    assert failed == OPEN
    assert code == (0 if not failed else 3)
    assert f"{len(anchors) - len(failed)} of {len(anchors)} anchors pass" in out
    assert out.count(" FAIL ") == len(failed)
    assert report.is_file()


def test_every_anchor_says_whether_it_was_fitted(anchors):
    kinds = {a.kind for a in anchors.values()}
    assert kinds == {reproduce.CALIBRATED, reproduce.PREDICTED}
    # the coefficients fitted to published figures: the interruption rates (Table 5), the
    # leakage coefficient (diurnal swing), rest_power_active (Latif's peak), the outside-air
    # plant's fans (Meta's PUE), the MFU input (Table 4) behind the step time and the server
    # supplies' losses (MLPerf Training v4.0's AC and DC logs), the failure rate at ~100K GPUs
    # (FT-HSDP's synchronous 44 %)
    assert {n for n, a in anchors.items() if a.kind == reproduce.CALIBRATED} == {
        "Synchronous training at ~100K GPUs",
        "Llama 3 interruptions in 54 days",
        "Llama 3 interruptions by category",
        "Llama 3 diurnal throughput swing",
        "H100 node peak",
        "PUE, outside-air-evaporative plant",
        "Llama 3 step time, 16,384 GPUs",
        "Node AC/DC energy ratio",
    }


def test_the_whole_run_fits_the_budget(command, anchors):
    # issue 12: under 5 minutes here; it takes about 15 s on two cores
    assert command[3] < 300
    assert all(a.seconds > 0 for a in anchors.values())


def test_ft_hsdp_keeps_more_training_than_whole_job_restarts():
    # FT-HSDP [P, ft_hsdp]: 44 % synchronous (the failure rate fitted to it), 80 % with replica
    # restarts (predicted from the same rate and the published 3-min stall: 74.6 %)
    job, replica = (reproduce.ft_hsdp_training_time(s) for s in ("job", "replica"))
    assert abs(job.mean() - 0.44) <= 0.02
    assert abs(replica.mean() - 0.80) <= 0.10
    assert np.all(replica > job + 0.25)


def test_kokolis_mttf_against_the_closed_form():
    # Kokolis et al.: MTTF = 1 / (nodes · 6.50 per 1,000 node-days): 1.803 h at 2,048 nodes,
    # 0.2254 h at 16,384; the timelines' mean up time between failures within 3 standard
    # errors of an exponential mean over the failures seen
    for n_gpus in (16384, 131072):
        closed = 24.0 / (n_gpus / 8 * 6.50e-3)
        model, failures = reproduce.simulated_mttf(n_gpus, seeds=5)
        assert model == pytest.approx(closed, rel=3.0 / np.sqrt(failures))


def test_llama3_step_time_anchor():
    # [llama3] Table 4: 6·405e9·16,777,216 / (16,384 · 400e12) = 6.22 s; the model's 6.13 s
    a = reproduce.llama3_step_time()
    assert a.published == "6.22 s"
    assert a.passed and a.model == "6.13 s"


def test_llama3_8k_row_is_predicted_from_the_16k_calibration():
    # [llama3] Table 4: 43 % MFU at 8,192 GPUs, 6·405e9·16,777,216 / (8,192 · 989.4e12 · 0.43)
    # = 11.70 s; the reference's layout, calibrated at 16,384 GPUs only, gives 43.4 % and
    # 11.59 s (tests/test_layout.py checks the arithmetic)
    a = reproduce.llama3_8k_row()
    assert a.kind == reproduce.PREDICTED
    assert a.published == "43 % (11.70 s a step)"
    assert a.passed and a.model == "43.4 % (11.59 s)"
    # the 16K row is the calibration, the 8K preset its own published point: not used twice
    assert not any("8,192 against 16,384" in what for what, _ in reproduce.NOT_USED)


def test_node_anchors_follow_the_scenario(tmp_path, monkeypatch):
    # Latif: 8.4 kW peak; the preset's rest_power_active (2.6 kW) was derived from it
    assert reproduce.node_peak().passed
    # the anchors read the model at run time: a node with 400 W more of rest fails both
    changed = tmp_path / "changed.toml"
    changed.write_text(
        f'extends = "{REFERENCE}"\nname = "changed"\n[cluster]\nrest_power_active = 3000.0\n'
    )
    monkeypatch.setattr(reproduce, "REFERENCE", str(changed))
    peak, share = reproduce.node_peak(), reproduce.node_training_share()
    assert not peak.passed and not share.passed
    # 400 W more DC through the supplies at ~98 % (the measured curve) is about 0.41 kW more AC
    assert float(peak.model.split()[0]) == pytest.approx(8.78, abs=0.02)


def test_young_daly_grid_brackets_the_optimum(anchors):
    # the 10-point grid spans 0.4-2.5 times √(2·MTBF·C) in equal ratios (1.226), so two of
    # its points lie within 20 % of it and the anchor can fail on either side
    grid = reproduce.YOUNG_DALY_GRID
    assert grid.size == 10 and reproduce.SEEDS >= 200
    assert np.sum(np.abs(grid - 1.0) <= 0.2) == 2
    assert anchors["Young/Daly optimum by simulation"].passed


def test_choukse_anchor_states_its_waveform(anchors):
    a = anchors["90 % smoothing floor energy"]
    # a two-phase step, compute at the limit 67.5 % of it, communication 30 % lower: a 90 %
    # floor raises its mean from 0.9025 to 0.9675 of the limit (+7.2 %) less the edges' share
    assert "67.5 % compute, 30 % trough" in a.model
    assert reproduce._floor_cost(0.675, 0.30) == pytest.approx(0.072, abs=0.008)


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
    assert "Calibrated anchors" in text and "Predicted anchors" in text
    for what, _ in reproduce.NOT_USED:
        assert what.split(":")[0].replace("'", "&#x27;") in text


def test_report_in_headless_chromium(command, anchors):
    options = pytest_setup_options()
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options)
    try:
        browser.get(command[2].as_uri())
        figures = browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        assert len(figures) == len(anchors)
        for kind in (reproduce.CALIBRATED, reproduce.PREDICTED):
            shown = browser.find_elements(By.CSS_SELECTOR, f"section.{kind} .js-plotly-plot")
            assert len(shown) == sum(a.kind == kind for a in anchors.values())
        # each figure drew its data, not an empty frame
        assert all(f.find_elements(By.CSS_SELECTOR, ".main-svg") for f in figures)
        assert browser.get_log("browser") == []
    finally:
        browser.quit()
