"""Measured traces: the CSV reader on good files, on each defect of issue 10 and on broken ones."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel import rules
from powermodel.errors import DataFileError
from powermodel.iotools.trace import read_trace


def _times(n: int, step: int = 1) -> list[str]:
    return [f"2025-01-01T00:{s // 60:02d}:{s % 60:02d}Z" for s in range(0, n * step, step)]


def _csv(header: str, *columns: list) -> str:
    rows = [",".join(map(str, values)) for values in zip(*columns, strict=True)]
    return header + "\n" + "\n".join(rows) + "\n"


def _write(tmp_path, content: str | bytes, name: str = "trace.csv"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def test_reads_iso_times_and_megawatts(tmp_path):
    path = _write(tmp_path, _csv("time,P [MW],Q [Mvar]", _times(3), [1.0, 2.0, 3.0], [0, 1, 2]))
    ds = read_trace(path)
    assert ds.time.values[0] == np.datetime64("2025-01-01T00:00:00")  # naive UTC
    assert ds.attrs["dt"] == 1.0 and ds.attrs["source"] == str(path)
    assert_allclose(ds.grid_power, [1.0, 2.0, 3.0])
    assert_allclose(ds.grid_reactive_power, [0.0, 1.0, 2.0])
    assert ds.grid_power.attrs["units"] == "MW" and ds.grid_reactive_power.attrs["units"] == "Mvar"
    assert rules.read_trace is read_trace  # the CLI and older callers import it from rules


# --- 1. numeric time: only with its unit, as time since the start -----------------------------


def test_numeric_time_without_a_unit_is_refused(tmp_path):
    # it was read as nanoseconds since 1970, and rule ercot-5s then ran out of memory
    path = _write(tmp_path, _csv("time,P [MW]", range(600), [50.0] * 600))
    with pytest.raises(DataFileError, match=r"numbers without a unit.*ISO 8601.*'time \[s\]'"):
        read_trace(path)


@pytest.mark.parametrize(("unit", "step"), [("s", 1.0), ("ms", 1e-3), ("min", 60.0), ("h", 3600.0)])
def test_numeric_time_with_a_unit_counts_from_the_start(tmp_path, unit, step):
    path = _write(tmp_path, _csv(f"time [{unit}],P [MW]", [0, 1, 2, 3], [1, 1, 1, 1]))
    ds = read_trace(path)
    assert ds.attrs["dt"] == pytest.approx(step, rel=1e-12)
    assert ds.time.values[0] == np.datetime64("1970-01-01T00:00")
    assert (ds.time.values[-1] - ds.time.values[0]) / np.timedelta64(1, "s") == pytest.approx(
        3 * step
    )


def test_a_numeric_time_trace_is_checked_against_a_rule(tmp_path):
    t = np.arange(600)
    p = 50.0 + 12.0 * (t >= 300)  # a 12 MW step up, as in test_grid's ISO-time trace
    # the playback export's header: quoted, time named t
    path = _write(tmp_path, _csv('"t [s]","P [MW]"', t, p))
    (result,) = rules.check(read_trace(path), rules.load_rules("ercot-5s"))
    assert not result.passed and result.worst == pytest.approx(12.0, rel=0.01)


# --- 2. units in the power headers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("p_header", "q_header", "scale"),
    [
        ("P [MW]", "Q [Mvar]", 1.0),
        ("P [kW]", "Q [kvar]", 1e-3),
        ("grid_power [W]", "grid_reactive_power [var]", 1e-6),
        ("power [GW]", "Q [Gvar]", 1e3),
        ("facility_power (kW)", "Q (MVAr)", None),  # parentheses and the MVAr spelling
    ],
)
def test_power_units_are_read_from_the_header(tmp_path, p_header, q_header, scale):
    path = _write(tmp_path, _csv(f"time,{p_header},{q_header}", _times(2), [500, 700], [10, 20]))
    ds = read_trace(path)
    p_scale, q_scale = (1e-3, 1.0) if scale is None else (scale, scale)
    assert_allclose(ds.grid_power, np.array([500, 700]) * p_scale, rtol=1e-12)
    assert_allclose(ds.grid_reactive_power, np.array([10, 20]) * q_scale, rtol=1e-12)


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ("time,P", r"column 'P': it has no unit; write the unit in brackets, e.g. 'P \[MW\]'"),
        ("time,P [mw]", r"unit 'mw' is not one of GW, MW, kW, KW, W \(did you mean 'MW'\?\)"),
        # found in review: "mW" was told to write MW, a factor of 10^9 (milli is no typo)
        ("time,P [mW]", r"unit 'mW' .*\('mW' is milli-, 'MW' mega-: no site is metered in milli\)"),
        ("time,P [MWh]", r"unit 'MWh' is not one of .*'P \[MW\]'"),
        ("time,P [MW],Q", r"column 'Q': it has no unit; .* 'Q \[Mvar\]'"),
        ("time,load [MW]", r"no active power column: looked for grid_power, .* --power"),
        ("time,P [MW],P [kW]", r"2 active power columns, 'P \[MW\]', 'P \[kW\]'"),
    ],
)
def test_power_headers_without_a_known_unit_are_refused(tmp_path, header, match):
    columns = [[1, 2]] * header.count(",")
    path = _write(tmp_path, _csv(header, _times(2), *columns))
    with pytest.raises(DataFileError, match=match):
        read_trace(path)


def test_power_column_named_by_its_header(tmp_path):
    path = _write(tmp_path, _csv("time,P [MW],meter_b [kW]", _times(2), [1, 2], [3000, 4000]))
    for name in ("meter_b [kW]", "meter_b"):
        assert_allclose(read_trace(path, power=name).grid_power, [3.0, 4.0])
    with pytest.raises(DataFileError, match=r"no column 'meter_c' .*did you mean 'meter_b \[kW\]'"):
        read_trace(path, power="meter_c")


# --- 3.–5. bad values: one line each ------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        (["1", "2", "3"], ["0", "x", "0"], r"line 3: 'Q \[Mvar\]' is 'x', not a finite number"),
        (["1", "x", "3"], ["0", "0", "0"], r"line 3: 'P \[MW\]' is 'x', not a finite number"),
        (["1", "2", "inf"], ["0", "0", "0"], r"line 4: 'P \[MW\]' is 'inf', not a finite"),
        (["1e400", "2", "3"], ["0", "0", "0"], r"line 2: 'P \[MW\]' is '1e400', not a finite"),
        (["1", "nan", "nan"], ["0", "0", "0"], r"line 3: .* 'nan', not a finite .*2 such rows"),
        (["1", "", "3"], ["0", "0", "0"], r"line 3: 'P \[MW\]' is empty, not a finite number"),
        (["1", "2", "3"], ["0", "0", "-inf"], r"line 4: 'Q \[Mvar\]' is '-inf'"),
    ],
)
def test_non_numbers_and_non_finite_values_are_refused_by_line(tmp_path, p, q, match):
    path = _write(tmp_path, _csv("time,P [MW],Q [Mvar]", _times(3), p, q))
    with pytest.raises(DataFileError, match=match):
        read_trace(path)


@pytest.mark.parametrize(
    ("times", "match"),
    [
        (["2025-01-01T00:00:00Z", "yesterday", "x"], r"line 3: 'time' is 'yesterday', not an ISO"),
        (["2025-01-01T00:00:00Z", "", "2025-01-01T00:00:02Z"], r"line 3: 'time' is empty"),
        (["01/02/2025 00:00", "01/02/2025 00:01"], r"line 2: .*'01/02/2025 00:00', not an ISO"),
        (["0", "1", "x"], r"line 2: 'time' is '0', not an ISO 8601 time .*3 such rows"),
    ],
)
def test_unreadable_or_missing_times_name_the_line(tmp_path, times, match):
    path = _write(tmp_path, _csv("time,P [MW]", times, [1] * len(times)))
    with pytest.raises(DataFileError, match=match):
        read_trace(path)


@pytest.mark.parametrize(
    ("seconds", "match"),
    [
        ([0, 1, 1, 2], r"line 4: time 2025-01-01T00:00:01 \(UTC\) is not after line 3's .*dupl"),
        ([2, 1, 0], r"line 3: time 2025-01-01T00:00:01 \(UTC\) is not after line 2's"),
        ([0, 1, 3], r"line 4: .* is 2 s after line 3's .*, unlike the first step of 1 s"),
    ],
)
def test_times_must_increase_in_equal_steps(tmp_path, seconds, match):
    times = [f"2025-01-01T00:00:{s:02d}Z" for s in seconds]
    path = _write(tmp_path, _csv("time,P [MW]", times, [1] * len(times)))
    with pytest.raises(DataFileError, match=match + ".*resample the trace to a uniform step"):
        read_trace(path)


# --- 6. time zones, layouts and broken files ----------------------------------------------------


def test_times_with_offsets_become_utc_across_a_dst_change(tmp_path):
    # Central European clocks go back at 03:00 CEST (+02:00) on 26 October 2025
    times = ["2025-10-26T02:59:59+02:00", "2025-10-26T02:00:00+01:00", "2025-10-26T02:00:01+01:00"]
    ds = read_trace(_write(tmp_path, _csv("time,P [MW]", times, [1, 2, 3])))
    assert ds.time.values[0] == np.datetime64("2025-10-26T00:59:59") and ds.attrs["dt"] == 1.0
    naive = ["2025-01-01 00:00:00", "2025-01-01 00:00:01"]  # no offset: UTC
    ds = read_trace(_write(tmp_path, _csv("time,P [MW]", naive, [1, 2])))
    assert ds.time.values[1] == np.datetime64("2025-01-01T00:00:01")
    mixed = ["2025-01-01T00:00:00Z", "2025-01-01T00:00:01", "2025-01-01T00:00:02Z"]
    with pytest.raises(DataFileError, match=r"line 3: time '2025-01-01T00:00:01' has no UTC off"):
        read_trace(_write(tmp_path, _csv("time,P [MW]", mixed, [1, 2, 3])))


@pytest.mark.parametrize(
    "content",
    [
        "\ufefftime,P [MW]\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,2\n",  # UTF-8 BOM
        "time,P [MW]\r\n2025-01-01T00:00:00Z,1\r\n2025-01-01T00:00:01Z,2\r\n",  # CRLF
        "time,P [MW]\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,2\n\n\n",  # trailing blanks
        "time, P [MW]\n2025-01-01T00:00:00Z, 1\n2025-01-01T00:00:01Z, 2",  # spaces, no last EOL
    ],
)
def test_common_text_variants_read_alike(tmp_path, content):
    ds = read_trace(_write(tmp_path, content))
    assert_allclose(ds.grid_power, [1.0, 2.0]) and ds.attrs["dt"] == 1.0


def test_a_wide_file_reads_only_its_columns(tmp_path):
    n = 20_000
    others = ",".join(["0"] * n)
    lines = ["time," + ",".join(f"c{i}" for i in range(n)) + ",P [kW]"]
    lines += [f"{t},{others},{1000 * (i + 1)}" for i, t in enumerate(_times(3))]
    ds = read_trace(_write(tmp_path, "\n".join(lines)))
    assert_allclose(ds.grid_power, [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", r"the file is empty"),
        ("time,P [MW]\n", r"0 data rows: a trace needs at least two times"),
        ("time,P [MW]\n2025-01-01T00:00:00Z,1\n", r"1 data row: a trace needs at least two"),
        (bytes(range(256)) * 4, r"a binary file, not a CSV trace"),
        ("time,P [MW]\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,\xb5\n".encode("latin-1"),
         r"not UTF-8 text; save the trace as UTF-8"),
        ("time,P [MW] \xb5\n".encode("latin-1"), r"line 1 is not UTF-8 text"),
        ("time;P [MW]\n2025-01-01T00:00:00Z;1,5\n2025-01-01T00:00:01Z;1,5\n",
         r"separated by semicolons or tabs; save the trace as comma-separated"),
        ("time,P [MW]\n2025-01-01T00:00:00Z,1,5\n2025-01-01T00:00:01Z,1,5\n",
         r"line 2: Expected 2 columns, got 3.*'\.' as the decimal point"),
        ("time,x,P [MW]\n2025-01-01T00:00:00Z,0,1\n2025-01-01T00:00:01Z,0\n",
         r"line 3: Expected 3 columns, got 2"),
        ("P [MW],Q [Mvar]\n1,1\n2,2\n", r"no time column: .*'P \[MW\]', which is the power"),
        ("time,P [MW]\n2025-01-01T00:00:00.000000000Z,1\n2025-01-01T00:00:00.000000001Z,1\n",
         r"the time step is 1e-09 s, under the 0\.001 s of the finest power meters"),
        ("time [s],P [MW]\n0,1\n1e300,2\n", r"line 3: 'time \[s\]' is '1e300', not a time since"),
        (b"time," + b"c," * 600_000 + b"P [MW]\n", r"header line is longer than 1 MiB"),
    ],
)  # fmt: skip
def test_broken_files_are_refused_with_the_problem_and_the_fix(tmp_path, content, match):
    with pytest.raises(DataFileError, match=match):
        read_trace(_write(tmp_path, content))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataFileError, match=r"nowhere\.csv: no such file"):
        read_trace(tmp_path / "nowhere.csv")


def test_a_sensor_views_leading_no_report_rows_are_left_out_with_a_warning(tmp_path, capsys):
    # powermodel's own CSV of a sensor view (grid_power_revenue) has no reading before the
    # meter's first 15-min block ends (powermodel.models.sensors.read): those rows are left out
    # and said; a missing reading after the first stays an error (named by line)
    rows = ["time [s],P [MW]", "0,nan", "1,", "2,NaN", *(f"{t},{t}" for t in range(3, 9))]
    trace = read_trace(_write(tmp_path, "\n".join(rows) + "\n"))
    assert trace["grid_power"].size == 6 and trace["grid_power"].values[0] == 3.0
    assert "the first 3 rows hold no reading" in trace.attrs["skipped"]
    plain = read_trace(_write(tmp_path, "time [s],P [MW]\n0,1\n1,2\n", "plain.csv"))
    assert "skipped" not in plain.attrs
    with pytest.raises(DataFileError, match="line 5"):
        read_trace(_write(tmp_path, "time [s],P [MW]\n0,nan\n1,1\n2,2\n3,nan\n", "gap.csv"))
    with pytest.raises(DataFileError, match="0 data rows with a power reading"):
        read_trace(_write(tmp_path, "time [s],P [MW]\n0,nan\n1,nan\n", "none.csv"))
    from powermodel.cli import main

    long = ["time [s],P [MW]", "0,nan", "1,", "2,NaN", *(f"{t},{t % 7}" for t in range(3, 200))]
    path = _write(tmp_path, "\n".join(long) + "\n", "cli.csv")
    assert main(["check", str(path), "--rules", "ercot-5s"]) in (0, 3)
    assert "warning: 'P [MW]': the first 3 rows hold no reading" in capsys.readouterr().err
