"""The compare view's measured trace (issues 12, 27): an uploaded telemetry trace is read and
fitted on the server, and the page shows it, the fit's prediction (a fresh run) and its replay
over the trace's own timeline, both through the same sensor, the fit's table and the comparison,
with the fitted scenario to download or to load into the sidebar.

The traces are the model's own per-GPU power through NVML's 1-s average with noise and dropped
samples, as ``test_fit`` makes them from known parameters (its helpers, not a copy); expected
values come from :func:`powermodel.fit_report.fit_trace` on the same file, which the command
line runs, and from the known timeline.
"""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import plotly
import pytest
from dash import no_update
from dash.exceptions import PreventUpdate
from numpy.testing import assert_allclose
from synthetic_telemetry import shape, write
from test_fit import START, _trace, _truth

from powermodel.fit import summary
from powermodel.fit_report import PREDICTED, REPLAYED, fit_trace, proof_table
from powermodel.iotools import TelemetryWarning
from powermodel.models.events import State
from powermodel.scenario import load_scenario, loads_scenario
from powermodel.webapp import create_dashboard, fit_upload, plotting, uploads
from powermodel.webapp.controls import BY_PROP

HOUR = {"simulation.duration": "1h"}


@pytest.fixture
def board():
    board = create_dashboard(overrides=HOUR)
    yield board
    board.workdir.cleanup()


@pytest.fixture(scope="module")
def smi(tmp_path_factory) -> Path:
    """A 15-min nvidia-smi log of 4 GPUs at 100 ms: a start-up, checkpoints, one failure."""
    return write(_trace(6.0, 0.1), tmp_path_factory.mktemp("trace") / "smi.csv", "nvidia-smi")


