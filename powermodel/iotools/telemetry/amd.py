"""AMD's ``rocm-smi`` and ``amd-smi`` CSV, run in a loop: each poll prints its header, then
one row per GPU (``device``: ``card0``...; ``gpu``: 0...), or amd-smi's watch mode (``-w``) prints
one header and a ``timestamp`` column (Unix seconds). ``rocm-smi --showpower --showuse
--showtemp --showmeminfo vram --csv`` heads each field with its unit, ``Average Graphics Package
Power (W)`` or ``Current Socket Graphics Package Power (W)`` [S, rocm_smi]; ``amd-smi metric
--csv`` names them ``socket_power``, ``gfx_activity``, ``hotspot``, ``used_vram``, and ``amd-smi
monitor --csv`` ``power_usage``, ``gfx``, ``gfx_clk``, ``hotspot_temperature``, ``vram_used``
[S, amd_smi]. Without times, the polls are timed by ``period``.

rocm-smi and amd-smi list each GCD of an MI250/MI250X package as a device but read the
package's power on one of them: the other prints ``N/A (Secondary die)``, 0, or (assumed)
the same power. Where every pair of devices 2i, 2i+1 does so in 95 % of the polls, the
pair is read as one package, channel ``gpu<i>``, its power once, with a warning
(:func:`_packages`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry.lines import csv_fields, header_rows, refuse_line, split_lines
from powermodel.iotools.telemetry.tidy import OPTIONAL, gpu_channels
from powermodel.iotools.telemetry.timing import poll_numbers, seconds_times, untimed
from powermodel.iotools.telemetry.units import CELSIUS, MHZ, MIB, PERCENT, POWER, read_fields
from powermodel.iotools.trace import split_unit, to_floats

# rocm-smi --csv heads each field with its name and unit; the power is the "Current Socket"
# package power on MI300 and later, the "Average" one before [S, rocm_smi].
# Each variable's fields in order of preference.
_ROCM_FIELDS = {
    "power": (
        ("Current Socket Graphics Package Power", POWER),
        ("Average Graphics Package Power", POWER),
    ),
    "utilization": (("GPU use", PERCENT),),
    "temperature": (
        ("Temperature (Sensor junction)", CELSIUS),
        ("Temperature (Sensor edge)", CELSIUS),
    ),
    "memory_used": (("VRAM Total Used Memory", MIB),),
}
# amd-smi metric --csv flattens its sections to their keys (socket_power, gfx_activity,
# hotspot, used_vram); amd-smi monitor --csv names them power_usage, gfx, gfx_clk,
# hotspot_temperature, vram_used [S, amd_smi].
_AMD_FIELDS = {
    "power": (
        ("socket_power", POWER),
        ("power_usage", POWER),
        ("current_socket_power", POWER),
        ("average_socket_power", POWER),
    ),
    "utilization": (("gfx_activity", PERCENT), ("gfx_usage", PERCENT), ("gfx", PERCENT)),
    "sm_clock": (("gfx_clk", MHZ), ("gfx_0_clk", MHZ)),
    "temperature": (("hotspot_temperature", CELSIUS), ("hotspot", CELSIUS)),
    "memory_used": (("used_vram", MIB), ("vram_used", MIB)),
}
# MI200-class devices are read in pairs (one package) when, in every pair, one of the two reads
# nothing (or the same power) in this share of the polls, out of this many at least [A]: a real
# second GPU reads its own power, and a lone [N/A] now and then is a missed reading.
_PAIRED = 0.95
_MIN_PAIRED_POLLS = 5


def read_device_csv(
    text: str, path: Path, format: str, period: float | None, log: list, meta: dict
) -> pd.DataFrame:
    """rocm-smi's or amd-smi's CSV (``format``), printed once per poll in a loop (each poll its
    header, then one row per GPU) or once by amd-smi's watch mode (one header, a timestamp
    column); MI200-class packages read as one channel each (:func:`_packages`)."""
    rocm = format == "rocm-smi"
    device = "device" if rocm else "gpu"
    lines, cut = split_lines(text)
    lines = lines[lines.str.strip() != ""]
    # amd-smi quotes a field that holds commas (a list of engines' activity): none is read.
    lines = lines.str.replace(r'"[^"]*,[^"]*"', "[list]", regex=True).str.replace(
        '"', "", regex=False
    )
    first = lines.iloc[0].strip()
    header = [h.strip() for h in first.split(",")]
    if device not in header:
        raise DataFileError(
            f"{path}: line {lines.index[0]}: no {device!r} column in the header "
            f"{first[:60]!r}: not {format} --csv output; give format= if it is another tool's"
        )
    is_header = header_rows(
        lines,
        lines.str.match(rf"\s*(?:timestamp\s*,\s*)?{device}\s*,").to_numpy(dtype=bool),
        path,
        f"{format} was run with other fields; record one field list per file, or split the "
        "file there",
    )
    want = f"{len(header)} comma-separated fields"
    body, fields, _ = csv_fields(lines[~is_header], len(header), cut, log, path, want)
    number = body.index.to_numpy()
    gpu = _device_ids(fields[header.index(device)], device, rocm, number, path)
    out = {"line": number, "channel": gpu_channels(gpu)}
    out["time"] = _device_times(fields, header, gpu, number, format, period, path, meta)
    read, meta["power_field"] = _device_fields(fields, header, format, number, path, log)
    out.update(read)
    return _packages(pd.DataFrame(out), format, log, meta)


def _device_fields(
    fields: pd.DataFrame,
    header: list[str],
    format: str,
    number: np.ndarray,
    path: Path,
    log: list,
) -> tuple[dict[str, np.ndarray], str]:
    """Each variable's readings, from the first of its fields (in the order of preference) the
    log has, and the header of the field read as power (refused where there is none)."""
    rocm = format == "rocm-smi"
    table = _ROCM_FIELDS if rocm else _AMD_FIELDS
    names = {split_unit(h)[0] if rocm else h: (j, split_unit(h)[1]) for j, h in enumerate(header)}
    chosen = {}  # each variable's field, the first of its choices the log has
    for var, choices in table.items():
        name, units = next(((n, u) for n, u in choices if n in names), (None, None))
        if name is not None:
            chosen[name] = (var, units)
    columns = [(name, names[name][1], fields[names[name][0]]) for name in chosen]
    read = read_fields(columns, chosen, number, path, log)
    if "power" not in read:
        wanted = " or ".join(n for n, _ in table["power"][:2])
        how = "--showpower" if rocm else "metric --power (or monitor -p)"
        raise DataFileError(
            f"{path}: no power field among {', '.join(header)}: record {wanted} ({format} {how})"
        )
    power = next(name for name, (var, _) in chosen.items() if var == "power")
    return read, header[names[power][0]]


def _device_ids(
    label: pd.Series, device: str, rocm: bool, number: np.ndarray, path: Path
) -> np.ndarray:
    """Each row's GPU id, from its ``device`` (rocm-smi's ``card<i>``) or ``gpu`` label."""
    label = label.str.strip()
    gpu = label.str.extract(r"^(?:card)?(?P<gpu>\d{1,6})$" if rocm else r"^(?P<gpu>\d{1,6})$")[
        "gpu"
    ]
    want = "card0, card1..." if rocm else "0, 1..."
    refuse_line(
        gpu.isna().to_numpy(),
        number,
        path,
        lambda i: f"{device} {label.iloc[i][:20]!r} is not a GPU ({want}); mend or delete the line",
    )
    return gpu.astype(np.int64).to_numpy()


def _device_times(
    fields: pd.DataFrame,
    header: list[str],
    gpu: np.ndarray,
    number: np.ndarray,
    format: str,
    period: float | None,
    path: Path,
    meta: dict,
) -> np.ndarray:
    """Each row's time: its ``timestamp`` (Unix seconds, amd-smi's watch mode), else its
    poll's number times ``period``."""
    if "timestamp" not in header:
        period = untimed(
            period,
            path,
            f"{format} prints no times: the polls are timed by the loop that ran it",
            meta,
            "polls",
        )
        return seconds_times(poll_numbers(gpu) * period)
    stamp = fields[header.index("timestamp")].str.strip()
    seconds = to_floats(stamp)
    refuse_line(
        ~(np.abs(seconds) < 1e10),  # Unix seconds before the year 2286
        number,
        path,
        lambda i: f"timestamp {stamp.iloc[i][:30]!r} is not Unix seconds; mend or delete the line",
    )
    meta["timezone"] = "UTC (Unix timestamps)"
    return seconds_times(seconds)


