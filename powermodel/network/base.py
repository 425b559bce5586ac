"""What every network engine answers: the :class:`Network` protocol and its results
(:class:`Batch` of many solves, :class:`Solution` of one), engine-agnostic, as numpy arrays.

An engine's adapter (:mod:`powermodel.network.opendss`, :mod:`powermodel.network.panda`) fills
a :class:`Batch` row by row; everything after the engine's own loop (the per-bus minimum and mean
over phases, the sites' voltages) is computed here on whole arrays."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from powermodel.errors import PowerModelError

# the bounds every engine's power flow runs under: a solve ends, converged or not, in at most
# MAX_ITERATIONS iterations of its solver and MAX_CONTROL_ITERATIONS rounds of its controls
# (regulator taps, switched capacitors; the IEEE 123-bus feeder's own run script needs 15)
MAX_ITERATIONS = 100
MAX_CONTROL_ITERATIONS = 30
# below this voltage at its bus a site's constant-PQ load is no longer served as asked (OpenDSS
# turns it into an impedance there): a solution under it is a collapse, not an answer
VMIN_PQ = 0.5
# a site's name goes into the engine's own command language: letters, digits, '_' and '-' only
_SITE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


@dataclass(frozen=True)
class Batch:
    """The results of ``k`` power-flow solves of one network, a row per solve.

    Attributes
    ----------
    network : str
        The network's name (its shipped name or its file).
    buses, lines, transformers, sites : tuple of str
        The names the columns of the arrays below follow.
    converged : numpy.ndarray of bool, shape (k,)
        Whether each solve converged (with ``strict=False``; a strict solve raises instead).
    iterations : numpy.ndarray of int, shape (k,)
        The engine's iteration count of each solve (OpenDSS: its solution iterations over all
        control rounds; pandapower: Newton-Raphson iterations).
    vmin, vmean : numpy.ndarray, shape (k, buses)
        Each bus's voltage magnitude, the minimum and the mean over its phases (equal on a
        balanced, positive-sequence engine). [pu of the bus's base voltage]
    line_loading, transformer_loading : numpy.ndarray, shape (k, lines) and (k, transformers)
        Each element's current over its normal rating (OpenDSS ``NormAmps``, its highest
        conductor; pandapower ``loading_percent`` / 100). [fraction]
    p_mw, q_mvar : numpy.ndarray, shape (k, sites)
        The sites' injections as solved: the power each site draws. [MW], [Mvar]
    source_p_mw, source_q_mvar : numpy.ndarray, shape (k,)
        The power the network's source delivers into it (OpenDSS: the circuit's total power;
        pandapower: its external grids', the slack). [MW], [Mvar]

    Rows that did not converge hold NaN voltages and loadings.
    """

    network: str
    buses: tuple[str, ...]
    lines: tuple[str, ...]
    transformers: tuple[str, ...]
    sites: tuple[str, ...]
    site_buses: tuple[str, ...]
    converged: np.ndarray
    iterations: np.ndarray
    vmin: np.ndarray
    vmean: np.ndarray
    line_loading: np.ndarray
    transformer_loading: np.ndarray
    p_mw: np.ndarray
    q_mvar: np.ndarray
    source_p_mw: np.ndarray
    source_q_mvar: np.ndarray

    @property
    def site_vmin(self) -> np.ndarray:
        """The lowest phase voltage at each site's bus, shape (k, sites). [pu]"""
        return self.vmin[:, [self.buses.index(b) for b in self.site_buses]]

    @property
    def site_vmean(self) -> np.ndarray:
        """The mean phase voltage at each site's bus, shape (k, sites). [pu]"""
        return self.vmean[:, [self.buses.index(b) for b in self.site_buses]]

    def row(self, k: int) -> Solution:
        """Solve ``k`` of the batch as a :class:`Solution`."""
        return Solution(self, k)


