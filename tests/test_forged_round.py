"""Issue 26, acceptance 2: a forged-request round against the production server, traced.

``python app.py`` (waitress, as users run it, from the repository root, on a free loopback port,
its opening period shortened with ``--set``) runs under ``strace -f``. Secrets are planted
outside its working folder (a scenario, an EPW, a CSV, a sweep's results and a text file, each
holding one unique token), and every server callback in the page's callback map
(``/_dash-dependencies``) is sent over HTTP as the page sends it, in the state a user's page
reaches, then forged: each input and state item given wrong values (nothing, wrong types, huge
and non-finite numbers, long and deeply nested values, a lone surrogate, the secrets' paths:
absolute, relative to the server's folders, through ``..``, as a URL), each text inside the
page's stores (values and keys) replaced by a secret's path, and every wrong shape
(:func:`forged_requests.forged_shapes`). Each upload takes files of every kind the page accepts
(scenarios naming the secrets, weather, traces in each format the readers take, sweep results,
among them HDF5 files whose text lies in a secret: external storage, an external link, a
virtual dataset), and the download route forged keys, formats, resolutions and rules.

Asserted: no answer is an HTTP 5xx (or none at all); no answer holds the token; and every file
the server opened, looked up or changed after its first page was served lies in its own working
folder or among what Python, the package and its libraries read for themselves
(:func:`allowlist`, each entry justified), with the request in flight named for any other.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import h5py
import numpy as np
import psutil
import pytest
import requests
import xarray as xr
from conftest import REFERENCE
from crafted_hdf5 import replace_variable
from forged_requests import forged_shapes, replaced, strings_in
from synthetic_telemetry import write
from test_fit import START, _trace

from powermodel.sweep import write as write_results
from powermodel.webapp import design_panel, ids

ROOT = Path(__file__).resolve().parents[1]
OTHER = "llama3-405b-8k-h100"  # the preset the compare view is given
CALLBACK = "/_dash-update-component"
START_TIMEOUT = 60.0  # s for the server to import, simulate its opening scenario and answer
REQUEST_TIMEOUT = 30.0  # s an answer may take before the round counts it as none
CHARS = 48  # characters of each run's error in the results files


def _bench(name: str) -> Any:
    """A script of ``bench/`` as a module (``bench`` is no package): the load test's client
    speaks Dash's protocol as the page does, and the round speaks it through the same code."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


protocol = _bench("load_dashboard")


# --- the secrets --------------------------------------------------------------------------------


@dataclass
class Secrets:
    """Files of the server's machine outside its working folder, each holding ``token``, and
    every way a request could name them (``paths``)."""

    token: str
    files: dict[str, Path]
    paths: list[str]

    def leaked(self, text: str) -> bool:
        return self.token in text or "root:x:0:0" in text  # /etc/passwd's first line too


