"""The dashboard in headless Chromium (dash.testing): whole flows as a user drives them.

Expected values come from ``simulate`` and ``metrics`` on the scenario the page should show;
waits are for text or data, never sleeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.testing import assert_allclose
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait
from synthetic_telemetry import write
from test_fit import _trace

from powermodel import load_scenario, metrics, presets, ride_through, rules, simulate
from powermodel.analysis import resample, workloads
from powermodel.fit import summary as fit_summary
from powermodel.fit_report import fit_trace
from powermodel.simulate import sensor_view
from powermodel.sweep import sweep
from powermodel.sweep import write as write_sweep
from powermodel.webapp import create_app, create_dashboard, ids, tables
from powermodel.webapp.layout import DEFAULT_RULES, summary

REFERENCE = "llama3-405b-16k-h100"
ONE_DAY = {"simulation.duration": "1d"}
DAY = 86400.0


def _selector(component_id: dict) -> str:
    """CSS selector of a pattern-matched component (Dash writes its id as sorted JSON)."""
    text = json.dumps(component_id, sort_keys=True, separators=(",", ":"))
    return '[id="' + text.replace('"', '\\"') + '"]'


POWER = _selector(ids.resampled("power"))
# Plotly 6 sends arrays base64-encoded; plotly.js decodes them into _fullData.
TRACES = """
const gd = document.querySelector(arguments[0] + ' .js-plotly-plot');
if (!gd || !gd._fullData) { return null; }
return gd._fullData.map(
  (t) => ({name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || [])})
);
"""


# how many lines a table cell's text takes, and whether it is cut (an ellipsis)
LINES = """
const cell = document.querySelector(arguments[0]);
if (!cell) { return null; }
const text = cell.querySelector('.ag-cell-value') || cell;
const range = document.createRange();
range.selectNodeContents(text);
const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
return {lines: tops.size, cut: text.scrollWidth > text.clientWidth + 1, text: cell.innerText};
"""


def _cell(dash_duo, table: str, column: str, row: int = 0) -> dict | None:
    selector = f"#{table} .ag-center-cols-container .ag-row[row-index='{row}'] [col-id='{column}']"
    return dash_duo.driver.execute_script(LINES, selector)


def _traces(dash_duo, selector: str = POWER) -> list[dict] | None:
    return dash_duo.driver.execute_script(TRACES, selector)


def _wait(dash_duo, condition, timeout: float = 60):
    """Wait until ``condition()`` holds; a condition that raises (no graph yet) is not met."""

    def met(_):
        try:
            return condition()
        except (TypeError, ValueError, IndexError):
            return False

    return WebDriverWait(dash_duo.driver, timeout).until(met)


def _expected_summary(overrides: dict, preset: str = REFERENCE) -> tuple[str, object]:
    ds = simulate(load_scenario(preset, overrides))
    return summary(metrics(ds), DAY), ds


def _choose(dash_duo, dropdown_id: str, label: str) -> None:
    """Pick an option of a dcc.Dropdown by its text, as a user does."""
    dash_duo.find_element(f"#{dropdown_id}").click()
    option = _wait(
        dash_duo,
        lambda: next(
            (
                o
                for o in dash_duo.driver.find_elements(By.CSS_SELECTOR, "[role=option]")
                if o.text == label
            ),
            None,
        ),
    )
    option.click()


def test_page_loads_the_reference_with_a_clean_console(dash_duo):
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    expected, ds = _expected_summary(ONE_DAY)
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    failures = metrics(ds)["unexpected_interruptions"]
    dash_duo.wait_for_contains_text(f"{POWER} .legend", f"failure ({failures})")
    assert dash_duo.driver.title == "powermodel"
    assert dash_duo.get_logs() == []


def test_a_warm_servers_first_page_comes_with_its_run_and_edits_from_it(dash_duo):
    # issue 30: a warm server's first page holds the opening run's summary and state
    # (first_page), its power view is asked for at once; an edit then runs as on any page,
    # and a link to another scenario is served the page that sets it
    board = create_dashboard(overrides=ONE_DAY)
    board.warm().result(timeout=120)
    dash_duo.start_server(board.app)
    expected, ds = _expected_summary(ONE_DAY)
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    assert dash_duo.find_element(f"#{ids.SCENARIO_NAME}").text == REFERENCE
    failures = metrics(ds)["unexpected_interruptions"]
    dash_duo.wait_for_contains_text(f"{POWER} .legend", f"failure ({failures})")
    slider = dash_duo.find_element(
        f"{_selector(ids.control('workload.trough_depth'))} [role=slider]"
    )
    slider.send_keys(Keys.ARROW_RIGHT)
    changed = {**ONE_DAY, "workload.trough_depth": 0.35}
    expected, ds = _expected_summary(changed)
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    _wait(dash_duo, lambda: min(_traces(dash_duo)[1]["y"]) == float(ds["it_power"].min()))
    assert "workload.trough_depth=0.35" in dash_duo.driver.current_url
    dash_duo.driver.get(f"{dash_duo.server_url}/?preset={REFERENCE}&cluster.n_gpus=8192")
    expected, _ = _expected_summary({**ONE_DAY, "cluster.n_gpus": 8192})
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    assert dash_duo.get_logs() == []


def test_preset_and_slider_update_the_graphs(dash_duo):
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_summary(ONE_DAY)[0])

    expected, ds = _expected_summary(ONE_DAY, "llama3-405b-8k-h100")
    _choose(dash_duo, ids.PRESET, "llama3-405b-8k-h100")
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", "llama3-405b-8k-h100")
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    # the shown IT power keeps the run's extremes (min-max LTTB): they are the new run's
    _wait(dash_duo, lambda: max(_traces(dash_duo)[1]["y"]) == float(ds["it_power"].max()))

    # trough depth 0.30 -> 0.35: one step of its slider, by keyboard
    slider = dash_duo.find_element(
        f"{_selector(ids.control('workload.trough_depth'))} [role=slider]"
    )
    slider.send_keys(Keys.ARROW_RIGHT)
    changed = {**ONE_DAY, "workload.trough_depth": 0.35}
    expected, ds = _expected_summary(changed, "llama3-405b-8k-h100")
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    _wait(dash_duo, lambda: min(_traces(dash_duo)[1]["y"]) == float(ds["it_power"].min()))
    assert "workload.trough_depth=0.35" in dash_duo.driver.current_url  # the link follows
    assert dash_duo.get_logs() == []


def test_zoom_to_thirty_seconds_shows_iterations(dash_duo):
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    ds = simulate(load_scenario(REFERENCE, ONE_DAY))
    _wait(dash_duo, lambda: _traces(dash_duo) is not None and len(_traces(dash_duo)) > 3)
    start = pd.Timestamp("2024-07-01 12:00:00")
    window = [str(start), str(start + pd.Timedelta(seconds=30))]
    dash_duo.driver.execute_script(
        "Plotly.relayout(document.querySelector(arguments[0] + ' .js-plotly-plot'),"
        " {'xaxis.range': arguments[1]});",
        POWER,
        window,
    )
    # plotly-resampler sends the window's samples: every 1-s value, not a thinned overview
    _wait(dash_duo, lambda: len(_traces(dash_duo)[1]["x"]) < 100)
    it = _traces(dash_duo)[1]
    x = pd.to_datetime(it["x"])
    inside = (x >= window[0]) & (x <= window[1])
    want = ds["it_power"].sel(time=slice(*window)).values
    assert inside.sum() == want.size == 31
    assert_allclose(np.asarray(it["y"])[inside], want, rtol=1e-12)
    # individual iterations: a dip every 6.13 s step ([D, llama3]), about five in 30 s
    dips = np.sum((want[1:-1] < want[:-2]) & (want[1:-1] <= want[2:]))
    assert 4 <= dips <= 6
    assert dash_duo.get_logs() == []


def test_csv_download_matches_simulate(dash_duo):
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('export') + 1})").click()
    _choose(dash_duo, ids.EXPORT_INTERVAL, "1min")
    dash_duo.wait_for_contains_text(f"#{ids.EXPORT_NOTE}", "1,440 rows at 1min")
    dash_duo.find_element(f"#{ids.EXPORT_LINK}").click()
    target = Path(dash_duo.download_path) / f"{REFERENCE}-profile.csv"  # the scenario's name
    _wait(dash_duo, target.is_file)
    table = pd.read_csv(target)
    coarse = resample(simulate(load_scenario(REFERENCE, ONE_DAY)), "1min")
    assert len(table) == 1440
    for name in ("it_power", "it_power_min", "it_power_max", "grid_power", "facility_power"):
        # to the CSV's 7 significant digits (powermodel.export.CSV_DIGITS)
        assert_allclose(table[f"{name} [MW]"], coarse[name].values, rtol=5e-7, atol=0)
    assert dash_duo.get_logs() == []


def test_malformed_upload_shows_an_error_and_the_app_still_works(dash_duo, tmp_path):
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_summary(ONE_DAY)[0])
    bad = tmp_path / "broken.toml"
    bad.write_text("[simulation\nduration = \n")
    dash_duo.find_element(f"#{ids.UPLOAD_SCENARIO} input[type=file]").send_keys(str(bad))
    dash_duo.wait_for_contains_text(f"#{ids.MESSAGE}", "broken.toml: TOML syntax error")
    dash_duo.wait_for_contains_text(f"#{ids.MESSAGE}", "the scenario shown is unchanged")

    gpus = dash_duo.find_element(f"{_selector(ids.control('cluster.n_gpus'))}")
    gpus.send_keys(Keys.CONTROL, "a")
    gpus.send_keys("8192", Keys.ENTER)
    expected = _expected_summary({**ONE_DAY, "cluster.n_gpus": 8192})[0]
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    assert dash_duo.get_logs() == []


def test_choosing_a_violation_shows_it_on_the_time_axis(dash_duo):
    board = create_dashboard(REFERENCE, ONE_DAY)
    dash_duo.start_server(board.app)
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    # issue 28 (4): the grid view is built ahead, while the power view is open, for the page's
    # rules (it was built for none, and then again on the tab's first visit: 19-20 s a week)
    built = f"grid:{','.join(rules.shipped(DEFAULT_RULES))}"
    entry = board.cache.get(load_scenario(REFERENCE, ONE_DAY))  # the page's run, kept
    _wait(dash_duo, lambda: built in entry.views, 120)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('grid') + 1})").click()
    first = dash_duo.wait_for_element(f"#{ids.VIOLATIONS} .ag-row[row-index='0'] .ag-cell", 120)
    start = pd.Timestamp(
        dash_duo.find_element(f"#{ids.VIOLATIONS} .ag-row[row-index='0'] [col-id='start']").text
    )
    first.click()
    grid = _selector(ids.resampled("grid"))
    script = "return document.querySelector(arguments[0] + ' .js-plotly-plot').layout.xaxis.range"
    # the grid figure zooms to the violation, a minute either side, and gets that window's
    # samples from the server
    _wait(
        dash_duo,
        lambda: (
            pd.Timestamp(dash_duo.driver.execute_script(script, grid)[0])
            == start - pd.Timedelta(minutes=1)
        ),
    )
    _wait(dash_duo, lambda: len(_traces(dash_duo, grid)[0]["x"]) < 400)

    # issue 28 (7): the table lists events (a restart's ramp gave 8 rows 2 s apart), each with
    # its count and worst value; it filters by rule and by cause; the CSV keeps every row
    ds = simulate(load_scenario(REFERENCE, ONE_DAY))
    table = rules.violations_table([rules.check(ds, rules.load_rules(DEFAULT_RULES))])
    events = tables.violation_events(table)
    dash_duo.wait_for_contains_text(
        f"#{ids.VIOLATIONS_NOTE}", f"{len(table):,} violations in {len(events):,} events"
    )
    assert len(events) < len(table)

    def listed() -> int:
        text = dash_duo.find_element(f"#{ids.VIOLATIONS} .ag-paging-row-summary-panel").text
        return int(text.rsplit(" ", 1)[-1].replace(",", ""))

    _wait(dash_duo, lambda: listed() == len(events))
    rule, cause = dash_duo.driver.find_elements(
        By.CSS_SELECTOR, f"#{ids.VIOLATIONS} .ag-floating-filter input"
    )
    rule.send_keys("nprr1191-up")
    _wait(dash_duo, lambda: listed() == (events["rule"] == "nprr1191-up").sum())
    cause.send_keys("restart")
    restarts = events[(events["rule"] == "nprr1191-up") & (events["cause"] == "restart")]
    _wait(dash_duo, lambda: listed() == len(restarts))
    first = f"#{ids.VIOLATIONS} .ag-center-cols-container .ag-row[row-index]"
    row = dash_duo.find_element(first)
    count = int(row.find_element(By.CSS_SELECTOR, "[col-id='violations']").text)
    assert count == restarts["violations"].iloc[0] > 1
    for column in ("start", "end"):  # on one line, uncut (issue 28, 6)
        assert _cell(dash_duo, ids.VIOLATIONS, column) == {
            "lines": 1,
            "cut": False,
            "text": f"{restarts[column].iloc[0]:%Y-%m-%d %H:%M:%S}",
        }
    dash_duo.driver.save_screenshot("/tmp/issue28-violation-events.png")
    dash_duo.find_element(f"#{ids.VIOLATIONS_NOTE} a").click()
    target = Path(dash_duo.download_path) / f"{REFERENCE}-violations.csv"
    _wait(dash_duo, target.is_file)
    assert len(pd.read_csv(target)) == len(table)  # every violation, not the events
    assert dash_duo.get_logs() == []


def test_start_date_and_refused_values_in_the_browser(dash_duo):
    # issue 10: the start-date control did nothing (it holds its value in `date`, the callbacks
    # read `value`) and a link's start showed "Select Date"; -5 GPUs said "Input should be a
    # valid integer" (the browser sent None for a number below the box's min)
    link = f"/?preset={REFERENCE}&simulation.start=2024-08-01"
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.driver.get(dash_duo.server_url + link)
    date = dash_duo.find_element(_selector(ids.control("simulation.start", "date")))  # the input
    _wait(dash_duo, lambda: date.get_attribute("value") == "2024-08-01")
    date.send_keys(Keys.CONTROL, "a")
    date.send_keys("2024-09-15", Keys.ENTER)
    _wait(dash_duo, lambda: "simulation.start=2024-09-15" in dash_duo.driver.current_url)
    expected = _expected_summary({**ONE_DAY, "simulation.start": "2024-09-15T00:00:00"})[0]
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)

    gpus = dash_duo.find_element(_selector(ids.control("cluster.n_gpus")))
    gpus.send_keys(Keys.CONTROL, "a")
    gpus.send_keys("-5", Keys.ENTER)
    dash_duo.wait_for_contains_text(
        f"#{ids.SCENARIO_ERROR}", "cluster.n_gpus: Input should be greater than 0 (got -5)"
    )
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)  # the last good run stays
    assert dash_duo.get_logs() == []


def test_as_measured_by_overlays_the_chosen_sensor(dash_duo):
    six_hours = {"simulation.duration": "6h"}
    dash_duo.start_server(create_app(overrides=six_hours))
    view = sensor_view(simulate(load_scenario(REFERENCE, six_hours)), "revenue")
    _wait(dash_duo, lambda: _traces(dash_duo) is not None and len(_traces(dash_duo)) > 3)
    _choose(dash_duo, ids.SENSOR, "revenue meter")
    name = view.attrs["long_name"]
    shown = _wait(dash_duo, lambda: next((t for t in _traces(dash_duo) if t["name"] == name), None))
    # the meter's 15-min block demands, each held for its block: the page's are the library's;
    # before the first block ends the meter has reported nothing, a gap in the line (null)
    readings = view.values[np.isfinite(view.values)]
    assert_allclose(
        sorted({y for y in shown["y"] if y is not None}), sorted(set(readings)), rtol=1e-12
    )
    assert None in shown["y"]
    assert dash_duo.get_logs() == []


def test_an_uploaded_trace_is_fitted_and_overlaid_in_the_compare_view(dash_duo, tmp_path):
    trace = write(_trace(6.0, 0.1), tmp_path / "smi.csv", "nvidia-smi")
    run = fit_trace(trace, tmp_path / "fitted.toml")
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('compare') + 1})").click()
    dash_duo.find_element(f"#{ids.UPLOAD_TRACE} input[type=file]").send_keys(str(trace))
    # the fit's table: its step time as the command line's fit of the same file finds it
    step = fit_summary(run.result).set_index("quantity").loc["step time", "fitted"]
    dash_duo.wait_for_contains_text(f"#{ids.FIT_TABLE}", step, timeout=60)
    dash_duo.wait_for_contains_text(f"#{ids.FIT_MESSAGE}", "fitted smi.csv: gpu trace, 4 GPUs")
    shown = _wait(dash_duo, lambda: _traces(dash_duo, f"#{ids.FIT_GRAPH}"))
    assert [t["name"] for t in shown] == [
        "measured (as the NVML sensor reported it)",
        "predicted (fresh run), through the same NVML sensor",
        "replay (the trace's own timeline), through the same NVML sensor",
    ]
    # the comparison's columns: the prediction before the replay, labelled
    dash_duo.wait_for_contains_text(f"#{ids.FIT_NUMBERS}", "replay (the trace's own timeline)")
    header = dash_duo.find_element(f"#{ids.FIT_NUMBERS}").text
    assert header.index("predicted (fresh run)") < header.index("replay (the trace's own")
    # loaded into the sidebar: the header names the fitted scenario
    dash_duo.find_element(f"#{ids.FIT_LOAD}").click()
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", "fit of smi.csv")
    assert dash_duo.get_logs() == []


def test_an_uploaded_sweep_is_drawn_in_the_sweep_view(dash_duo, tmp_path):
    # issue 13: a sweep's results file opened in the dashboard; the P50 line's values are the
    # median over the seeds of the file's own numbers (numpy's, the rule pandas uses too)
    grid = {"workload.trough_depth": [0.3, 0.5]}
    fixed = {"simulation.duration": "2h", "reliability.rate_scale": 50.0}
    ds = sweep(REFERENCE, grid, 3, overrides=fixed, workers=0, progress=False)
    results = write_sweep(ds, tmp_path / "results.nc")
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('sweep') + 1})").click()
    dash_duo.find_element(f"#{ids.UPLOAD_SWEEP} input[type=file]").send_keys(str(results))
    dash_duo.wait_for_contains_text(
        f"#{ids.SWEEP_MESSAGE}", "results.nc: 6 runs (3 seeds a point) over workload.trough_depth"
    )
    shown = _wait(dash_duo, lambda: _traces(dash_duo, f"#{ids.SWEEP_GRAPH}"))
    line = next(t for t in shown if t["name"] == "all points")
    assert line["x"] == [0.3, 0.5]
    expected = np.median(ds["grid_swing_5s_mw"].values, axis=-1)
    assert_allclose(line["y"], expected, rtol=1e-9)
    # issue 28 (6): the axes with their units: the key's from the schema (a fraction), the
    # metric's from the file
    script = "return document.querySelector(arguments[0] + ' .js-plotly-plot').layout"
    axes = dash_duo.driver.execute_script(script, f"#{ids.SWEEP_GRAPH}")
    assert axes["xaxis"]["title"]["text"] == "workload.trough_depth [1]"
    assert axes["yaxis"]["title"]["text"] == "grid_swing_5s_mw [MW]"
    assert dash_duo.get_logs() == []


def test_the_campus_view_stacks_the_workloads_and_the_halls(dash_duo):
    # issue 14: a campus preset's workloads stacked, its halls below, its numbers in a table;
    # the stacked values are the library's own per-workload means over the figure's intervals
    campus = "mixed-campus-hopper-blackwell"
    ds = simulate(load_scenario(campus, ONE_DAY))
    dash_duo.start_server(create_app(campus, overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", campus)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('campus') + 1})").click()
    dash_duo.wait_for_text_to_equal(f"#{ids.CAMPUS_NOTE}", "4 workloads in 2 halls")
    shown = _wait(dash_duo, lambda: _traces(dash_duo, f"#{ids.CAMPUS_GRAPH}"))
    assert [t["name"] for t in shown] == [
        "llama3-405b", "pretrain-gb200", "finetune", "chat", "hall hopper", "hall blackwell"
    ]  # fmt: skip
    factor = -(-ds.sizes["time"] // 2000)
    chat = ds.workload_it_power.sel(workload="chat").values
    chat = chat[: chat.size // factor * factor].reshape(-1, factor).mean(axis=1)
    assert_allclose(shown[3]["y"], chat, rtol=1e-9)
    dash_duo.wait_for_contains_text(f"#{ids.CAMPUS_WORKLOADS}", "pretrain-gb200")
    # issue 28 (6): the training time kept in %, as the summary writes it (it showed 0.9154)
    kept = workloads(ds).set_index("workload").loc["llama3-405b", "training time kept"]
    assert _cell(dash_duo, ids.CAMPUS_WORKLOADS, "training time kept")["text"] == (
        f"{100 * kept:.1f} %"
    )
    # the picker narrows the stack to the workloads chosen
    _choose(dash_duo, ids.CAMPUS_PICK, "chat")
    _wait(
        dash_duo,
        lambda: [t["name"] for t in _traces(dash_duo, f"#{ids.CAMPUS_GRAPH}")][0] == "chat",
    )
    assert dash_duo.get_logs() == []


def test_the_grid_events_view_shows_the_site_through_the_nerc_sequence(dash_duo):
    # issue 15: the site at the connection through the July 2024 sequence, one disturbance
    # close up with the fitted model over it, the tables; the traces are the library's own
    preset = "nerc-2024-07-virginia-1500mw-campus"
    dash_duo.start_server(create_app(preset))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", preset)
    tab = ids.VIEWS.index("grid events") + 1
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({tab})").click()
    dash_duo.wait_for_contains_text(f"#{ids.GRID_EVENTS_NOTE}", "6 disturbances")
    shown = _wait(dash_duo, lambda: _traces(dash_duo, f"#{ids.GRID_EVENTS_GRAPH}"))
    assert [t["name"] for t in shown] == [
        "grid", "generators", "UPS batteries", "recharge", "disturbances"
    ]  # fmt: skip
    close = _wait(dash_duo, lambda: _traces(dash_duo, f"#{ids.GRID_EVENTS_CLOSE}"))
    names = [t["name"] for t in close]
    assert "P, fitted model" in names and "P, the site" in names
    ds = simulate(load_scenario(preset))

    def site() -> list[float]:
        traces = _traces(dash_duo, f"#{ids.GRID_EVENTS_CLOSE}") or []
        return next((t["y"] for t in traces if t["name"] == "P, the site"), [])

    first = ride_through.event_response(ds, 0)["p"].to_numpy()
    assert_allclose(site(), first, rtol=1e-9)
    dash_duo.wait_for_contains_text(f"#{ids.GRID_EVENTS_CHECKS}", "ercot-load-loss")
    # issue 28 (6): a time on one line (it wrapped over four), and hours in h, not 1.445e+04 s
    report = ride_through.report(ds)
    dash_duo.wait_for_element(f"#{ids.GRID_EVENTS_TABLE} .ag-row[row-index='2']")
    when = _cell(dash_duo, ids.GRID_EVENTS_TABLE, "time", 2)
    assert when == {"lines": 1, "cut": False, "text": "2024-07-10 19:00:32.800"}
    back = report["back after [s]"].iloc[2]  # after the manual return: hours
    assert back > 7200.0
    shown = _cell(dash_duo, ids.GRID_EVENTS_TABLE, "back after", 2)["text"]
    assert shown == f"{back / 3600:.3g} h"
    assert _cell(dash_duo, ids.GRID_EVENTS_TABLE, "back after", 0)["text"] == "6.5 s"
    off = ride_through.summary(ds)["off the grid or without power [s]"]
    dash_duo.wait_for_contains_text(
        f"#{ids.GRID_EVENTS_SUMMARY}", f"off the grid or without power\n{off / 3600:.3g} h"
    )
    # the second disturbance chosen: its own response close up
    second = ride_through.event_response(ds, 1)["p"].to_numpy()
    _choose(dash_duo, ids.GRID_EVENTS_PICK, "1: 2024-07-10T19:00:16.400000 (sag)")
    _wait(dash_duo, lambda: len(site()) == second.size and np.allclose(site(), second))
    assert dash_duo.get_logs() == []


# --- issue 28: defects found in a real browser ----------------------------------------------


def _type(dash_duo, key: str, text: str) -> None:
    """Replace a box's text and press Enter, as a user does."""
    box = dash_duo.find_element(_selector(ids.control(key)))
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text, Keys.ENTER)


