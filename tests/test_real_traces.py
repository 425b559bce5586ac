"""Real power logs shipped in ``data/telemetry`` (MLPerf Training power logs of MLCommons'
results repositories, Apache-2.0; each file's origin in ``data/README.md``): read in their own
format, fitted, and the fitted scenario run afresh against them.

The truth each test compares with comes from the raw files and the submission's result logs,
never from the reader or the fit under test: the readings are parsed here with ``json`` line by
line (the reader matches fields by pattern), and the run's start, stop and evaluation spells are
the ``run_start``, ``run_stop``, ``eval_start`` and ``eval_stop`` times (``time_ms``) of the
result log named with each file.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from powermodel.errors import DataFileError, PowerModelError
from powermodel.fit_report import FitRun, fit_trace, fresh_run, fresh_view
from powermodel.iotools.telemetry import TelemetryWarning, read_telemetry
from powermodel.models.events import State
from powermodel.simulate import rest_power, simulate

DATA = Path(__file__).resolve().parents[1] / "data" / "telemetry"


@dataclass(frozen=True)
class Log:
    """A shipped power log and what its submission's result log says of the run."""

    file: str
    result: str  # the result log in the submission, beside the power/ folder
    host: str  # the channel the reader names
    run: tuple[int, int]  # run_start, run_stop [ms, Unix]
    evals: tuple[tuple[int, int], ...]  # eval_start, eval_stop [ms, Unix]
    conversion_eff: float | None = None


SMC_1NODE_LORA = Log(
    "mlperf4.0_smc_1node_llama2_70b_lora_ac_node_0.txt",
    "smc-ac-power/results/1xSMC-H100-SXM-80GB/llama2_70b_lora/"
    "result_4951-240509201759121728742_1.txt",
    "node",
    (1715257378825, 1715259073345),
    (
        (1715258137855, 1715258177099),
        (1715258362219, 1715258400996),
        (1715258587076, 1715258625828),
        (1715258810821, 1715258849553),
        (1715259034622, 1715259073345),
    ),
)
SMC_64NODE_LORA = Log(
    "mlperf4.0_smc_64node_llama2_70b_lora_ac_node_1.txt",
    "smc-ac-power/results/64xSMC-H100-SXM-80GB/llama2_70b_lora/"
    "result_5730-240516232429153071029_3.txt",
    "node",
    (1715874513481, 1715874632513),
    (
        (1715874587231, 1715874591182),
        (1715874595753, 1715874597477),
        (1715874601893, 1715874603422),
        (1715874607827, 1715874609266),
        (1715874613532, 1715874615010),
        (1715874619307, 1715874620787),
        (1715874625104, 1715874626593),
        (1715874631082, 1715874632513),
    ),
)
SMC_1NODE_BERT = Log(
    "mlperf4.0_smc_1node_bert_ac_node_0.txt",
    "smc-ac-power/results/1xSMC-H100-SXM-80GB/bert/result_5119-240510190348838227199_06.txt",
    "node",
    (1715341130099, 1715341407147),
    (
        (1715341149331, 1715341151579),
        (1715341170130, 1715341171242),
        (1715341189480, 1715341190593),
        (1715341209267, 1715341210411),
        (1715341228677, 1715341229793),
        (1715341248394, 1715341249531),
        (1715341267998, 1715341269105),
        (1715341288026, 1715341289132),
        (1715341307827, 1715341308921),
        (1715341327640, 1715341328748),
        (1715341347020, 1715341348123),
        (1715341366754, 1715341367864),
        (1715341386241, 1715341387346),
        (1715341406030, 1715341407146),
    ),
)
SMC_1NODE_SSD = Log(
    "mlperf4.0_smc_1node_ssd_ac_node_1.txt",
    "smc-ac-power/results/1xSMC-H100-SXM-80GB/ssd/result_5753-240517062537491026015_5.txt",
    "node",
    (1715908117417, 1715910288454),
    (
        (1715908635986, 1715908672680),
        (1715909179054, 1715909212499),
        (1715909721384, 1715909750077),
        (1715910259936, 1715910287963),
    ),
)
LENOVO_B200_BERT = Log(
    "mlperf5.0_lenovo_1node_b200_bert_node_0.txt",
    "Lenovo/results/SR780aV3-8xB200_SXM_180GB/bert/result_1.txt",
    "node_0",
    (1745514375242, 1745514569768),
    (),
    conversion_eff=0.94,
)
LOGS = (SMC_1NODE_LORA, SMC_64NODE_LORA, SMC_1NODE_BERT, SMC_1NODE_SSD, LENOVO_B200_BERT)


