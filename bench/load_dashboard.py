"""Load test of the dashboard as a team deploys it: ``python bench/load_dashboard.py``.

It starts ``python app.py --port P --cache-gb G`` (waitress) on 127.0.0.1 and lets simulated
users edit for a while, each on its own HTTP session speaking Dash's protocol as the page does:
it loads the page, takes the controls' values from the ``set_base`` callback, then loops: change
one or two controls (seed, GPU count, trough depth, step time; the 7-day period at 1 s stays),
or go back to a scenario it saw before; send the scenario's assembly, its summary (polling the
queue position once a second while the summary waits, as the page does), the open tab's view
(power, sometimes grid), sometimes a pan/zoom inside the run; think 0.2-1 s.

Beside them, ``--heavy`` users (8 by default) load the page and, over and over, upload a sweep's
results as large as the dashboard reads (4 M values, compressed: a file of tens of kB, issue 26)
under a name of their own each time (a new input for the server: read, then every chart built
anew) and ask for its chart, each user a metric and key of its own: at every moment 8 heavy
chart requests are in flight, the case where 4 requests took 93 s and 2.5 GB each.

Measured:

- server errors: any HTTP status other than 200 or 204, any answer that is not Dash's JSON for
  the outputs asked, any connection failure or time-out (target: none); a view the server
  refuses with a message ("busy: try again", too large, past its deadline) is not an error: it
  is counted apart, by its message;
- latency of each callback, p50 and p95; the summary's for new scenarios and for revisits; the
  cheap views' (the summary of a scenario already simulated, the power view, the queue's
  position) p95 against 5 s;
- the queue: summaries that waited behind others, the longest queue seen, "busy" refusals;
- the server's RSS every 0.5 s (psutil), its maximum, and the bound it must keep:
  RSS <= 1.25 x ``--cache-gb`` + base, where base is the RSS of the idle server after it has
  served its first page (the page, its layout and the callbacks the page sends on load); and
  the RSS once the server is idle again after the load.

The exit code is 1 if there was a server error, the RSS bound was broken or a cheap view's p95
was over 5 s.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Pending
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import requests
import xarray as xr

from powermodel.scenario import parse_duration
from powermodel.webapp import ids
from powermodel.webapp.cache import DEFAULT_BYTES, SIMULATIONS

ROOT = Path(__file__).resolve().parents[1]
BOUND_FACTOR = 1.25  # RSS bound: this many times the cache, plus the base
SAMPLE = 0.5  # s between RSS samples
TIMEOUT = 120.0  # s a request may take before it counts as a failure
THINK = (0.2, 1.0)  # s a user pauses between actions
REVISIT = 0.3  # share of edits that go back to a scenario seen before
GRID = 0.25  # share of edits made with the grid tab open (the power tab otherwise)
ZOOM = 0.5  # share of edits followed by a pan/zoom
CHEAP = ("summary, revisit", "power view", "status")  # the views a heavy build must not starve
CHEAP_P95 = 5.0  # s: the most a cheap view's p95 may be
# The heavy users' results: error and four metrics over 200 x 40 points x 99 seeds, 3.96 M values
# (sweep.MAX_RESULT_CELLS, 4 M, the most a file may hold): a chart per metric and key, 8 in all
RESULTS_SHAPE = (200, 40, 99)
RESULTS_METRICS = ("grid_swing_5s_mw", "grid_peak_mw", "grid_mean_mw", "effective_training_time")
RESULTS_KEYS = ("workload.trough_depth", "checkpoint.interval")
# each callback a user sends, by (its first output, its first input) as /_dash-dependencies
# lists them
ROLES = {
    "set_base": ((ids.BASE, "data"), (ids.URL, "search")),
    "assemble": ((ids.SCENARIO, "data"), (ids.BASE, "data")),
    "summary": ((ids.SCENARIO_NAME, "children"), (ids.SCENARIO, "data")),
    "status": ((ids.STATUS, "children"), (ids.POLL, "n_intervals")),
    "power view": ((ids.resampled("power"), "figure"), (ids.READY, "data")),
    "grid view": ((ids.resampled("grid"), "figure"), (ids.READY, "data")),
    "zoom": ((ids.resampled(["MATCH"]), "figure"), (ids.resampled(["MATCH"]), "relayoutData")),
    "sweep upload": ((ids.SWEEP, "data"), (ids.UPLOAD_SWEEP, "contents")),
    "sweep chart": ((ids.SWEEP_GRAPH, "figure"), (ids.SWEEP, "data")),
}
# where a view the server refuses says why (dash.set_props: no output of the callback's own)
TOLD = (ids.VIEW_MESSAGE, ids.SWEEP_MESSAGE)
# the controls a user changes, with a new value each time (in the control's own unit)
EDITS = {
    "simulation.seed": lambda rng: int(rng.integers(0, 2**31 - 1)),
    "cluster.n_gpus": lambda rng: int(rng.choice([4096, 8192, 16384, 24576, 32768])),
    "workload.trough_depth": lambda rng: round(float(rng.integers(0, 18)) * 0.05, 2),
    "workload.step_time": lambda rng: round(float(rng.uniform(2.0, 30.0)), 1),
}
QUEUED = re.compile(r"number (\d+) in the queue")
WAITRESS_QUEUE = re.compile(r"Task queue depth is (\d+)")  # requests waiting for a thread


def key(cid: Any) -> str:
    """A component id as Dash writes it in keys and answers."""
    return json.dumps(cid, sort_keys=True, separators=(",", ":")) if isinstance(cid, dict) else cid


def control(name: str) -> tuple[str, str]:
    """(id, property) of the control holding a value for scenario key ``name``."""
    return key(ids.control(name)), "value"


class Record:
    """What every user saw, shared between their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.no_update: dict[str, int] = defaultdict(int)
        self.errors: list[dict[str, Any]] = []
        self.queued: list[int] = []  # per summary that waited in the queue: its first position
        self.polls: dict[str, int] = defaultdict(int)  # status answers, by kind
        self.refusals: list[str] = []  # summaries answered "not simulated", and assemblies refused
        self.told: list[str] = []  # views refused with a message: busy, too large, too slow

    def time(self, name: str, seconds: float, updated: bool) -> None:
        with self.lock:
            self.latency[name].append(seconds)
            self.no_update[name] += not updated

    def error(self, name: str, what: str, payload: dict | None = None) -> None:
        with self.lock:
            self.errors.append(
                {
                    "callback": name,
                    "at": time.time(),
                    "error": what[:500],
                    "request": json.dumps(payload)[:500] if payload else None,
                }
            )

    def note(self, field: str, item: Any) -> None:
        with self.lock:
            getattr(self, field).append(item)


