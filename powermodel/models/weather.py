"""Outdoor air: psychrometrics, a synthetic diurnal and seasonal climate, the ASHRAE cooling design
day, and hourly weather brought onto the simulation's time grid.

Time convention. Typical-year weather (EPW, TMY3) is a calendar of month, day and hour in local
*standard* time, with no year and no 29 February. Functions here work on the **hour of year**: hours
since 1 January 00:00 local standard time of a 365-day year, ``0 ≤ h < 8760``, periodic. A series
read from a weather file holds the reading at the end of each hour: ``values[i]`` is at hour of year
``i + 1``, and the last (24:00 on 31 December) is also hour 0. :func:`local_hour_of_year` maps
simulated UTC instants onto this year by month, day and hour, so any simulated year reuses the
typical one and 29 February repeats 28 February.

Psychrometrics iterates (psychrolib's equations): compute wet-bulb on the hourly series, 8,760
values a year, and interpolate the result with :func:`to_grid`; never call :func:`wet_bulb` on
the electrical grid.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike


def _import_psychrolib():  # noqa: ANN202 - a module
    """psychrolib, in its plain-Python form.

    When numba is importable psychrolib turns its functions into numba ufuncs, compiled afresh in
    every process (about 9 s here, uncached) and slower than plain Python on scalars. powermodel
    needs numba elsewhere (the battery), so psychrolib is imported with numba hidden from it.
    """
    saved = sys.modules.get("numba")
    sys.modules["numba"] = None  # type: ignore[assignment]  # makes `import numba` fail
    try:
        import psychrolib
    finally:
        if saved is None:
            del sys.modules["numba"]
        else:
            sys.modules["numba"] = saved
    return psychrolib


psychrolib = _import_psychrolib()

HOURS_PER_YEAR = 8760
DAYS_PER_YEAR = 365

# Defaults of the synthetic climate: fitted to the Sterling (Washington Dulles, VA) TMY3 file
# shipped in data/weather/ (least squares of its daily means on one annual harmonic; mean
# dry-bulb minus mean dew point), except the daily amplitude: half the 11.4 K mean daily range of
# its hottest month, quoted from the ASHRAE Handbook in the file's DESIGN CONDITIONS line.
STERLING_MEAN = 12.7  # [°C]
STERLING_SEASONAL_AMPLITUDE = 12.1  # [K]
STERLING_HOTTEST_DAY = 199.0  # [day of year] 18 July
STERLING_DAILY_AMPLITUDE = 5.7  # [K]
STERLING_DEW_POINT_DEPRESSION = 6.3  # [K]

# ASHRAE Handbook—Fundamentals (2009), Chapter 14 "Climatic Design Information", Table 6
# "Fraction of Daily Temperature Range": hours 1 to 24 (hour 1 ends at 01:00, local time), the
# fraction of the mean daily range below the day's maximum. The same values in the 2013–2021
# editions and as EnergyPlus's default design-day multipliers.
ASHRAE_DAILY_RANGE_FRACTION = np.array([
    0.88, 0.92, 0.95, 0.98, 1.00, 0.98, 0.91, 0.74, 0.55, 0.38, 0.23, 0.13,
    0.05, 0.00, 0.00, 0.06, 0.14, 0.24, 0.39, 0.50, 0.59, 0.68, 0.75, 0.82,
])  # fmt: skip

# The hour of the daily maximum: Table 6 above is at its maximum (fraction 0) at hours 14 and 15;
# the Sterling TMY3 file's mean hourly profile peaks in the hour ending 15:00.
PEAK_HOUR = 15.0  # [h, local standard time]

_DESIGN_LEVELS = {0.4: "004", 1.0: "010", 2.0: "020"}
_MAX_PSYCHROMETRIC_POINTS = 20 * HOURS_PER_YEAR
DRY_BULB_RANGE = (-100.0, 200.0)  # °C: where psychrolib's equations hold (its SI range checks)


def wet_bulb(temp_air: ArrayLike, relative_humidity: ArrayLike, pressure: ArrayLike) -> np.ndarray:
    """Thermodynamic wet-bulb temperature.

    Parameters
    ----------
    temp_air : array_like
        Dry-bulb temperature. [°C]
    relative_humidity : array_like
        Relative humidity, clipped to 0–100. [%]
    pressure : array_like
        Station (not sea-level) pressure. [Pa]

    Returns
    -------
    numpy.ndarray
        Wet-bulb temperature, broadcast shape of the inputs. [°C]

    Notes
    -----
    Solves the psychrometric equation of ASHRAE Handbook—Fundamentals, Chapter 1, by bisection
    (psychrolib, SI): psychrolib's equations and iterations over arrays, its values to the bit
    (its own functions are scalar, 0.1 ms a value). Call it on hourly weather (8,760 values a
    year) and interpolate with :func:`to_grid`; more than twenty years of hours is refused.

    References
    ----------
    .. [psychrolib] Meyer, D. and Thevenard, D., "PsychroLib: a library of psychrometric
       functions to calculate thermodynamic properties of air", Journal of Open Source Software
       4(33), 1137 (2019). https://doi.org/10.21105/joss.01137
    """
    temp, rh, p = _psychrometric(temp_air, relative_humidity, pressure)
    return _wet_bulb_si(temp.ravel(), rh.ravel(), p.ravel()).reshape(temp.shape)


def check_wet_bulb_inputs(
    temp_air: ArrayLike, relative_humidity: ArrayLike, pressure: ArrayLike
) -> None:
    """Raise what :func:`wet_bulb` would raise on these inputs, without its iterations (a
    year's weather checked whole, its wet-bulb solved later at the hours a run reads)."""
    temp, rh, p = _psychrometric(temp_air, relative_humidity, pressure)
    _humidity_ratio(temp.ravel(), rh.ravel(), p.ravel())


def _psychrometric(
    temp_air: ArrayLike, relative_humidity: ArrayLike, pressure: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`wet_bulb`'s inputs broadcast, relative humidity clipped and as a fraction."""
    temp, rh, p = np.broadcast_arrays(
        np.asarray(temp_air, dtype=float),
        np.clip(np.asarray(relative_humidity, dtype=float), 0.0, 100.0) / 100.0,
        np.asarray(pressure, dtype=float),
    )
    if temp.size > _MAX_PSYCHROMETRIC_POINTS:
        raise ValueError(
            f"wet_bulb got {temp.size} values: compute it on hourly weather and interpolate "
            "with to_grid, not on the simulation grid"
        )
    return temp, rh, p


def _libm(func: Callable[..., float], *args: np.ndarray) -> np.ndarray:
    """``func`` of the C library (``math.exp``, ``log``, ``pow``) on each value, as psychrolib
    computes it: numpy's own SIMD exp and log may differ in the last bit, and the iterations
    below would follow them."""
    return np.fromiter(map(func, *(a.tolist() for a in args)), float, count=args[0].size)


def _sat_vap_pres(temp: np.ndarray) -> np.ndarray:
    """psychrolib's ``GetSatVapPres`` (SI) over an array, its operations in its order. [Pa]"""
    t = temp + psychrolib.ZERO_CELSIUS_AS_KELVIN
    t2, t3, t4 = (_libm(math.pow, t, np.full_like(t, k)) for k in (2.0, 3.0, 4.0))
    log_t = _libm(math.log, t)
    ice = -5.6745359e03 / t + 6.3925247 - 9.677843e-03 * t + 6.2215701e-07 * t2
    ice = ice + 2.0747825e-09 * t3 - 9.484024e-13 * t4 + 4.1635019 * log_t
    water = -5.8002206e03 / t + 1.3914993 - 4.8640239e-02 * t + 4.1764768e-05 * t2
    water = water - 1.4452093e-08 * t3 + 6.5459673 * log_t
    return _libm(math.exp, np.where(temp <= psychrolib.TRIPLE_POINT_WATER_SI, ice, water))


def _dln_pws(temp: np.ndarray) -> np.ndarray:
    """psychrolib's ``dLnPws_`` (SI) over an array: d ln(p_ws) / dT. [1/K]"""
    t = temp + psychrolib.ZERO_CELSIUS_AS_KELVIN
    t2, t3 = (_libm(math.pow, t, np.full_like(t, k)) for k in (2.0, 3.0))
    ice = 5.6745359e03 / t2 - 9.677843e-03 + 2 * 6.2215701e-07 * t + 3 * 2.0747825e-09 * t2
    ice = ice - 4 * 9.484024e-13 * t3 + 4.1635019 / t
    water = 5.8002206e03 / t2 - 4.8640239e-02 + 2 * 4.1764768e-05 * t - 3 * 1.4452093e-08 * t2
    water = water + 6.5459673 / t
    return np.where(temp <= psychrolib.TRIPLE_POINT_WATER_SI, ice, water)


def _iterate(active: np.ndarray, what: str) -> Iterator[np.ndarray]:
    """Indices still iterating, at most psychrolib's iteration count (then its error)."""
    for _ in range(psychrolib.MAX_ITER_COUNT + 1):
        index = np.flatnonzero(active)
        if index.size == 0:
            return
        yield index
    raise ValueError(f"{what}: convergence not reached in {psychrolib.MAX_ITER_COUNT} iterations")


def _humidity_ratio(
    temp: np.ndarray, rh: np.ndarray, pressure: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """psychrolib's humidity ratio and vapour pressure of each point, after its range checks
    (its errors), as :func:`_wet_bulb_si` begins."""
    coldest, hottest = DRY_BULB_RANGE
    if np.any((temp < coldest) | (temp > hottest)):  # NaN passes and stays NaN, as in psychrolib
        raise ValueError("Dry bulb temperature must be in range [-100, 200]°C")
    vap = rh * _sat_vap_pres(temp)
    ratio = np.maximum(0.621945 * vap / (pressure - vap), psychrolib.MIN_HUM_RATIO)
    # dew point (GetTDewPointFromVapPres): Newton-Raphson from the dry bulb within -100-200 °C
    vap = pressure * ratio / (0.621945 + ratio)
    low, high = _sat_vap_pres(np.array(DRY_BULB_RANGE))
    if np.any((vap < low) | (vap > high)):
        raise ValueError(
            "Partial pressure of water vapor is outside range of validity of equations"
        )
    return ratio, vap


def _wet_bulb_si(temp: np.ndarray, rh: np.ndarray, pressure: np.ndarray) -> np.ndarray:
    """psychrolib's ``GetTWetBulbFromRelHum`` (SI) over 1-D arrays, to the bit: the same
    operations in the same order, each point iterating as long as it would alone. [°C]"""
    tol, floor = 0.001, psychrolib.MIN_HUM_RATIO  # psychrolib's SI tolerance [K], least ratio
    ratio, vap = _humidity_ratio(temp, rh, pressure)
    dew, ln_vap = temp.copy(), _libm(math.log, vap)
    moving = np.ones(temp.size, bool)
    for i in _iterate(moving, "dew point"):
        last = dew[i]
        step = (_libm(math.log, _sat_vap_pres(last)) - ln_vap[i]) / _dln_pws(last)
        dew[i] = np.minimum(np.maximum(last - step, DRY_BULB_RANGE[0]), DRY_BULB_RANGE[1])
        moving[i] = ~(np.abs(dew[i] - last) <= tol)  # NaN never converges: psychrolib raises
    # wet bulb (GetTWetBulbFromHumRatio): bisection between the dew point and the dry bulb
    sup, inf = temp.copy(), np.minimum(dew, temp)
    wet = (inf + sup) / 2
    bracketing = sup - inf > tol
    for i in _iterate(bracketing, "wet bulb"):
        t, w = temp[i], wet[i]
        sat = _sat_vap_pres(w)
        sat = np.maximum(0.621945 * sat / (pressure[i] - sat), floor)
        above = ((2501.0 - 2.326 * w) * sat - 1.006 * (t - w)) / (2501.0 + 1.86 * t - 4.186 * w)
        below = ((2830.0 - 0.24 * w) * sat - 1.006 * (t - w)) / (2830.0 + 1.86 * t - 2.1 * w)
        star = np.maximum(np.where(w >= psychrolib.FREEZING_POINT_WATER_SI, above, below), floor)
        wetter = star > ratio[i]
        sup[i] = np.where(wetter, w, sup[i])
        inf[i] = np.where(wetter, inf[i], w)
        wet[i] = (sup[i] + inf[i]) / 2
        bracketing[i] = sup[i] - inf[i] > tol
    return wet


def humidity_ratio(temp_dew: ArrayLike, pressure: ArrayLike) -> np.ndarray:
    """Humidity ratio of moist air from its dew point.

    Parameters
    ----------
    temp_dew : array_like
        Dew-point temperature (over water, as weather files and ASHRAE's envelope give it). [°C]
    pressure : array_like
        Station pressure. [Pa]

    Returns
    -------
    numpy.ndarray
        Water vapour per dry air, ``W = 0.621945·e / (P − e)`` (ASHRAE Handbook—Fundamentals,
        Chapter 1, eq. 20) with ``e = 610.94·exp(b·Td/(c + Td))`` Pa, the Magnus form of
        :func:`relative_humidity_from_dew_point`. [kg/kg]
    """
    b, c = 17.625, 243.04
    dew = np.asarray(temp_dew, dtype=float)
    vapour = 610.94 * np.exp(b * dew / (c + dew))
    return 0.621945 * vapour / (np.asarray(pressure, dtype=float) - vapour)


def dew_point_from_wet_bulb(
    temp_air: ArrayLike, temp_wetbulb: ArrayLike, pressure: ArrayLike
) -> np.ndarray:
    """Dew point from dry-bulb and wet-bulb temperatures (psychrolib, SI; over ice below 0 °C).

    Parameters
    ----------
    temp_air, temp_wetbulb : array_like
        Dry-bulb and wet-bulb temperatures. [°C]
    pressure : array_like
        Station pressure. [Pa]

    Returns
    -------
    numpy.ndarray
        Dew-point temperature, broadcast shape of the inputs. [°C]

    Notes
    -----
    Scalar like :func:`wet_bulb` (ASHRAE Handbook—Fundamentals, Chapter 1): for a design day or
    hourly weather, not the simulation grid.
    """
    temp, wet, p = np.broadcast_arrays(
        np.asarray(temp_air, dtype=float),
        np.asarray(temp_wetbulb, dtype=float),
        np.asarray(pressure, dtype=float),
    )
    if temp.size > _MAX_PSYCHROMETRIC_POINTS:
        raise ValueError(f"dew_point_from_wet_bulb got {temp.size} values: use hourly weather")
    psychrolib.SetUnitSystem(psychrolib.SI)
    points = zip(
        temp.ravel().tolist(),
        np.minimum(wet, temp).ravel().tolist(),
        p.ravel().tolist(),
        strict=True,
    )
    values = [psychrolib.GetTDewPointFromTWetBulb(*point) for point in points]
    return np.array(values, dtype=float).reshape(temp.shape)


def dew_point(temp_air: ArrayLike, relative_humidity: ArrayLike) -> np.ndarray:
    """Dew point of air at a dry-bulb and relative humidity: the inverse of
    :func:`relative_humidity_from_dew_point` (Magnus formula, over water).

    Parameters
    ----------
    temp_air : array_like
        Dry-bulb temperature. [°C]
    relative_humidity : array_like
        Relative humidity, in (0, 100]. [%]

    Returns
    -------
    numpy.ndarray
        ``Td = c·γ/(b − γ)``, ``γ = ln(RH/100) + b·T/(c + T)``. [°C]
    """
    b, c = 17.625, 243.04
    temp = np.asarray(temp_air, dtype=float)
    gamma = np.log(np.asarray(relative_humidity, dtype=float) / 100.0) + b * temp / (c + temp)
    return c * gamma / (b - gamma)


def relative_humidity_from_dew_point(temp_air: ArrayLike, temp_dew: ArrayLike) -> np.ndarray:
    """Relative humidity from dry-bulb and dew-point temperatures (Magnus formula).

    Parameters
    ----------
    temp_air : array_like
        Dry-bulb temperature. [°C]
    temp_dew : array_like
        Dew-point temperature; above ``temp_air`` it saturates. [°C]

    Returns
    -------
    numpy.ndarray
        Relative humidity over water, at most 100. [%]

    Notes
    -----
    ``RH = 100·exp(b·Td/(c + Td) − b·T/(c + T))`` with b = 17.625, c = 243.04 °C: within 0.4 %
    of the saturation pressure of water from −40 to 50 °C.

    References
    ----------
    .. [alduchov] Alduchov, O. A. and Eskridge, R. E., "Improved Magnus form approximation of
       saturation vapor pressure", Journal of Applied Meteorology 35(4), 601-609 (1996).
       https://doi.org/10.1175/1520-0450(1996)035<0601:IMFAOS>2.0.CO;2
    """
    b, c = 17.625, 243.04
    temp, dew = np.asarray(temp_air, dtype=float), np.asarray(temp_dew, dtype=float)
    return np.minimum(100.0 * np.exp(b * dew / (c + dew) - b * temp / (c + temp)), 100.0)


def standard_pressure(elevation: ArrayLike) -> np.ndarray:
    """Pressure of the standard atmosphere at an elevation [m] above sea level. [Pa]

    ASHRAE Handbook—Fundamentals, Chapter 1, Eq. 3: ``101325·(1 − 2.25577e-5·Z)^5.2559``.
    """
    return 101325.0 * (1.0 - 2.25577e-5 * np.asarray(elevation, dtype=float)) ** 5.2559


def seasonal_temperature(
    hour_of_year: ArrayLike,
    mean: float = STERLING_MEAN,
    seasonal_amplitude: float = STERLING_SEASONAL_AMPLITUDE,
    hottest_day: float = STERLING_HOTTEST_DAY,
) -> np.ndarray:
    """Daily-mean dry-bulb temperature: one annual cosine.

    Parameters
    ----------
    hour_of_year : array_like
        Local standard time, hours since 1 January 00:00 (module docstring). [h]
    mean
        Annual mean. [°C]
    seasonal_amplitude
        Half the difference between the warmest and coldest daily means. [K]
    hottest_day
        Day of year (1 = 1 January) whose middle is the warmest. [d]

    Returns
    -------
    numpy.ndarray
        ``mean + seasonal_amplitude·cos(2π·(h/24 − hottest_day + 0.5)/365)``. [°C]
    """
    days = np.asarray(hour_of_year, dtype=float) / 24.0 - (hottest_day - 0.5)
    return mean + seasonal_amplitude * np.cos(2.0 * np.pi * days / DAYS_PER_YEAR)


def synthetic_temperature(
    hour_of_year: ArrayLike,
    mean: float = STERLING_MEAN,
    seasonal_amplitude: float = STERLING_SEASONAL_AMPLITUDE,
    hottest_day: float = STERLING_HOTTEST_DAY,
    daily_amplitude: float = STERLING_DAILY_AMPLITUDE,
    peak_hour: float = PEAK_HOUR,
) -> np.ndarray:
    """Dry-bulb temperature of a synthetic climate: seasonal cosine plus a diurnal cosine.

    Parameters
    ----------
    hour_of_year : array_like
        Local standard time, hours since 1 January 00:00 (module docstring). [h]
    mean, seasonal_amplitude, hottest_day
        As :func:`seasonal_temperature`. [°C], [K], [d]
    daily_amplitude
        Half the daily range (maximum − minimum). [K]
    peak_hour
        Local standard time of the daily maximum. [h]

    Returns
    -------
    numpy.ndarray
        Dry-bulb temperature. [°C]

    Notes
    -----
    ``T = seasonal(h) + daily_amplitude·cos(2π·(h − peak_hour)/24)``: smooth at any time step, the
    daily mean is exactly the seasonal value, the maximum falls at ``peak_hour`` and the minimum
    twelve hours later. Real days are skewed (ASHRAE's Table 6, :data:`ASHRAE_DAILY_RANGE_FRACTION`,
    has its minimum at 05:00 and maximum at 14–15 h): the cosine is a little warm before dawn and
    a little cool in the afternoon. Use :func:`design_day` for the ASHRAE shape.

    References
    ----------
    .. [ashrae_fundamentals] ASHRAE, "ASHRAE Handbook—Fundamentals", ASHRAE (2009), Chapter 14,
       Table 6: the daily maximum at 14–15 h local time, the source of the default
       ``peak_hour``. https://www.ashrae.org/
    """
    hours = np.asarray(hour_of_year, dtype=float)
    diurnal = daily_amplitude * np.cos(2.0 * np.pi * (hours - peak_hour) / 24.0)
    return seasonal_temperature(hours, mean, seasonal_amplitude, hottest_day) + diurnal


def synthetic_dew_point(
    hour_of_year: ArrayLike,
    temp_air: ArrayLike,
    mean: float = STERLING_MEAN,
    seasonal_amplitude: float = STERLING_SEASONAL_AMPLITUDE,
    hottest_day: float = STERLING_HOTTEST_DAY,
    depression: float = STERLING_DEW_POINT_DEPRESSION,
) -> np.ndarray:
    """Dew point of the synthetic climate: the daily-mean temperature less a constant depression.

    Parameters
    ----------
    hour_of_year : array_like
        As :func:`synthetic_temperature`. [h]
    temp_air : array_like
        Dry-bulb temperature at those hours; the dew point never exceeds it. [°C]
    mean, seasonal_amplitude, hottest_day
        As :func:`seasonal_temperature`. [°C], [K], [d]
    depression
        Daily-mean dry-bulb minus dew point. [K]

    Returns
    -------
    numpy.ndarray
        Dew-point temperature. [°C]

    Notes
    -----
    The moisture content of the air changes little over a day while the temperature swings, so
    the dew point follows the seasonal mean and relative humidity swings the other way, highest at
    dawn (a constant relative humidity would make the dew point, and the wet-bulb, swing with the
    dry-bulb). Get relative humidity with :func:`relative_humidity_from_dew_point`.
    """
    seasonal = seasonal_temperature(hour_of_year, mean, seasonal_amplitude, hottest_day)
    return np.minimum(seasonal - depression, np.asarray(temp_air, dtype=float))


def design_day(
    design: dict,
    pressure: float = 101325.0,
    level: float = 0.4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ASHRAE cooling design day: 24 hourly dry-bulb and wet-bulb temperatures.

    Parameters
    ----------
    design
        ``meta["design_conditions"]`` of :func:`powermodel.iotools.weather.read_epw`; uses its
        ``cooling`` section: ``DB004``/``WB_DB004`` (or ``010``, ``020``) and ``DBR``.
    pressure
        Station pressure, e.g. :func:`standard_pressure` at the site's elevation. [Pa]
    level
        Annual percentile of the design dry-bulb: 0.4, 1 or 2. [%]

    Returns
    -------
    hour : numpy.ndarray
        1 … 24, each the end of its hour, local standard time. [h]
    temp_air : numpy.ndarray
        Dry-bulb temperature. [°C]
    temp_wetbulb : numpy.ndarray
        Wet-bulb temperature. [°C]

    Notes
    -----
    ``T(h) = DB − f(h)·DBR`` with ``f`` the Handbook's fraction of daily range
    (:data:`ASHRAE_DAILY_RANGE_FRACTION`) and ``DBR`` the mean daily range of the hottest month.
    The humidity ratio at the design dry-bulb and its mean coincident wet-bulb is held all day, as
    EnergyPlus does when no wet-bulb range is given (the 2009 tables in EPW headers have none), and
    each hour's wet-bulb follows from it.

    References
    ----------
    .. [ashrae_fundamentals] ASHRAE, "ASHRAE Handbook—Fundamentals", ASHRAE (2009), Chapter 14,
       "Climatic Design Information": Table 6 and the section "Generating Design-Day Data".
       https://www.ashrae.org/
    """
    if level not in _DESIGN_LEVELS:
        raise ValueError(f"design level {level!r} %: use one of 0.4, 1 or 2")
    if not design or "cooling" not in design:
        raise ValueError("no ASHRAE cooling design conditions: use an EPW file that quotes them")
    cooling, tag = design["cooling"], _DESIGN_LEVELS[level]
    temp_air = cooling[f"DB{tag}"] - ASHRAE_DAILY_RANGE_FRACTION * cooling["DBR"]
    psychrolib.SetUnitSystem(psychrolib.SI)
    ratio = psychrolib.GetHumRatioFromTWetBulb(
        cooling[f"DB{tag}"], cooling[f"WB_DB{tag}"], pressure
    )
    wet = [psychrolib.GetTWetBulbFromHumRatio(t, ratio, pressure) for t in temp_air.tolist()]
    return np.arange(1.0, 25.0), temp_air, np.array(wet)


def to_grid(
    hourly_values: ArrayLike, hour_of_year: ArrayLike, first_hour: float = 1.0
) -> np.ndarray:
    """Linear interpolation of a periodic hourly series at any hours of the year.

    Parameters
    ----------
    hourly_values : array_like
        One value an hour, periodic: ``hourly_values[i]`` is at hour ``first_hour + i``, and the
        series repeats every ``len(hourly_values)`` hours (8,760 for a typical year).
    hour_of_year : array_like
        Where to evaluate, e.g. from :func:`local_hour_of_year`; any real numbers. [h]
    first_hour
        Hour of the first value: 1 for a file's hour-ending rows (module docstring). [h]

    Returns
    -------
    numpy.ndarray
        Values at ``hour_of_year``: exact at the hours, linear between, wrapping across New Year.
    """
    values = np.asarray(hourly_values, dtype=float)
    hours = first_hour + np.arange(values.size)
    return np.interp(np.asarray(hour_of_year, dtype=float), hours, values, period=values.size)


def local_hour_of_year(time_utc: ArrayLike, utc_offset: float) -> np.ndarray:
    """Hour of the typical year for UTC instants, in local standard time.

    Parameters
    ----------
    time_utc : array_like of datetime64
        Timezone-naive UTC instants.
    utc_offset
        Local standard time minus UTC, e.g. −5 for Virginia (daylight saving does not apply:
        weather files are in standard time). [h]

    Returns
    -------
    numpy.ndarray
        ``0 ≤ h < 8760``: hours since 1 January 00:00 local standard time, by month, day and time
        of day; from 29 February on in a leap year, one day less, so that 29 February repeats
        28 February and 1 March falls on the typical year's 1 March. [h]
    """
    local = np.asarray(time_utc, dtype="datetime64[ns]") + np.timedelta64(
        round(utc_offset * 3600e9), "ns"
    )
    day = local.astype("datetime64[D]")
    year_start = local.astype("datetime64[Y]")
    day_of_year = (day - year_start).astype(int)
    year = year_start.astype(int) + 1970
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    day_of_year = day_of_year - (leap & (day_of_year >= 59))
    time_of_day = (local - day) / np.timedelta64(1, "h")
    return day_of_year * 24.0 + time_of_day