def raw_readings(log: Log) -> tuple[np.ndarray, np.ndarray]:
    """The file's ``power_reading`` events as MLPerf's logger wrote them, parsed as JSON:
    (times [ms, Unix], values [W]) in file order."""
    events = [
        json.loads(line.split(":::MLLOG", 1)[1])
        for line in (DATA / log.file).read_text().splitlines()
        if line.strip()
    ]
    readings = [e for e in events if e["key"] == "power_reading"]
    return (
        np.array([e["time_ms"] for e in readings], dtype=np.int64),
        np.array([e["value"] for e in readings], dtype=float),
    )


def _read(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        return read_telemetry(path, **kwargs)


@pytest.mark.parametrize("log", LOGS, ids=lambda log: log.file)
def test_mlperf_power_log_is_read_as_written(log):
    """Every reading of the file, at its time, in W, as one meter channel; a time written
    twice (the loggers' 1-s and 2-s polls repeat one now and then) keeps its first reading."""
    data, meta = _read(DATA / log.file)
    ms, watts = raw_readings(log)
    first = np.unique(ms, return_index=True)[1]  # the first reading of each time
    assert meta["format"] == "mlperf-power" and meta["kind"] == "meter"
    assert meta["channels"] == [log.host]
    assert meta.get("conversion_eff") == log.conversion_eff
    times = data["time"].to_numpy().astype("datetime64[ms]").astype(np.int64)
    np.testing.assert_array_equal(times, ms[first])
    np.testing.assert_array_equal(data["power"].to_numpy(), watts[first])
    repeated = ms.size - first.size
    assert any("repeat their channel's time" in w for w in meta["warnings"]) == bool(repeated)


def _lines(log: Log, n: int = 40) -> list[str]:
    return (DATA / log.file).read_text().splitlines()[:n]


def _reading(line: str, value: str | None = None, time: str | None = None) -> str:
    """A power_reading line with its value or time replaced (their text as written)."""
    event = json.loads(line.split(":::MLLOG", 1)[1])
    head = ":::MLLOG " + json.dumps(event)
    if value is not None:
        head = head.replace(f'"value": {json.dumps(event["value"])}', f'"value": {value}')
    if time is not None:
        head = head.replace(f'"time_ms": {event["time_ms"]}', time)
    return head


def _defective(log: Log, case: str) -> str:
    """The log's first lines with one defect of ``case``."""
    lines = _lines(log)
    i = 20  # a power_reading in the middle of the excerpt
    assert '"power_reading"' in lines[i]
    if case == "result log":
        return "\n".join(line for line in lines if '"power_reading"' not in line) + "\n"
    if case == "srun result log":  # a result_<i>.txt: the job's output, events rank-prefixed
        events = [line for line in lines if '"power_reading"' not in line]
        return "\n".join(["+ echo 'Beginning trial 1 of 10'", *("0: " + e for e in events)])
    if case == "junk line":
        lines[i] = "Traceback (most recent call last):"
    elif case == "text value":
        lines[i] = _reading(lines[i], value='"n/a W"')
    elif case == "negative":
        lines[i] = _reading(lines[i], value="-3400.0")
    elif case == "unit mix-up":
        lines[i] = _reading(lines[i], value="3.4e9")
    elif case == "no time":
        lines[i] = _reading(lines[i], time='"time": 0')
    elif case == "cut last line":
        return "\n".join(lines[:i] + [lines[i][:70]])  # no line break: cut while written
    return "\n".join(lines) + "\n"


REFUSED = {
    "result log": "without power_reading events (its events: power_measurement_start",
    "srun result log": "without power_reading events (its events: power_measurement_start",
    "junk line": "line 21: 'Traceback",
    "text value": "line 21: power_reading value is 'n/a W'",
    "negative": "line 21: node",
    "unit mix-up": "line 21: ",
    "no time": "line 21:",
}


@pytest.mark.parametrize("log", (SMC_1NODE_LORA, LENOVO_B200_BERT), ids=lambda log: log.file)
@pytest.mark.parametrize("case", list(REFUSED))
def test_mlperf_power_log_defect_refused_in_one_line(tmp_path, log, case):
    """Each defect the reader cannot repair is one line naming it, in both loggers' shapes
    (Sustainable Metal Cloud's, without metadata; mlperf_logging's, with host and
    conversion_eff)."""
    path = tmp_path / "node_0.txt"
    path.write_text(_defective(log, case))
    with pytest.raises(DataFileError) as err:
        _read(path)
    message = str(err.value)
    assert "\n" not in message and REFUSED[case] in message
    if case in ("negative", "unit mix-up"):
        assert ("negative power" if case == "negative" else "over 1,000,000 kW") in message


@pytest.mark.parametrize("log", (SMC_1NODE_LORA, LENOVO_B200_BERT), ids=lambda log: log.file)
def test_mlperf_power_log_cut_last_line_dropped(tmp_path, log):
    """A logger killed mid-line leaves its last line cut: dropped, with a warning."""
    path = tmp_path / "node_0.txt"
    path.write_text(_defective(log, "cut last line"))
    with pytest.warns(TelemetryWarning, match="line 21 is cut short"):
        data, _ = read_telemetry(path)
    readings = sum('"power_reading"' in line for line in _lines(log)[:20])
    assert len(data) == len(np.unique(raw_readings(log)[0][:readings]))


def test_mlperf_power_logs_of_several_hosts_joined_are_one_channel_each(tmp_path):
    """mlperf_logging's logs name each reading's host, so nodes' logs may be joined
    (``cat node_*.txt``): one channel per host, each with all its readings."""
    text = (DATA / LENOVO_B200_BERT.file).read_text()
    path = tmp_path / "nodes.txt"
    path.write_text(text + text.replace('"host": "node_0"', '"host": "node_1"'))
    data, meta = _read(path)
    assert meta["channels"] == ["node_0", "node_1"]
    _, watts = raw_readings(LENOVO_B200_BERT)
    for channel in meta["channels"]:
        np.testing.assert_array_equal(data.loc[data["channel"] == channel, "power"], watts)


@pytest.mark.parametrize("log", (SMC_1NODE_LORA, SMC_64NODE_LORA), ids=lambda log: log.file)
def test_mlperf_power_logs_joined_without_host_refused(tmp_path, log):
    """Logs without a host joined into one file would mix two meters (or two runs) in one
    channel, read as one trace with a clock jump: refused at the second measurement's start."""
    lines = (DATA / log.file).read_text().splitlines(keepends=True)
    path = tmp_path / "nodes.txt"
    path.write_text("".join(lines + lines))
    with pytest.raises(DataFileError, match=rf"line {len(lines) + 2}: .*joined without"):
        _read(path)


def test_mlperf_power_log_with_rank_labels_is_read(tmp_path):
    """A power log captured from a job's output under ``srun --label`` carries the task's rank
    before each line: read as without it."""
    text = (DATA / SMC_1NODE_LORA.file).read_text()
    path = tmp_path / "node_0.txt"
    path.write_text("".join("0: " + line for line in text.splitlines(keepends=True)))
    np.testing.assert_array_equal(
        _read(path)[0]["power"], _read(DATA / SMC_1NODE_LORA.file)[0]["power"]
    )


# --- the fit on them -------------------------------------------------------------------------

GPUS_PER_NODE = 8  # every shipped log is one node of 8 GPUs (the submissions' system files)


# What the fit does on the logs it does not fit yet, as measured: each test of them fails until
# the fit learns it (strict), and then says so.
# the fresh run's running node power is 5.4-5.7 % over the trace's on each log (LoRA 7.62
# against 7.23 kW, BERT 7.22 against 6.83, SSD 7.45 against 7.07), where the fitted running
# level is the trace's within 1 %: the preset's site in July warms the inlet over the fans'
# nominal (server fans and leakage above the level fitted)
def _logs(**marks) -> tuple:
    """The four H100 nodes, with the marks a test's measured outcome needs (by id)."""
    return tuple(
        pytest.param(log, id=name, marks=marks.get(name.replace("-", "_"), ()))
        for name, log in (
            ("smc-1node-llama2-lora", SMC_1NODE_LORA),
            ("smc-64node-llama2-lora", SMC_64NODE_LORA),
            ("smc-1node-bert", SMC_1NODE_BERT),
            ("smc-1node-ssd", SMC_1NODE_SSD),
        )
    )


FITTED = _logs()


def _fit(log: Log, folder: Path) -> FitRun:
    """``powermodel fit <log> --gpus-per-node 8 -o <folder>/fit.toml`` with the default preset
    (8 x H100 SXM nodes, as the SMC submissions'), in Python."""
    return fit_trace(DATA / log.file, folder / "fit.toml", gpus_per_node=GPUS_PER_NODE)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """Each log fitted once in the module (a fit that raises is not kept and raises again)."""
    runs: dict[Log, FitRun] = {}

    def get(log: Log) -> FitRun:
        if log not in runs:
            runs[log] = _fit(log, tmp_path_factory.mktemp("fit"))
        return runs[log]

    return get


def _in(ms: np.ndarray, spans) -> np.ndarray:
    inside = np.zeros(ms.shape, dtype=bool)
    for start, stop in spans:
        inside |= (ms >= start) & (ms < stop)
    return inside


def node_ac(run: FitRun, per_gpu: float, state: State) -> float:
    """A node's AC power [W] whose GPUs each draw ``per_gpu`` [W] in ``state``, through the
    fitted scenario's rest of node and PSU curve (the model's own view of a node meter)."""
    cl = run.scenario.cluster
    return float(cl.psu.input_power(cl.gpus_per_node * per_gpu + rest_power(cl)[state]))


@pytest.mark.parametrize("log", FITTED)
def test_fitted_running_level_is_the_training_blocks_mean(fitted, log):
    """The fitted running level, as the node's AC power, against the mean of the raw
    readings inside the result log's training blocks (run_start to run_stop less the
    evaluation spells): within 5 % (acceptance 2's bound for the running level)."""
    run = fitted(log)
    ms, watts = raw_readings(log)
    training = _in(ms, [log.run]) & ~_in(ms, log.evals)
    truth = watts[training].mean()  # SMC 1 node, LoRA: 7,160 W over 821 readings
    fitted = node_ac(run, run.result.value("running mean"), State.RUNNING)
    assert fitted == pytest.approx(truth, rel=0.05)


def resolved_pauses(log: Log) -> int:
    """Pauses of the run the meter resolves, from the raw readings alone: spells of two or
    more readings inside run_start to run_stop below the midpoint between the file's lowest
    reading and the run's median. MLPerf runs write no checkpoint: their pauses are the
    evaluations and the first steps' warm-up (SMC 1 node, LoRA: at 60 s, 4 readings, and at
    804 s, 7 readings, the first evaluation; the other four evaluations hold the running level
    but for one reading)."""
    ms, watts = raw_readings(log)
    run = _in(ms, [log.run])
    low = (watts < 0.5 * (watts.min() + np.median(watts[run]))) & run
    edges = np.diff(np.r_[0, low.astype(np.int8), 0])
    return int(np.count_nonzero(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1) >= 2))