class Page:
    """One browser tab: the component properties it holds, and the requests it sends."""

    def __init__(self, url: str, record: Record) -> None:
        self.url, self.record = url, record
        self.session, self.poller = requests.Session(), requests.Session()
        self.props: dict[tuple[str, str], Any] = {}
        self.ids: list[Any] = []  # component ids in layout order
        self.callbacks: dict[str, dict] = {}

    def open(self) -> bool:
        """Load the page, its layout and its callbacks, as the browser does first."""
        pages = [self.get(path) for path in ("/", "/_dash-layout", "/_dash-dependencies")]
        if None in pages:
            return False
        self.walk(pages[1].json())
        self.props[(ids.URL, "search")] = ""
        deps = pages[2].json()
        self.callbacks = {name: find(deps, *signature) for name, signature in ROLES.items()}
        return True

    def get(self, path: str) -> requests.Response | None:
        try:
            response = self.session.get(self.url + path, timeout=TIMEOUT)
        except requests.RequestException as exc:
            self.record.error(f"GET {path}", repr(exc))
            return None
        if response.status_code != 200:
            self.record.error(f"GET {path}", f"HTTP {response.status_code}: {response.text}")
            return None
        return response

    def walk(self, node: Any) -> None:
        """Collect every component's id and properties from the layout."""
        if isinstance(node, list):
            for child in node:
                self.walk(child)
        elif isinstance(node, dict):
            props = node.get("props") if "namespace" in node else None
            if isinstance(props, dict) and "id" in props:
                self.ids.append(props["id"])
                self.props.update({(key(props["id"]), p): v for p, v in props.items()})
            for value in (props if isinstance(props, dict) else node).values():
                self.walk(value)

    def call(
        self, name: str, changed: list[tuple[str, str]], poll: bool = False, label: str = ""
    ) -> dict | None:
        """Send a callback with the page's current properties; apply and return its answer
        (None when it failed or changed nothing). ``changed`` are the triggering properties;
        the latency is recorded under ``label`` (by default the callback's name)."""
        dep = self.callbacks[name]
        trigger = json.loads(changed[0][0]) if changed[0][0].startswith("{") else None
        outputs = [self.resolve(i, p, trigger, False) for i, p in split_outputs(dep["output"])]
        payload = {
            "output": dep["output"],
            "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [self.resolve(d["id"], d["property"], trigger) for d in dep["inputs"]],
            "changedPropIds": [f"{i}.{p}" for i, p in changed],
            "state": [self.resolve(d["id"], d["property"], trigger) for d in dep["state"]],
        }
        session = self.poller if poll else self.session
        start = time.perf_counter()
        try:
            response = session.post(
                self.url + "/_dash-update-component", json=payload, timeout=TIMEOUT
            )
        except requests.RequestException as exc:
            self.record.error(name, repr(exc), payload)
            return None
        seconds = time.perf_counter() - start
        answer = self.answer(name, response, outputs, payload)
        if answer is not False:
            self.record.time(label or name, seconds, answer is not None)
        return answer or None

    def answer(self, name: str, response: requests.Response, outputs: list, payload: dict) -> Any:
        """The answer's outputs, applied to the page; None for no update, False if invalid."""
        if response.status_code == 204:
            return None
        try:
            changes = response.json()["response"] if response.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            changes = None
        asked = {key(o["id"]) for o in flatten(outputs)}
        if not isinstance(changes, dict) or not set(changes) <= asked:
            self.record.error(name, f"HTTP {response.status_code}: {response.text}", payload)
            return False
        for cid, props in changes.items():
            self.props.update({(cid, p): v for p, v in props.items()})
        told = response.json().get("sideUpdate") or {}
        for cid in TOLD:
            said = (told.get(cid) or {}).get("children")
            if said:
                self.record.note("told", said)
        return changes

    def resolve(self, pattern: str, prop: str, trigger: dict | None, value: bool = True) -> Any:
        """An input, state or output as the page sends it: a wildcard id becomes the matching
        components (ALL: every one, in layout order; MATCH: the triggering one)."""
        cid = json.loads(pattern) if pattern.startswith("{") else pattern
        if not isinstance(cid, dict) or not any(isinstance(v, list) for v in cid.values()):
            found = [cid]
        else:
            found = [c for c in self.ids if matches(cid, c, trigger)]
        items = [{"id": c, "property": prop} for c in found]
        if value:
            for item in items:
                item["value"] = self.props.get((key(item["id"]), prop))
        return items if ["ALL"] in (cid.values() if isinstance(cid, dict) else ()) else items[0]


