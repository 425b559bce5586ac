"""Weather: psychrometrics, EPW and TMY3 readers on the shipped files and on broken ones, the
synthetic climate, the ASHRAE design day, and interpolation onto the simulation grid."""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel import load_scenario
from powermodel.errors import DataFileError, ScenarioError
from powermodel.iotools import weather as io
from powermodel.models import weather

REFERENCE = "llama3-405b-16k-h100"

STERLING = io.SHIPPED["sterling"]


@pytest.fixture(scope="module")
def shipped():
    return {name: io.read_weather(name) for name in io.SHIPPED}


def _stull_wet_bulb(temp_air, relative_humidity):
    """Stull, "Wet-bulb temperature from relative humidity and air temperature", J. Appl.
    Meteor. Climatol. 50, 2267–2269 (2011), Eq. 1: at 101,325 Pa, RH 5–99 %, −20…50 °C."""
    t, rh = temp_air, relative_humidity
    return (
        t * np.arctan(0.151977 * np.sqrt(rh + 8.313659))
        + np.arctan(t + rh)
        - np.arctan(rh - 1.676331)
        + 0.00391838 * rh**1.5 * np.arctan(0.023101 * rh)
        - 4.686035
    )


def test_wet_bulb_at_35c_40pct():
    # ASHRAE Psychrometric Chart No. 1 (sea level): 35 °C dry-bulb, 40 % RH lies on the 23.9 °C
    # wet-bulb line; the ASHRAE Handbook—Fundamentals Ch. 1 equations (psychrolib) give 23.93.
    assert weather.wet_bulb(35.0, 40.0, 101325.0) == pytest.approx(23.93, abs=0.05)
    # Stull (2011), independent empirical fit: errors within −1 … +0.65 °C of the exact value.
    assert _stull_wet_bulb(35.0, 40.0) == pytest.approx(23.93, abs=1.0)


def test_wet_bulb_broadcasts_and_refuses_a_fine_grid():
    wb = weather.wet_bulb(np.array([[20.0], [30.0]]), np.array([50.0, 100.0]), 101325.0)
    assert wb.shape == (2, 2)
    assert_allclose(wb[:, 1], [20.0, 30.0], atol=1e-3)  # saturated air: wet-bulb = dry-bulb
    assert_allclose(wb[:, 0], _stull_wet_bulb(np.array([20.0, 30.0]), 50.0), atol=1.0)
    with pytest.raises(ValueError, match="hourly weather"):
        weather.wet_bulb(np.zeros(86400 * 3), 50.0, 101325.0)


def test_wet_bulb_over_arrays_is_psychrolibs_to_the_bit(shipped):
    # psychrolib's own scalar function is the reference: the array form runs its equations and
    # iterations in its order with the C library's exp, log and pow, so every value is the same
    # float (the pinned outputs depend on it); the hourly years of every shipped file, air below
    # freezing (the ice branches), dry and saturated air, and a high site's pressure
    psychrolib = weather.psychrolib
    psychrolib.SetUnitSystem(psychrolib.SI)
    sets = [
        (d.temp_air.to_numpy(), d.relative_humidity.to_numpy(), d.pressure.to_numpy())
        for d, _ in shipped.values()
    ]
    sets.append(
        (np.array([-40.0, -5.0, 0.0, 0.005, 0.02, 45.0]), np.array([0.0, 80, 100, 5, 100, 10]),
         np.array([101325.0, 101325, 80000, 101325, 101325, 62000]))
    )  # fmt: skip
    for temp, rh, pressure in sets:
        expected = [
            psychrolib.GetTWetBulbFromRelHum(t, min(max(h, 0.0), 100.0) / 100.0, p)
            for t, h, p in zip(temp.tolist(), rh.tolist(), pressure.tolist(), strict=True)
        ]
        np.testing.assert_array_equal(weather.wet_bulb(temp, rh, pressure), expected)
    with pytest.raises(ValueError, match="convergence"):  # as psychrolib: NaN never converges
        weather.wet_bulb(np.nan, 50.0, 101325.0)