@dataclass(frozen=True)
class Solution:
    """One power-flow solve: a row of a :class:`Batch`, read by name."""

    batch: Batch
    k: int = 0

    @property
    def converged(self) -> bool:
        return bool(self.batch.converged[self.k])

    @property
    def iterations(self) -> int:
        return int(self.batch.iterations[self.k])

    @property
    def vmin(self) -> dict[str, float]:
        """Each bus's lowest phase voltage. [pu]"""
        return dict(zip(self.batch.buses, self.batch.vmin[self.k].tolist(), strict=True))

    @property
    def vmean(self) -> dict[str, float]:
        """Each bus's mean phase voltage. [pu]"""
        return dict(zip(self.batch.buses, self.batch.vmean[self.k].tolist(), strict=True))

    @property
    def line_loading(self) -> dict[str, float]:
        """Each line's current over its normal rating. [fraction]"""
        loading = self.batch.line_loading[self.k].tolist()
        return dict(zip(self.batch.lines, loading, strict=True))

    @property
    def transformer_loading(self) -> dict[str, float]:
        """Each transformer's current over its normal rating. [fraction]"""
        loading = self.batch.transformer_loading[self.k].tolist()
        return dict(zip(self.batch.transformers, loading, strict=True))

    @property
    def source_power(self) -> tuple[float, float]:
        """The power the network's source delivers into it. [MW], [Mvar]"""
        return float(self.batch.source_p_mw[self.k]), float(self.batch.source_q_mvar[self.k])

    @property
    def site_voltage(self) -> dict[str, float]:
        """The lowest phase voltage at each site's bus. [pu]"""
        return dict(zip(self.batch.sites, self.batch.site_vmin[self.k].tolist(), strict=True))


@runtime_checkable
class Network(Protocol):
    """A power-flow network a site attaches to, whatever engine solves it.

    ``load_network`` returns one. Sites are attached once (:meth:`attach`); each solve sets
    their power and solves the network in its engine. A solve is a function of the injections
    alone: regulator taps and switched capacitors start where the network was loaded and the
    engine starts from its own initial point, so a row of :meth:`solve_many` is the solve of a
    freshly loaded network, bit for bit, whatever was solved before (``carry=True`` starts the
    first row so and each later one from the row before, its controls' state and its solution,
    as a time series does: faster, but then a row depends on those before it).

    A network holds its engine's state: use one from one thread at a time (and OpenDSS's from
    the main thread: see :mod:`powermodel.network.opendss`). It pickles as its source and its
    sites (a worker process loads it again), not as the engine's state.
    """

    name: str
    engine: str

    @property
    def buses(self) -> tuple[str, ...]: ...

    @property
    def sites(self) -> tuple[str, ...]: ...

    def base_kv(self, bus: str) -> float:
        """The bus's base voltage, line to line. [kV]"""
        ...

    def attach(self, name: str, bus: str, kv: float | None = None) -> None:
        """Attach a site: a balanced three-phase constant-PQ load at an existing bus (rated
        ``kv`` [kV] line to line, the bus's base voltage by default), drawing nothing until
        solved."""
        ...

    def solve(self, injections: dict[str, tuple[float, float]], *, strict: bool = True) -> Solution:
        """Solve with each site drawing ``injections[site] = (p_mw, q_mvar)`` [MW, Mvar]."""
        ...

    def solve_many(
        self, p_mw, q_mvar=None, *, strict: bool = True, carry: bool = False, resume: bool = False
    ) -> Batch:
        """Solve ``k`` times, row ``i`` with the sites drawing ``p_mw[i]`` [MW] and
        ``q_mvar[i]`` [Mvar] (arrays of shape (k, sites), or (k,) with one site); ``resume``
        with ``carry`` starts the first row from where the last call left the network (a time
        series solved a step at a time: :mod:`powermodel.cosim`)."""
        ...


def unknown_bus(network: str, bus: str, buses: tuple[str, ...]) -> PowerModelError:
    """The error for a bus the network does not have, naming the nearest names."""
    lower = {b.lower(): b for b in buses}
    near = [lower[b] for b in difflib.get_close_matches(str(bus).lower(), list(lower), n=5)]
    hint = f"did you mean {', '.join(near)}? " if near else ""
    return PowerModelError(
        f"network {network} has no bus {bus!r}: {hint}its {len(buses)} buses are "
        f"load_network({network!r}).buses"
    )


def check_site_name(name: str, sites: tuple[str, ...]) -> str:
    """A new site's name, checked: the engine's command language takes it as it is."""
    if not isinstance(name, str) or not _SITE_NAME.fullmatch(name):
        raise PowerModelError(
            f"site name {name!r}: use a letter then up to 63 letters, digits, '_' or '-'"
        )
    if name.lower() in (s.lower() for s in sites):
        raise PowerModelError(f"site {name!r} is attached already: give each site its own name")
    return name


