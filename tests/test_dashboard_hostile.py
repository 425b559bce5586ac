"""The dashboard attacked over HTTP, as issue 10 found it: every entry point (the link, an
upload, the page's stored state in a callback request, a download) is hostile until checked on
the server. Requests go through Flask's test client to Dash's own endpoint, so what is tested is
what a forged request meets, not a method called politely.

Each test names the defect it reproduces; the expected answer is a refusal in words, with no
file outside the dashboard's working folder read or written and no limit passed.
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from forged_requests import forged_shapes, replaced, strings_in

from powermodel import load_scenario
from powermodel.scenario import loads_scenario
from powermodel.webapp import PROP_TYPES, create_dashboard, ids
from powermodel.webapp import uploads as uploads_module
from powermodel.webapp.controls import BY_PROP, page_values, shown_values

REFERENCE = "llama3-405b-16k-h100"
CALLBACK = "/_dash-update-component"
JSON = "application/json"
HOUR = {"simulation.duration": "1h"}
SUMMARY = "..scenario-name.children...summary.children...ready.data.."
ASSEMBLE = "..scenario.data...scenario-error.children..."  # the start of its key
SET_BASE = (
    '..base.data...{"key":["ALL"],"type":"control"}.value...{"key":["ALL"],"type":"control-date"}'
    ".date...preset.value...tabs.value...message.children...set-boxes.data.."
)


@pytest.fixture
def board():
    board = create_dashboard(overrides=HOUR)
    yield board
    board.workdir.cleanup()


@pytest.fixture
def opened(monkeypatch):
    """Every file the server opens during a test (pathlib and open() both go through here)."""
    seen: list[str] = []
    real = io.open

    def spy(file, *args, **kwargs):
        seen.append(str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    return seen


def _secret(tmp_path: Path) -> Path:
    """A TOML scenario on the server that no request may read."""
    path = tmp_path / "secret.toml"
    path.write_text(f'extends = "{REFERENCE}"\nname = "SECRET-{uuid.uuid4().hex}"\n')
    return path


def call(
    board, output: str, inputs: list, state: list = (), changed: int = 0
) -> tuple[int, dict | None]:
    """One callback request as the page sends it: ``inputs`` and ``state`` are
    ``(id, property, value)`` (or, for a pattern-matching group, the list of its items), the
    ``changed``-th input the one that fired; returns the status and the parsed answer."""
    if output not in board.app.callback_map:  # a key with Dash's hashes: found by its start
        output = next(k for k in board.app.callback_map if k.startswith(output.rstrip(".")))
    spec = board.app.callback_map[output]
    outputs = [_output(board, _id(o), o.rsplit(".", 1)[1]) for o in _outputs(output)]
    # the states not given are the page's before anything is stored: empty
    state = [*state, *((_id_of(s), s["property"], None) for s in spec["state"][len(state) :])]
    fired = inputs[changed]
    payload = {
        "output": output,
        "outputs": outputs if len(outputs) > 1 else outputs[0],
        "inputs": [i if isinstance(i, list) else _item(*i) for i in inputs],
        "changedPropIds": [f"{_key(fired[0])}.{fired[1]}"] if isinstance(fired, tuple) else [],
        "state": [_item(*s) for s in state],
    }
    assert len(payload["inputs"]) == len(spec["inputs"])
    response = board.app.server.test_client().post("/_dash-update-component", json=payload)
    body = json.loads(response.data) if response.status_code == 200 else None
    return response.status_code, body


def _id_of(item: dict) -> object:
    """A callback map's id of an input or state (a pattern's id is JSON)."""
    cid = item["id"]
    return json.loads(cid) if cid.startswith("{") else cid


def _outputs(key: str) -> list[str]:
    """The outputs of a callback key, each ``id.property`` (without Dash's ``@hash``)."""
    parts = key.strip(".").split("...") if key.startswith("..") else [key]
    return [p.split("@")[0] for p in parts]


def _output(board, cid: object, prop: str) -> dict | list[dict]:
    """An output as the page sends it: a pattern's ALL group as the list of the page's
    components it matches (in layout order), any other id as itself."""
    if not (isinstance(cid, dict) and ["ALL"] in cid.values()):
        return {"id": cid, "property": prop}
    fixed = {k: v for k, v in cid.items() if v != ["ALL"]}
    found = [
        c.id
        for c in board.app.get_layout()._traverse()
        if isinstance(getattr(c, "id", None), dict)
        and c.id.keys() == cid.keys()
        and all(c.id[k] == v for k, v in fixed.items())
    ]
    return [{"id": c, "property": prop} for c in found]


def _id(output: str) -> object:
    text = output.rsplit(".", 1)[0]
    return json.loads(text) if text.startswith("{") else text


def _key(cid: object) -> str:
    return json.dumps(cid, separators=(",", ":"), sort_keys=True) if isinstance(cid, dict) else cid


def _item(cid: object, prop: str, value: object) -> dict:
    return {"id": cid, "property": prop, "value": value}


def _controls(values: dict) -> list:
    """The controls as the page sends them to the assemble callback: two pattern groups."""
    shown, dates = page_values(values)
    return [
        [_item({"type": "control", "key": c.key.replace(".", "-")}, "value", v)
         for c, v in zip(BY_PROP["value"], shown, strict=True)],
        [_item({"type": "control-date", "key": c.key.replace(".", "-")}, "date", v)
         for c, v in zip(BY_PROP["date"], dates, strict=True)],
    ]  # fmt: skip


def _summary(board, state: dict) -> str:
    status, body = call(board, SUMMARY, [("scenario", "data", state)])
    assert status == 200, status
    return body["response"]["summary"]["children"]


def _data_url(text: str) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(text.encode()).decode()


def _upload(board, text: str, filename: str = "mine.toml") -> dict:
    """Upload a scenario through the set_base callback; returns its answer."""
    status, body = call(
        board,
        SET_BASE,
        [
            ("url", "search", ""),
            ("preset", "value", REFERENCE),
            ("upload-scenario", "contents", _data_url(text)),
        ],
        [("upload-scenario", "filename", filename)],
        changed=2,
    )
    assert status == 200
    return body["response"]


def _open(board, search: str) -> dict:
    """Load the page at a link: the set_base callback's answer."""
    status, body = call(
        board,
        SET_BASE,
        [
            ("url", "search", search),
            ("preset", "value", None),
            ("upload-scenario", "contents", None),
        ],
        [("upload-scenario", "filename", None)],
    )
    assert status == 200
    return body["response"]


def _assemble_opened(board, answer: dict) -> str:
    """Send the controls as a page load set them; the assemble callback's refusal, if any."""
    values = {}
    for kind, prop in (("control", "value"), ("control-date", "date")):
        sent = [answer[_key({"key": c.key.replace(".", "-"), "type": kind})] for c in BY_PROP[prop]]
        values |= {c.key: v[prop] for c, v in zip(BY_PROP[prop], sent, strict=True)}
    _, body = call(board, ASSEMBLE, [("base", "data", answer["base"]["data"]), *_controls(values)])
    return body["response"]["scenario-error"]["children"]


# --- severe 1: a scenario's name is never a path ----------------------------------------------


@pytest.mark.parametrize("name", ["../../../../tmp/pwned-{tag}", "hall A/B {tag}", "..", "/"])
def test_scenario_name_never_becomes_a_server_path(board, name):
    # issue 10: name = "../../../../tmp/pwned" made /download write /tmp/pwned.toml and
    # /tmp/pwned-gridlabd.zip; "hall A/B" gave HTTP 500
    tag = uuid.uuid4().hex
    name = name.format(tag=tag)
    text = f'extends = "{REFERENCE}"\nname = {json.dumps(name)}\n[simulation]\nduration = "1h"\n'
    answer = _upload(board, text)
    base = answer["base"]["data"]
    values = shown_values(board.base(base))
    status, body = call(board, ASSEMBLE, [("base", "data", base), *_controls(values)])
    state = body["response"]["scenario"]["data"]
    client = board.app.server.test_client()
    for fmt in ("toml", "gridlabd", "csv"):
        response = client.get(f"/download/{state['key']}/{fmt}")
        assert response.status_code == 200, response.data
        saved = response.headers["Content-Disposition"]
        assert "/" not in saved and ".." not in saved.split("filename=")[1].strip("\"'")
    assert not list(Path("/tmp").glob(f"*{tag}*"))
    # every download was written in the dashboard's own folder and deleted once opened
    assert not [p for p in Path(board.workdir.name).rglob("*") if p.is_file()]


# --- severe 2: the page's state is rebuilt and checked, never trusted ------------------------


def test_forged_state_cannot_read_a_server_file(board, opened, tmp_path):
    # issue 10: scenario.data carrying overrides {"site.weather": "/etc/passwd"} answered with
    # the file's first line
    secret = _secret(tmp_path)
    opened.clear()  # the test's own writing
    forged = [
        {"base": {"preset": REFERENCE, "overrides": {"site.weather": str(secret)}}, "changes": {}},
        {"base": {"preset": REFERENCE}, "changes": {"site.weather": str(secret)}},
        {"base": {"preset": str(secret)}, "changes": {}},
        {"base": {"upload": "x.toml", "toml": f'extends = "{secret}"'}, "changes": {}},
        {"base": {"upload": "x.toml", "toml": f'[site]\nweather = "{secret}"'}, "changes": {}},
        {"base": {"preset": REFERENCE}, "changes": {"site.weather": "../../../etc/passwd"}},
    ]
    for state in forged:
        line = _summary(board, {"key": "x", "name": "n", **state})
        assert "SECRET" not in line
        if "overrides" not in state["base"]:  # a base's overrides are the server's own
            assert line.startswith("not simulated")
    assert str(secret) not in opened
    # the comparison and the pinned scenario go through the same check
    key = '..{"type":"resampled","view":"compare"}.figure...compare-table.rowData..'
    good = {"base": {"preset": REFERENCE}, "changes": {}}
    for compare, pinned in ((str(secret), None), ("pinned", {"base": {"preset": str(secret)}})):
        status, _ = call(
            board,
            key,
            [
                ("ready", "data", good),
                ("tabs", "value", "compare"),
                ("compare-with", "value", compare),
                ("compare", "data", pinned),
            ],
        )
        assert status == 204  # nothing to show: refused, not read
    assert str(secret) not in opened


def test_forged_state_cannot_pass_a_limit(board):
    # issue 10: the same forged state ran 7 days at 100 ms, over the 5 M-step cap
    state = {
        "key": "x",
        "name": "n",
        "base": {"preset": REFERENCE, "overrides": {"simulation.duration": "7d"}},
        "changes": {"simulation.duration": "7d", "simulation.dt": "100ms"},
    }
    started = time.perf_counter()
    line = _summary(board, state)
    assert line.startswith("not simulated: 6,048,000 steps is more than the dashboard draws")
    assert time.perf_counter() - started < 5.0
    # a control beyond the range the page offers: the failure-rate slider stops at 5
    line = _summary(board, {**state, "changes": {"reliability.rate_scale": 50.0}})
    assert "failure rate ×: 50 is outside the dashboard's range, 0 to 5" in line
    # and beyond what the schema takes at all, as in the command line's words
    line = _summary(board, {**state, "changes": {"cluster.n_gpus": 1e30}})
    assert "cluster.n_gpus: Input should be less than or equal to 10000000" in line
    # rules go by shipped name only: a rule file path is not read
    grid = (
        '..{"type":"resampled","view":"grid"}.figure...grid-ramps.figure...grid-spectrum.figure'
        "...compliance.rowData...violations.rowData...violations-note.children.."
    )
    good = {"base": {"preset": REFERENCE}, "changes": {}}
    status, answer = call(
        board,
        grid,
        [("ready", "data", good), ("tabs", "value", "grid"), ("rules", "value", ["/x.toml"])],
    )
    # issue 26: the view is refused, its outputs unchanged, and the page says why
    assert status == 200 and answer["response"] == {}
    said = answer["sideUpdate"]["view-message"]["children"]
    assert said.startswith("unknown rule '/x.toml': choose from ")


def test_link_names_presets_only(board, opened, tmp_path):
    # issue 10: ?preset=<any path> loaded any TOML on the server, and its errors named its keys
    secret = _secret(tmp_path)
    opened.clear()
    answer = _open(board, f"?preset={secret}")
    assert "not one of" in answer["message"]["children"] and "SECRET" not in json.dumps(answer)
    assert answer["base"]["data"] == {"preset": REFERENCE}
    assert str(secret) not in opened


# --- severe 3: recovery times have physical bounds -------------------------------------------


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ("checkpoint.blocking_time=-10000000", "negative"),
        ("reliability.restart_time=inf", "is not a number"),
        ("reliability.restart_time=1e400", "is not a number"),
        ("reliability.restart_time=99999999", "must be at most 30d (got '99999999min')"),
    ],
)
def test_link_with_an_unphysical_recovery_is_refused_at_once(board, search, message):
    # issue 10: /?preset=...&checkpoint.blocking_time=-10000000 hung the server with unbounded
    # memory, which then failed every request with MemoryError
    started = time.perf_counter()
    answer = _open(board, f"?preset={REFERENCE}&{search}")
    if "is not a number" in message:  # the link itself is refused
        assert message in answer["message"]["children"]
    else:
        assert message in _assemble_opened(board, answer)
    assert time.perf_counter() - started < 5.0
    # and the server still answers
    assert _summary(board, {"base": {"preset": REFERENCE}, "changes": {}}).startswith("1h")