def test_the_numbers_read_are_each_fields_decimal_value(shipped):
    # Python's float() of each field is the reference (its decimal value, correctly rounded):
    # pandas' C reader reads the rows of every shipped file to the same floats as splitting
    # them in Python did, and a row it cannot read (a space inside a cell, a word) goes to the
    # splitting, which names the cell
    for name in io.SHIPPED:
        lines = io._read_lines(io.shipped_weather()[name])
        rows, fields = lines[8:], [1, 2, 3, 6, 7, 8, 9]
        expected = np.array([[float(r.split(",")[c]) for c in fields] for r in rows])
        got = io._numbers(rows, fields, [str(c) for c in fields], STERLING, 9)
        np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))
    assert io._parsed(["1, 2 ,3", "4,5,6"], [0, 1, 2]).tolist() == [[1, 2, 3], [4, 5, 6]]
    bad_rows = (["1,2,3", "4,,6"], ["1,2", "4,5,6"], ["1,2 0,3"], ["1,two,3"], ["1,nan,3"])
    for bad in (*bad_rows, ["\ufeff1,2,3"]):  # the C reader would drop a byte-order mark
        assert io._parsed(bad, [0, 1, 2]) is None, bad
    with pytest.raises(DataFileError, match=r"line 10, 1 is 'two', not a finite number"):
        io._numbers(["1,2,3", "4,two,6"], [1], ["1"], STERLING, 9)


def test_relative_humidity_from_dew_point_matches_the_files(shipped):
    assert weather.relative_humidity_from_dew_point(20.0, 20.0) == pytest.approx(100.0)
    assert weather.relative_humidity_from_dew_point(20.0, 25.0) == 100.0
    # The EPW's own RH column (NREL's, from the same readings) agrees to rounding, on average.
    data, _ = shipped["sterling"]
    rh = weather.relative_humidity_from_dew_point(data.temp_air, data.temp_dew)
    assert np.mean(np.abs(rh - data.relative_humidity)) < 1.5


@pytest.mark.parametrize("name", list(io.SHIPPED))
def test_shipped_epw_parse_to_a_plausible_year(shipped, name):
    data, meta = shipped[name]
    assert list(data.columns) == ["temp_air", "temp_dew", "relative_humidity", "pressure"]
    assert data.shape == (8760, 4) and not data.isna().any().any()
    assert str(data.index[0]) == "2019-01-01 01:00:00"  # hour-ending, local standard time
    assert str(data.index[-1]) == "2020-01-01 00:00:00"
    assert data.temp_air.between(-40, 50).all() and data.temp_dew.between(-50, 35).all()
    assert (data.temp_dew <= data.temp_air + 0.1).all()
    assert data.relative_humidity.between(0, 100).all()
    assert data.pressure.between(60e3, 110e3).all()
    assert meta["filled"] == dict.fromkeys(io.COLUMNS, 0)
    assert meta["utc_offset"] in (-5.0, -6.0, -7.0) and meta["country"] == "USA"
    assert meta["design_conditions"]["cooling"]["DB004"] > 30.0


def test_altitude_lowers_golden_pressure(shipped):
    golden, tampa = shipped["golden"], shipped["tampa"]
    assert golden[0].pressure.max() < 90e3 < 99e3 < tampa[0].pressure.min()
    # Mean station pressure follows the standard atmosphere at each elevation (1,829 m, 6 m).
    ratio = golden[0].pressure.mean() / tampa[0].pressure.mean()
    expected = weather.standard_pressure(golden[1]["elevation"]) / weather.standard_pressure(6.0)
    assert ratio == pytest.approx(expected, rel=0.01)


def test_sterling_design_conditions_are_the_header_numbers(shipped):
    _, meta = shipped["sterling"]
    line = io.resolve_weather("sterling").read_text().splitlines()[1]
    heating = line.split(",Heating,")[1].split(",")
    cooling = line.split(",Cooling,")[1].split(",")
    extremes = line.split(",Extremes,")[1].split(",")
    design = meta["design_conditions"]
    assert design["source"] == "Climate Design Data 2009 ASHRAE Handbook"
    assert design["heating"]["DB996"] == float(heating[1]) == -11.8
    assert design["cooling"]["Month"] == float(cooling[0]) == 7
    assert design["cooling"]["DBR"] == float(cooling[1]) == 11.4
    assert design["cooling"]["DB004"] == float(cooling[2]) == 34.1
    assert design["cooling"]["WB_DB004"] == float(cooling[3]) == 23.9
    assert design["cooling"]["DB010"] == float(cooling[4]) == 32.7
    assert design["cooling"]["WB_DB010"] == float(cooling[5]) == 23.5
    assert design["cooling"]["WB004"] == float(cooling[8]) == 25.4
    assert design["extremes"]["WBmax"] == float(extremes[3]) == 28.9
    assert meta["city"] == "Washington Dc Dulles IntL Ar" and meta["station_id"] == "724030"
    assert (meta["latitude"], meta["longitude"], meta["elevation"]) == (38.98, -77.47, 82.0)


