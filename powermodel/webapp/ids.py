"""Component ids of the dashboard, shared by the layout, callbacks and browser tests."""

URL = "url"
BASE = "base"  # store: the preset (with the app's overrides) or the uploaded file
SCENARIO = "scenario"  # store: base, the controls' changes, the scenario's key and name
COMPARE = "compare"  # store: the scenario pinned for comparison
UPLOADED_WEATHER = "uploaded-weather"  # store: label -> path of uploaded weather files

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


def control(key: str) -> dict[str, str]:
    """Id of the control setting ``key`` (pattern-matched: callbacks take them all at once).
    Dash escapes dots in ids and then cannot parse them back: they become dashes."""
    return {"type": "control", "key": key.replace(".", "-")}


def resampled(view: str) -> dict[str, str]:
    """Id of a view's time-series graph, zoomed through plotly-resampler on the server."""
    return {"type": "resampled", "view": view}


TABS = "tabs"
VIEWS = ("power", "thermal", "grid", "mitigation", "compare", "export")

THERMAL_DIURNAL = "thermal-diurnal"
THERMAL_NUMBERS = "thermal-numbers"
RULES = "rules"
GRID_RAMPS = "grid-ramps"
GRID_SPECTRUM = "grid-spectrum"
COMPLIANCE = "compliance"
VIOLATIONS = "violations"
MITIGATION_COSTS = "mitigation-costs"
MITIGATION_RULES = "mitigation-rules"
MITIGATION_NOTE = "mitigation-note"
PIN = "pin"
COMPARE_WITH = "compare-with"
COMPARE_TABLE = "compare-table"
EXPORT_FORMAT = "export-format"
EXPORT_INTERVAL = "export-interval"
EXPORT_LINK = "export-link"
EXPORT_NOTE = "export-note"