# --- every entry point -------------------------------------------------------------------------


def test_downloads_take_only_what_the_page_offers(board):
    scenario = load_scenario(REFERENCE, HOUR)
    key = board.cache.remember(scenario)
    client = board.app.server.test_client()
    for query, status in (
        ("csv?interval=1e400s", 400),
        ("csv?interval=../../etc", 400),
        ("csv?interval=7min", 400),
        ("excel", 400),
        ("violations?rules=/etc/passwd", 400),
        ("csv?interval=1min", 200),
    ):
        assert client.get(f"/download/{key}/{query}").status_code == status, query
    for path in ("/download/..%2F..%2Fetc/toml", "/download/%2Fetc%2Fpasswd/toml"):
        # a key is looked up, never opened: an unknown one is 404, or (decoded by the client
        # into another path) the page itself, never a file
        response = client.get(path)
        assert "attachment" not in response.headers.get("Content-Disposition", "")
        assert response.status_code in (200, 404) and b"root:" not in response.data
    response = client.get(f"/download/{key}/violations?rules=ercot-5s")
    assert response.status_code == 200 and response.data.startswith(b"run,rule,start,end")
    # written as the CLI's check --violations writes it: run 1, ISO 8601 UTC times with Z
    first = response.data.decode().splitlines()[1].split(",")
    assert first[0] == "1" and first[2].endswith("Z") and "T" in first[2]