def _packages(raw: pd.DataFrame, format: str, log: list, meta: dict) -> pd.DataFrame:
    """Devices read as MI200-class packages where their power says so, else ``raw`` as it is.

    An MI250 or MI250X OAM package holds two GCDs, and rocm-smi and amd-smi list each GCD as a
    device, but the package's power is read on one of them: rocm-smi 6.0.2 and later print
    ``N/A (Secondary die)`` on the other and the package's whole power ("primary + secondary")
    on the primary, "usually one above or below the secondary" [S, rocm_smi_mi200]; the
    driver's hwmon reads 0 W there [S, amdgpu_mi200_power], which tools that read hwmon print;
    a tool that prints the package's power on both is assumed too [A]. Read per device, the
    secondary is a GPU drawing nothing (the running level halved), or the package counted
    twice. So devices 2i and 2i+1 are taken as one package when, in every pair and in
    _PAIRED of the polls where either reads, one of them reads nothing (N/A or 0) and the
    other a power, or both the same power in _PAIRED of the polls where the power changes
    (ten at least: two GPUs idling steadily may print the same watts). Each package is a
    channel ``gpu<i>``: its power the reading one (once), its utilisation and clock the two
    GCDs' mean, its memory their sum, its temperature the hotter."""
    gpu = raw["channel"].str.slice(3).astype(np.int64).to_numpy()
    ids = np.unique(gpu)
    if ids.size < 2 or ids.size % 2 or ids[-1] != ids.size - 1:
        return raw
    t = raw["time"].to_numpy().astype(np.int64)
    frame = raw.assign(_t=t, _package=gpu // 2, _die=gpu % 2)
    frame = frame[~frame.duplicated(["_t", "_package", "_die"])]
    wide = frame.set_index(["_package", "_t", "_die"])["power"].unstack("_die")
    if wide.shape[1] != 2:
        return raw
    a, b = wide[0].to_numpy(dtype=float), wide[1].to_numpy(dtype=float)
    quiet_a, quiet_b = ~(a > 0), ~(b > 0)  # N/A (NaN) or 0
    package = wide.index.get_level_values("_package").to_numpy()
    either = ~(quiet_a & quiet_b)
    one = either & (quiet_a ^ quiet_b)
    # the same power on both, where the package's power moved since the pair's last poll
    moved = np.r_[False, (np.diff(np.nan_to_num(a)) != 0) & (package[1:] == package[:-1])]
    same = moved & ~quiet_a & (a == b)
    per = pd.DataFrame(
        {"either": either, "one": one, "moved": moved & ~quiet_a, "same": same}
    ).groupby(package)
    total = per.sum()
    alone = total["one"] >= _PAIRED * np.maximum(total["either"], 1)
    twice = (total["moved"] >= 10) & (total["same"] >= _PAIRED * np.maximum(total["moved"], 1))
    paired = (alone | twice) & (total["either"] >= _MIN_PAIRED_POLLS)
    if not paired.all():
        return raw
    what = "N/A or 0" if alone.all() else "the same power" if twice.all() else "N/A, 0 or the same"
    optional = [c for c in OPTIONAL if c in frame]
    group = frame.groupby(["_package", "_t"], sort=False)
    power = group["power"].max().to_numpy()  # the reading GCD's: the other reads less or NaN
    out = {
        "line": group["line"].min().to_numpy(),
        "time": group["time"].first().to_numpy(),
        "channel": gpu_channels(group["_package"].first().to_numpy()),
        "power": np.where(power > 0, power, np.nan),  # a package reading 0 read nothing
    }
    how = {"utilization": "mean", "sm_clock": "mean", "temperature": "max", "memory_used": "sum"}
    for var in optional:
        if how[var] == "sum":
            out[var] = group[var].sum(min_count=1).to_numpy()
        else:
            out[var] = getattr(group[var], how[var])().to_numpy()
    packages = ids.size // 2
    meta.update(
        power_per="package",
        gcds_per_package=2,
        packages=packages,
        package_devices={f"gpu{i}": [2 * i, 2 * i + 1] for i in range(packages)},
    )
    hit, of = ("one", "either") if alone.all() else ("same", "moved")
    share = total[hit].sum() / max(total[of].sum(), 1)
    log.append(
        f"{format}: the {ids.size} devices report power in pairs, one of each pair {what} in "
        f"{share:.0%} of the polls (MI200-class, MI250/MI250X: two GCDs per OAM package, the "
        f"package's power on one): read as {packages} packages, gpu<i> = devices 2i and "
        "2i+1, each package's power once (the other's N/A or 0 is no idle GPU); utilisation "
        "and clock the mean of the two GCDs, memory the sum, temperature the hotter"
    )
    return pd.DataFrame(out)