def injection_rows(
    network: str, sites: tuple[str, ...], p_mw, q_mvar
) -> tuple[np.ndarray, np.ndarray]:
    """The sites' power as two float arrays of shape (k, sites), checked finite. [MW], [Mvar]"""
    if not sites:
        raise PowerModelError(f"network {network} has no site: attach one first (.attach)")
    p = np.asarray(p_mw, dtype=float)
    q = np.zeros_like(p) if q_mvar is None else np.asarray(q_mvar, dtype=float)
    if p.ndim == 1 and len(sites) == 1:
        p, q = p[:, None], (q[:, None] if q.ndim == 1 else q)
    if p.ndim != 2 or p.shape[1] != len(sites) or q.shape != p.shape:
        raise PowerModelError(
            f"network {network}: p_mw and q_mvar must be arrays of shape (steps, {len(sites)}) "
            f"(one column a site: {', '.join(sites)}); got {p.shape} and {q.shape}"
        )
    if not (np.isfinite(p).all() and np.isfinite(q).all()):
        raise PowerModelError(f"network {network}: a site's power is not a finite number")
    return p, q


def injection_dict(
    network: str, sites: tuple[str, ...], injections: dict[str, tuple[float, float]]
) -> tuple[np.ndarray, np.ndarray]:
    """``{site: (p_mw, q_mvar)}`` as one row of :func:`injection_rows`: every site named."""
    unknown = sorted(set(injections) - set(sites))
    missing = [s for s in sites if s not in injections]
    if unknown or missing:
        raise PowerModelError(
            f"network {network}: injections must name each site once "
            f"(sites {', '.join(sites) or 'none'}; unknown {unknown}, missing {missing})"
        )
    try:
        pq = np.array([[float(v) for v in injections[s]] for s in sites], dtype=float)
    except (TypeError, ValueError):
        pq = np.empty((0, 0))
    if pq.shape != (len(sites), 2):
        raise PowerModelError(
            f"network {network}: give each site's injection as (p_mw, q_mvar), two numbers"
        )
    return injection_rows(network, sites, pq[None, :, 0], pq[None, :, 1])


def not_converged(network: str, batch: Batch, k: int, why: str) -> PowerModelError:
    """The error for solve ``k`` that did not converge, naming the injection and the fix."""
    drawn = ", ".join(
        f"{s} at bus {b}: {p:g} MW, {q:g} Mvar"
        for s, b, p, q in zip(
            batch.sites, batch.site_buses, batch.p_mw[k], batch.q_mvar[k], strict=True
        )
    )
    return PowerModelError(
        f"network {network}: the power flow of step {k} ({drawn}) {why}: the sites draw more "
        "than the network can carry there; make the site smaller, attach it at a stronger bus "
        "(nearer the substation or at a higher voltage), or check the network file "
        "(solve with strict=False to mark such steps instead)"
    )


def finish(
    network: str,
    names: tuple[tuple[str, ...], ...],
    site_buses: tuple[str, ...],
    raw: dict[str, np.ndarray],
    groups: tuple[np.ndarray, np.ndarray],
    strict: bool,
    live: np.ndarray | None = None,
) -> Batch:
    """A :class:`Batch` from an engine's raw rows: node voltages ``raw['vnode']`` (k, nodes)
    reduced to buses by ``groups`` (the node order sorting the nodes by bus, and each bus's first
    position in it), unconverged rows set to NaN, and under ``strict`` the first one raised.
    A row where a bus of ``live`` (those energised with no site: all by default) is below
    :data:`VMIN_PQ` is a voltage collapse, not converged."""
    order, starts = groups
    vnode = raw["vnode"][:, order]
    counts = np.diff(np.append(starts, vnode.shape[1]))
    vmin = np.minimum.reduceat(vnode, starts, axis=1)
    vmean = np.add.reduceat(vnode, starts, axis=1) / counts
    buses, lines, transformers, sites = names
    live = np.ones(len(buses), bool) if live is None else live
    collapsed = (vmin[:, live] < VMIN_PQ).any(axis=1)
    converged = raw["converged"] & ~collapsed
    source = raw["source"]
    for a in (vmin, vmean, raw["lines"], raw["transformers"], source):
        a[~converged] = np.nan
    batch = Batch(
        network, buses, lines, transformers, sites, site_buses, converged, raw["iterations"],
        vmin, vmean, raw["lines"], raw["transformers"], raw["p"], raw["q"], source[:, 0],
        source[:, 1],
    )  # fmt: skip
    if strict and not converged.all():
        k = int(np.flatnonzero(~converged)[0])
        why = (
            f"left a bus below {VMIN_PQ} pu (a voltage collapse)"
            if collapsed[k]
            else f"did not converge within {MAX_ITERATIONS} iterations"
        )
        raise not_converged(network, batch, k, why)
    return batch