def find(deps: list[dict], output: tuple[Any, str], first_input: tuple[Any, str]) -> dict:
    """The callback whose first output and first input are these."""
    wanted = ((key(output[0]), output[1]), (key(first_input[0]), first_input[1]))
    for dep in deps:
        first = dep["inputs"][0]
        if (split_outputs(dep["output"])[0], (first["id"], first["property"])) == wanted:
            return dep
    raise SystemExit(f"the dashboard has no callback from {first_input} to {output}")


def split_outputs(output: str) -> list[tuple[str, str]]:
    """(id, property) of each output in a callback's key, without duplicate-output hashes."""
    parts = output.strip(".").split("...") if output.startswith("..") else [output]
    return [tuple(p.split("@")[0].rsplit(".", 1)) for p in parts]


def flatten(items: list) -> list[dict]:
    """Outputs as a flat list (an ALL output is a list of its components)."""
    return [i for item in items for i in (item if isinstance(item, list) else [item])]


def matches(pattern: dict, cid: Any, trigger: dict | None) -> bool:
    """Whether component id ``cid`` matches a wildcard id (MATCH: as ``trigger`` has it)."""
    if not isinstance(cid, dict) or set(cid) != set(pattern):
        return False
    return all(
        v == ["ALL"] or (v == ["MATCH"] and trigger and cid[k] == trigger[k]) or v == cid[k]
        for k, v in pattern.items()
    )