def test_sterling_year_is_plausible_and_its_wet_bulb_meets_the_design_values(shipped):
    data, meta = shipped["sterling"]
    monthly = data.temp_air.groupby((data.index - np.timedelta64(1, "h")).month).mean()
    # Dulles: annual mean about 12–13 °C; July the hottest month. Climate normals put July near
    # 25 °C; the TMY3 July (one month picked from 1973–2005) is 24.5 °C.
    assert data.temp_air.mean() == pytest.approx(12.7, abs=1.0)
    assert monthly.idxmax() == 7 and 24.0 < monthly[7] < 26.5
    wb = weather.wet_bulb(data.temp_air, data.relative_humidity, data.pressure)
    extremes, cooling = meta["design_conditions"]["extremes"], meta["design_conditions"]["cooling"]
    # A typical year reaches about the 0.4 % wet-bulb, not the extreme of the record.
    assert cooling["WB004"] - 1.0 < wb.max() < extremes["WBmax"]


def test_design_day_follows_the_ashrae_profile(shipped):
    _, meta = shipped["sterling"]
    cooling = meta["design_conditions"]["cooling"]
    p = weather.standard_pressure(meta["elevation"])
    hour, temp, wb = weather.design_day(meta["design_conditions"], p)
    assert_allclose(hour, np.arange(1, 25))
    assert_allclose(temp[[13, 14]], cooling["DB004"])  # Table 6: fraction 0 at hours 14 and 15
    assert temp.argmin() == 4 and temp.min() == pytest.approx(cooling["DB004"] - cooling["DBR"])
    assert_allclose(wb[13], cooling["WB_DB004"], atol=1e-3)  # the mean coincident wet-bulb
    assert (wb <= temp + 1e-9).all() and np.all(np.diff(wb[4:13]) > 0)
    assert weather.design_day(meta["design_conditions"], p, level=1.0)[1].max() == 32.7
    with pytest.raises(ValueError, match="0.4, 1 or 2"):
        weather.design_day(meta["design_conditions"], p, level=5.0)


def _epw_lines():
    return io.resolve_weather("sterling").read_text().splitlines()


def test_truncated_epw_names_the_file_and_count(tmp_path):
    path = tmp_path / "short.epw"
    path.write_text("\n".join(_epw_lines()[: 8 + 4000]) + "\n")
    with pytest.raises(DataFileError, match=r"short\.epw: has 4000 data rows, expected 8760"):
        io.read_epw(path)


def test_epw_missing_column_names_the_row_and_field_count(tmp_path):
    lines = _epw_lines()
    rows = [",".join(r.split(",")[:8] + r.split(",")[9:]) for r in lines[8:]]  # drop RH
    path = tmp_path / "no_rh.epw"
    path.write_text("\n".join(lines[:8] + rows))
    with pytest.raises(DataFileError, match=r"no_rh\.epw: data row 1 \(line 9\) has 34 fields"):
        io.read_epw(path)


def test_not_an_epw_names_the_first_line(tmp_path):
    path = tmp_path / "power.epw"
    path.write_text("time,power [MW]\n2024-07-01T00:00:00,1.0\n")
    with pytest.raises(DataFileError, match=r"power\.epw: not an EPW .* 'time,power \[MW\]'"):
        io.read_epw(path)


def test_epw_missing_codes_are_filled_and_counted(tmp_path):
    lines = _epw_lines()
    fields = [r.split(",") for r in lines[8:]]
    for i in (100, 101):
        fields[i][6] = "99.9"
    fields[5000][9] = "999999"
    path = tmp_path / "gaps.epw"
    path.write_text("\n".join(lines[:8] + [",".join(f) for f in fields]))
    data, meta = io.read_epw(path)
    assert meta["filled"] == {"temp_air": 2, "temp_dew": 0, "relative_humidity": 0, "pressure": 1}
    before, after = float(fields[99][6]), float(fields[102][6])
    assert_allclose(data.temp_air.iloc[100:102], before + (after - before) * np.array([1, 2]) / 3)
    for f in fields[:6000]:
        f[8] = "999"
    path.write_text("\n".join(lines[:8] + [",".join(f) for f in fields]))
    with pytest.raises(DataFileError, match="relative_humidity is missing in 6000 of 8760"):
        io.read_epw(path)


