"""The text of a CSV's numbers and rows, compiled (numba): imported by the CSV writer alone
(:mod:`powermodel.export`), since numba's own import takes a quarter of a second.

A double is written as its nearest decimal of ``digits`` significant digits, trailing zeros
dropped, as pyarrow prints a double (``15.88123``, ``0.0001234568``, ``1.234568e+12``;
exponents from 10 and below -6; ``0``, ``-0``, ``nan``, ``inf``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# 10 ** k: exact to 1e22, correctly rounded after
POWERS = np.array([10.0**k for k in range(309)])
TENS = np.array([10**k for k in range(19)], np.int64)
# "00" to "99", the text of two digits at once
PAIRS = np.frombuffer(b"".join(b"%02d" % i for i in range(100)), np.uint8).copy()


def widest(digits: int) -> int:
    """The longest text :func:`put_number` writes with ``digits`` digits: a sign and
    ``0.00000`` before them (``-0.000001234568``), or 10 digits (``-1000000000``)."""
    return max(digits + 8, 11)


@njit(cache=True, nogil=True, inline="always")
def put_number(x, digits, out, pos):  # pragma: no cover - compiled
    """The text of the double ``x`` to ``digits`` significant digits into ``out`` from
    ``pos``; returns the position after it."""
    if x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0):
        out[pos] = 45  # -
        pos += 1
        x = -x
    if x == 0.0:
        out[pos] = 48
        return pos + 1
    if x != x or x == np.inf:
        for c in (110, 97, 110) if x != x else (105, 110, 102):  # nan, inf
            out[pos] = c
            pos += 1
        return pos
    e = int(math.floor(math.log10(x)))
    d = digits - 1 - e
    if d > 300:  # a subnormal's decimals: 10 ** d alone is not a double
        m = np.int64(np.rint(x * POWERS[300] * POWERS[d - 300]))
    else:
        m = np.int64(np.rint(x * POWERS[d] if d >= 0 else x / POWERS[-d]))
    if m >= TENS[digits]:  # 9.9999999 to 10.00000
        m, e = m // 10, e + 1
    plain = -6 <= e < 10
    if plain and e < 0:  # 0.000123
        out[pos] = 48
        out[pos + 1] = 46
        for i in range(-1 - e):
            out[pos + 2 + i] = 48
        pos += 1 - e
        point = digits  # none among the digits
    else:
        point = e + 1 if plain else 1  # the digits before the point
    # the digits from the last, two at a time (a product and a shift a pair, exact below
    # 2 ** 32), each where it goes: digit k at pos + k, one further past the point
    k = digits
    if m < 4294967296:
        u = np.uint64(m)
        while k >= 2:
            q = (u * np.uint64(1374389535)) >> np.uint64(37)
            r = u - q * np.uint64(100)
            out[pos + k - 2 + (k - 2 >= point)] = PAIRS[2 * r]
            out[pos + k - 1 + (k - 1 >= point)] = PAIRS[2 * r + 1]
            u = q
            k -= 2
        if k == 1:
            out[pos] = np.uint64(48) + u
    else:
        while k >= 1:
            out[pos + k - 1 + (k - 1 >= point)] = 48 + m % 10
            m //= 10
            k -= 1
    if point < digits:  # a point among the digits: trailing zeros dropped, then the point
        out[pos + point] = 46
        end = pos + digits + 1
        while out[end - 1] == 48:
            end -= 1
        if end == pos + point + 1:
            end -= 1
    elif plain and e >= 0:  # 1230000: the integer's zeros
        end = pos + digits
        for i in range(point - digits):
            out[end + i] = 48
        end += point - digits
    else:  # after 0.000: trailing zeros dropped
        end = pos + digits
        while out[end - 1] == 48:
            end -= 1
    if not plain:
        out[end] = 101  # e
        out[end + 1] = 43 if e > 0 else 45
        a = abs(e)
        size = 1 if a < 10 else (2 if a < 100 else 3)
        for i in range(size - 1, -1, -1):
            out[end + 2 + i] = 48 + a % 10
            a //= 10
        end += 2 + size
    return end


@njit(cache=True, nogil=True)
def numbers(values, digits, out, offsets):  # pragma: no cover - compiled
    """Each value's text into ``out``, field ``i`` from ``offsets[i]`` (an Arrow string
    array's buffers); returns the bytes used. A run of equal values copies its first's text."""
    pos, last = 0, np.nan
    for i in range(values.size):
        offsets[i] = pos
        x = np.float64(values[i])
        if x == last and x != 0.0:  # the field before, again (not 0: -0 == 0)
            start, size = offsets[i - 1], offsets[i] - offsets[i - 1]
            out[pos : pos + size] = out[start : start + size]
            pos += size
            continue
        last = x
        pos = put_number(x, digits, out, pos)
    offsets[values.size] = pos
    return pos


# what a column of rows() is
NUMBER, TEXT, TIME = 0, 1, 2
# the longest text of put_time
TIME_WIDTH = len("2024-07-01T00:00:00.000Z")


@njit(cache=True, nogil=True)
def put_pair(v, out, pos):  # pragma: no cover - compiled
    """The two digits of ``0 <= v < 100`` into ``out`` at ``pos``."""
    out[pos] = PAIRS[2 * v]
    out[pos + 1] = PAIRS[2 * v + 1]


@njit(cache=True, nogil=True)
def put_time(ns, millis, day, date, out, pos):  # pragma: no cover - compiled
    """The ISO 8601 UTC text of ``ns`` [ns since 1970: 1677 to 2262] into ``out`` from
    ``pos`` (``2024-07-01T00:00:00Z``; with milliseconds, ``00:00:00.100Z``, where
    ``millis``), as pyarrow casts a timestamp in seconds or milliseconds to text. ``day[0]``
    is the day whose text ``date`` holds (``2024-07-01T``; -2 ** 63 before any), made once a
    day. Returns the position after it."""
    t = ns // 1_000_000 if millis else ns // 1_000_000_000
    seconds = t // 1000 if millis else t
    days = seconds // 86400
    if days != day[0]:  # the civil date: H. Hinnant's civil_from_days
        z = days + 719468
        era = z // 146097
        doe = z - era * 146097
        yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
        doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
        mp = (5 * doy + 2) // 153
        month = mp + 3 if mp < 10 else mp - 9
        year = yoe + era * 400 + (1 if month <= 2 else 0)
        put_pair(year // 100, date, 0)
        put_pair(year % 100, date, 2)
        put_pair(month, date, 5)
        put_pair(doy - (153 * mp + 2) // 5 + 1, date, 8)
        date[4], date[7], date[10] = 45, 45, 84  # - - T
        day[0] = days
    for i in range(11):
        out[pos + i] = date[i]
    second = seconds - days * 86400
    put_pair(second // 3600, out, pos + 11)
    out[pos + 13] = 58  # :
    put_pair(second // 60 % 60, out, pos + 14)
    out[pos + 16] = 58
    put_pair(second % 60, out, pos + 17)
    pos += 19
    if millis:
        ms = t - seconds * 1000
        out[pos] = 46  # .
        out[pos + 1] = 48 + ms // 100
        put_pair(ms % 100, out, pos + 2)
        pos += 4
    out[pos] = 90  # Z
    return pos + 1


@njit(cache=True, nogil=True)
def rows(  # pragma: no cover - compiled
    kinds, which, floats, times, millis, texts, starts, lo, hi, digits, out
):
    """A CSV's rows ``lo`` to ``hi`` into ``out`` (each line ends ``\\n``); returns the bytes
    used.

    Column ``j`` is ``kinds[j]``: :data:`NUMBER`, the doubles ``floats[which[j]]`` (written by
    :func:`put_number`; one equal to the one above copies its text); :data:`TIME`, the times
    ``times`` [ns since 1970] (:func:`put_time`); or :data:`TEXT`, texts written as they are,
    row ``r``'s ``texts[starts[which[j], r] : starts[which[j], r + 1]]``.
    """
    nf = floats.shape[0]
    last = np.full(nf, np.nan)
    where, size = np.zeros(nf, np.int64), np.zeros(nf, np.int64)
    pos = 0
    day, date = np.full(1, np.iinfo(np.int64).min), np.empty(11, np.uint8)
    for r in range(lo, hi):
        for j in range(kinds.size):
            if j > 0:
                out[pos] = 44  # ,
                pos += 1
            k = which[j]
            if kinds[j] == TEXT:
                a, b = starts[k, r], starts[k, r + 1]
                for i in range(b - a):
                    out[pos + i] = texts[a + i]
                pos += b - a
            elif kinds[j] == TIME:
                pos = put_time(times[r], millis, day, date, out, pos)
            else:
                x = floats[k, r]
                if x == last[k] and x != 0.0:  # the field above, again (not 0: -0 == 0)
                    a = where[k]
                    for i in range(size[k]):
                        out[pos + i] = out[a + i]
                    pos += size[k]
                    continue
                last[k], where[k] = x, pos
                pos = put_number(x, digits, out, pos)
                size[k] = pos - where[k]
        out[pos] = 10  # \n
        pos += 1
    return pos