def _expected_line(overrides: dict, preset: str = REFERENCE) -> str:
    """The header's line for a scenario, over its own period."""
    scenario = load_scenario(preset, overrides)
    return summary(metrics(simulate(scenario)), scenario.simulation.duration)


def _field(dash_duo, key: str):
    return dash_duo.find_element(_selector(ids.field(key)))


def test_a_refused_box_is_marked_at_its_field_and_later_edits_apply(dash_duo):
    # issue 28 (1): 90d in period and 99 in supply setpoint showed in their boxes while the
    # header said 1d, the only error off-screen at the top of the sidebar, and every later
    # edit was "not applied" with the first box's reason
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_line(ONE_DAY))
    _type(dash_duo, "simulation.duration", "90d")
    _type(dash_duo, "cooling.supply_setpoint", "99")
    # 90 days at 1 s are 7,776,000 steps, over the dashboard's MAX_STEPS (5,000,000); the
    # schema bounds the supply setpoint to 70 °C (scenario.Plant)
    period = _selector(ids.field_error("simulation.duration"))
    dash_duo.wait_for_contains_text(period, "7,776,000 steps is more than the dashboard draws")
    setpoint = _selector(ids.field_error("cooling.supply_setpoint"))
    dash_duo.wait_for_contains_text(setpoint, "less than or equal to 70 °C (got 99.0)")
    for key in ("simulation.duration", "cooling.supply_setpoint"):
        _wait(dash_duo, lambda k=key: "invalid" in _field(dash_duo, k).get_attribute("class"))
    dash_duo.wait_for_contains_text(f"#{ids.STALE_FIELDS}", "showing the last valid run")
    dash_duo.wait_for_contains_text(f"#{ids.STALE_FIELDS}", "period, supply setpoint")
    # a later edit of another box applies, with both refused boxes still out of the run
    _type(dash_duo, "cluster.n_gpus", "8192")
    expected = _expected_line({**ONE_DAY, "cluster.n_gpus": 8192})
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    dash_duo.driver.save_screenshot("/tmp/issue28-refused-boxes.png")
    assert "invalid" in _field(dash_duo, "cooling.supply_setpoint").get_attribute("class")
    # the period put right: applied, its mark and the banner's word for it gone
    _type(dash_duo, "simulation.duration", "12h")
    expected = _expected_line({"simulation.duration": "12h", "cluster.n_gpus": 8192})
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    _wait(
        dash_duo,
        lambda: "invalid" not in _field(dash_duo, "simulation.duration").get_attribute("class"),
    )
    assert dash_duo.find_element(period).text == ""
    dash_duo.wait_for_contains_text(f"#{ids.STALE_FIELDS}", "(supply setpoint)")
    # and the setpoint put right: nothing stale is left
    _type(dash_duo, "cooling.supply_setpoint", "20")
    expected = _expected_line(
        {"simulation.duration": "12h", "cluster.n_gpus": 8192, "cooling.supply_setpoint": 20}
    )
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", expected)
    dash_duo.wait_for_text_to_equal(f"#{ids.STALE_FIELDS}", "")
    assert dash_duo.get_logs() == []