@pytest.fixture(scope="module")
def cli_run(smi, tmp_path_factory):
    """What ``powermodel fit`` makes of the same file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        return fit_trace(smi, tmp_path_factory.mktemp("cli") / "fitted.toml")


def _url(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return "data:text/csv;base64," + base64.b64encode(raw).decode()


def _upload(
    board, path: Path, period=None, gpus=None, name: str | None = None, poll=None, gpu=None
) -> tuple:
    return board.fit_trace(_url(path.read_bytes()), period, gpus, poll, gpu, name or path.name)


def _refused(answer: tuple) -> str:
    """The message of an upload refused; everything else the page shows stays as it was."""
    store, message, *shown = answer
    assert store is no_update and all(s is no_update for s in shown)
    assert message.endswith("— the fit shown is unchanged")
    return message


def test_an_uploaded_trace_and_its_fit_are_overlaid(board, smi, cli_run):
    store, message, figure, table, numbers = _upload(board, smi)
    # the page's figure holds, at full resolution behind its thinned points, the trace as the
    # sensor reported it (the GPUs' mean), the fit's prediction (a fresh run) and its replay,
    # both through the same sensor: those the command line's fit computes from the same file
    measured, predicted, replayed = figure.hf_data
    assert measured["name"] == "measured (as the NVML sensor reported it)"
    assert predicted["name"] == "predicted (fresh run), through the same NVML sensor"
    assert replayed["name"] == "replay (the trace's own timeline), through the same NVML sensor"
    assert_allclose(measured["y"], cli_run.result.power, rtol=1e-12)
    assert_allclose(predicted["y"], cli_run.predicted.power, rtol=1e-12, equal_nan=True)
    assert_allclose(replayed["y"], cli_run.replayed, rtol=1e-12)
    times = cli_run.result.start + (cli_run.result.times * 1e9).astype("timedelta64[ns]")
    assert (pd.DatetimeIndex(measured["x"]) == pd.DatetimeIndex(times)).all()
    assert cli_run.result.start == START + np.timedelta64(100, "ms")  # the first poll
    # the browser gets at most SHOWN points of each, re-chosen on each zoom
    assert [len(t.x) for t in figure.data] == [plotting.SHOWN] * 3
    # the fit's table and the comparison, row for row as the CLI's report prints them, the
    # prediction's column before the replay's
    want = summary(cli_run.result)[["quantity", "fitted", "resolved", "how"]]
    assert table == want.astype(str).to_dict("records")
    shown = proof_table(cli_run.result, cli_run.predicted, cli_run.replayed)
    assert numbers == shown.astype(str).to_dict("records")
    assert list(numbers[0]) == ["what", "measured", PREDICTED, REPLAYED]
    assert REPLAYED == "replay (the trace's own timeline)"
    # acceptance 1: energy within 2 % and every checkpoint of the known timeline, replayed;
    # the prediction (no failure drawn where the trace has one) within one checkpoint
    _, _, _, state, _, _ = _truth(6.0)
    checkpoints = np.count_nonzero(state == State.CHECKPOINT)
    assert abs(cli_run.numbers["energy_error"]) < 0.02
    assert numbers[2]["what"] == "checkpoint dips"
    assert numbers[2]["measured"] == numbers[2][REPLAYED].split()[0] == str(checkpoints)
    assert abs(cli_run.predicted.numbers["checkpoint_error"]) <= 1
    assert message.startswith("fitted smi.csv: gpu trace, 4 GPUs, sampled every 100ms")
    assert f"{checkpoints} dips ({checkpoints} measured)" in message and "Repaired:" in message
    assert message.index("predicted by a fresh run") < message.index("replay (the trace's own")
    # the store holds the scenario's text, not arrays; nothing of the upload is left on disk
    assert store["toml"] == cli_run.text and store["upload"] == "fit-of-smi.toml"
    assert set(store) == {"key", "upload", "toml"}
    assert list(board.traces.iterdir()) == []


def test_a_zoom_on_the_fit_sends_the_windows_samples(board, smi, cli_run):
    store, *_ = _upload(board, smi)
    window = {"xaxis.range[0]": "2024-07-01 00:05:00", "xaxis.range[1]": "2024-07-01 00:05:30"}
    patch = board.fit_zoom(window, store).to_plotly_json()
    # 30 s at 100 ms: every sample of the window (about 300 less the 2 % dropped), unthinned,
    # of the trace, the prediction and the replay
    shown = [op for op in patch["operations"] if op["location"][-1] == "y"]
    assert len(shown) == 3
    assert all(270 <= len(op["params"]["value"]) <= 302 for op in shown)
    with pytest.raises(PreventUpdate):
        board.fit_zoom(window, {"key": "evicted-or-forged"})


def test_the_fitted_scenario_downloads_as_written(board, smi, cli_run):
    store, *_ = _upload(board, smi)
    sent = board.fit_toml(1, store)
    # the text the fit wrote, with its [C] tags and why each unresolved value is kept
    assert sent["content"] == cli_run.text and sent["filename"] == "fit-of-smi.toml"
    assert "[C] fit of smi.csv" in sent["content"]
    assert loads_scenario(sent["content"]) == cli_run.scenario
    with pytest.raises(PreventUpdate):  # a store no fit made sends nothing
        board.fit_toml(1, {"upload": "x.toml", "toml": "[simulation\n"})


def test_the_fitted_scenario_loads_into_the_sidebar(board, smi, cli_run):
    store, *_ = _upload(board, smi)
    base, values, dates, preset, tab, message = board.load_fit(1, store)
    assert base == {"upload": "fit-of-smi.toml", "toml": cli_run.text}
    assert preset is no_update and tab is no_update
    assert message == "loaded fit-of-smi.toml, the scenario fitted to the trace, over 1h"
    # the controls show the fitted values over the period every preset opens with (the app's
    # 1 h here); the scenario the page then assembles is the fitted one over that period
    state, refused = board.assemble(base, values, dates)
    assert refused == ""
    want = load_scenario(cli_run.scenario, HOUR)
    assert board.scenario(state) == want
    assert want.workload.step_time == cli_run.scenario.workload.step_time
    assert want.checkpoint.write_time == pytest.approx(3.0, abs=0.1)  # the known 3-s stall
    assert len(values) == len(BY_PROP["value"]) and len(dates) == len(BY_PROP["date"])
    # a forged store is refused in words, the sidebar unchanged
    forged = {"upload": "../../x.toml", "toml": 'extends = "/etc/passwd"\n'}
    *_, said = board.load_fit(1, forged)
    assert "the scenario shown is unchanged" in said and "/etc/passwd" in said
    assert board.load_fit(1, None)[-1].startswith("no fitted scenario: upload a trace first")


def test_a_dmon_file_needs_its_period_and_fits_once_given(board, tmp_path):
    path = write(_trace(6.0, 0.1), tmp_path / "dmon.txt", "dcgmi-dmon")
    said = _refused(_upload(board, path))
    assert said.startswith("dmon.txt: dcgmi dmon prints no times")
    assert "give 'period [s]'" in said
    assert str(board.traces) not in said  # the file is named as it came, not as stored
    # the period box given: the same upload fits (dmon's -d 100 is 0.1 s)
    store, message, *_ = _upload(board, path, period=0.1)
    assert message.startswith("fitted dmon.txt: gpu trace, 4 GPUs, sampled every 100ms")


def test_a_meter_trace_needs_the_gpus_behind_each_channel(board, tmp_path):
    path = write(_trace(6.0, 1.0, meter=True), tmp_path / "meters.csv", "meter", unit="kW")
    said = _refused(_upload(board, path))
    assert "a meter trace reads nodes, not GPUs: give 'GPUs per meter channel'" in said
    said = _refused(_upload(board, path, gpus=12))
    assert "'GPUs per meter channel' 12: a meter feeds whole nodes" in said
    _, message, *_ = _upload(board, path, gpus=8)
    # two 8-GPU nodes metered: 16 GPUs behind the two channels
    assert message.startswith("fitted meters.csv: meter trace, 16 GPUs, sampled every 1s")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("this is not telemetry\n1,2,3\n", "bad.csv:"),
        ("", "bad.csv: the file is empty"),
        ("\x00\x01\x02 binary", "bad.csv: a binary file"),
    ],
    ids=["malformed", "empty", "binary"],
)
def test_a_file_that_is_no_trace_says_why(board, tmp_path, text, said):
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    assert _refused(_upload(board, path)).startswith(said)
    assert list(board.traces.iterdir()) == []


def test_a_trace_over_the_upload_limit_is_refused_before_it_is_read(board, monkeypatch):
    read = []
    monkeypatch.setattr(uploads, "read_telemetry", lambda *a: read.append(a))
    big = _url(b"x" * (board.upload_limit + 3))
    said = _refused(board.fit_trace(big, None, None, None, None, "big.csv"))
    assert said.startswith("big.csv is 5.0 MB; the dashboard takes files up to 5 MB")
    assert read == []


def _gapped_meter(path: Path, channels: int, blocks: int) -> Path:
    """A meter CSV of ``blocks`` minutes at 1 s, each 23 h after the one before: a long span
    in a small file."""
    t = np.concatenate([np.arange(60.0) + b * 23 * 3600 for b in range(blocks)])
    frame = pd.DataFrame(
        {
            "time": np.repeat(START + (t * 1e9).astype("timedelta64[ns]"), channels),
            "channel": np.tile([f"node{i}" for i in range(channels)], t.size),
            "power": 5000.0,
        }
    )
    return write(frame, path, "meter")


def test_a_trace_the_dashboard_cannot_fit_in_bounds_is_refused_before_the_fit(
    board, tmp_path, monkeypatch
):
    monkeypatch.setattr(fit_upload.fitting, "fit", lambda *a: pytest.fail("fitted"))
    # 46 h at 1 s: a replay at 50 ms of 3.3 M steps, over the 2 M the dashboard renders
    said = _refused(_upload(board, _gapped_meter(tmp_path / "long.csv", 1, 3), gpus=8))
    assert said.startswith(
        "long.csv spans 46.0 h: the dashboard replays a fit over at most 27.8 h of a trace "
        "sampled every 1s"
    )
    # 50 channels over 23 h 59 s at 1 s: 50 × 82,860 samples on the grid, over its 4 M
    said = _refused(_upload(board, _gapped_meter(tmp_path / "wide.csv", 50, 2), gpus=8))
    assert "make 4,143,000 samples, more than the dashboard fits (4,000,000)" in said


def test_a_trace_the_fit_cannot_use_says_why(board, tmp_path):
    # ten polls hold no state to fit (the fit needs 20 samples)
    trace = _trace(6.0, 0.1)
    short = trace[trace["time"] < START + np.timedelta64(1, "s")]
    path = write(short, tmp_path / "short.csv", "nvidia-smi")
    assert "the fit needs at least 20" in _refused(_upload(board, path))


@pytest.mark.parametrize(
    ("period", "gpus", "said"),
    [
        ("0.1", None, "period [s]: '0.1' is not a number"),
        (True, None, "period [s]: True is not a number"),
        (None, 2.5, "GPUs per meter channel: 2.5 is not a whole number"),
        (None, float("inf"), "GPUs per meter channel: inf is not a number"),
        (1e-9, None, "period 1e-09 s is not within 1 ms to 1 day"),
    ],
)
def test_the_boxes_take_numbers_only(board, smi, period, gpus, said):
    assert said in _refused(_upload(board, smi, period, gpus))


def test_a_second_fit_waits_for_the_first_then_says_busy(board, smi, monkeypatch):
    monkeypatch.setattr(fit_upload, "SLOT_WAIT", 0.01)
    board._fitting.acquire()
    try:
        said = _refused(_upload(board, smi))
    finally:
        board._fitting.release()
    assert said.startswith("busy: another trace is being fitted")


def test_an_upload_name_is_never_a_path(board, smi):
    store, message, *_ = _upload(board, smi, name="../../etc/cron.d/x y.csv")
    assert message.startswith("fitted etc-cron.d-x-y.csv:")
    assert store["upload"] == "fit-of-etc-cron.d-x-y.toml"
    assert list(board.traces.iterdir()) == []


def test_the_same_trace_under_two_names_shows_each_uploader_only_their_own(board, smi):
    # issue 26: fits were kept by the trace's bytes, so a second user uploading the same bytes
    # under another name saw the first one's name in the message, the store and the TOML
    data = smi.read_bytes()
    seen = {}
    for name in ("alice-gpus.csv", "bob-gpus.csv"):
        store, message, figure, table, numbers = board.fit_trace(
            _url(data), None, None, None, None, name
        )
        sent = board.fit_toml(1, store)
        # the figure's words (its traces' names, its layout), not its arrays of numbers, whose
        # base64 may spell any three letters (a prediction's held "bob" once)
        words = figure.to_plotly_json()
        words["data"] = [{k: v for k, v in t.items() if k not in ("x", "y")} for t in words["data"]]
        shown = [store, message, words, table, numbers, sent]
        seen[name] = json.dumps(shown, cls=plotly.utils.PlotlyJSONEncoder)
        stem = name.removesuffix(".csv")
        assert message.startswith(f"fitted {name}: gpu trace, 4 GPUs")
        assert store["upload"] == sent["filename"] == f"fit-of-{stem}.toml"
        assert (
            f"[C] fit of {name}" in sent["content"] and f'name = "fit of {name}"' in sent["content"]
        )
        loaded = board.load_fit(1, store)
        assert loaded[-1].startswith(f"loaded fit-of-{stem}.toml, the scenario fitted")
    assert "bob" not in seen["alice-gpus.csv"] and "alice" not in seen["bob-gpus.csv"]
    # each fit is an input of the cache, counted under its bound with the runs
    first = board.cache.find(json.loads(seen["alice-gpus.csv"])[0]["key"])
    assert first is not None and first.nbytes > first.ds["result"].power.nbytes
    assert board.cache.nbytes <= board.cache.max_bytes


def test_a_log_without_index_and_a_gpu_named_fit_in_the_compare_view(board, tmp_path):
    # issue 27: the page takes what `powermodel fit --gpus N --gpu NAME` takes. A 2-GPU log
    # without index of a 250-W part (synthetic_telemetry's "250w-x2" shape: stamps spread over
    # the poll, slow polls, overlaps) is counted by line, its GPU count inferred from the
    # memory each GPU holds or stated in the box, and fitted on the GPU chosen in the list
    frame, fmt, options = shape("250w-x2", polls=1200)
    path = write(frame, tmp_path / "smi-noindex.csv", fmt, **options)
    inferred = _upload(board, path)
    stated = _upload(board, path, poll=2)
    for store, message, *_ in (inferred, stated):
        assert store is not no_update, message
        assert "2 GPUs" in message or "2 GPU" in message
    # a 250-W part is not the preset's H100: without a GPU named the fit builds one
    assert "[gpu]" in inferred[0]["toml"]
    named = _upload(board, path, gpu="A100-PCIe")
    assert 'gpu = "A100-PCIe"' in named[0]["toml"].replace("  ", " ")
    # a count the lines do not hold is refused with the box's name, not the CLI option's
    said = _refused(_upload(board, path, poll=3))
    assert "'GPUs per poll'" in said and "--gpus" not in said


@pytest.mark.parametrize(
    ("gpus", "poll", "said"),
    [
        (0, None, "'GPUs per meter channel' 0 is not a whole number of GPUs from 1 to 100,000"),
        (10**6, None, "'GPUs per meter channel' 1000000 is not a whole number of GPUs"),
        (None, 0, "'GPUs per poll' 0 is not a whole number of GPUs from 1 to 64"),
        (None, 65, "'GPUs per poll' 65 is not a whole number of GPUs from 1 to 64"),
    ],
)
def test_a_box_out_of_range_is_named_as_the_box(board, smi, gpus, poll, said):
    # the reader checks its keywords before reading the trace; the page names its boxes, never
    # the Python keyword (gpus_per_node=, gpus=)
    message = _refused(_upload(board, smi, gpus=gpus, poll=poll))
    assert said in message and "gpus_per_node" not in message and ": gpus " not in message
