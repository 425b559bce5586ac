"""The result vocabulary: one registry of variable name -> units and long name.

It drives the Dataset attrs, the CSV headers, the Parquet field metadata and the docs, so a
variable has one name and one unit everywhere (STYLE.md, after PyPSA's component attribute tables).

One rule for what has no dimension: a ratio or a fraction has units ``1`` (as in CF) and shows
them (``pue [1]``), so that a header without a unit is a label, never a forgotten unit; a
power-system per-unit quantity says ``pu`` and names its base in the long name. Label columns
(``job_state``, the ``event_`` strings) and ``time`` (UTC) have no units.
"""

from __future__ import annotations

import json

import xarray as xr

from powermodel.models import sensors
from powermodel.models.events import State

# The sign of reactive power wherever it is written: the load convention that OpenDSS,
# GridLAB-D, PyPSA, pandapower, PSS/E and PowerFactory all use for a load.
Q_SIGN = "positive absorbed (lagging), negative supplied (leading)"

VARIABLES: dict[str, dict[str, str]] = {
    "time": {
        "units": "",
        "long_name": "Start of the interval (UTC)",
        "description": "Timezone-naive UTC in the Dataset; ISO 8601 ending in Z in CSV files.",
    },
    "gpu_power": {
        "units": "MW",
        "long_name": "GPU board power, all GPUs (DC)",
        "description": "Sum over the cluster of GPU board power, interval mean.",
    },
    "it_power": {
        "units": "MW",
        "long_name": "IT power at the rack input",
        "description": (
            "Servers through their power supplies (GPUs, CPUs, memory, NICs, fans, PSU losses) "
            "plus network and storage: the IT boundary of ISO/IEC 30134-2 [iso30134], "
            "interval mean."
        ),
    },
    "facility_loss": {
        "units": "MW",
        "long_name": "Facility electrical losses",
        "description": "UPS, transformers and distribution between the grid and the racks.",
    },
    "cooling_power": {
        "units": "MW",
        "long_name": "Cooling power",
        "description": "Fans, pumps and chillers of the plant, held over each plant step.",
    },
    "misc_power": {
        "units": "MW",
        "long_name": "Other facility loads",
        "description": "Lighting, offices, controls: a constant share of design IT power.",
    },
    "facility_power": {
        "units": "MW",
        "long_name": "Facility power",
        "description": "IT power + facility losses + cooling + misc: what the site draws.",
    },
    "pue": {
        "units": "1",
        "long_name": "Power usage effectiveness of the clock hour",
        "description": "Facility energy over IT energy in each hour (ISO/IEC 30134-2 boundary).",
    },
    "water_use": {
        "units": "L/s",
        "long_name": "Water consumed",
        "description": "Evaporation (and tower blowdown), held over each plant step.",
    },
    "temp_air": {"units": "degC", "long_name": "Outdoor dry-bulb temperature", "description": ""},
    "temp_wetbulb": {
        "units": "degC",
        "long_name": "Outdoor wet-bulb temperature",
        "description": "",
    },
    "supply_temp": {
        "units": "degC",
        "long_name": "Supply temperature",
        "description": "Supply air (air plants) or coolant (liquid plants) from the cooling plant.",
    },
    "gpu_temp": {
        "units": "degC",
        "long_name": "Mean GPU die temperature",
        "description": "Inlet + thermal resistance × mean board power.",
    },
    "clock_factor": {
        "units": "1",
        "long_name": "Clock of the slowest GPU, relative to nominal",
        "description": "At its power cap; below 1 when hot (leakage) or capped.",
    },
    "chiller_hours": {"units": "h", "long_name": "Hours with chillers running", "description": ""},
    "throughput": {
        "units": "token/s",
        "long_name": "Training throughput",
        "description": "Tokens processed per second, interval mean (includes work later lost).",
    },
    "job_state": {
        "units": "",
        "long_name": "Job state",
        "description": (
            "Code into flag_meanings: the state at the interval midpoint; in a resampled profile "
            "the most common state of the interval (cell_methods 'time: mode')."
        ),
    },
    **{
        f"share_{state.name.lower()}": {
            "units": "1",
            "long_name": f"Share of the interval in state {state.name.lower()}",
            "description": "Fraction of the interval's steps in that job state (resampled only).",
        }
        for state in State
    },
    "grid_power": {
        "units": "MW",
        "long_name": "Active power at the point of interconnection",
        "description": "Facility power less site-battery discharge plus its charging.",
    },
    "grid_reactive_power": {
        "units": "Mvar",
        "long_name": f"Reactive power at the point of interconnection, {Q_SIGN}",
        "description": (
            "From power-factor curves: server supplies (leading at light load) or a "
            "double-conversion UPS rectifier, and the cooling and misc loads (lagging)."
        ),
    },
    "grid_voltage": {
        "units": "pu",
        "long_name": "Voltage at the connection, per unit of the no-load voltage",
        "description": "1 − (P·cos θ + Q·sin θ)/S_sc with the grid's short-circuit power and X/R.",
    },
    "bess_power": {
        "units": "MW",
        "long_name": "Site battery power",
        "description": "Positive discharging (serving the site), negative charging.",
    },
    "bess_soc": {
        "units": "1",
        "long_name": "Site battery state of charge",
        "description": "Stored energy over usable energy, at the end of each interval.",
    },
    "rack_storage_power": {
        "units": "MW",
        "long_name": "Rack battery power",
        "description": "Batteries at the racks (inside the IT boundary), positive discharging.",
    },
    "generator_power": {
        "units": "MW",
        "long_name": "Standby generator power",
        "description": "What the generators carry while a disturbance keeps the site on backup.",
    },
    "ups_battery_power": {
        "units": "MW",
        "long_name": "UPS battery discharge",
        "description": "What the UPS (or rack) batteries carry of the IT path off the grid.",
    },
    "recharge_power": {
        "units": "MW",
        "long_name": "UPS recharge draw",
        "description": "What the UPS draws from the grid to refill its batteries, losses included.",
    },
    "ups_battery_deficit": {
        "units": "MWh",
        "long_name": "UPS battery energy short of full",
        "description": "At the end of each interval.",
    },
    "grid_share": {
        "units": "1",
        "long_name": "Share of the site's load on the grid",
        "description": "Through a grid disturbance; the rest is on backup or without power.",
    },
    "grid_event": {
        "units": "",
        "long_name": "What a grid disturbance does",
        "description": "Code into flag_meanings: none, on backup (or coming back), servers "
        "without power, recharging.",
    },
    "disturbance_time": {"units": "", "long_name": "Disturbance start (UTC)", "description": ""},
    "disturbance_kind": {
        "units": "",
        "long_name": "Disturbance kind",
        "description": "'sag' (voltage) or 'frequency' (out of the UPS's window).",
    },
    "disturbance_duration": {"units": "s", "long_name": "Disturbance length", "description": ""},
    "disturbance_connection_worst": {
        "units": "pu",
        "long_name": "Lowest phase voltage at the connection",
        "description": "Residual of the sag's worst phase.",
    },
    "disturbance_connection_positive": {
        "units": "pu",
        "long_name": "Positive-sequence voltage at the connection",
        "description": "",
    },
    "disturbance_worst": {
        "units": "pu",
        "long_name": "Lowest voltage the supplies see",
        "description": "Behind the site's transformers, as the supplies are wired.",
    },
    "disturbance_positive": {
        "units": "pu",
        "long_name": "Positive-sequence voltage behind the transformers",
        "description": "",
    },
    "disturbance_frequency": {
        "units": "Hz",
        "long_name": "Frequency reached",
        "description": "The farthest out of the UPS window; NaN for a sag.",
    },
    "disturbance_transferred": {
        "units": "",
        "long_name": "UPS left the grid",
        "description": "The disturbance lay outside the UPS's window (or the site was on backup).",
    },
    "disturbance_latched": {
        "units": "",
        "long_name": "Site latched on backup",
        "description": "The transfer count latched the site until a manual return.",
    },
    "disturbance_dropped": {
        "units": "",
        "long_name": "Servers lost power",
        "description": "Outside the supplies' immunity without a UPS, or the battery ran out.",
    },
    "goodput": {
        "units": "token",
        "long_name": "Tokens trained and kept",
        "description": "Tokens processed less those lost to failures since the last checkpoint.",
    },
    "effective_training_time": {
        "units": "1",
        "long_name": "Effective training time",
        "description": "Time spent on training that was kept, as a fraction of the run.",
    },
    "event_time": {"units": "", "long_name": "Interruption time (UTC)", "description": ""},
    "event_kind": {
        "units": "",
        "long_name": "Interruption kind",
        "description": "'unexpected' or 'planned'.",
    },
    "event_cause": {
        "units": "",
        "long_name": "Interruption root cause",
        "description": "Component, as in the Llama 3 paper's Table 5.",
    },
    "event_category": {"units": "", "long_name": "Interruption category", "description": ""},
    "event_lost_work": {
        "units": "s",
        "long_name": "Training time lost",
        "description": "Training since the last completed checkpoint, lost by the interruption.",
    },
    "workload": {
        "units": "",
        "long_name": "Campus workload",
        "description": "The workloads of a campus, by name (campus.workloads).",
    },
    "workload_gpu_power": {
        "units": "MW",
        "long_name": "GPU board power of each workload (DC)",
        "description": "Each campus workload's share of gpu_power, interval mean.",
    },
    "workload_it_power": {
        "units": "MW",
        "long_name": "IT power of each workload",
        "description": "Each campus workload's share of it_power (its servers, network, storage "
        "and rack batteries), interval mean.",
    },
    "workload_throughput": {
        "units": "token/s",
        "long_name": "Tokens each workload trains or serves",
        "description": "A training job's tokens trained, an inference fleet's tokens served.",
    },
    "workload_job_state": {
        "units": "",
        "long_name": "Each workload's state",
        "description": "As job_state; an inference fleet is always running.",
    },
    "workload_gpus": {"units": "1", "long_name": "GPUs of each workload", "description": ""},
    "workload_clock_factor": {
        "units": "1",
        "long_name": "Clock each workload's heat allows",
        "description": "As clock_factor, of each workload's slowest GPU; 1 for a fleet (below "
        "its cap, heat costs it power, not clock).",
    },
    "workload_step_time": {
        "units": "s",
        "long_name": "Each training job's step",
        "description": "NaN for a fleet.",
    },
    "workload_compute_share": {
        "units": "1",
        "long_name": "Each training job's compute share",
        "description": "NaN for a fleet.",
    },
    "workload_clock_setpoint": {
        "units": "1",
        "long_name": "Each job's clock at the supply setpoint",
        "description": "NaN for a fleet.",
    },
    "workload_clock_lock": {
        "units": "1",
        "long_name": "Each job's clock lock",
        "description": "1 without one; NaN for a fleet.",
    },
    "workload_checkpoint_interval": {
        "units": "s",
        "long_name": "Each job's checkpoint interval",
        "description": "inf without checkpoints; NaN for a fleet.",
    },
    "workload_checkpoint_stall": {
        "units": "s",
        "long_name": "Each job's checkpoint stall",
        "description": "NaN for a fleet.",
    },
    "workload_token_rate": {
        "units": "token/s",
        "long_name": "Each job's token rate at the nominal clock",
        "description": "NaN for a fleet.",
    },
    "workload_kind": {
        "units": "",
        "long_name": "Kind of each workload",
        "description": "training or inference.",
    },
    "workload_goodput": {
        "units": "token",
        "long_name": "Tokens each workload kept",
        "description": "A training job's goodput; an inference fleet's tokens served.",
    },
    "workload_effective_training_time": {
        "units": "1",
        "long_name": "Each workload's training time kept",
        "description": "Share of the run a training job trained and kept; 1 for a fleet.",
    },
    "event_workload": {
        "units": "",
        "long_name": "Workload interrupted",
        "description": "The campus workload whose failure or maintenance the event is.",
    },
    "hall": {
        "units": "",
        "long_name": "Campus hall",
        "description": "The halls of a campus, by name (campus.halls).",
    },
    "workload_hall": {
        "units": "",
        "long_name": "Hall each workload runs in",
        "description": "",
    },
    "hall_it_power": {
        "units": "MW",
        "long_name": "IT power of each hall",
        "description": "The IT power of the workloads in each hall, interval mean.",
    },
    "hall_cooling_power": {
        "units": "MW",
        "long_name": "Cooling power of each hall",
        "description": "Each hall's own plant, held over each plant step.",
    },
    "hall_facility_power": {
        "units": "MW",
        "long_name": "Facility power of each hall",
        "description": "Each hall's IT power, its chain's losses, its plant and its misc loads.",
    },
    "flex_name": {"units": "", "long_name": "Flexibility event", "description": ""},
    "flex_workload": {
        "units": "",
        "long_name": "Workload the event targets",
        "description": "One row an event and targeted workload.",
    },
    "flex_lever": {
        "units": "",
        "long_name": "Lever of the event",
        "description": "pause, clock or shift.",
    },
    "flex_start": {"units": "", "long_name": "Start of the event (UTC)", "description": ""},
    "flex_duration": {"units": "s", "long_name": "Duration of the event", "description": ""},
    "flex_notice": {
        "units": "s",
        "long_name": "Notice of the event",
        "description": "Time from the request to the start.",
    },
    "flex_reduction": {
        "units": "1",
        "long_name": "Share of power asked",
        "description": "Share of the workload's IT power the event asks it to shed; NaN for a "
        "pause, which sheds what stopping does.",
    },
    "flex_setting": {
        "units": "1",
        "long_name": "Setting of the lever",
        "description": "The clock locked (fraction of nominal) or the share of demand deferred; "
        "NaN for a pause.",
    },
    "flex_baseline": {
        "units": "MW",
        "long_name": "Workload IT power in the hour before the event",
        "description": "The baseline the shed is measured from (a same-day baseline); NaN "
        "for an event at the run's start, with no hour before it.",
    },
    "flex_power": {
        "units": "MW",
        "long_name": "Workload IT power during the event",
        "description": "Mean over the event.",
    },
    "flex_shed": {
        "units": "MW",
        "long_name": "IT power shed",
        "description": "flex_baseline less flex_power.",
    },
    "flex_tokens_lost": {
        "units": "token",
        "long_name": "Tokens the event costs",
        "description": "Tokens the workload trains or serves less over the run (a pause's "
        "restart included; deferred demand served later costs none).",
    },
}