def test_a_request_nested_too_deep_is_refused(board):
    deep = "[" * 100_000 + "]" * 100_000
    response = board.app.server.test_client().post(
        "/_dash-update-component", data=deep, content_type="application/json"
    )
    assert response.status_code == 400


def test_uploaded_weather_is_kept_in_bounds(board, tmp_path):
    # issue 10: uploaded EPWs were never deleted
    from powermodel.webapp.uploads import KEPT

    epw = Path(__file__).parents[1] / "data" / "weather"
    text = next(epw.glob("*Chicago*.epw")).read_bytes()
    board = board
    for i in range(KEPT + 3):
        copy = text.replace(b"Chicago", f"Chicago{i:02d}".encode(), 1)
        contents = "data:;base64," + base64.b64encode(copy).decode()
        board.upload_weather(contents, f"w{i}.epw", {})
    kept = list(board.uploads.folder.iterdir())
    assert len(kept) == len(board.weather) == KEPT
    workdir = Path(board.workdir.name)
    board.workdir.cleanup()
    assert not workdir.exists()


def _weather(board, i: int) -> str:
    """Upload a copy of the Chicago EPW as ``w{i}.epw``; returns its token."""
    epw = next((Path(__file__).parents[1] / "data" / "weather").glob("*Chicago*.epw"))
    copy = epw.read_bytes().replace(b"Chicago", f"Chicago{i:02d}".encode(), 1)
    answer = board.upload_weather(
        "data:;base64," + base64.b64encode(copy).decode(), f"w{i}.epw", {}
    )
    return answer[2]