# --- a user ---------------------------------------------------------------------------------


def user(url: str, deadline: float, rng: np.random.Generator, record: Record) -> None:
    """Open the page, then edit until ``deadline``."""
    page = Page(url, record)
    if not page.open() or not load(page):
        return
    seen: list[dict[str, Any]] = [{k: page.props.get(control(k)) for k in EDITS}]
    with ThreadPoolExecutor(1) as waiter:
        while time.monotonic() < deadline:
            revisit = len(seen) > 1 and rng.random() < REVISIT
            changed = edit(page, rng, seen, revisit)
            tab = "grid" if rng.random() < GRID else "power"
            page.props[(ids.TABS, "value")] = tab
            if assemble(page, changed):
                summarize(page, waiter, "summary, revisit" if revisit else "summary, new")
                page.call(f"{tab} view", [(ids.READY, "data")])
                if rng.random() < ZOOM:
                    zoom(page, tab, rng)
            time.sleep(rng.uniform(*THINK))


def load(page: Page) -> bool:
    """The callbacks the page sends on load: the controls from the link, the scenario, its
    summary and the open view."""
    base = [(ids.URL, "search"), (ids.PRESET, "value"), (ids.UPLOAD_SCENARIO, "contents")]
    if page.call("set_base", base) is None or page.call("assemble", [(ids.BASE, "data")]) is None:
        return False
    page.call("summary", [(ids.SCENARIO, "data")], label="summary, page load")
    page.call("power view", [(ids.READY, "data")])
    return True


def assemble(page: Page, changed: list[tuple[str, str]]) -> bool:
    """The scenario of the controls; False if it failed or was refused (noted)."""
    answer = page.call("assemble", changed)
    if answer and ids.SCENARIO not in answer:
        page.record.note("refusals", str(page.props.get((ids.SCENARIO_ERROR, "children"))))
    return bool(answer and ids.SCENARIO in answer)


def edit(
    page: Page, rng: np.random.Generator, seen: list[dict[str, Any]], revisit: bool
) -> list[tuple[str, str]]:
    """Set one or two controls to new values, or all of them back to an earlier scenario's;
    returns the properties changed."""
    if revisit:
        values = seen[int(rng.integers(len(seen) - 1))]
    else:
        names = rng.choice(list(EDITS), size=int(rng.integers(1, 3)), replace=False)
        values = {k: page.props.get(control(k)) for k in EDITS}
        values |= {k: EDITS[k](rng) for k in names}
        seen.append(values)
    changed = [control(k) for k, v in values.items() if page.props.get(control(k)) != v]
    page.props.update({control(k): v for k, v in values.items()})
    return changed or [control("simulation.seed")]


def summarize(page: Page, waiter: ThreadPoolExecutor, name: str) -> None:
    """The summary; while it waits, poll where its run stands, once per interval of the
    page's poll timer."""
    pending = waiter.submit(page.call, "summary", [(ids.SCENARIO, "data")], label=name)
    first = None
    interval = (page.props.get((ids.POLL, "interval")) or 1000) / 1000
    while True:
        try:
            answer = pending.result(timeout=interval)
            break
        except Pending:
            position = poll(page)
            first = first or position
    if first:
        page.record.note("queued", first)
    summary = page.props.get((ids.SUMMARY, "children"))
    if answer and isinstance(summary, str) and summary.startswith("not simulated"):
        page.record.note("refusals", summary)


def poll(page: Page) -> int | None:
    """One tick of the page's poll timer; the run's place in the queue, if it waits in it."""
    ticks = (page.props.get((ids.POLL, "n_intervals")) or 0) + 1
    page.props[(ids.POLL, "n_intervals")] = ticks
    page.call("status", [(ids.POLL, "n_intervals")], poll=True)
    text = page.props.get((ids.STATUS, "children"))
    found = QUEUED.search(text) if isinstance(text, str) else None
    kind = "busy (queued)" if found else (text or "(empty)")
    with page.record.lock:
        page.record.polls[kind] += 1
    return int(found.group(1)) if found else None