def _plant(folder: Path) -> Secrets:
    """The secrets, and their paths: absolute, relative to the server's folder (the
    repository) and to its working folder's subfolders, as a URL, as an uploaded weather
    file's token, and the system's own."""
    token = f"SECRET-{uuid.uuid4().hex}"
    folder.mkdir()
    epw = next((ROOT / "data" / "weather").glob("*Chicago*.epw")).read_text()
    files = {kind: folder / f"secret.{kind}" for kind in ("toml", "epw", "csv", "nc", "txt")}
    files["toml"].write_text(f'extends = "{REFERENCE}"\nname = "{token}"\n')
    files["epw"].write_text(epw.replace("Chicago", token, 1))
    files["csv"].write_text(f"time,{token} [W]\n2026-01-01T00:00:00Z,1\n2026-01-01T00:00:01Z,2\n")
    _results([[token, ""], ["", ""]], files["nc"])
    files["txt"].write_text(f"{token}\n" * (4 * CHARS // len(token) + 1))
    # the working folder is <TMPDIR>/powermodel-dashboard-*/, with uploads/, traces/, downloads/
    paths = [
        way
        for path in files.values()
        for way in (
            str(path),
            os.path.relpath(path, ROOT),
            f"../../../{folder.name}/{path.name}",
            f"file://{path}",
        )
    ]
    paths += [
        f"uploaded:{'0' * 16}-../../../{folder.name}/secret.epw",
        "/etc/passwd",
        "/etc/shadow",
        "/proc/self/environ",
        "../../../../../../../../etc/passwd",
    ]
    return Secrets(token, files, paths)


def _results(error: list[list[str]], path: Path) -> Path:
    """A sweep's results as ``powermodel sweep`` writes them: 2 trough depths x 2 seeds, each
    run's error (empty: it ran) and one metric."""
    runs = ("workload.trough_depth", "seed")
    ds = xr.Dataset(
        {
            "error": (runs, np.array(error, dtype=f"S{CHARS}")),
            "grid_swing_5s_mw": (runs, [[1.0, 2.0], [3.0, 4.0]], {"units": "MW"}),
        },
        coords={"workload.trough_depth": [0.3, 0.5], "seed": [0, 1]},
    )
    return write_results(ds, path)


def _referencing(good: Path, secrets: Secrets) -> dict[str, bytes]:
    """Results files whose ``error`` HDF5 reads from a secret: stored in the text file
    (external storage), linked to the secret results' (an external link), mapped from them (a
    virtual dataset). A server that opens them shows the token in the failed-runs table."""
    with h5py.File(good) as f:
        shape, dtype = f["error"].shape, f["error"].dtype
    crafted = {}
    for kind in ("external storage", "external link", "virtual dataset"):
        path = good.with_name(kind.replace(" ", "-") + ".nc")
        shutil.copy(good, path)
        if kind == "external storage":
            where = [(str(secrets.files["txt"]), 0, math.prod(shape) * dtype.itemsize)]
            replace_variable(path, "error", dtype=dtype, external=where)
        elif kind == "external link":
            replace_variable(
                path, "error", link=h5py.ExternalLink(str(secrets.files["nc"]), "/error")
            )
        else:
            layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = h5py.VirtualSource(
                str(secrets.files["nc"]), "error", shape=shape, dtype=dtype
            )
            replace_variable(path, "error", layout)
        crafted[kind] = path.read_bytes()
    return crafted


def _uploads(secrets: Secrets, folder: Path) -> dict[str, list[tuple]]:
    """Files of every kind the page uploads, by upload component: (what, name, bytes, the
    other boxes' values); each component's first is a file the page takes."""
    folder.mkdir()
    preset, hour = f'extends = "{REFERENCE}"\n', '[simulation]\nduration = "1h"\n'
    naming = {
        "extending": lambda p: f'extends = "{p}"\n',
        "on the weather": lambda p: f'{preset}{hour}[site]\nweather = "{p}"\n',
        "on the disturbances": lambda p: f'{preset}{hour}[disturbance]\nsequence = "{p}"\n',
        "with a campus workload on the weather": lambda p: (
            f'{preset}{hour}[campus]\n[[campus.workloads]]\nname = "a"\nkind = "training"\n'
            f'set = {{ "site.weather" = "{p}" }}\n'
        ),
    }
    scenarios = [("a scenario", "mine.toml", (preset + hour).encode(), {})]
    scenarios += [
        (f"a scenario {how} {p!r}", "x.toml", make(p).encode(), {})
        for how, make in naming.items()
        for p in secrets.paths
    ]
    epw = next((ROOT / "data" / "weather").glob("*Chicago*.epw")).read_bytes()
    weather = [
        ("an EPW", "chicago.epw", epw, {}),
        ("an EPW named by a path", secrets.paths[1], epw, {}),
    ]
    # a trace without times takes its period, a meter's its GPUs per channel
    period, gpus = (ids.TRACE_PERIOD, "value"), (ids.TRACE_GPUS, "value")
    traces = [
        (
            f"a {fmt} trace",
            f"{fmt}.csv",
            write(frame, folder / fmt, fmt, **options).read_bytes(),
            {period: None, gpus: None} | boxes,
        )
        for fmt, frame, options, boxes in (
            ("nvidia-smi", _trace(6.0, 1.0), {}, {}),
            ("dcgmi-dmon", _trace(6.0, 1.0), {}, {period: 1.0}),
            ("dcgm-exporter", _trace(6.0, 1.0), {}, {period: 1.0}),
            ("meter", _trace(6.0, 1.0, meter=True), {"unit": "kW"}, {gpus: 8}),
        )
    ]
    traces.append(("a trace named by a path", str(secrets.files["csv"]), *traces[0][2:]))
    good = _results([["", "a run failed"], ["", ""]], folder / "results.nc")
    sweeps = [("sweep results", "results.nc", good.read_bytes(), {})]
    sweeps += [
        (f"results by {k}", "results.nc", v, {}) for k, v in _referencing(good, secrets).items()
    ]
    return {
        ids.UPLOAD_SCENARIO: scenarios,
        ids.UPLOAD_WEATHER: weather,
        ids.UPLOAD_TRACE: traces,
        ids.UPLOAD_SWEEP: sweeps,
    }


# --- the server, traced --------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    tmp: Path  # its TMPDIR, which holds its working folder
    log: Path  # strace's
    output: Path  # the server's own stdout and stderr
    pid: int
    python: dict  # the folders its interpreter imports from


@contextmanager
def _traced_server(folder: Path) -> Iterator[Server]:
    """``python app.py`` from the repository root under ``strace -f`` (with seccomp-bpf only
    the file system calls stop it), once it answers on a free loopback port."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail(
            "the forged round traces the dashboard's file accesses with strace: install it "
            "(Debian: apt-get install strace)"
        )
    tmp, log, output = folder / "tmp", folder / "strace.log", folder / "server.log"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # -y: each descriptor's path beside it, so relative paths resolve; -xx: paths in hex
    command = [strace, "-f", "--seccomp-bpf", "-e", "trace=%file", "-y", "-xx", "-ttt"]
    command += ["-o", str(log), sys.executable, "app.py", "--port", str(port)]
    # a small bound that still admits a preset's whole run (1.2 GB at 1 s): the fitted
    # scenario's TOML download checks it as an upload (the round's own runs are 1 h)
    command += ["--cache-gb", "1.25", "--set", "simulation.duration=1h"]
    with output.open("w") as out:
        tracer = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        url = f"http://127.0.0.1:{port}"
        _answering(url, tracer, output)
        (server,) = psutil.Process(tracer.pid).children()
        yield Server(url, tmp, log, output, server.pid, _interpreter(env))
    finally:
        # strace outlives a signal to itself: the server, signalled, ends, and strace with it
        for child in psutil.Process(tracer.pid).children():
            child.send_signal(signal.SIGTERM)
        try:
            tracer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()


def _answering(url: str, tracer: subprocess.Popen, output: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if tracer.poll() is not None:
            pytest.fail(f"the server exited ({tracer.returncode}): {output.read_text()[-3000:]}")
        try:
            if requests.get(url + "/", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            time.sleep(0.2)
    pytest.fail(f"the server did not answer in {START_TIMEOUT:g} s: {output.read_text()[-3000:]}")


def _interpreter(env: dict) -> dict:
    """The folders the server's interpreter imports from (``python app.py`` puts the script's
    folder, the repository, first)."""
    code = (
        "import json, site, sys, sysconfig; print(json.dumps({'path': sys.path[1:], "
        "'prefix': sys.prefix, 'lib': [sysconfig.get_path(k) for k in ('stdlib', "
        "'platstdlib', 'purelib', 'platlib')], 'site': site.getsitepackages()}))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    python = json.loads(found.stdout)
    python["path"] = [str(ROOT), *python["path"]]
    return python


# --- the file accesses strace saw -----------------------------------------------------------------

LINE = re.compile(r"^(\d+) +(\d+\.\d+) (\w+)\((.*)$")
# a path argument, after the folder it is relative to (a descriptor's, or the working one's)
PATH_ARG = re.compile(r'(?:(?:AT_FDCWD|\d+)<((?:\\x[0-9a-f]{2})*)>, )?"((?:\\x[0-9a-f]{2})*)"')
# a list argument (a command's words, its environment): text, not paths; with -xx no bracket
# is a path's
LIST_ARG = re.compile(r"\[[^\]]*\]")


def _text(hexed: str) -> str:
    return bytes.fromhex(hexed.replace("\\x", "")).decode("utf-8", "surrogateescape")


def accesses(log: Path, since: float) -> Iterator[tuple[float, str, str]]:
    """(time, system call, absolute path) of every path the traced processes named after
    ``since`` [s since the epoch]; a path with no folder given is relative to the server's
    working folder (the repository: it never changes folder). A call that makes an unnamed
    file reads as ``openat(O_TMPFILE)``; a program run is its ``execve`` of each place
    searched."""
    for line in log.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if match is None or float(match[2]) < since:
            continue
        call = match[3] + ("(O_TMPFILE)" if "O_TMPFILE" in match[4] else "")
        for folder, name in PATH_ARG.findall(LIST_ARG.sub("", match[4])):
            base = _text(folder) if folder else str(ROOT)
            if base.startswith("/"):  # not a pipe's or a socket's descriptor
                path = os.path.normpath(os.path.join(base, _text(name))) if name else base
                yield float(match[2]), call, path


def allowlist(server: Server) -> tuple[tuple[str, ...], frozenset[str]]:
    """The folders (any path inside) and the files the server may touch whatever a request
    says: its own working folder, and what Python, the package and the libraries it loads read
    for themselves, each with why. ``/proc``, ``/sys`` and ``/etc`` only for what is named
    (``/proc/self/environ`` and ``/etc/passwd`` are secrets too)."""
    python, home = server.python, os.path.expanduser("~")
    folders = (
        # its own working folder: uploads, traces being read, downloads being written
        f"{server.tmp}/powermodel-dashboard-",
        # the Python installation: interpreter, standard library, site-packages (imports)
        python["prefix"] + "/",
        *(p + "/" for p in python["lib"] + python["site"]),
        # the package and the data it ships: presets, rules, weather, chillers
        f"{ROOT}/powermodel/",
        f"{ROOT}/data/",
        # the process's own state, by either name (psutil measures its memory for the cache)
        "/proc/self/",
        f"/proc/{server.pid}/",
        # the processors and memory nodes, which thread pools size themselves by
        "/sys/devices/system/cpu/",
        "/sys/devices/system/node/",
        # the time zone database: zoneinfo and pandas read UTC and the sites' zones there
        "/usr/share/zoneinfo/",
        # numba, imported by the first CSV a server writes (issue 30): the dynamic loader's
        # search for Intel's libsvml by its fixed name, and the package's entry points and
        # editable-install hook, which numba's extension lookup and the import system read
        "/lib/",
        "/usr/lib/",
        f"{ROOT}/powermodel.egg-info/",
        f"{ROOT}/__editable__.",
    )
    files = {
        # each folder on sys.path, and those above the package's: the import system and path
        # resolution look at them
        *python["path"],
        *(str(p) for p in ROOT.parents),
        str(ROOT / "powermodel"),
        str(ROOT / "data"),
        # the memory and processor totals psutil reads for the cache's bound and the CPU count
        "/proc/meminfo",
        "/proc/stat",
        "/sys/fs/cgroup/memory.max",
        # the machine's time zone (time.localtime)
        "/etc/localtime",
        # plotly's own settings file, looked up when a figure is built
        os.environ.get("PLOTLY_DIR", f"{home}/.plotly") + "/.config",
        # netCDF-C's own settings, read once when it first opens a file: its rc files in the
        # home and working folders, its S3 client's AWS profile, and OpenSSL's configuration
        # (its libcurl's): fixed names, none from a request
        *(f"{where}/{rc}" for where in (home, ROOT) for rc in (".ncrc", ".daprc", ".dodsrc")),
        f"{home}/.aws/config",
        f"{home}/.aws/credentials",
        "/usr/local/ssl/openssl.cnf",
        # numba's own settings and the machine it compiles for, read once at its import:
        # fixed names, none from a request
        f"{ROOT}/.numba_config.yaml",
        "/lib",
        "/usr/lib",
        "/proc/cpuinfo",
        "/proc/mounts",
        "/selinux",
        "/etc/ld.so.cache",
        # waitress spools a request body over 512 kB to an unnamed file in TMPDIR
        f"openat(O_TMPFILE) {server.tmp}",
    }
    return folders, frozenset(files)


def _allowed(call: str, path: str, allowed: tuple[tuple[str, ...], frozenset[str]]) -> bool:
    folders, files = allowed
    return path in files or f"{call} {path}" in files or path.startswith(folders)


# --- the requests -------------------------------------------------------------------------------


@dataclass
class Sent:
    what: str  # the callback or route, and what was forged
    start: float
    end: float
    status: int
    text: str
    response: requests.Response | None  # None: no answer came


class Round:
    """The round's requests, sent one at a time (so that a file access belongs to the request
    in flight), each kept with its answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.sent: list[Sent] = []

    def post(self, what: str, payload: Any) -> Sent:
        # NaN and Infinity travel as JSON's extension, which Flask reads: no browser sends them
        return self._send(what, "post", CALLBACK, data=json.dumps(payload))

    def get(self, what: str, path: str) -> Sent:
        return self._send(what, "get", path)

    def _send(self, what: str, method: str, path: str, **kwargs: Any) -> Sent:
        start = time.time()
        try:
            response = self.session.request(
                method,
                self.url + path,
                headers={"Content-Type": "application/json"},
                timeout=REQUEST_TIMEOUT,
                **kwargs,
            )
        except requests.RequestException as exc:
            response = None
            status, text = 599, repr(exc)  # no answer counts as a server failure
        else:
            status, text = response.status_code, response.text
        self.sent.append(Sent(what, start, time.time(), status, text, response))
        return self.sent[-1]

    def during(self, moment: float) -> str:
        """The request in flight at ``moment``, or the last one answered before it."""
        before = [s for s in self.sent if s.start <= moment]
        if not before:
            return "the page's load"
        last = before[-1]
        return last.what if moment <= last.end else f"after {last.what} (in the background)"