@pytest.mark.parametrize("log", FITTED)
def test_fitted_stall_count_is_the_pauses_the_meter_resolves(fitted, log):
    """The fit's checkpoint count is the number of pauses the raw readings show (exact)."""
    run = fitted(log)
    assert run.result.value("checkpoint count") == resolved_pauses(log)


def fresh_run_node_power(run: FitRun, times: np.ndarray) -> tuple[np.ndarray, int]:
    """The fresh-run prediction of the fitted scenario (:func:`powermodel.fit_report.fresh_run`:
    failures off, its own timeline aligned on the trace's first rise, up to the fit's job end)
    read as the trace's meter read its node: each node's AC power (the run's IT power less the
    network and storage a node meter does not see, over the nodes; idle before the job and
    after its end, :func:`powermodel.fit_report.fresh_view`) through the trace's sensor at
    ``times`` [s from its first sample]; and the run's checkpoint count."""
    scenario, shift = fresh_run(run.scenario, run.result)
    ds = simulate(scenario)
    cl = scenario.cluster
    it = fresh_view(run.result, scenario, shift, ds, "it_power", times)
    seen = (it * 1e6 - cl.network_load - cl.storage_load) / cl.n_nodes
    stalls = np.diff((ds["job_state"].values == State.CHECKPOINT).astype(np.int8), prepend=0)
    return seen, int(np.count_nonzero(stalls == 1))