def test_every_control_shows_the_value_the_run_uses(dash_duo, tmp_path):
    # issue 28 (2): after the liquid dry-cooler plant (from a link) the supply-setpoint box
    # showed the preset's 18 °C while the plant ran at its own 30 °C (plants.toml), and one
    # click on + overrode it with 19 °C
    link = f"/?preset={REFERENCE}&cooling.plant=liquid-dry-cooler"
    dash_duo.start_server(create_app(overrides=ONE_DAY))
    dash_duo.driver.get(dash_duo.server_url + link)
    dry = {**ONE_DAY, "cooling.plant": "liquid-dry-cooler"}
    ran = load_scenario(REFERENCE, dry).cooling.supply_setpoint
    assert ran == 30.0
    setpoint = dash_duo.find_element(_selector(ids.control("cooling.supply_setpoint")))
    _wait(dash_duo, lambda: setpoint.get_attribute("value") == "30")  # number box
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_summary(dry)[0])
    setpoint.send_keys(Keys.ARROW_UP)  # the box's +: 31 °C, from the value the run uses
    setpoint.send_keys(Keys.ENTER)
    warmer = {**dry, "cooling.supply_setpoint": 31.0}
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_summary(warmer)[0])

    # slider: the compute share the parallel layout gives at the GPU count (the phases' own
    # shares hold at the layout's reference size), 0.675 at 16,384 GPUs
    share = dash_duo.find_element(
        f"{_selector(ids.control('workload.compute_share'))} [role=slider]"
    )
    _type(dash_duo, "cluster.n_gpus", "8192")
    fewer = {**warmer, "cluster.n_gpus": 8192}
    want = load_scenario(REFERENCE, fewer).compute_share
    assert abs(want - 0.675) > 0.02
    _wait(dash_duo, lambda: abs(float(share.get_attribute("aria-valuenow")) - want) < 1e-6)
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", _expected_summary(fewer)[0])

    # dropdown and number box after an upload: the file's plant and its setpoint
    tower = load_scenario(REFERENCE, {"simulation.duration": "2h", "cooling.plant": "liquid-tower"})
    upload = tmp_path / "tower.toml"
    upload.write_text(tower.to_toml())
    dash_duo.find_element(f"#{ids.UPLOAD_SCENARIO} input[type=file]").send_keys(str(upload))
    dash_duo.wait_for_text_to_equal(_selector(ids.control("cooling.plant")), "liquid-tower")
    _wait(dash_duo, lambda: float(setpoint.get_attribute("value")) == tower.cooling.supply_setpoint)
    _wait(dash_duo, lambda: abs(float(share.get_attribute("aria-valuenow")) - 0.675) < 1e-6)
    dash_duo.wait_for_contains_text(f"#{ids.SUMMARY}", "2h · ")
    dash_duo.driver.save_screenshot("/tmp/issue28-controls-follow.png")
    assert dash_duo.get_logs() == []