def test_no_path_of_the_servers_leaves_it(board):
    # found in review: the TOML download of a scenario on an uploaded EPW carried the file's
    # path on the server (and could not be loaded back); after 32 newer uploads the page's
    # state still simulated, and its error named the server's temporary folder
    from powermodel.webapp.uploads import KEPT

    token = _weather(board, 0)
    state = {"base": {"preset": REFERENCE}, "changes": {"site.weather": token}}
    scenario = board.scenario(state)
    assert scenario.site.weather.startswith(str(board.uploads.folder))
    server = str(Path(board.workdir.name))
    key = board.cache.remember(scenario)
    client = board.app.server.test_client()
    for fmt in ("toml", "csv", "parquet", "netcdf", "pypsa"):
        response = client.get(f"/download/{key}/{fmt}")
        assert response.status_code == 200, fmt
        body = (
            response.data
            if fmt != "pypsa"
            else b"".join(
                zipfile.ZipFile(io.BytesIO(response.data)).read(n)
                for n in zipfile.ZipFile(io.BytesIO(response.data)).namelist()
            )
        )
        assert server.encode() not in body, fmt
        if fmt == "toml":  # the file as it came: it loads beside the scenario file
            assert b'weather = "w0.epw"' in body
    sent = board.toml(1, state)
    assert server not in sent["content"] and 'weather = "w0.epw"' in sent["content"]
    for i in range(1, KEPT + 1):  # the upload goes out of the kept set
        _weather(board, i)
    line = _summary(board, state)
    assert "w0.epw is no longer kept on the server" in line and server not in line
    assert board.said(OSError(f"{board.uploads.folder}/{'0' * 16}-w9.epw gone")) == (
        "w9.epw (uploaded) gone"
    )


def test_an_upload_again_of_a_kept_file_never_leaves_it_half_written(board, monkeypatch):
    # found in review: uploading kept content again truncated and rewrote the live file
    token = _weather(board, 0)
    path = Path(board.weather[token])
    before = path.stat().st_ino
    seen = []
    real = uploads_module.read_weather

    def reading(where):
        seen.append((Path(where), path.stat().st_size))  # the live file, whole, meanwhile
        return real(where)

    monkeypatch.setattr(uploads_module, "read_weather", reading)
    assert _weather(board, 0) == token
    assert seen[0][0] != path and seen[0][1] > 1_000_000  # read elsewhere, the live one whole
    assert path.stat().st_ino != before and board.weather[token] == str(path)
    assert sorted(p.name for p in board.uploads.folder.iterdir()) == [path.name]


def test_ids_of_the_forged_inputs_are_the_pages():
    # the test's own protocol: the control groups it sends are the page's
    assert ids.CONTROL_TYPES == {"value": "control", "date": "control-date"}


# --- low: what gave HTTP 500 ---------------------------------------------------------------


def _zoom_key(board) -> str:
    return next(
        k for k in board.app.callback_map if k.startswith('{"type":"resampled","view":["MATCH"]}')
    )