def _write_tmy3(path, drop=None):
    """A TMY3 CSV as in data/README.md: site line, column names, 8,760 hourly rows."""
    names = ["Date (MM/DD/YYYY)", "Time (HH:MM)", "ETR (W/m^2)"]
    for quantity in ("Dry-bulb (C)", "Dew-point (C)", "RHum (%)", "Pressure (mbar)"):
        stem = quantity.split(" (")[0]
        names += [quantity, f"{stem} source", f"{stem} uncert (%)"]
    stamps = np.arange("2019-01-01T01", "2020-01-01T01", dtype="datetime64[h]")
    lines = ['723170,"GREENSBORO PIEDMONT TRIAD INT",NC,-5.0,36.100,-79.950,273', ",".join(names)]
    for i, t in enumerate(stamps - np.timedelta64(1, "h")):
        year, month, day = str(t)[:10].split("-")
        year = "1988" if month != "07" else "2001"  # typical years mix source years
        hour = int(str(t)[11:13]) + 1
        temp = "-9900" if i == 3 else f"{10 + 10 * np.sin(i / 500):.1f}"
        row = [f"{month}/{day}/{year}", f"{hour:02d}:00", "0"]
        row += [temp, "A", "0", "5.0", "A", "0", "60", "A", "0", "1013.25", "A", "0"]
        lines.append(",".join(row))
    if drop is not None:
        lines[1] = lines[1].replace(drop, "Other")
    path.write_text("\n".join(lines) + "\n")


def test_tmy3_reader(tmp_path):
    path = tmp_path / "723170TYA.CSV"
    _write_tmy3(path)
    data, meta = io.read_weather(path)
    assert data.shape == (8760, 4) and str(data.index[-1]) == "2020-01-01 00:00:00"
    assert_allclose(data.pressure, 101325.0)  # 1013.25 mbar × 100 Pa/mbar
    assert_allclose(data.relative_humidity, 60.0)
    assert meta["filled"]["temp_air"] == 1
    assert data.temp_air.iloc[3] == pytest.approx(np.mean(data.temp_air.iloc[[2, 4]]))
    assert meta["station_id"] == "723170" and meta["city"] == "GREENSBORO PIEDMONT TRIAD INT"
    assert (meta["utc_offset"], meta["latitude"], meta["elevation"]) == (-5.0, 36.1, 273.0)
    _write_tmy3(path, drop="Pressure (mbar)")
    with pytest.raises(DataFileError, match=r"TYA\.CSV: TMY3 column 'Pressure \(mbar\)'"):
        io.read_tmy3(path)
    with pytest.raises(DataFileError, match=r"not a TMY3 CSV file: line 2 is 'DESIGN COND"):
        io.read_tmy3(io.resolve_weather("sterling"))


# --- broken and unusual files (issue 10) --------------------------------------------------------


def _write_epw(path, lines, newline="\n", encoding="utf-8"):
    path.write_bytes((newline.join(lines) + newline).encode(encoding))
    return path


def _set(line: str, field: int, value: str) -> str:
    fields = line.split(",")
    fields[field] = value
    return ",".join(fields)