def zoom(page: Page, view: str, rng: np.random.Generator) -> None:
    """Pan/zoom the open view's graph onto a window inside the run, 30 s to the whole run."""
    start = datetime.fromisoformat(
        page.props[(key(ids.control("simulation.start", "date")), "date")]
    )
    length = parse_duration(page.props[control("simulation.duration")])
    width = 30.0 * 2.0 ** rng.uniform(0, np.log2(length / 30.0))
    left = start + timedelta(seconds=rng.uniform(0, length - width))
    window = [str(t) for t in (left, left + timedelta(seconds=width))]
    graph = key(ids.resampled(view))
    page.props[(graph, "relayoutData")] = {"xaxis.range[0]": window[0], "xaxis.range[1]": window[1]}
    page.call("zoom", [(graph, "relayoutData")])


def results_file(folder: Path) -> bytes:
    """A sweep's results as large as the dashboard reads (its errors one character long, so
    that the values are the runs' metrics), compressed: each point's first seed failed, the
    metrics linear in the seed."""
    shape = RESULTS_SHAPE
    dims = (*RESULTS_KEYS, "seed")
    error = np.full(shape, "", dtype=object)
    error[..., 0] = "x"  # text is stored a character a value: the values' bound counts each
    data = {"error": (dims, error)}
    for i, name in enumerate(RESULTS_METRICS):
        value = np.broadcast_to(np.arange(shape[-1]) * (i + 1.0), shape).copy()
        value[..., 0] = np.nan
        data[name] = (dims, value, {"units": "MW"})
    coords = {
        RESULTS_KEYS[0]: np.linspace(0.1, 1.0, shape[0]),
        RESULTS_KEYS[1]: [f"{10 + i}min" for i in range(shape[1])],
        "seed": np.arange(shape[-1]),
    }
    path = folder / "results.nc"
    encoding = {name: {"zlib": True, "complevel": 9} for name in data}
    encoding["error"]["dtype"] = "S1"
    xr.Dataset(data, coords).to_netcdf(path, engine="netcdf4", encoding=encoding)
    return path.read_bytes()