def sensor_attrs(name: str, chain: sensors.Sensor | str, units: str | None = None) -> dict:
    """Registry entry of ``<name>_<chain key>``: variable ``name`` as the sensor chain reports it
    (:mod:`powermodel.models.sensors`), polled at the end of each interval.

    Parameters
    ----------
    name
        The variable read (``gpu_power``).
    chain
        The sensor chain or its key.
    units
        The variable's units where the registry has none for it.
    """
    chain = sensors.lookup(chain)
    base = VARIABLES.get(name, {})
    return {
        "units": base.get("units", units or ""),
        "long_name": f"{base.get('long_name', name)}, {chain.label} reading",
        "description": (
            f"{sensors.describe(chain)}: the reading a poll at the end of each interval gets "
            "(at the row's time + dt); see the model page on sensor chains."
        ),
    }


# Each chain's default view: gpu_power_nvml, grid_power_revenue, ... (``powermodel run --sensor``)
VARIABLES.update(
    {f"{c.variable}_{key}": sensor_attrs(c.variable, c) for key, c in sensors.CHAINS.items()}
)

# Units of the Dataset's numeric attrs. netCDF and Arrow attributes hold no units of their own:
# annotate writes these beside them as one JSON attribute, ``attribute_units``.
ATTRIBUTE_UNITS = {
    "dt": "s",
    "plant_dt": "s",
    "step_time": "s",
    "checkpoint_interval": "s",
    "checkpoint_stall": "s",
    "compute_share": "1",
    "clock_setpoint": "1",
    "clock_lock": "1",
    "token_rate": "token/s",
    "registered_demand": "MW",
    "job_gpus": "1",
    "idle_gpus": "1",
    "idle_power": "MW",
}


def attrs(name: str) -> dict[str, str]:
    """The registry's ``units``, ``long_name`` and ``description`` of a variable, where set."""
    return {k: v for k, v in VARIABLES.get(name, {}).items() if v}


def annotate(ds: xr.Dataset) -> xr.Dataset:
    """Set ``units``, ``long_name`` and ``description`` from the registry, and the units of the
    Dataset's numeric attrs as ``attribute_units`` (JSON).

    Call it last: xarray arithmetic drops attrs.
    """
    for name in VARIABLES.keys() & ds.variables.keys():
        ds[name].attrs.update(attrs(name))
    units = {name: unit for name, unit in ATTRIBUTE_UNITS.items() if name in ds.attrs}
    if units:
        ds.attrs["attribute_units"] = json.dumps(units)
    return ds


def header(name: str, units: str | None = None) -> str:
    """CSV column header ``name [units]``: ``pue [1]`` for a ratio, bare for a label column.

    Parameters
    ----------
    name
        Column name.
    units
        The column's units (a variable's ``units`` attr); by default the registry's.
    """
    units = VARIABLES.get(name, {}).get("units", "") if units is None else units
    return f"{name} [{units}]" if units else name
