"""Power-flow networks a site attaches to: the grid side of issue 31's co-simulation and hosting
capacity, as numbers (numpy arrays), with no xarray and no scenario.

    from powermodel.network import load_network
    net = load_network("ieee123")          # or "cigre-mv", or your own .dss / .json file
    net.attach("site", "67")               # a balanced three-phase constant-PQ load
    net.solve({"site": (1.5, 0.3)}).site_voltage      # {site: lowest phase voltage [pu]}
    batch = net.solve_many(p_mw, q_mvar)   # arrays (steps, sites) [MW], [Mvar]
    batch.site_vmin, batch.line_loading    # (steps, sites) [pu], (steps, lines) [fraction]

Two engines behind one interface (:class:`Network`): OpenDSS through ``opendssdirect.py``
(unbalanced, per phase; each network in an engine context of its own) and pandapower
(balanced). Both are optional: ``pip install 'powermodel[grid]'``; they are imported when a
network of theirs is loaded. Every solve is bounded (100 solver iterations, 30 control
rounds); one that does not converge, or that leaves a site's bus below 0.5 pu, raises a
:class:`~powermodel.errors.PowerModelError` naming the step, the sites' power and the fix (or,
with ``strict=False``, is marked in ``Batch.converged`` with NaN results).
"""

from powermodel.network.base import Batch, Network, Solution
from powermodel.network.sources import load_network, shipped_networks

__all__ = ["Batch", "Network", "Solution", "load_network", "shipped_networks"]
