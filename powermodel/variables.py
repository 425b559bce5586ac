"""The result vocabulary: one registry of variable name -> units and long name.

It drives the Dataset attrs, the CSV headers and the docs, so a variable has one name and one
unit everywhere (STYLE.md, after PyPSA's component attribute tables).
"""

from __future__ import annotations

import xarray as xr

VARIABLES: dict[str, dict[str, str]] = {
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
            "plus network and storage: the IT boundary of ISO/IEC 30134-2, interval mean."
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
        "units": "1",
        "long_name": "Job state at the interval midpoint",
        "description": "Code into flag_meanings.",
    },
    "grid_power": {
        "units": "MW",
        "long_name": "Active power at the point of interconnection",
        "description": "Facility power less site-battery discharge plus its charging.",
    },
    "grid_reactive_power": {
        "units": "Mvar",
        "long_name": "Reactive power at the point of interconnection",
        "description": (
            "From power-factor curves: server supplies (leading at light load) or a "
            "double-conversion UPS rectifier, and the cooling and misc loads (lagging). Positive "
            "absorbed (lagging)."
        ),
    },
    "grid_voltage": {
        "units": "1",
        "long_name": "Voltage at the connection, per unit of no-load",
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
}


def annotate(ds: xr.Dataset) -> xr.Dataset:
    """Set ``units``, ``long_name`` and ``description`` from the registry.

    Call it last: xarray arithmetic drops attrs.
    """
    for name, meta in VARIABLES.items():
        if name in ds.variables:
            ds[name].attrs.update({k: v for k, v in meta.items() if v})
    return ds


def header(name: str) -> str:
    """CSV column header ``name [unit]`` (no brackets for dimensionless or unitless columns)."""
    units = VARIABLES.get(name, {}).get("units", "")
    return f"{name} [{units}]" if units and units != "1" else name