@pytest.mark.parametrize(
    ("header_line", "row", "field", "value", "match"),
    [
        (None, 10, 6, "nan", r"line 19, field 7 \(temp_air\) is 'nan', not a finite number"),
        (None, 0, 8, "inf", r"line 9, field 9 \(relative_humidity\) is 'inf', not a finite"),
        (None, 8759, 9, "1e400", r"line 8768, field 10 \(pressure\) is '1e400'"),
        (None, 5, 2, "", r"line 14, field 3 \(day\) is empty, not a finite number"),
        (0, None, 8, "nan", r"the LOCATION line \(line 1\), field 9 \(utc_offset\) is 'nan'"),
        (0, None, 8, "-inf", r"the LOCATION line \(line 1\), field 9 \(utc_offset\) is '-inf'"),
        (0, None, 9, "nan", r"the LOCATION line \(line 1\), field 10 \(elevation\) is 'nan'"),
        (0, None, 6, "north", r"field 7 \(latitude\) is 'north', not a finite number"),
    ],
)
def test_epw_refuses_non_finite_numbers_naming_line_and_field(
    tmp_path, header_line, row, field, value, match
):
    # float() takes "nan", "inf" and "1e400": they passed the reader and failed in psychrolib
    lines = _epw_lines()
    at = 8 + row if row is not None else header_line
    lines[at] = _set(lines[at], field, value)
    path = _write_epw(tmp_path / "bad.epw", lines)
    with pytest.raises(DataFileError, match=match):
        io.read_epw(path)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        (6, "999", r"field 7: latitude 999 °N is outside -90…90 °N"),
        (7, "-200", r"field 8: longitude -200 °E is outside -180…180 °E"),
        (8, "100", r"field 9: utc_offset 100 h is outside -12…14 h"),
        (8, "-13", r"field 9: utc_offset -13 h is outside -12…14 h"),
        (9, "-600", r"field 10: elevation -600 m is outside -500…9000 m"),
        (9, "9500", r"field 10: elevation 9500 m is outside -500…9000 m"),
    ],
)
def test_site_numbers_outside_physical_bounds_are_refused(tmp_path, field, value, match):
    lines = _epw_lines()
    lines[0] = _set(lines[0], field, value)
    path = _write_epw(tmp_path / "site.epw", lines)
    for read in (io.read_epw, io.site_of):
        with pytest.raises(DataFileError, match=match):
            read(path)
    # the extremes in use are inside: UTC+14 (Line Islands), the Dead Sea shore at −430 m
    lines[0] = _set(_set(_epw_lines()[0], 8, "14"), 9, "-430")
    assert io.read_epw(_write_epw(tmp_path / "kiribati.epw", lines))[1]["utc_offset"] == 14.0


def test_rows_not_one_year_name_the_days(tmp_path):
    lines = _epw_lines()
    head, rows = lines[:8], lines[8:]
    leap = [r.replace(",2,28,", ",2,29,", 1) for r in rows[58 * 24 : 59 * 24]]
    # 29 February in, 31 December out: 8,760 rows, but not the year's hours
    path = _write_epw(tmp_path / "leap.epw", head + rows[: 59 * 24] + leap + rows[59 * 24 : -24])
    with pytest.raises(
        DataFileError,
        match=r"the 8760 data rows are not the 8760 hours of one year: 29 February is present, "
        r"31 December is missing",
    ):
        io.read_epw(path)
    # a complete leap year reads, its 29 February dropped
    data, _ = io.read_epw(
        _write_epw(tmp_path / "leap_year.epw", head + rows[: 59 * 24] + leap + rows[59 * 24 :])
    )
    assert data.shape == (8760, 4) and str(data.index[-1]) == "2020-01-01 00:00:00"
    # 8,784 rows without 29 February: 1 March twice
    march1 = rows[59 * 24 : 60 * 24]
    doubled = head + rows[: 60 * 24] + march1 + rows[60 * 24 :]
    with pytest.raises(DataFileError, match=r"not the 8760 hours .*: 1 March has 48 rows"):
        io.read_epw(_write_epw(tmp_path / "double.epw", doubled))


def test_kelvin_temperatures_are_named(tmp_path):
    lines = _epw_lines()
    rows = [_set(r, 6, f"{float(r.split(',')[6]) + 273.15:.2f}") for r in lines[8:]]
    # it was: "temp_air is missing in 8760 of 8760 rows", as values ≥ 99.9 are EPW's missing code
    with pytest.raises(DataFileError, match=r"temp_air looks like kelvin .*temperatures are in °C"):
        io.read_epw(_write_epw(tmp_path / "kelvin.epw", lines[:8] + rows))
    path = tmp_path / "kelvin.csv"
    _write_tmy3(path)
    tmy3 = path.read_text().splitlines()
    tmy3[2:] = [_set(r, 6, "283.15") for r in tmy3[2:]]  # the dew point
    path.write_text("\n".join(tmy3))
    with pytest.raises(DataFileError, match=r"temp_dew looks like kelvin \(median 283.15\)"):
        io.read_tmy3(path)