LAYOUT = "return document.querySelector(arguments[0] + ' .js-plotly-plot').layout"


def _says(dash_duo, selector: str) -> str | None:
    """What an empty view says in place of its axes; None while it draws axes."""
    layout = dash_duo.driver.execute_script(LAYOUT, selector)
    notes = layout.get("annotations") or []
    hidden = layout.get("xaxis", {}).get("visible") is False
    return notes[0]["text"].replace("<br>", " ") if notes and hidden else None


def test_empty_views_say_what_to_do_and_a_single_job_is_no_campus(dash_duo):
    # issue 28 (5): the compare view before a choice, the fit's graph before an upload, the
    # sweep's and the campus view of a single job drew empty axes; (3) the campus tab was
    # empty for gb200-nvl72-100k-campus, which the campus guide lists as a campus
    preset = "gb200-nvl72-100k-campus"
    dash_duo.start_server(create_app(preset, overrides={"simulation.duration": "1h"}))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", preset)
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('compare') + 1})").click()
    compare = _selector(ids.resampled("compare"))
    _wait(dash_duo, lambda: "choose a preset to compare with" in _says(dash_duo, compare))
    assert "upload a measured trace above" in _says(dash_duo, f"#{ids.FIT_GRAPH}")
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('sweep') + 1})").click()
    _wait(
        dash_duo, lambda: "upload a sweep's results above" in _says(dash_duo, f"#{ids.SWEEP_GRAPH}")
    )
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('campus') + 1})").click()
    gpus = load_scenario(preset).cluster.n_gpus
    with_workloads = [p for p in presets() if load_scenario(p).campus is not None]
    assert with_workloads == [
        "mixed-campus-hopper-blackwell",
        "nerc-2024-07-virginia-1500mw-campus",
    ]
    said = (
        f"{preset} runs one job of {gpus:,} GPUs, not a campus of workloads: its power is in "
        f"the power view. The presets with workloads are {' and '.join(with_workloads)}"
    )
    dash_duo.wait_for_contains_text(f"#{ids.CAMPUS_NOTE}", said)
    _wait(dash_duo, lambda: said in _says(dash_duo, f"#{ids.CAMPUS_GRAPH}"))
    dash_duo.driver.save_screenshot("/tmp/issue28-single-job-campus.png")
    # a choice made, the compare view draws
    dash_duo.find_element(f"#{ids.TABS} .tab:nth-child({ids.VIEWS.index('compare') + 1})").click()
    _choose(dash_duo, ids.COMPARE_WITH, f"preset: {REFERENCE}")
    _wait(
        dash_duo, lambda: _says(dash_duo, compare) is None and len(_traces(dash_duo, compare)) > 1
    )
    assert dash_duo.get_logs() == []