@pytest.mark.parametrize(
    ("view", "relayout"),
    [
        (
            "nope",
            {"xaxis.range[0]": "2024-07-01 00:10:00", "xaxis.range[1]": "2024-07-01 00:20:00"},
        ),
        ("power", {"xaxis.range[0]": "3000-01-01", "xaxis.range[1]": "3000-01-02"}),
        ("power", {"xaxis.range[0]": "not a time", "xaxis.range[1]": 5}),
        ("power", {"xaxis.range": [[[[["deep"]]]]]}),
    ],
)
def test_a_zoom_the_page_cannot_make_changes_nothing(board, view, relayout):
    # issue 10: HTTP 500 for an unknown zoom view and for a zoom outside 1677-2262
    good = {"base": {"preset": REFERENCE}, "changes": {}}
    graph = {"type": "resampled", "view": view}
    payload = {
        "output": _zoom_key(board),
        "outputs": {"id": graph, "property": "figure"},
        "inputs": [{"id": graph, "property": "relayoutData", "value": relayout}],
        "changedPropIds": [f"{_key(graph)}.relayoutData"],
        "state": [
            _item("ready", "data", good),
            _item("rules", "value", ["ercot-5s"]),
            _item("compare-with", "value", None),
            _item("compare", "data", None),
            _item("sensor", "value", "exact"),
        ],
    }
    response = board.app.server.test_client().post("/_dash-update-component", json=payload)
    assert response.status_code == 204


def test_controls_of_the_wrong_kind_are_refused_in_words(board):
    # issue 10: HTTP 500 for a power cap "abc" and for an unknown export format
    base = {"preset": REFERENCE}
    values = shown_values(board.base(base))
    for key, value, message in (
        ("mitigation.power_cap", "abc", "power cap: 'abc' is not a number"),
        ("cluster.n_gpus", True, "GPUs: True is not a number"),
        ("simulation.duration", "x" * 500, "is not a text of up to 100 characters"),
        ("simulation.start", "yesterday", "is not a date (YYYY-MM-DD)"),
        ("site.weather", "/etc/passwd", "choose a shipped file"),
    ):
        status, body = call(
            board, ASSEMBLE, [("base", "data", base), *_controls(values | {key: value})]
        )
        assert status == 200 and message in body["response"]["scenario-error"]["children"]
    export = (
        "..export-interval.options...export-interval.value...export-link.href"
        "...export-note.children.."
    )
    status, body = call(
        board,
        export,
        [
            ("ready", "data", {"base": base, "changes": {}}),
            ("export-format", "value", "xlsx"),
            ("export-interval", "value", "1min"),
        ],
    )
    assert status == 200
    assert body["response"]["export-note"]["children"].startswith("unknown format 'xlsx'")
    assert body["response"]["export-link"]["href"] == ""


@pytest.mark.parametrize(
    "entry", ["link", "upload", "state"], ids=["the link", "an upload", "the page's state"]
)
def test_no_entry_point_passes_the_step_limit(board, entry):
    # issue 10: every limit enforced on the server for every entry point
    over = {"simulation.duration": "7d", "simulation.dt": "100ms"}
    message = "6,048,000 steps is more than the dashboard draws"
    if entry == "upload":
        text = f'extends = "{REFERENCE}"\n[simulation]\nduration = "7d"\ndt = "100ms"\n'
        assert message in _upload(board, text)["message"]["children"]
        return
    if entry == "state":
        line = _summary(board, {"base": {"preset": REFERENCE}, "changes": over})
        assert message in line
        return
    answer = _open(board, f"?preset={REFERENCE}&simulation.duration=7d&simulation.dt=100ms")
    assert message in _assemble_opened(board, answer)


def test_an_upload_nested_too_deep_is_refused(board):
    # issue 10: a 600-level table header in a file that extends a preset gave HTTP 500
    text = f'extends = "{REFERENCE}"\n[' + ".".join(["a"] * 600) + "]\nb = 1\n"
    assert "nested more than 12 deep" in _upload(board, text)["message"]["children"]
    text = "x = " + "[" * 500 + "]" * 500 + "\n"
    assert "nested more than 12 deep" in _upload(board, text)["message"]["children"]


# --- review of issue 10: what a cheap request could still cost -----------------------------


def test_a_long_list_of_rules_is_refused_before_any_work(board):
    # each name was checked by parsing the rule file again, and each list was a new cache key
    key = board.cache.remember(load_scenario(REFERENCE, HOUR))
    client = board.app.server.test_client()
    started = time.perf_counter()
    response = client.get(f"/download/{key}/violations?rules=" + ",".join(["ieso"] * 10_000))
    assert response.status_code == 400 and b"give up to" in response.data
    grid = (
        '..{"type":"resampled","view":"grid"}.figure...grid-ramps.figure...grid-spectrum.figure'
        "...compliance.rowData...violations.rowData...violations-note.children.."
    )
    status, answer = call(
        board,
        grid,
        [
            ("ready", "data", {"base": {"preset": REFERENCE}, "changes": {}}),
            ("tabs", "value", "grid"),
            ("rules", "value", ["ieso"] * 20_000),
        ],
    )
    assert status == 200 and answer["response"] == {}  # refused, and said (issue 26)
    assert "give up to" in answer["sideUpdate"]["view-message"]["children"]
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("output", "inputs", "state"),
    [
        # the page's store of uploaded weather labels, forged: not a dict, values not text
        (
            "uploaded-weather",
            [("upload-weather", "contents", "data:;base64,AAAA")],
            [("upload-weather", "filename", "w.epw"), ("uploaded-weather", "data", None)],
        ),
        (
            "uploaded-weather",
            [("upload-weather", "contents", "data:;base64,AAAA")],
            [("upload-weather", "filename", "w.epw"), ("uploaded-weather", "data", {"a": ["b"]})],
        ),
        # an export format that is not text
        (
            "export-interval",
            [
                ("ready", "data", {"base": {"preset": REFERENCE}, "changes": {}}),
                ("export-format", "value", ["csv"]),
                ("export-interval", "value", "1min"),
            ],
            [],
        ),
    ],
)
def test_a_store_or_choice_of_the_wrong_shape_is_no_500(board, output, inputs, state):
    key = next(k for k in board.app.callback_map if k.startswith(f"..{output}"))
    status, _ = call(board, key, inputs, state)
    assert status in (200, 204)