@pytest.mark.parametrize(
    ("newline", "encoding", "prefix", "suffix"),
    [
        ("\r\n", "utf-8", "", ""),  # Windows line endings
        ("\n", "utf-8", "", "\n\n  \n"),  # trailing blank lines
        ("\n", "utf-8", "\ufeff", ""),  # a UTF-8 byte-order mark
        ("\n", "latin-1", "", ""),  # older files: Latin-1 city names
    ],
)
def test_text_variants_read_as_the_original(shipped, tmp_path, newline, encoding, prefix, suffix):
    lines = _epw_lines()
    lines[0] = _set(lines[0], 1, "São José dos Campos")
    lines[0] = prefix + lines[0]
    lines[-1] += suffix
    data, meta = io.read_epw(_write_epw(tmp_path / "variant.epw", lines, newline, encoding))
    assert data.equals(shipped["sterling"][0]) and meta["city"] == "São José dos Campos"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", r"not an EPW weather file: line 1 is missing"),
        (bytes(range(256)) * 40, r"a binary file, not a weather file"),
        ("header", r"has 0 data rows, expected 8760"),
        ("extra row", r"has 8761 data rows, expected 8760"),
    ],
)
def test_broken_epw_files_are_refused(tmp_path, content, match):
    lines = _epw_lines()
    path = tmp_path / "broken.epw"
    if content == "header":
        _write_epw(path, lines[:8])
    elif content == "extra row":
        _write_epw(path, lines + lines[-1:])
    else:
        path.write_bytes(content)
    with pytest.raises(DataFileError, match=match):
        io.read_epw(path)


@pytest.mark.parametrize("value", ["3.4.1", "1e400"])
def test_a_bad_design_value_loses_the_design_conditions_not_the_year(tmp_path, value):
    lines = _epw_lines()
    lines[1] = lines[1].replace(",34.1,", f",{value},", 1)
    data, meta = io.read_epw(_write_epw(tmp_path / "design.epw", lines))
    assert data.shape == (8760, 4) and meta["design_conditions"] is None
    assert meta["design_conditions_note"] == "the Cooling section's DB004 is not a finite number"


@pytest.mark.parametrize(
    ("site", "match"),
    [
        ('723170,"GREENSBORO",NC,-5.0,36.100,-79.950', r"line 1 has 6 site fields, expected 7"),
        ('723170,"GREENSBORO",NC,,36.1,-79.95,273', r"line 1, field 4 \(utc_offset\) is ''"),
        ('723170,"GREENSBORO",NC,nan,36.1,-79.95,273', r"line 1, field 4 \(utc_offset\) is 'nan'"),
        ('723170,"GREENSBORO",NC,-5,36.1,-79.95,1e400', r"field 7 \(elevation\) is '1e400'"),
        ('723170,"GREENSBORO",NC,-5,91,-79.95,273', r"field 5: latitude 91 °N is outside"),
    ],
)
def test_tmy3_site_line_is_checked(tmp_path, site, match):
    path = tmp_path / "site.csv"
    _write_tmy3(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([site, *lines[1:]]))
    for read in (io.read_tmy3, io.site_of):
        with pytest.raises(DataFileError, match=match):
            read(path)


def test_tmy3_non_finite_values_are_refused(tmp_path):
    path = tmp_path / "nan.csv"
    _write_tmy3(path)
    lines = path.read_text().splitlines()
    lines[7] = _set(lines[7], 12, "nan")
    path.write_text("\n".join(lines))
    with pytest.raises(DataFileError, match=r"line 8, field 13 \(Pressure \(mbar\)\) is 'nan'"):
        io.read_tmy3(path)
    lines[7] = _set(lines[7], 0, "0105")  # no slashes in the date
    path.write_text("\n".join(lines))
    with pytest.raises(DataFileError, match=r"line 8, the day in field 1 is empty"):
        io.read_tmy3(path)


# --- site_of ------------------------------------------------------------------------------------


def test_site_of_shipped_names_gives_the_town_and_its_zone(shipped):
    assert set(io.SITES) == set(io.SHIPPED)
    assert io.site_of("sterling") == ("Sterling, Virginia", "America/New_York")
    assert io.site_of(" Golden") == ("Golden, Colorado", "America/Denver")
    assert io.site_of(io.resolve_weather("chicago")) == ("Chicago, Illinois", "America/Chicago")
    for name, (_, zone) in io.SITES.items():
        # the zone's January (standard) offset is the file's own
        offset = zoneinfo.ZoneInfo(zone).utcoffset(datetime(2019, 1, 15))
        assert offset == timedelta(hours=shipped[name][1]["utc_offset"])


