"""A pandapower network: a balanced, positive-sequence Newton-Raphson power flow (``runpp``),
so a bus has one voltage (its minimum and mean over phases are equal).

A site is a pandapower ``load`` of constant P and Q (no ZIP share) at the bus. Each solve starts
flat (``init="flat"``), so it is a function of the injections alone; with ``carry=True`` each
row after the first starts from the one before and updates only the loads in pandapower's model
(its ``recycle`` path): twice as fast, equal to a flat solve to about 1e-13 pu."""

from __future__ import annotations

import math
import warnings

import numpy as np

from powermodel.errors import PowerModelError
from powermodel.network.base import (
    MAX_ITERATIONS,
    Batch,
    Solution,
    check_site_name,
    finish,
    injection_dict,
    injection_rows,
    unknown_bus,
)


def pandapower():
    """The ``pandapower`` module; a clear message when it is missing."""
    try:
        import pandapower
    except ImportError as error:
        raise PowerModelError(
            f"pandapower networks need pandapower ({error}): pip install 'powermodel[grid]'"
        ) from None
    return pandapower


def _labels(table) -> tuple[str, ...]:
    """A table's elements by name where every one has a name of its own, else by index."""
    names = [str(n) for n in table["name"]]
    if len({n.lower() for n in names}) == len(names) and not table["name"].isna().any():
        return tuple(names)
    return tuple(str(i) for i in table.index)


# carry=True: each solve after the first updates only the loads' P and Q in pandapower's model
# and starts from the solve before (its time-series path: 10 ms a solve on CIGRE MV, not 21)
RECYCLE = {"bus_pq": True, "trafo": False, "gen": False}


def _run(pp, net, options: dict) -> bool:
    """One bounded ``runpp``: whether it converged."""
    try:
        with warnings.catch_warnings():
            # pandapower's own notices about its data model, once a solve
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            pp.runpp(net, max_iteration=MAX_ITERATIONS, numba=True, **options)
    except pp.LoadflowNotConverged:
        return False
    return bool(net._ppc["success"])  # the time-series path does not raise


class PandapowerNetwork:
    """A ``pandapowerNet`` (see :class:`~powermodel.network.base.Network` for the interface)."""

    engine = "pandapower"

    def __init__(self, net, name: str, source: str):
        self.name, self.source, self._net = name, source, net
        if not len(net.bus) or not len(net.ext_grid) + len(net.gen):
            raise PowerModelError(f"{name} has no buses or no slack (ext_grid): not a network")
        self._buses = _labels(net.bus)
        self._position = {b.lower(): i for i, b in enumerate(self._buses)}
        self._attached: list[tuple[str, str, float | None]] = []
        self._rows: list[int] = []
        self._site_buses: list[str] = []
        self._warm = False  # whether the last solve converged (resume starts from it)

    @property
    def buses(self) -> tuple[str, ...]:
        return self._buses

    @property
    def sites(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self._attached)

    @property
    def lines(self) -> tuple[str, ...]:
        return _labels(self._net.line)

    @property
    def transformers(self) -> tuple[str, ...]:
        return _labels(self._net.trafo)

    def _bus(self, bus: str) -> str:
        key = str(bus).lower()
        if key not in self._position:
            raise unknown_bus(self.name, str(bus), self._buses)
        return self._buses[self._position[key]]

    def base_kv(self, bus: str) -> float:
        """The bus's nominal voltage, line to line. [kV]"""
        return float(self._net.bus["vn_kv"].iloc[self._position[self._bus(bus).lower()]])

    def attach(self, name: str, bus: str, kv: float | None = None) -> None:
        """Attach a site: a constant-PQ load at ``bus`` (a pandapower load takes its bus's
        voltage: ``kv`` [kV], if given, must be it)."""
        name = check_site_name(name, self.sites)
        key = self._bus(bus)
        nominal = self.base_kv(key)
        if kv is not None and not (math.isfinite(kv) and abs(kv / nominal - 1) < 0.01):
            raise PowerModelError(
                f"site {name}: bus {key} of {self.name} is at {nominal:g} kV; a pandapower load "
                f"takes its bus's voltage, so leave kv out (not {kv!r})"
            )
        index = self._net.bus.index[self._position[key.lower()]]
        row = pandapower().create_load(self._net, bus=index, p_mw=0.0, q_mvar=0.0, name=name)
        self._attached.append((name, key, kv))
        self._rows.append(int(row))
        self._warm = False  # pandapower's model is built anew with the site
        self._site_buses.append(key)

    def solve(self, injections: dict[str, tuple[float, float]], *, strict: bool = True) -> Solution:
        """Solve with each site drawing ``injections[site] = (p_mw, q_mvar)`` [MW, Mvar]."""
        p, q = injection_dict(self.name, self.sites, injections)
        return self._solve_rows(p, q, strict, carry=False).row(0)

    def solve_many(
        self, p_mw, q_mvar=None, *, strict: bool = True, carry: bool = False, resume: bool = False
    ) -> Batch:
        """Solve once a row of ``p_mw`` and ``q_mvar`` (shape (k, sites) [MW, Mvar]), one
        ``runpp`` a row; ``resume`` (with ``carry``) starts the first row from the last solve's
        model and result when that solve converged."""
        p, q = injection_rows(self.name, self.sites, p_mw, q_mvar)
        return self._solve_rows(p, q, strict, carry, resume)

    def _solve_rows(
        self, p: np.ndarray, q: np.ndarray, strict: bool, carry: bool, resume: bool = False
    ) -> Batch:
        pp, net, k = pandapower(), self._net, len(p)
        n_bus, n_line, n_xf = len(net.bus), len(net.line), len(net.trafo)
        vnode = np.full((k, n_bus), np.nan)
        lines, transformers = np.full((k, n_line), np.nan), np.full((k, n_xf), np.nan)
        converged, iterations = np.zeros(k, bool), np.zeros(k, int)
        source = np.full((k, 2), np.nan)
        columns = [net.load.columns.get_loc(c) for c in ("p_mw", "q_mvar")]
        rows = [net.load.index.get_loc(r) for r in self._rows]
        # the next solve starts flat and builds pandapower's model anew
        fresh = not (carry and resume and self._warm)
        for i in range(k):  # pandapower solves one state at a time
            net.load.iloc[rows, columns[0]] = p[i]
            net.load.iloc[rows, columns[1]] = q[i]
            ok = _run(pp, net, {"init": "flat"} if fresh else {"recycle": RECYCLE})
            fresh = not (carry and ok)
            self._warm = ok
            if not ok:
                continue
            converged[i], iterations[i] = True, int(net._ppc["iterations"])
            vnode[i] = net.res_bus["vm_pu"].to_numpy()
            lines[i] = net.res_line["loading_percent"].to_numpy() / 100
            transformers[i] = net.res_trafo["loading_percent"].to_numpy() / 100
            source[i] = net.res_ext_grid[["p_mw", "q_mvar"]].to_numpy().sum(axis=0)
        raw = {
            "vnode": vnode, "converged": converged, "iterations": iterations, "p": p, "q": q,
            "lines": lines, "transformers": transformers, "source": source,
        }  # fmt: skip
        names = (self._buses, self.lines, self.transformers, self.sites)
        groups = (np.arange(n_bus), np.arange(n_bus))
        return finish(self.name, names, tuple(self._site_buses), raw, groups, strict)
