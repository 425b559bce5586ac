"""Component ids of the dashboard, shared by the layout, callbacks and browser tests."""

URL = "url"
BASE = "base"  # store: the preset (with the app's overrides) or the uploaded file
SCENARIO = "scenario"  # store: base, the controls' changes, the scenario's key and name
SET_BOXES = "set-boxes"  # store: the boxes the user set on this base (the others follow the run)
READY = "ready"  # store: the scenario state last simulated, which the views show
COMPARE = "compare"  # store: the scenario pinned for comparison
UPLOADED_WEATHER = "uploaded-weather"  # store: label -> path of uploaded weather files
FIT = "fit"  # store: the scenario fitted to an uploaded trace (its TOML text), and the fit's key
SWEEP = "sweep-results"  # store: the key of the sweep results uploaded, and the name they came with

SCENARIO_NAME = "scenario-name"
SUMMARY = "summary"
STATUS = "status"
SHARE = "share-link"
TOML_BUTTON = "toml-button"
TOML_DOWNLOAD = "toml-download"

PRESET = "preset"
UPLOAD_SCENARIO = "upload-scenario"
UPLOAD_WEATHER = "upload-weather"
MESSAGE = "message"  # what became of an upload
SCENARIO_ERROR = "scenario-error"  # why the controls' scenario is refused
VIEW_MESSAGE = "view-message"  # why the open view was not built (too slow, too large)
# banners over the views while the figures are not those of the boxes: a box refused (the run
# uses every other box), or the scenario not simulated (the figures are the last run's)
STALE_FIELDS = "stale-fields"
STALE_RUN = "stale-run"
POLL = "poll"  # interval: where the page's run stands in the queue, while its summary waits

# pattern-matched controls, by the property holding their value: callbacks take each kind's
# values at once (a date picker holds its value in ``date``, every other control in ``value``)
CONTROL_TYPES = {"value": "control", "date": "control-date"}


def control(key: str, prop: str = "value") -> dict[str, str]:
    """Id of the control setting ``key``, whose value is in ``prop``. Dash escapes dots in
    ids and then cannot parse them back: they become dashes."""
    return {"type": CONTROL_TYPES[prop], "key": key.replace(".", "-")}


def field(key: str) -> dict[str, str]:
    """Id of the block holding the control of ``key``: marked (its class) when refused."""
    return {"type": "control-field", "key": key.replace(".", "-")}


def field_error(key: str) -> dict[str, str]:
    """Id of the line under the control of ``key`` that says why its value is refused."""
    return {"type": "control-error", "key": key.replace(".", "-")}


def resampled(view: str) -> dict[str, str]:
    """Id of a view's time-series graph, zoomed through plotly-resampler on the server."""
    return {"type": "resampled", "view": view}


TABS = "tabs"
VIEWS = (
    "power",
    "thermal",
    "grid",
    "mitigation",
    "compare",
    "campus",
    "grid events",
    "sweep",
    "export",
)

SENSOR = "sensor"  # dropdown: the instrument whose reading the power view overlays
THERMAL_DIURNAL = "thermal-diurnal"
THERMAL_NUMBERS = "thermal-numbers"
RULES = "rules"
GRID_RAMPS = "grid-ramps"
GRID_SPECTRUM = "grid-spectrum"
COMPLIANCE = "compliance"
VIOLATIONS = "violations"
VIOLATIONS_NOTE = "violations-note"
MITIGATION_COSTS = "mitigation-costs"
MITIGATION_RULES = "mitigation-rules"
MITIGATION_NOTE = "mitigation-note"
PIN = "pin"
COMPARE_WITH = "compare-with"
COMPARE_TABLE = "compare-table"
CAMPUS_PICK = "campus-pick"  # the campus workloads the campus view stacks
CAMPUS_GRAPH = "campus-graph"  # their IT power stacked, each hall's below, flexibility shaded
CAMPUS_NOTE = "campus-note"
CAMPUS_WORKLOADS = "campus-workloads"  # each workload: kind, GPUs, power, tokens, training kept
CAMPUS_FLEX = "campus-flex"  # the flexibility events in EPRI DCFlex's terms
GRID_EVENTS_NOTE = "grid-events-note"
GRID_EVENTS_PICK = "grid-events-pick"  # the disturbance shown close up and fitted
GRID_EVENTS_GRAPH = "grid-events-graph"  # the site at the connection through the sequence
GRID_EVENTS_CLOSE = "grid-events-close"  # one disturbance on a 1-ms step, the fitted model over it
GRID_EVENTS_TABLE = "grid-events-table"  # each disturbance: its voltages, the site's answer
GRID_EVENTS_SUMMARY = "grid-events-summary"  # load lost, time off, energy and fuel, training lost
GRID_EVENTS_CHECKS = "grid-events-checks"  # the ride-through requirements' verdicts
GRID_EVENTS_MODEL = "grid-events-model"  # the fitted dynamic model's errors
UPLOAD_TRACE = "upload-trace"  # a measured telemetry trace, fitted on the server
TRACE_PERIOD = "trace-period"  # its sampling period, for a file without times [s]
TRACE_GPUS = "trace-gpus"  # GPUs behind each channel of a meter trace
TRACE_POLL_GPUS = "trace-poll-gpus"  # GPUs per poll of an nvidia-smi log without index
TRACE_GPU = "trace-gpu"  # the catalogue GPU a trace was recorded on
FIT_MESSAGE = "fit-message"  # what became of the trace
FIT_GRAPH = "fit-graph"  # measured and fitted power through the trace's sensor
FIT_TABLE = "fit-table"  # the fit: quantity | fitted | resolved | how
FIT_NUMBERS = "fit-numbers"  # measured against the fit replayed: energy, RMSE, dips
FIT_TOML_BUTTON = "fit-toml-button"
FIT_TOML_DOWNLOAD = "fit-toml-download"
FIT_LOAD = "fit-load"  # load the fitted scenario into the sidebar
UPLOAD_SWEEP = "upload-sweep"  # a sweep's results file (NetCDF), read on the server
SWEEP_METRIC = "sweep-metric"  # the metric drawn
SWEEP_KEY = "sweep-key"  # the swept key on the x axis
SWEEP_MESSAGE = "sweep-message"  # what became of the upload
SWEEP_GRAPH = "sweep-graph"  # the metric against the key: P50 over seeds, P5-P95 band
SWEEP_FAILED = "sweep-failed"  # the runs that failed, with their errors
EXPORT_FORMAT = "export-format"
EXPORT_INTERVAL = "export-interval"
EXPORT_LINK = "export-link"
EXPORT_NOTE = "export-note"