def _nested(depth: int, kind: type) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind is list else {"a": value}
    return value


WRONG: list[tuple[str, Any]] = [
    ("null", None),
    ("true", True),
    ("-1", -1),
    ("0", 0),
    ("10**400", 10**400),
    ("1e308", 1e308),
    ("NaN", math.nan),
    ("-Infinity", -math.inf),
    ("'NaN'", "NaN"),
    ("'inf'", "inf"),
    ("''", ""),
    ("100,000 characters", "x" * 100_000),
    ("a lone surrogate", "\ud800"),
    ("a list nested 60 deep", _nested(60, list)),
    ("a dict nested 60 deep", _nested(60, dict)),
    ("[]", []),
    ("{}", {}),
    ("a list of 10,000", [0] * 10_000),
    ("markup", "<script>alert(1)</script>"),
    ("a format string", "{0.__class__}%s%n"),
]
# the tab each view's callback draws for, by its first output (it draws nothing under another)
VIEW_OF = {protocol.key(ids.resampled(v)): v for v in ids.VIEWS} | {
    ids.MITIGATION_NOTE: "mitigation",
    ids.CAMPUS_NOTE: "campus",
    ids.GRID_EVENTS_NOTE: "grid events",
}


def _data_url(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _window(start: np.datetime64, first: float, last: float) -> dict:
    """A pan onto [first, last] s after ``start``, as plotly reports it."""
    at = [str(start + np.timedelta64(int(s * 1e3), "ms")) for s in (first, last)]
    return {"xaxis.range[0]": at[0], "xaxis.range[1]": at[1]}


class Page:
    """The page of a user who has used every control: its state after the page load (the
    load test's :class:`Page`), then each server callback's request as it sends it."""

    def __init__(self, url: str, uploads: dict[str, list[tuple]]) -> None:
        self.page = protocol.Page(url, protocol.Record())
        assert self.page.open() and protocol.load(self.page), self.page.record.errors
        # the server opens its presets on their first hour (app.py --set)
        assert self.page.props[(ids.SUMMARY, "children")].startswith("1h")
        self.deps = [
            d
            for d in requests.get(url + "/_dash-dependencies", timeout=10).json()
            if not d.get("clientside_function")
        ]
        props = self.page.props
        start = np.datetime64(
            props[(protocol.key(ids.control("simulation.start", "date")), "date")]
        )
        props |= {
            (ids.RULES, "value"): ["ercot-5s"],
            (ids.COMPARE_WITH, "value"): OTHER,
            (ids.EXPORT_FORMAT, "value"): "csv",
            (ids.EXPORT_INTERVAL, "value"): "1min",
            (ids.POLL, "n_intervals"): 1,
            (ids.VIOLATIONS, "selectedRows"): [
                {
                    "start": str(start + np.timedelta64(600, "s")) + "Z",
                    "end": str(start + np.timedelta64(660, "s")) + "Z",
                }
            ],
            (protocol.key(ids.resampled("power")), "relayoutData"): _window(start, 600, 1200),
            (ids.FIT_GRAPH, "relayoutData"): _window(START, 60, 120),  # the trace's own time
        }
        # the design panel asked for the smallest connection it designs at once: a node's
        props[(design_panel.MW, "value")] = 0.05
        buttons = (ids.TOML_BUTTON, ids.PIN, ids.FIT_TOML_BUTTON, ids.FIT_LOAD, design_panel.RUN)
        for button in buttons:
            props[(button, "n_clicks")] = 1
        for component, files in uploads.items():
            _, name, data, boxes = files[0]
            props[(component, "contents")], props[(component, "filename")] = _data_url(data), name
            props |= boxes

    def send_each(self, round_: Round) -> list[tuple[str, dict]]:
        """Send each server callback once as the page sends it, taking its answer into the
        page as a browser does (so the pinned scenario, the fit and the sweep's results are
        there for the callbacks that read them: those go first); returns (name, request)."""
        first = (ids.PIN, ids.UPLOAD_TRACE, ids.UPLOAD_SWEEP)
        rank = {c: i for i, c in enumerate(first)}
        bodies = []
        for dep in sorted(self.deps, key=lambda d: rank.get(d["inputs"][0]["id"], len(first))):
            for name, changed, tab in _triggers(dep):
                self.page.props[(ids.TABS, "value")] = tab
                body = self.request(dep, changed)
                sent = round_.post(f"{name} as the page sends it", body)
                if sent.status == 200:
                    several = dep["output"].startswith("..")  # Dash's key of several outputs
                    outputs = body["outputs"] if several else [body["outputs"]]
                    self.page.answer(name, sent.response, outputs, body)
                bodies.append((name, body))
        return bodies

    def request(self, dep: dict, changed: list[tuple[str, str]]) -> dict:
        """A callback's request with the page's values (:meth:`Page.resolve` of the load
        test), ``changed`` the properties that fired it."""
        resolve = self.page.resolve
        trigger = json.loads(changed[0][0]) if changed[0][0].startswith("{") else None
        outputs = [resolve(i, p, trigger, False) for i, p in protocol.split_outputs(dep["output"])]
        return {
            "output": dep["output"],
            "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [resolve(d["id"], d["property"], trigger) for d in dep["inputs"]],
            "changedPropIds": [f"{i}.{p}" for i, p in changed],
            "state": [resolve(d["id"], d["property"], trigger) for d in dep["state"]],
        }

    def uploaded(self, uploads: dict) -> Iterator[tuple[str, dict]]:
        """Each upload's callback with each file of its kind."""
        for dep in self.deps:
            component = dep["inputs"][0]["id"]
            for what, name, data, boxes in uploads.get(component, ()):
                values = {(component, "contents"): _data_url(data), (component, "filename"): name}
                values |= boxes
                body = self.request(dep, [(component, "contents")])
                for item in body["inputs"] + body["state"]:
                    item["value"] = values.get((item["id"], item["property"]), item["value"])
                yield f"{component}: {what}", body


def _triggers(dep: dict) -> Iterator[tuple[str, list[tuple[str, str]], str]]:
    """How the page fires a callback: (name, the properties that changed, the tab open). The
    sidebar's from a link and from an upload; a zoom from the power graph."""
    first = dep["inputs"][0]
    output = protocol.split_outputs(dep["output"])[0]
    name, tab = ".".join(output), VIEW_OF.get(output[0], "power")
    if first["id"] == ids.URL:
        yield f"{name} (link)", [(ids.URL, "search")], tab
        yield f"{name} (upload)", [(ids.UPLOAD_SCENARIO, "contents")], tab
    elif '["MATCH"]' in first["id"]:
        yield name, [(protocol.key(ids.resampled("power")), first["property"])], tab
    else:
        yield name, [(first["id"], first["property"])], tab


def _forged(body: dict, paths: list[str]) -> Iterator[tuple[str, dict]]:
    """The page's request with each input and state item given each wrong value and each
    secret's path (the items of a group, the sidebar's controls, each a path and two wrong
    values), and each text in a store (values and keys) replaced by a path, in turn."""
    named = [(f"{p!r}", p) for p in paths]
    for part in ("inputs", "state"):
        for index, item in enumerate(body[part]):
            group = isinstance(item, list)
            for k, one in enumerate(item if group else [item]):
                where = (part, index, k, "value") if group else (part, index, "value")
                chosen = [named[k % len(named)], *WRONG[:2]] if group else WRONG + named
                for label, value in chosen:
                    yield f"{one['id']}.{one['property']} = {label}", replaced(body, where, value)
                if isinstance(one.get("value"), dict | list):
                    yield from _in_store(body, where, one, paths)


def _in_store(body: dict, where: tuple, item: dict, paths: list[str]) -> Iterator[tuple]:
    for n, (path, keyed) in enumerate(list(strings_in(item["value"], where))[1:]):
        secret = paths[n % len(paths)]
        place = f"{item['id']}.{item['property']}[{'.'.join(map(str, path[len(where) :]))}]"
        yield f"{place} = {secret!r}", replaced(body, path, secret)
        if keyed:
            yield f"{place} key = {secret!r}", replaced(body, path, secret, as_key=True)


def _downloads(key: str, secrets: Secrets) -> Iterator[tuple[str, str]]:
    """The download route with the page's key, and with forged keys, formats, resolutions and
    rules."""
    yield "the page's CSV", f"/download/{key}/csv?interval=1min"
    yield "the page's TOML", f"/download/{key}/toml"
    yield "the page's violations", f"/download/{key}/violations?rules=ercot-5s"
    for path in secrets.paths:
        quoted = quote(path, safe="")
        yield f"key {path!r}", f"/download/{quoted}/toml"
        yield f"format {path!r}", f"/download/{key}/{quoted}"
        yield f"resolution {path!r}", f"/download/{key}/csv?interval={quoted}"
        yield f"rules {path!r}", f"/download/{key}/violations?rules={quoted}"
    yield "a doubled slash", f"/download//{key}/toml"
    yield "a key of 10,000 characters", f"/download/{'a' * 10_000}/toml"


# --- the round ------------------------------------------------------------------------------------


def test_a_forged_round_is_refused_without_a_500_or_a_read_outside(tmp_path):
    secrets = _plant(tmp_path / "secrets")
    uploads = _uploads(secrets, tmp_path / "uploads")
    with _traced_server(tmp_path) as server:
        page = Page(server.url, uploads)
        round_ = Round(server.url)
        since = time.time()  # the first page is served: what follows is the round
        bodies = page.send_each(round_)
        # each of the page's own requests answered; the link's base on the first page, which
        # a warm server serves with its run (issue 30), changes nothing: Dash's 204, no body
        unchanged = {"base.data (link) as the page sends it"}
        assert [
            (s.what, s.status, s.text[:300])
            for s in round_.sent
            if s.status != 200 and not (s.what in unchanged and s.status == 204 and not s.text)
        ] == []
        for name, body in bodies:
            for what, forged in [*_forged(body, secrets.paths), *forged_shapes(body)]:
                round_.post(f"{name}: {what}", forged)
        for what, body in page.uploaded(uploads):
            round_.post(what, body)
        key = page.page.props[(ids.SCENARIO, "data")]["key"]
        for what, path in _downloads(key, secrets):
            round_.get(f"/download: {what}", path)
        until = time.time()
    problems = _problems(round_, server, secrets, since, until)
    # results that name another file are refused in words (issue 26, item 1), not read
    for sent in round_.sent:
        if sent.what.startswith(f"{ids.UPLOAD_SWEEP}: results by") and not _refused_sweep(sent):
            problems.append(f"{sent.what} was not refused: {sent.text[:300]!r}")
    assert len(round_.sent) > 4000  # each callback, item, value, text and shape
    assert not problems, f"{len(problems)} in {len(round_.sent)} requests:\n" + "\n".join(problems)


def _refused_sweep(sent: Sent) -> bool:
    answer = sent.response.json()["response"] if sent.status == 200 else {}
    said = answer.get(ids.SWEEP_MESSAGE, {}).get("children", "")
    return said.endswith("— the sweep shown is unchanged") and ids.SWEEP not in answer


def _problems(round_: Round, server: Server, secrets: Secrets, since: float, until: float):
    """Each answer that is a server failure or holds a secret, and each path outside the
    :func:`allowlist` the server touched during the round, with the request in flight."""
    problems = [
        f"HTTP {s.status}: {s.what}: {s.text[:300]!r}" for s in round_.sent if s.status >= 500
    ]
    problems += [
        f"a secret in the answer to {s.what}" for s in round_.sent if secrets.leaked(s.text)
    ]
    allowed, outside = allowlist(server), {}
    for moment, call, path in accesses(server.log, since):
        if moment <= until and not _allowed(call, path, allowed):
            outside.setdefault((path, round_.during(moment)), call)
    problems += [f"{call} {path} during {what}" for (path, what), call in outside.items()]
    if any(s.status >= 500 for s in round_.sent):
        problems.append("the server's log ends: " + server.output.read_text()[-3000:])
    return problems
