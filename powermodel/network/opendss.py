"""An OpenDSS network through ``opendssdirect.py`` (DSS-Extensions' DSS C-API): each
:class:`OpenDSSNetwork` has an engine context of its own (``opendssdirect.NewContext()``), so two
networks, or two threads each with its own, share no engine state.

A site is a three-phase wye ``Load`` of model 1 (constant P and Q) with ``Vminpu`` lowered to
:data:`~powermodel.network.base.VMIN_PQ`: OpenDSS serves a model-1 load as an impedance below its
``Vminpu`` (0.95 pu by default), which would hide the voltage a large site pulls down by drawing
less than it asks. The network's own loads keep the models their file gives them.

Threads: two networks solve at once in two threads, each as it does alone
(tests/test_network.py), but DSS C-API 0.15.7 (opendssdirect.py 0.9.4) crashes the process
(SIGSEGV) on its first call from a thread other than the main one when ``opendssdirect`` was
imported before ``pandapower`` (numpy imported first: any powermodel process). Run power flows in
the main thread, or in processes (a network pickles as its source and sites)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from powermodel.errors import PowerModelError
from powermodel.network.base import (
    MAX_CONTROL_ITERATIONS,
    MAX_ITERATIONS,
    VMIN_PQ,
    Batch,
    Solution,
    check_site_name,
    finish,
    injection_dict,
    injection_rows,
    unknown_bus,
)


def _context():
    """A new OpenDSS engine context; a clear message when ``opendssdirect.py`` is missing."""
    try:
        import opendssdirect
    except ImportError as error:
        raise PowerModelError(
            f"OpenDSS networks need opendssdirect.py ({error}): pip install 'powermodel[grid]'"
        ) from None
    dss = opendssdirect.NewContext()
    # a compile must not move the process's working directory (a server's threads share it),
    # nor open a window
    dss.Basic.AllowChangeDir(False)
    dss.Basic.AllowForms(False)
    return dss


class OpenDSSNetwork:
    """An OpenDSS circuit compiled from a master ``.dss`` file (see :class:`~powermodel.network.
    base.Network` for the interface)."""

    engine = "opendss"

    def __init__(self, master: Path, name: str, source: str):
        self.name, self.source = name, source
        if set(str(master)) & set('"\r\n'):
            # the path goes into an OpenDSS command between double quotes
            raise PowerModelError(
                f"network file {master.name!r}: OpenDSS cannot open a path holding a double "
                "quote or a line break; rename the file or its folder"
            )
        self._dss = dss = _context()
        self._run(f'Compile "{master}"', f"compiling {master.name}")
        from opendssdirect import DSSException

        try:
            circuit = bool(dss.Circuit.Name())
        except DSSException:
            circuit = False
        if circuit and not dss.Circuit.NumBuses():
            self._run("Solve", f"solving {master.name}")  # a master that never solved has none
        if not (circuit and dss.Circuit.NumBuses()):
            raise PowerModelError(
                f"{master.name} defines no circuit: is it an OpenDSS master file?"
            )
        self._run(f"Set MaxIterations={MAX_ITERATIONS}", "setting the iteration bound")
        self._run(f"Set MaxControlIter={MAX_CONTROL_ITERATIONS}", "setting the control bound")
        self._attached: list[tuple[str, str, float | None]] = []
        self._loads: list[int] = []
        self._site_buses: list[str] = []
        self._index()
        self._controls = self._control_state()

    def _run(self, command: str, doing: str) -> str:
        """One OpenDSS command; the engine's error as a PowerModelError naming what was done."""
        from opendssdirect import DSSException

        try:
            return self._dss.Text.Command(command) or ""
        except DSSException as error:
            raise PowerModelError(f"OpenDSS failed {doing} in {self.name}: {error}") from None

    def _index(self) -> None:
        """The names and orders a solve reads the engine's arrays in."""
        dss = self._dss
        self._buses = tuple(dss.Circuit.AllBusNames())
        nodes = [n.rsplit(".", 1)[0] for n in dss.Circuit.AllNodeNames()]
        position = {b: i for i, b in enumerate(self._buses)}
        bus_of_node = np.array([position[n] for n in nodes])
        order = np.argsort(bus_of_node, kind="stable")
        starts = np.searchsorted(bus_of_node[order], np.arange(len(self._buses)))
        self._groups = (order, starts)
        pd = [n.lower() for n in dss.PDElements.AllNames()]
        self._n_nodes, self._n_pd = len(nodes), len(pd)  # a solve's row sizes
        self._line_at = np.array([i for i, n in enumerate(pd) if n.startswith("line.")], int)
        self._xf_at = np.array([i for i, n in enumerate(pd) if n.startswith("transformer.")], int)
        self._lines = tuple(pd[i].split(".", 1)[1] for i in self._line_at)
        self._transformers = tuple(pd[i].split(".", 1)[1] for i in self._xf_at)
        kv = np.array([self._bus_kv(b) for b in self._buses])
        if not (kv > 0).all():
            bare = [b for b, v in zip(self._buses, kv, strict=True) if not v > 0][:5]
            raise PowerModelError(
                f"{self.name}: buses {', '.join(bare)} have no base voltage, so no per-unit "
                "voltage: add 'Set VoltageBases=[...]' and 'CalcVoltageBases' to the master file"
            )

    def _bus_kv(self, bus: str) -> float:
        self._dss.Circuit.SetActiveBus(bus)
        return self._dss.Bus.kVBase() * math.sqrt(3)

    def _control_state(self) -> list[tuple[str, int, float]]:
        """The regulated windings' taps (and the controlled capacitors' states) where the
        network's controls leave them with every site drawing nothing: each solve starts from
        them, so that it moves a tap only as far as its sites' load asks."""
        dss, taps = self._dss, []
        for index in self._loads:
            dss.Loads.Idx(index)
            dss.Loads.kW(0.0)
            dss.Loads.kvar(0.0)
        dss.YMatrix.SolutionInitialized(False)
        self._run("Solve", "solving the network as loaded")
        if not dss.Solution.Converged():
            raise PowerModelError(
                f"network {self.name} as loaded, with no site, does not converge within "
                f"{MAX_ITERATIONS} iterations: check its file (its loads against its lines and "
                "source, its voltage bases) in OpenDSS"
            )
        order, starts = self._groups
        vbus = np.minimum.reduceat(np.asarray(dss.Circuit.AllBusMagPu())[order], starts)
        # a bus at zero is not energised (an open point); one above zero but under VMIN_PQ has
        # collapsed already, before any site draws anything
        self._live = vbus >= VMIN_PQ
        low = [b for b, v in zip(self._buses, vbus, strict=True) if 0 < v < VMIN_PQ]
        if low:
            raise PowerModelError(
                f"network {self.name} as loaded, with no site, collapses: bus {low[0]} at "
                f"{vbus[self._buses.index(low[0])]:.3g} pu (of {len(low)} under {VMIN_PQ} pu); "
                "check its file (its loads against its lines and source) in OpenDSS"
            )
        for reg in dss.RegControls.AllNames() if dss.RegControls.Count() else ():
            dss.RegControls.Name(reg)
            transformer, winding = dss.RegControls.Transformer(), dss.RegControls.Winding()
            dss.Transformers.Name(transformer)
            dss.Transformers.Wdg(winding)
            taps.append((transformer, winding, dss.Transformers.Tap()))
        self._capacitors = []
        for control in dss.CapControls.AllNames() if dss.CapControls.Count() else ():
            dss.CapControls.Name(control)
            dss.Capacitors.Name(dss.CapControls.Capacitor())
            self._capacitors.append((dss.Capacitors.Name(), list(dss.Capacitors.States())))
        return taps

    def _reset(self) -> None:
        """Taps, capacitors and the solution back to where the network was loaded."""
        dss = self._dss
        for transformer, winding, tap in self._controls:
            dss.Transformers.Name(transformer)
            dss.Transformers.Wdg(winding)
            dss.Transformers.Tap(tap)
        for capacitor, states in self._capacitors:
            dss.Capacitors.Name(capacitor)
            dss.Capacitors.States(states)
        dss.YMatrix.SolutionInitialized(False)

    @property
    def buses(self) -> tuple[str, ...]:
        return self._buses

    @property
    def sites(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self._attached)

    @property
    def lines(self) -> tuple[str, ...]:
        return self._lines

    @property
    def transformers(self) -> tuple[str, ...]:
        return self._transformers

    def _bus(self, bus: str) -> str:
        key = str(bus).lower()
        if key not in self._buses:
            raise unknown_bus(self.name, str(bus), self._buses)
        return key

    def base_kv(self, bus: str) -> float:
        """The bus's base voltage, line to line. [kV]"""
        return self._bus_kv(self._bus(bus))

    def command(self, text: str) -> str:
        """Run one OpenDSS command in this network's engine and return its answer (an escape
        hatch for what the interface does not cover, e.g. fixing regulator taps). The taps and
        capacitors it leaves are where each later solve starts."""
        answer = self._run(text, f"running {text!r}")
        self._index()
        self._controls = self._control_state()
        return answer

    def attach(self, name: str, bus: str, kv: float | None = None) -> None:
        """Attach a site: a balanced three-phase constant-PQ wye load at ``bus`` rated ``kv``
        [kV] line to line (the bus's base voltage by default)."""
        name = check_site_name(name, self.sites)
        key = self._bus(bus)
        self._dss.Circuit.SetActiveBus(key)
        phases = sorted(self._dss.Bus.Nodes())
        if not {1, 2, 3} <= set(phases):
            raise PowerModelError(
                f"bus {key} of {self.name} has phases {phases}, not 1, 2 and 3: a site is a "
                "three-phase load; attach it at a three-phase bus"
            )
        rated = self.base_kv(key) if kv is None else float(kv)
        if not (math.isfinite(rated) and rated > 0):
            raise PowerModelError(f"site {name}: kv must be a positive number of kV, not {kv!r}")
        self._run(
            f"New Load.{name} Bus1={key}.1.2.3 Phases=3 Conn=Wye Model=1 kV={rated!r} kW=0 "
            f"kvar=0 Vminpu={VMIN_PQ} Vmaxpu=2",
            f"attaching site {name} at bus {key}",
        )
        self._attached.append((name, key, kv))
        self._site_buses.append(key)
        self._dss.Loads.Name(name)
        self._loads.append(self._dss.Loads.Idx())
        self._index()

    def solve(self, injections: dict[str, tuple[float, float]], *, strict: bool = True) -> Solution:
        """Solve with each site drawing ``injections[site] = (p_mw, q_mvar)`` [MW, Mvar]."""
        p, q = injection_dict(self.name, self.sites, injections)
        return self._solve_rows(p, q, strict, carry=False).row(0)

    def solve_many(
        self, p_mw, q_mvar=None, *, strict: bool = True, carry: bool = False, resume: bool = False
    ) -> Batch:
        """Solve once a row of ``p_mw`` and ``q_mvar`` (shape (k, sites) [MW, Mvar]): the
        engine's loop sets the sites' loads and solves the snapshot, reading its voltages and
        loadings as whole arrays; the per-bus reduction runs once over all rows. ``resume``
        (with ``carry``) starts the first row too from where the last solve left the taps,
        capacitors and solution: a time series solved a call at a time, as a co-simulation
        does."""
        p, q = injection_rows(self.name, self.sites, p_mw, q_mvar)
        return self._solve_rows(p, q, strict, carry, resume)

    def tap_positions(self) -> dict[tuple[str, int], float]:
        """Each regulated winding's tap where the last solve left it, ``{(transformer,
        winding): tap}`` [pu]: with ``Transformer.<name>.wdg=<w> Tap=<tap>`` and ``Set
        ControlMode=OFF`` (:meth:`command`) a fresh network solves a carried row again."""
        dss, taps = self._dss, {}
        for transformer, winding, _ in self._controls:
            dss.Transformers.Name(transformer)
            dss.Transformers.Wdg(winding)
            taps[transformer, winding] = dss.Transformers.Tap()
        return taps

    def _solve_rows(
        self, p: np.ndarray, q: np.ndarray, strict: bool, carry: bool, resume: bool = False
    ) -> Batch:
        from opendssdirect import DSSException

        dss, k = self._dss, len(p)
        loads, solution, circuit = dss.Loads, dss.Solution, dss.Circuit
        vnode = np.full((k, self._n_nodes), np.nan)
        pct = np.full((k, self._n_pd), np.nan)
        converged = np.zeros(k, bool)
        iterations = np.zeros(k, int)
        source = np.full((k, 2), np.nan)
        kw, kvar = (p * 1e3).tolist(), (q * 1e3).tolist()
        for i in range(k):  # the engine's own loop: one snapshot a row
            if not carry or (i == 0 and not resume):
                self._reset()
            for j, index in enumerate(self._loads):
                loads.Idx(index)
                loads.kW(kw[i][j])
                loads.kvar(kvar[i][j])
            try:
                solution.Solve()
            except DSSException:
                continue  # converged stays False
            converged[i], iterations[i] = solution.Converged(), solution.Iterations()
            vnode[i] = circuit.AllBusMagPu()
            pct[i] = dss.PDElements.AllPctNorm(False)
            source[i] = circuit.TotalPower()
        raw = {
            "vnode": vnode, "converged": converged, "iterations": iterations, "p": p, "q": q,
            "lines": pct[:, self._line_at] / 100, "transformers": pct[:, self._xf_at] / 100,
            "source": source / -1e3,  # OpenDSS's total power [kW] is the source's, negative
        }  # fmt: skip
        names = (self._buses, self._lines, self._transformers, self.sites)
        return finish(
            self.name, names, tuple(self._site_buses), raw, self._groups, strict, self._live
        )