def test_site_of_a_file_reads_its_first_line_only(tmp_path):
    lines = _epw_lines()
    # a valid LOCATION line over a broken year: site_of does not read the rows
    path = _write_epw(tmp_path / "site.epw", lines[:1] + ["garbage"])
    assert io.site_of(path) == ("Washington Dc Dulles IntL Ar, VA", "Etc/GMT+5")
    zone = zoneinfo.ZoneInfo(io.site_of(path)[1])  # POSIX sign: Etc/GMT+5 is UTC−5
    assert zone.utcoffset(datetime(2019, 7, 1)) == timedelta(hours=-5)
    for offset, expected in (
        ("5.5", "Asia/Kolkata"),
        ("-3.5", None),  # St John's keeps daylight saving: no zone keeps its standard time
        ("0", "Etc/GMT"),
        ("14", "Etc/GMT-14"),
    ):
        _write_epw(path, [_set(lines[0], 8, offset)])
        assert io.site_of(path)[1] == expected
    _write_epw(path, [_set(_set(lines[0], 1, ""), 2, "-")])
    assert io.site_of(path)[0] == "site"  # no city or state: the file's name
    tmy3 = tmp_path / "723170TYA.csv"
    _write_tmy3(tmy3)
    assert io.site_of(tmy3) == ("GREENSBORO PIEDMONT TRIAD INT, NC", "Etc/GMT+5")


def test_fractional_zones_keep_their_standard_time_all_year():
    # found in review: a weather file at UTC+5:30 kept the preset's New York zone, so the
    # diurnal chart and "lowest at HH:00" were in the wrong zone
    for offset, name in io.FRACTIONAL_ZONES.items():
        zone = zoneinfo.ZoneInfo(name)
        for month in (1, 7):  # the same offset winter and summer: no daylight saving
            assert zone.utcoffset(datetime(2025, month, 15)) == timedelta(hours=offset), name


def test_a_weather_file_at_an_offset_no_zone_keeps_asks_for_the_zone(tmp_path):
    lines = _epw_lines()
    path = _write_epw(tmp_path / "stjohns.epw", [_set(lines[0], 8, "-3.5"), *lines[1:]])
    with pytest.raises(ScenarioError, match="set site.timezone beside it"):
        load_scenario(REFERENCE, {"site.weather": str(path)})
    zoned = {"site.weather": str(path), "site.timezone": "America/St_Johns"}
    assert load_scenario(REFERENCE, zoned).site.timezone == "America/St_Johns"
    path = _write_epw(tmp_path / "delhi.epw", [_set(lines[0], 8, "5.5"), *lines[1:]])
    assert load_scenario(REFERENCE, {"site.weather": str(path)}).site.timezone == "Asia/Kolkata"


def test_site_of_refuses_what_the_readers_refuse(tmp_path):
    with pytest.raises(DataFileError, match="did you mean 'sterling'"):
        io.site_of("sterlin")
    with pytest.raises(DataFileError, match=r"weather file nowhere\.epw not found"):
        io.site_of("nowhere.epw")
    for there in ("/dev/zero", tmp_path):  # found in review: "not found" for what exists
        with pytest.raises(DataFileError, match=f"weather {there} is not a file: give an .epw"):
            io.site_of(there)
    path = tmp_path / "power.epw"
    path.write_text("time,power [MW]\n")
    with pytest.raises(DataFileError, match=r"not an EPW weather file: line 1 is 'time,power"):
        io.site_of(path)
    path.write_bytes(bytes(range(256)))
    with pytest.raises(DataFileError, match="a binary file"):
        io.site_of(path)


def test_resolve_weather():
    assert io.resolve_weather("Sterling").name == STERLING
    assert io.resolve_weather(io.resolve_weather("tampa")) == io.shipped_weather()["tampa"]
    assert (io.weather_dir() / "EnergyPlus_LICENSE.txt").is_file()
    with pytest.raises(DataFileError, match="did you mean 'sterling'"):
        io.resolve_weather("sterlin")
    with pytest.raises(DataFileError, match="'synthetic', or a path"):
        io.resolve_weather("atlantis")
    with pytest.raises(DataFileError, match=r"weather file nowhere\.epw not found"):
        io.resolve_weather("nowhere.epw")


def test_synthetic_temperature_peaks_at_peak_hour_with_the_seasonal_mean():
    hours = 180 * 24 + np.arange(0, 24, 0.01)
    temp = weather.synthetic_temperature(hours, 20.0, 0.0, 199.0, 6.0, peak_hour=15.0)
    assert hours[temp.argmax()] % 24 == pytest.approx(15.0)
    assert temp.max() - temp.min() == pytest.approx(12.0, rel=1e-6)
    assert temp.mean() == pytest.approx(20.0, abs=1e-9)
    # Seasonal cosine: warmest in the middle of day 199 (18 July), coldest half a year later.
    year = np.arange(8760) + 0.5
    seasonal = weather.seasonal_temperature(year, 12.7, 12.1, 199.0)
    assert year[seasonal.argmax()] / 24 == pytest.approx(198.5, abs=0.1)
    assert seasonal.mean() == pytest.approx(12.7) and seasonal.max() == pytest.approx(24.8)
    temp = weather.synthetic_temperature(year)
    assert temp.reshape(365, 24).mean(axis=1) == pytest.approx(seasonal.reshape(365, 24).mean(1))