def test_a_number_beyond_any_float_is_refused_in_words(board):
    base = {"preset": REFERENCE}
    values = shown_values(board.base(base)) | {"cluster.n_gpus": 10**400}
    status, body = call(board, ASSEMBLE, [("base", "data", base), *_controls(values)])
    assert status == 200 and "GPUs:" in body["response"]["scenario-error"]["children"]
    line = _summary(board, {"base": base, "changes": {"cluster.n_gpus": 10**400}})
    assert line.startswith("not simulated") and "is not a number" in line


def test_a_malformed_callback_request_is_refused_not_crashed(board):
    client = board.app.server.test_client()
    for body in (
        [],
        {"output": "nope"},
        {"output": SUMMARY, "outputs": [], "inputs": [], "state": []},
        {"output": SUMMARY, "outputs": {"id": "x", "property": "y"}, "inputs": []},
    ):
        assert client.post("/_dash-update-component", json=body).status_code == 400


def test_the_dashboards_limits_hold_for_an_upload_too(board):
    # the failure-rate slider stops at 5; an uploaded scenario is held to it as a link is
    text = (
        f'extends = "{REFERENCE}"\n[simulation]\nduration = "1h"\n[reliability]\nrate_scale = 50\n'
    )
    assert (
        "failure rate ×: 50 is outside the dashboard's range"
        in _upload(board, text)["message"]["children"]
    )
    # free text is bounded as every other field: 60 states of 4 MB notes grew memory 242 MiB
    text = f'extends = "{REFERENCE}"\n[workload]\nnotes = "{"x" * 3000}"\n'
    assert "at most 2000 characters" in _upload(board, text)["message"]["children"]
    huge = {"upload": "x.toml", "toml": "#" * (board.upload_limit + 1)}
    assert "is over 5 MB" in _summary(board, {"base": huge, "changes": {}})


def test_a_toml_download_does_not_simulate(board):
    key = board.cache.remember(load_scenario(REFERENCE, HOUR))
    response = board.app.server.test_client().get(f"/download/{key}/toml")
    assert response.status_code == 200 and len(board.cache) == 0
    assert load_scenario(REFERENCE, HOUR) == loads_scenario(response.data.decode())


def test_every_callback_the_page_sends_passes_the_shape_check(board):
    # the check refuses what no page sends; what the page sends, it lets through (a weather
    # upload answers four outputs, two of them duplicates keyed with Dash's @hash), and no
    # callback fails on empty inputs
    client = board.app.server.test_client()
    for key, spec in board.app.callback_map.items():
        status = client.post(
            "/_dash-update-component", json=_empty_request(board, key, spec)
        ).status_code
        browser_only = spec.get("callback") is None  # clientside: never sent to the server
        assert status == 400 if browser_only else status in (200, 204), (key, status)


def test_an_input_of_another_type_than_its_component_sends_is_refused(board):
    # found in review: a link's query sent as a number (url.search = 5) was HTTP 500. Every
    # input whose component fixes its type, in every server callback, forged to another type
    client = board.app.server.test_client()
    forged = 0
    for key, body in _server_requests(board):
        for part in ("inputs", "state"):
            for item in body[part]:
                if isinstance(item, dict) and item["property"] in PROP_TYPES:
                    for wrong in (5, ["a"], {"a": 1}, "a", True):
                        if isinstance(wrong, PROP_TYPES[item["property"]]):
                            continue
                        item["value"] = wrong
                        response = client.post("/_dash-update-component", json=body)
                        assert response.status_code == 400, (key, item["property"], wrong)
                        forged += 1
                    item["value"] = None
    assert forged >= 30  # every typed input of the page, four wrong types each


def _server_requests(board) -> Iterator[tuple[str, dict]]:
    """Each callback the server runs (clientside ones run in the browser), with its request as
    the page sends it with every input empty."""
    for key, spec in board.app.callback_map.items():
        if spec.get("callback") is not None:
            yield key, _empty_request(board, key, spec)