@pytest.mark.parametrize(
    "log",
    _logs(),
)
def test_fresh_run_reproduces_the_trace_energy(fitted, log):
    """Acceptance 3: a fresh run of the fitted scenario gives the trace's energy within 5 %,
    both integrated by the trapezoid rule over the trace's reading times, the trace's
    straight from the file (SMC 1 node, LoRA: 3,483 Wh). Measured +0.5, -0.5, +0.7 and +0.0 % on
    the 1-node LoRA, 64-node LoRA, BERT and SSD logs; +5.5 to +7.8 % while the fresh run ran on
    the preset's July date, whose warmer supply ran its server fans and leakage over the levels
    the meter's inversion and the fit's leakage took (412 W a node on LoRA): it runs on the
    trace's own date and time of day."""
    run = fitted(log)
    ms, watts = raw_readings(log)
    ms, first = np.unique(ms, return_index=True)
    t = (ms - ms[0]) / 1e3
    seen, _ = fresh_run_node_power(run, t)
    assert np.trapezoid(seen, t) == pytest.approx(np.trapezoid(watts[first], t), rel=0.05)


@pytest.mark.parametrize("log", FITTED)
def test_fresh_run_reproduces_the_trace_checkpoint_count(fitted, log):
    """Acceptance 3: a fresh run of the fitted scenario has the trace's checkpoint count, as
    the fit counted it, within one (SMC 1 node, LoRA: 2 found, 2 in the fresh run)."""
    run = fitted(log)
    t = run.result.times
    _, stalls = fresh_run_node_power(run, t)
    assert abs(stalls - run.result.value("checkpoint count")) <= 1