def test_synthetic_humidity_keeps_dew_point_below_dry_bulb():
    year = np.arange(8760.0)
    temp = weather.synthetic_temperature(year)
    dew = weather.synthetic_dew_point(year, temp, depression=4.0)
    rh = weather.relative_humidity_from_dew_point(temp, dew)
    assert (dew <= temp).all() and rh.max() == pytest.approx(100.0) and rh.min() > 30.0
    day = rh[4800:4824]  # relative humidity is highest near dawn, lowest mid-afternoon
    assert 0 <= day.argmax() <= 6 and 12 <= day.argmin() <= 17


def test_to_grid_is_exact_at_hours_linear_between_and_periodic():
    values = np.random.default_rng(0).normal(size=8760)
    whole = np.arange(1.0, 8761.0)
    assert_allclose(weather.to_grid(values, whole), values, rtol=0, atol=0)
    assert_allclose(
        weather.to_grid(values, whole[:-1] + 0.25), 0.75 * values[:-1] + 0.25 * values[1:]
    )
    # Across New Year: hour 0 is the last row (24:00 on 31 December), hour 0.5 halfway to 01:00.
    assert weather.to_grid(values, 0.0) == values[-1]
    assert weather.to_grid(values, 0.5) == pytest.approx(0.5 * (values[-1] + values[0]))
    assert weather.to_grid(values, 8760.5) == pytest.approx(0.5 * (values[-1] + values[0]))
    assert weather.to_grid(values, -0.5) == pytest.approx(0.5 * (values[-2] + values[-1]))
    assert weather.to_grid(np.arange(24.0), 0.5, first_hour=0.0) == 0.5


def test_local_hour_of_year_maps_utc_by_month_day_and_hour():
    utc = np.array(
        ["2023-01-01T05:00", "2024-02-29T17:30", "2024-03-01T05:00", "2023-03-01T05:00",
         "2024-01-01T00:00", "2025-01-01T04:59"],
        dtype="datetime64[s]",
    )  # fmt: skip
    hours = weather.local_hour_of_year(utc, -5.0)
    assert_allclose(hours[0], 0.0)  # midnight local standard time, EST = UTC − 5 h
    assert_allclose(hours[1], 58 * 24 + 12.5)  # 29 February repeats 28 February
    assert hours[2] == hours[3] == 59 * 24  # 1 March is 1 March in any year
    assert_allclose(hours[4], 8760 - 5)  # 31 December 19:00 local
    assert 0 <= hours.min() and hours.max() < 8760
    minutes = np.arange("2024-01-01", "2025-01-01", dtype="datetime64[m]")
    temp = weather.to_grid(np.arange(8760.0), weather.local_hour_of_year(minutes, -5.0))
    assert temp.shape == minutes.shape


def test_a_misspelt_shipped_name_in_a_scenario_file_gets_the_same_hint(tmp_path):
    # a name in a file is resolved beside the file, so "tamap" arrives as tmp_path / "tamap"
    (tmp_path / "hall.toml").write_text(
        'extends = "llama3-405b-16k-h100"\n[site]\nweather = "tamap"\n', encoding="utf-8"
    )
    with pytest.raises(ScenarioError, match=r"did you mean 'tampa'\? .* or a shipped name"):
        load_scenario(tmp_path / "hall.toml")
    with pytest.raises(DataFileError, match=r"nowhere\.epw not found: give an existing"):
        io.resolve_weather(tmp_path / "nowhere.epw")


def test_a_shipped_name_in_a_scenario_file_is_read_in_any_case(tmp_path):
    # the reader takes "Sterling" as "sterling"; a file naming it so is not a path beside it
    (tmp_path / "hall.toml").write_text(
        'extends = "llama3-405b-16k-h100"\n[site]\nweather = "Sterling"\n', encoding="utf-8"
    )
    assert load_scenario(tmp_path / "hall.toml").site.weather == "Sterling"