def _empty_request(board, key: str, spec: dict) -> dict:
    """The request of a callback with every input empty, as the page sends it."""
    declared = spec["output"]
    outputs = [
        _output(board, _concrete(o.component_id), o.component_property)
        for o in (declared if isinstance(declared, list) else [declared])
    ]
    return {
        "output": key,
        "outputs": outputs if isinstance(declared, list) else outputs[0],
        "inputs": [_empty(i) for i in spec["inputs"]],
        "state": [_empty(i) for i in spec["state"]],
        "changedPropIds": [],
    }


def _concrete(cid: object) -> object:
    """A component id as the page sends it: a pattern's MATCH made one graph's."""
    cid = json.loads(cid) if isinstance(cid, str) and cid.startswith("{") else cid
    if isinstance(cid, dict):  # a declared output's wildcards are objects: as the JSON's lists
        cid = {k: json.loads(v.to_json()) if hasattr(v, "to_json") else v for k, v in cid.items()}
        return {k: v if isinstance(v, str) or v == ["ALL"] else "power" for k, v in cid.items()}
    return cid


def _empty(spec: dict) -> object:
    """An input of the page with nothing in it (a pattern group: none of its components)."""
    if '"ALL"' in json.dumps(spec["id"], default=str) or "ALL" in str(spec["id"]):
        return []
    return {"id": _concrete(spec["id"]), "property": spec["property"], "value": None}


# --- issue 12: the compare view's trace upload and the fitted scenario's store ----------------

FIT_UPLOAD = (
    "..fit.data...fit-message.children...fit-graph.figure...fit-table.rowData"
    "...fit-numbers.rowData.."
)


def _trace_upload(
    board, contents: str, filename: object, period=None, gpus=None, poll=None, gpu=None
) -> dict:
    status, body = call(
        board,
        FIT_UPLOAD,
        [
            ("upload-trace", "contents", contents),
            ("trace-period", "value", period),
            ("trace-gpus", "value", gpus),
            ("trace-poll-gpus", "value", poll),
            ("trace-gpu", "value", gpu),
        ],
        [("upload-trace", "filename", filename)],
    )
    assert status == 200, status
    return body["response"]


def test_a_trace_upload_is_bounded_and_read_from_the_servers_own_file(board, opened, tmp_path):
    # the upload limit holds for a trace as for a scenario, over HTTP, before anything is read
    big = "data:;base64," + base64.b64encode(b"0" * (board.upload_limit + 3)).decode()
    said = _trace_upload(board, big, "big.csv")["fit-message"]["children"]
    assert said.startswith("big.csv is 5.0 MB; the dashboard takes files up to 5 MB")
    # a name is never a path: the trace is read from a file of the server's naming inside its
    # working folder, and the file named is neither read nor written
    secret = _secret(tmp_path)
    opened.clear()
    text = "timestamp, index, power.draw [W]\nnot, a, trace\n"
    said = _trace_upload(board, _data_url(text), str(secret))["fit-message"]["children"]
    assert said.startswith(f"{uploads_module.safe_name(str(secret))}: line 2")
    assert str(secret) not in said
    assert str(Path(board.workdir.name)) not in said
    assert all(str(board.traces) in p for p in opened if "powermodel-dashboard-" in p)
    assert str(secret) not in opened and list(board.traces.iterdir()) == []
    # boxes forged to what no number box sends are refused in words
    for period, gpus in (
        ("1; rm -rf /", None), ([1], None), (None, {"a": 1}), (None, 1e400), (10**400, None),
        (None, -(10**400)),
    ):  # fmt: skip
        said = _trace_upload(board, _data_url(text), "t.csv", period, gpus)
        assert "is not a number" in said["fit-message"]["children"]
    # the GPUs-per-poll box and the GPU list (issue 27) are as hostile: a number box sends a
    # number, the list one of the catalogue's names, and anything else is refused before the
    # trace is read
    for poll, gpu, words in (
        ("8", None, "GPUs per poll: '8' is not a number"),
        (2.5, None, "GPUs per poll: 2.5 is not a whole number"),
        (True, None, "GPUs per poll: True is not a number"),
        (None, str(secret), "is not in the catalogue"),
        (None, ["H100-SXM"], "is not in the catalogue"),
        (None, "h100-sxm", "is not in the catalogue"),
        (None, 7, "is not in the catalogue"),
    ):
        opened.clear()
        said = _trace_upload(board, _data_url(text), "t.csv", None, None, poll, gpu)
        assert words in said["fit-message"]["children"]
        assert list(board.traces.iterdir()) == [] and str(secret) not in opened