def test_b200_node_refused_by_an_h100_preset_in_one_line(tmp_path):
    """The B200 node (about 9.6 kW AC running) is no node of 8 H100s: the default preset's
    fit refuses it naming the level against the H100's TDP, never clipping it (it is fitted
    with a catalogue B200 where the fit takes one)."""
    with pytest.raises(PowerModelError) as err:
        _fit(LENOVO_B200_BERT, tmp_path)
    assert "\n" not in str(err.value)
    assert "x the H100-SXM's 700 W TDP" in str(err.value)
    assert not (tmp_path / "fit.toml").exists()


def _hosts(log: Log, hosts: list[str]) -> str:
    """The log's first lines, its readings' ``host`` set in turn to each of ``hosts``."""
    lines = _lines(log)
    readings = [i for i, line in enumerate(lines) if '"power_reading"' in line]
    for k, i in enumerate(readings):
        lines[i] = lines[i].replace(f'"host": "{log.host}"', f'"host": "{hosts[k % len(hosts)]}"')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("hosts", "channels"),
    [
        ([""], ["node"]),  # written empty: no name, the channel of a log without hosts
        (["node 1", "node_1"], None),  # two meters, one name once kept to word characters
        (["a/b", "a_b"], None),
        (["n" * 64 + "1", "n" * 64 + "2"], None),  # the same 64 first characters
        (["gpu-node.0", "gpu-node.1"], ["gpu-node.0", "gpu-node.1"]),  # names kept as written
    ],
)
def test_mlperf_hosts_are_channels_never_empty_or_merged(tmp_path, hosts, channels):
    """A reading's host names its channel (kept to word characters, '.' and '-'): a host written
    empty is the log's one meter, ``node``; two hosts that the names would merge are refused in
    one line rather than mixed into one channel."""
    path = tmp_path / "node_0.txt"
    path.write_text(_hosts(LENOVO_B200_BERT, hosts))
    if channels is None:
        with pytest.raises(DataFileError, match="would be one channel") as err:
            _read(path)
        assert "\n" not in str(err.value)
    else:
        assert _read(path)[1]["channels"] == channels
