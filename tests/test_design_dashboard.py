"""The dashboard's "design from the connection" (issue 28, acceptance 3: "the dashboard has the
same"): the server's answer is the API's design, hostile input is refused in words, and in the
browser the designed site loads and simulates within the connection.

Expected values come from :func:`powermodel.design.design` and ``simulate``/``metrics`` on the
scenario the page should show.
"""

from __future__ import annotations

import threading

import pytest
from test_dashboard_hostile import _upload

from powermodel import load_scenario, metrics, simulate
from powermodel.design import design
from powermodel.webapp import create_app, create_dashboard, ids
from powermodel.webapp import design_panel as panel
from powermodel.webapp.layout import summary

REFERENCE = "llama3-405b-16k-h100"
GB200 = "gb200-nvl72-100k-campus"
HOUR = {"simulation.duration": "1h"}
DESIGN = f"..{panel.RESULT}.children...{panel.STORE}.data...{panel.LOAD}.disabled.."


@pytest.fixture(scope="module")
def board():
    return create_dashboard(overrides=HOUR)


def _design(board, grid_mw, preset=REFERENCE, clicks=1) -> tuple[int, dict | None]:
    outputs = [
        {"id": panel.RESULT, "property": "children"},
        {"id": panel.STORE, "property": "data"},
        {"id": panel.LOAD, "property": "disabled"},
    ]
    body = {
        "output": DESIGN,
        "outputs": outputs,
        "inputs": [{"id": panel.RUN, "property": "n_clicks", "value": clicks}],
        "changedPropIds": [f"{panel.RUN}.n_clicks"],
        "state": [
            {"id": panel.MW, "property": "value", "value": grid_mw},
            {"id": ids.PRESET, "property": "value", "value": preset},
        ],
    }
    response = board.app.server.test_client().post("/_dash-update-component", json=body)
    return response.status_code, response.get_json()["response"] if response.is_json else None


def _text(children) -> str:
    if isinstance(children, str):
        return children
    return "\n".join(c["props"]["children"] for c in children)


def test_the_answer_is_the_apis_design_and_loads_as_an_upload(board):
    status, answer = _design(board, 50, GB200)
    assert status == 200
    found = design(GB200, 50.0)  # the API, on its own
    shown = _text(answer[panel.RESULT]["children"])
    assert f"GPUs: {found.n_gpus:,}" in shown
    assert f"design peak at the connection: {found.design_peak_mw:.2f} MW" in shown
    assert f"binds: {found.binds}" in shown
    stored = answer[panel.STORE]["data"]
    assert answer[panel.LOAD]["disabled"] is False
    assert stored["filename"] == f"{GB200}-50mw.toml"
    # the stored file, uploaded as the load button hands it to the scenario upload: the
    # design's site on the period it simulated, the same run
    loaded = _upload(board, stored["toml"], stored["filename"])
    assert loaded["message"]["children"] == f"loaded {GB200}-50mw.toml"
    site = board.base(loaded["base"]["data"])
    assert site.cluster.n_gpus == found.n_gpus and site.simulation.duration == 7 * 86400
    assert metrics(simulate(site))["grid_peak_mw"] == pytest.approx(found.simulated_peak_mw)


@pytest.mark.parametrize(
    ("grid_mw", "preset", "said"),
    [
        ("50", REFERENCE, "a connection of '50' MW: give its rating as a positive number"),
        (None, REFERENCE, "a connection of None MW: give its rating as a positive number"),
        (True, REFERENCE, "a connection of True MW: give its rating as a positive number"),
        (-1, REFERENCE, "a connection of -1 MW: give its rating as a positive number"),
        ([50], REFERENCE, "a connection of [50] MW: give its rating as a positive number"),
        (50, "../../etc/passwd", "choose a preset first"),
        (50, {"preset": REFERENCE}, "choose a preset first"),
        (1e300, REFERENCE, "a connection of 1e+300 MW: give its rating as a positive number"),
        (10**400, REFERENCE, "a connection of 1000000000"),
        (0.001, REFERENCE, "a connection of 0.001 MW is below one node's draw there, 0.01"),
    ],
)
def test_hostile_input_is_refused_in_words(board, grid_mw, preset, said):
    status, answer = _design(board, grid_mw, preset)
    assert status == 200
    assert _text(answer[panel.RESULT]["children"]).startswith(said)
    assert answer[panel.STORE]["data"] is None and answer[panel.LOAD]["disabled"] is True


def test_one_design_at_a_time(board, monkeypatch):
    # a second design while one runs is told to wait, not queued behind it
    started, release = threading.Event(), threading.Event()
    real = board.check_limits

    def slow(scenario):
        started.set()
        release.wait(30)
        return real(scenario)

    monkeypatch.setattr(board, "check_limits", slow)
    first = threading.Thread(target=_design, args=(board, 1.0))
    first.start()
    assert started.wait(30)
    try:
        status, answer = _design(board, 2.0)
        assert status == 200
        assert _text(answer[panel.RESULT]["children"]).startswith("another design is running")
    finally:
        release.set()
        first.join(60)


def test_the_designed_site_loads_in_the_browser(dash_duo):
    # the whole flow as a user drives it: the connection typed, the design shown, the site
    # loaded and simulated; its week's grid peak within 5 % under the connection (acceptance 3)
    dash_duo.start_server(create_app(overrides=HOUR))
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", REFERENCE)
    dash_duo.find_element(f"#{panel.RUN}").find_element("xpath", "..").click()  # open it
    dash_duo.find_element(f"#{panel.MW}").send_keys("50")
    dash_duo.find_element(f"#{panel.RUN}").click()
    found = design(REFERENCE, 50.0)
    dash_duo.wait_for_contains_text(f"#{panel.RESULT}", f"GPUs: {found.n_gpus:,}", timeout=60)
    dash_duo.find_element(f"#{panel.LOAD}").click()
    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", f"{REFERENCE}-50mw", timeout=60)
    dash_duo.wait_for_contains_text(f"#{ids.MESSAGE}", f"loaded {REFERENCE}-50mw.toml")
    # the page's run: the API's design on its design week (the name aside, the same keys)
    site = load_scenario(REFERENCE, {**found.overrides, "simulation.duration": "7d"})
    result = metrics(simulate(site))
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", summary(result, 7 * 86400.0), timeout=90)
    assert 0.95 * 50 <= result["grid_peak_mw"] <= 50
    assert dash_duo.get_logs() == []