def test_a_forged_fit_store_is_checked_as_an_uploaded_scenario(board, tmp_path, opened):
    # the store of the fit holds the fitted scenario's text: loading or downloading it is an
    # upload, with every check and limit of one
    secret = _secret(tmp_path)
    opened.clear()
    load = next(k for k in board.app.callback_map if k.startswith("..base.data@"))
    for store, said in (
        ({"upload": "x.toml", "toml": f'extends = "{secret}"'}, "the scenario shown is unchanged"),
        ({"upload": "x.toml", "toml": "#" * (board.upload_limit + 1)}, "is over 5 MB"),
        (
            {
                "upload": "../x.toml",
                "toml": f'extends = "{REFERENCE}"\n[simulation]\ndt = "10ms"\n',
            },
            "steps is more than the dashboard draws",
        ),
        ({"upload": ["x"], "toml": 5}, "no fitted scenario: upload a trace first"),
    ):
        status, body = call(board, load, [("fit-load", "n_clicks", 1)], [("fit", "data", store)])
        assert status == 200 and said in body["response"]["message"]["children"]
        download = "fit-toml-download.data"
        status, _ = call(
            board, download, [("fit-toml-button", "n_clicks", 1)], [("fit", "data", store)]
        )
        assert status == 204  # nothing sent
    assert str(secret) not in opened
    zoom = next(k for k in board.app.callback_map if k.startswith("fit-graph.figure@"))
    window = {"xaxis.range[0]": "2026-01-01", "xaxis.range[1]": "2026-01-02"}
    for store in ({"key": "0" * 32}, {"key": ["x"]}, "x", None):
        status, _ = call(
            board, zoom, [("fit-graph", "relayoutData", window)], [("fit", "data", store)]
        )
        assert status == 204


# --- issue 26, item 8: request shapes, not only values -----------------------------------------


UPLOADED = f'extends = "{REFERENCE}"\n[simulation]\nduration = "1h"\n'


@pytest.mark.parametrize(
    "base",
    [
        {"toml": UPLOADED},  # an upload without its name: its link could not be made (HTTP 500)
        {"preset": REFERENCE, "toml": UPLOADED},  # its link named the preset, its run the upload
        {"preset": REFERENCE, "upload": "x.toml"},  # its title named the upload
        {"upload": ["x.toml"], "toml": UPLOADED},
        {"upload": "x.toml", "toml": 5},
        {"preset": [REFERENCE]},
        {"upload": "x.toml"},
        {},
    ],
)
def test_a_base_of_a_shape_the_page_never_makes_is_refused_in_words(board, base):
    # issue 26, found by the forged round: the page makes a base of two kinds only, a preset
    # {"preset": name} or an upload {"upload": name, "toml": text}; one of both, of neither or
    # of other types was read by its parts (the run from an upload's text wherever it stood,
    # the link from the preset or a name that was not there), so the assembly failed with HTTP
    # 500, or ran another scenario than its link and title said
    refusal = "the page's state is not one this dashboard made: reload the page"
    values = shown_values(board.base({"preset": REFERENCE}))
    status, body = call(board, ASSEMBLE, [("base", "data", base), *_controls(values)])
    assert status == 200
    assert body["response"]["scenario-error"]["children"] == f"not applied: {refusal}"
    assert refusal in _summary(board, {"base": base, "changes": {}})


def test_a_request_of_a_shape_no_page_sends_is_refused(board):
    # issue 26: an input item without "id", or the controls group sent as a dict, was HTTP 500
    # (Dash's own KeyError/AttributeError). Every server callback, every item, every wrong shape
    client = board.app.server.test_client()
    forged = 0
    for key, request in _server_requests(board):
        for name, body in forged_shapes(request):
            status = client.post("/_dash-update-component", json=body).status_code
            assert status == 400, (key, name, status)
            forged += 1
    assert forged > 1000  # 1,143: 23 server callbacks of 3-8 items, 7 shapes an item and more


@pytest.mark.parametrize(
    "state",
    [
        {"base": {"preset": REFERENCE}, "changes": {}},
        {"base": {"upload": "mine.toml", "toml": f'extends = "{REFERENCE}"'}, "changes": {}},
    ],
)
def test_a_lone_surrogate_anywhere_in_a_request_is_refused(board, state):
    # issue 26: "\ud800" (JSON's escape of a lone surrogate, which no browser sends) in the
    # page's stored scenario was HTTP 500: the answer that echoed it could not be encoded.
    # Put in every place of the summary's request where text can stand, value or key
    client = board.app.server.test_client()
    good = {
        "output": SUMMARY,
        "outputs": [
            {"id": "scenario-name", "property": "children"},
            {"id": "summary", "property": "children"},
            {"id": "ready", "property": "data"},
        ],
        "inputs": [{"id": "scenario", "property": "data", "value": state}],
        "changedPropIds": ["scenario.data"],
        "state": [],
    }
    assert client.post("/_dash-update-component", json=good).status_code == 200
    places = list(strings_in(good["inputs"][0]["value"], ("inputs", 0, "value"), keyed=True))
    for path, keyed in places:
        # ensure_ascii: the surrogate travels as the escape \ud800
        for as_key in (True, False) if keyed else (False,):
            raw = json.dumps(replaced(good, path, "\ud800", as_key))
            assert client.post(CALLBACK, data=raw, content_type=JSON).status_code == 400, path
    assert len(places) >= 4