def heavy(url: str, deadline: float, index: int, results: bytes, record: Record) -> None:
    """Upload the results under a new name, then ask for the chart of this user's metric and
    key; again until ``deadline``."""
    page = Page(url, record)
    if not page.open():
        return
    metric = RESULTS_METRICS[index % len(RESULTS_METRICS)]
    swept = RESULTS_KEYS[index // len(RESULTS_METRICS) % len(RESULTS_KEYS)]
    contents = "data:application/x-netcdf;base64," + base64.b64encode(results).decode()
    rounds, rng_pause = 0, THINK[1]
    while time.monotonic() < deadline:
        rounds += 1
        page.props[(ids.UPLOAD_SWEEP, "contents")] = contents
        page.props[(ids.UPLOAD_SWEEP, "filename")] = f"results-{index}-{rounds}.nc"
        page.call("sweep upload", [(ids.UPLOAD_SWEEP, "contents")])
        said = page.props.get((ids.SWEEP_MESSAGE, "children"))
        if isinstance(said, str) and said.endswith("the sweep shown is unchanged"):
            record.note("told", said)  # refused (busy, too large): said, not an error
            time.sleep(rng_pause)  # as one tries again
            continue
        page.props[(ids.SWEEP_METRIC, "value")] = metric
        page.props[(ids.SWEEP_KEY, "value")] = swept
        page.call("sweep chart", [(ids.SWEEP, "data")])


# --- the server -------------------------------------------------------------------------------


def start_server(port: int, cache_gb: float, simulations: int, log: Path) -> subprocess.Popen:
    """``python app.py`` on 127.0.0.1, once it answers; its output goes to ``log``."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is in use: choose another with --port")
    command = [sys.executable, "-u", "app.py", "--port", str(port), "--cache-gb", str(cache_gb)]
    command += ["--simulations", str(simulations)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode}: see {log}")
        try:
            if requests.get(url + "/", timeout=5).status_code == 200:
                return server
        except requests.ConnectionError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit(f"the server did not answer within 2 minutes: see {log}")


def idle_rss(process: psutil.Process, settle: float = 2.0, limit: float = 60.0) -> int:
    """RSS once the process has used under 5 % of a core for ``settle`` seconds (the views
    the page's first scenario prefetches are built by then). [B]"""
    quiet, waited = 0.0, 0.0
    while quiet < settle and waited < limit:
        quiet = quiet + SAMPLE if process.cpu_percent(SAMPLE) < 5.0 else 0.0
        waited += SAMPLE
    return process.memory_info().rss


def sample_rss(process: psutil.Process, stop: threading.Event, out: list) -> None:
    """(seconds since the start, RSS in bytes) every :data:`SAMPLE` seconds until ``stop``."""
    start = time.monotonic()
    while not stop.wait(SAMPLE):
        try:
            out.append((round(time.monotonic() - start, 2), process.memory_info().rss))
        except psutil.NoSuchProcess:
            return


# --- the run and its report -------------------------------------------------------------------


def run(args: argparse.Namespace, log: Path) -> dict[str, Any]:
    server = start_server(args.port, args.cache_gb, args.simulations, log)
    url = f"http://127.0.0.1:{args.port}"
    process = psutil.Process(server.pid)
    try:
        first = Record()
        page = Page(url, first)
        if not page.open():
            raise SystemExit(f"the first page did not load: {first.errors}")
        rss_page = process.memory_info().rss
        load(page)
        base = idle_rss(process)
        record, samples, stop = Record(), [], threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(process, stop, samples))
        sampler.start()
        deadline = time.monotonic() + args.seconds
        upload = results_file(log.parent)
        users = [
            threading.Thread(
                target=user, args=(url, deadline, np.random.default_rng([0, i]), record)
            )
            for i in range(args.users)
        ] + [
            threading.Thread(target=heavy, args=(url, deadline, i, upload, record))
            for i in range(args.heavy)
        ]
        for thread in users:
            thread.start()
        for thread in users:
            thread.join()
        stop.set()
        sampler.join()
        idle_after = idle_rss(process)
        if server.poll() is not None:
            record.error("server", f"the server exited with code {server.returncode}")
        record.errors[:0] = first.errors
    finally:
        server.terminate()
        server.wait(timeout=30)
    out = results(args, record, samples, base, rss_page, log)
    out["rss"]["idle_after_bytes"] = idle_after
    out["upload_bytes"] = len(upload)
    return out


def results(
    args: argparse.Namespace,
    record: Record,
    samples: list,
    base: int,
    rss_page: int,
    log: Path,
) -> dict[str, Any]:
    bound = BOUND_FACTOR * args.cache_gb * 2**30 + base
    rss = np.array([r for _, r in samples] or [0])
    # levelling off is judged while the users edit, not while the last requests drain
    editing = np.array([r for t, r in samples if t <= args.seconds] or [0])
    third = max(1, len(editing) // 3)
    depths = [int(d) for d in WAITRESS_QUEUE.findall(log.read_text())]
    cheap = {
        name: float(np.percentile(record.latency[name], 95)) if record.latency[name] else None
        for name in CHEAP
    }
    return {
        "users": args.users,
        "heavy": args.heavy,
        "cores": psutil.cpu_count(),
        "load_before": psutil.getloadavg()[0],
        "seconds": args.seconds,
        "cache_gb": args.cache_gb,
        "server_errors": len(record.errors),
        "errors": record.errors,
        "latency_s": {
            name: {
                "n": len(s),
                "no_update": record.no_update[name],
                "p50": float(np.percentile(s, 50)),
                "p95": float(np.percentile(s, 95)),
                "max": float(np.max(s)),
            }
            for name, s in sorted(record.latency.items())
        },
        "cheap_p95_s": cheap,
        "cheap_within": all(p is not None and p <= CHEAP_P95 for p in cheap.values()),
        "told": {
            "busy": sum("busy" in t for t in record.told),
            "other": sorted({t for t in record.told if "busy" not in t}),
            "count": len(record.told),
        },
        "queue": {
            "summaries_queued": len(record.queued),
            "longest_queue": max(record.queued, default=0),
            "waitress_queue_warnings": len(depths),
            "waitress_queue_max": max(depths, default=0),
            "polls": dict(record.polls),
            "busy_refusals": sum("busy" in r for r in record.refusals),
            "refusals": record.refusals,
        },
        "rss": {
            "after_page_bytes": rss_page,
            "base_bytes": base,
            "bound_bytes": bound,
            "max_bytes": int(rss.max()),
            "within_bound": bool(rss.max() <= bound),
            "levels_off": bool(editing[-third:].max() <= 1.05 * editing[:-third].max(initial=0)),
            "samples": samples,
        },
    }


def table(result: dict[str, Any]) -> str:
    mib = 2**20
    r, q = result["rss"], result["queue"]
    lines = [
        f"{result['users']} users and {result['heavy']} heavy sweep-chart users (a "
        f"{result['upload_bytes'] / 1e3:.0f}-kB upload of {np.prod(RESULTS_SHAPE) * 5:,} values) "
        f"for {result['seconds']} s, --cache-gb {result['cache_gb']:g}, {result['cores']} cores "
        f"(load {result['load_before']:.1f} before the run)",
        "",
        f"{'callback':<18}{'n':>6}{'no update':>11}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}",
    ]
    for name, s in result["latency_s"].items():
        lines.append(
            f"{name:<18}{s['n']:>6}{s['no_update']:>11}{1000 * s['p50']:>9.0f}"
            f"{1000 * s['p95']:>9.0f}{1000 * s['max']:>9.0f}"
        )
    lines += [
        "",
        f"server errors           {result['server_errors']} (target 0)",
        f"views refused, said     {result['told']['count']} ({result['told']['busy']} busy, "
        f"others: {result['told']['other'][:3]}); not errors",
        "cheap views' p95        "
        + ", ".join(
            f"{name} {'-' if p is None else f'{p:.2f} s'}"
            for name, p in result["cheap_p95_s"].items()
        )
        + f" (target under {CHEAP_P95:g} s: {'kept' if result['cheap_within'] else 'BROKEN'})",
        f"summaries queued        {q['summaries_queued']}, longest queue {q['longest_queue']}",
        f"waitress task queue     deepest {q['waitress_queue_max']} requests waiting for a thread "
        f"({q['waitress_queue_warnings']} warnings in the server log)",
        f"status polls            {q['polls']}",
        f"refused                 {len(q['refusals'])} ({q['busy_refusals']} busy)",
        f"RSS after the page      {r['after_page_bytes'] / mib:.0f} MiB (before any callback)",
        f"RSS base                {r['base_bytes'] / mib:.0f} MiB (idle, first page served)",
        f"RSS max                 {r['max_bytes'] / mib:.0f} MiB; bound {BOUND_FACTOR} x "
        f"{result['cache_gb']:g} GiB + base = {r['bound_bytes'] / mib:.0f} MiB: "
        f"{'kept' if r['within_bound'] else 'BROKEN'}; "
        f"{'levels off' if r['levels_off'] else 'still rising in the last third'}",
        f"RSS idle after          {r['idle_after_bytes'] / mib:.0f} MiB (the load over)",
        "RSS over time [s: MiB]  "
        + ", ".join(f"{t:.0f}: {b / mib:.0f}" for t, b in r["samples"][:: int(5 / SAMPLE)]),
    ]
    lines += [f"error: {e['callback']}: {e['error']}" for e in result["errors"][:10]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20, help="simulated users at once")
    parser.add_argument("--heavy", type=int, default=8, help="heavy sweep-chart users at once")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long they edit [s]")
    parser.add_argument(
        "--cache-gb", type=float, default=DEFAULT_BYTES / 2**30, help="the server's cache [GiB]"
    )
    parser.add_argument(
        "--simulations", type=int, default=SIMULATIONS, help="the server's simulations at once"
    )
    parser.add_argument("--port", type=int, default=8061, help="port to serve on (127.0.0.1)")
    parser.add_argument("--json", type=Path, help="write every number here")
    args = parser.parse_args(argv)
    log = Path(tempfile.mkdtemp(prefix="load-dashboard-")) / "server.log"
    result = run(args, log)
    result["server_log"] = str(log)
    print(table(result))
    print(f"server log: {log}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    broken = not (result["rss"]["within_bound"] and result["cheap_within"])
    return 1 if result["server_errors"] or broken else 0


if __name__ == "__main__":
    sys.exit(main())
