"""scipy's recursive (IIR) filter without the import of ``scipy.signal``.

``scipy.signal.lfilter`` runs a recursive filter (a denominator of two coefficients or more) in
one C routine of its extension module ``scipy.signal._sigtools``. Importing ``scipy.signal`` to
reach it costs 0.8–1.4 s here, since it imports scipy.stats, interpolate, optimize, sparse and
ndimage with it: more than a simulated day takes, and paid by every process that simulates (a
command, each sweep worker, the dashboard's opening run). This module loads that extension
module alone, from scipy's own files (0.02 s), and calls its routine as ``lfilter`` does: the
same C code on the same arrays, so the same bits (``tests/test_iir.py`` holds it to
``scipy.signal.lfilter`` and ``lfilter_zi``, bit for bit).

The routine is private to scipy. Before it is used, it filters three samples whose result is
known (the recursion written out); if a scipy release has moved or changed it, or the module
does not load, :func:`lfilter` is ``scipy.signal.lfilter`` itself: slower to import, the same
numbers.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["lfilter", "lfilter_zi"]

MODULE = "scipy.signal._sigtools"  # the extension module that holds lfilter's C routine
_routine: list[Callable] = []  # the routine once found (a list: set once, under the lock)
_finding = threading.Lock()


def lfilter(
    b: np.ndarray | list[float], a: np.ndarray | list[float], x: np.ndarray, zi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.signal.lfilter(b, a, x, axis=-1, zi=zi)`` for a recursive filter (``a`` of two
    coefficients or more): the output along the last axis and the final state."""
    return _filter()(np.atleast_1d(b), np.atleast_1d(a), np.asarray(x), -1, np.asarray(zi))


def lfilter_zi(b: np.ndarray | list[float], a: np.ndarray | list[float]) -> np.ndarray:
    """``scipy.signal.lfilter_zi(b, a)``: the filter's state in its steady state for a constant
    input of 1, computed as scipy computes it (normalised, padded, the companion matrix's
    linear system solved by numpy), so the same bits, without importing ``scipy.signal``."""
    b = np.atleast_1d(np.asarray(b, dtype=float))
    a = np.atleast_1d(np.asarray(a, dtype=float))
    while a.shape[0] > 1 and a[0] == 0.0:
        a = a[1:]
    if a.shape[0] < 2:
        raise ValueError("lfilter_zi needs a recursive filter: a of two coefficients or more")
    if a[0] != 1.0:
        b, a = b / a[0], a / a[0]
    n = max(a.shape[0], b.shape[0])
    a = np.concatenate((a, np.zeros(n - a.shape[0])))
    b = np.concatenate((b, np.zeros(n - b.shape[0])))
    companion = np.zeros((n - 1, n - 1))  # scipy.linalg.companion(a)
    companion[0, :] = -a[1:] / (1.0 * a[0:1])
    companion[np.arange(1, n - 1), np.arange(0, n - 2)] = 1
    return np.linalg.solve(np.eye(n - 1) - companion.T, b[1:] - a[1:] * b[0])


def _filter() -> Callable:
    """lfilter's C routine, found once per process (:func:`_find`)."""
    if not _routine:
        with _finding:
            if not _routine:
                _routine.append(_find())
    return _routine[0]


def _find() -> Callable:
    """The C routine when it loads and filters three known samples right, else
    ``scipy.signal.lfilter`` called with the routine's arguments."""
    try:
        routine = _extension()._linear_filter
        if _answers_right(routine):
            return routine
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        pass
    from scipy import signal  # noqa: PLC0415 - the fallback pays scipy.signal's import

    return lambda b, a, x, axis, zi: signal.lfilter(b, a, x, axis=axis, zi=zi)


def _extension():
    """``scipy.signal._sigtools``: the module already imported, or loaded alone from scipy's
    folder. Loading it enters it in ``sys.modules`` (a single-phase extension module does), and
    it is left there: a later ``import scipy.signal`` takes it (its own ``from . import
    _sigtools`` reads ``sys.modules``), with no moment at which a thread importing scipy.signal
    meanwhile would find it gone. Only the package's attribute ``scipy.signal._sigtools`` is
    then missing, which neither scipy nor powermodel reads."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    import scipy  # noqa: PLC0415 - the package alone (its __init__ imports none of its parts)

    folder = Path(scipy.__path__[0]) / "signal"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_sigtools{suffix}"
        if path.is_file():
            break
    else:
        raise ImportError(f"no {MODULE} extension in {folder}")
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return sys.modules.setdefault(MODULE, module)


def _answers_right(routine: Callable) -> bool:
    """Whether ``routine(b, a, x, axis, zi)`` is lfilter's direct form II transposed: the
    first-order recursion ``y = z + b0·x``, ``z = b1·x − a1·y`` written out on three samples
    (exact in binary), and its final state."""
    b, a, x = np.array([0.5, 0.25]), np.array([1.0, -0.5]), np.array([[1.0, 2.0, -4.0]])
    y, zf = routine(b, a, x, -1, np.array([[0.75]]))
    z, expected = 0.75, []
    for sample in x[0]:
        expected.append(z + b[0] * sample)
        z = b[1] * sample - a[1] * expected[-1]
    return np.array_equal(y, [expected]) and np.array_equal(zf, [[z]])
