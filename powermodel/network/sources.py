"""Where a network comes from: a shipped name, looked up in a fixed table (user text never builds
a path into the package), or the user's own file, an OpenDSS master ``.dss`` or a pandapower
``.json``, resolved, checked and size-bounded before an engine reads it."""

from __future__ import annotations

import copyreg
from pathlib import Path
from typing import NamedTuple

from powermodel.errors import PowerModelError
from powermodel.iotools import data_dir
from powermodel.network.base import Network
from powermodel.network.opendss import OpenDSSNetwork
from powermodel.network.panda import PandapowerNetwork, pandapower


class Shipped(NamedTuple):
    """A network shipped with powermodel."""

    engine: str
    where: str  # the master file under data/networks, or the pandapower.networks function
    about: str


# the shipped networks: the OpenDSS feeders' files and their licence are in data/networks
# (data/README.md); pandapower's come with pandapower
SHIPPED = {
    "ieee13": Shipped(
        "opendss", "13Bus/IEEE13Nodeckt.dss", "IEEE 13-node test feeder, 4.16 kV, unbalanced"
    ),
    "ieee34": Shipped(
        "opendss", "34Bus/ieee34Mod1.dss", "IEEE 34-node test feeder (Mod 1), 24.9 kV, long"
    ),
    "ieee123": Shipped(
        "opendss", "123Bus/IEEE123Master.dss", "IEEE 123-node test feeder, 4.16 kV, unbalanced"
    ),
    "cigre-mv": Shipped(
        "pandapower", "create_cigre_network_mv", "CIGRE MV benchmark (TB 575), 20 kV, balanced"
    ),
    "ieee39": Shipped("pandapower", "case39", "IEEE 39-bus New England system, 345 kV"),
    "ieee118": Shipped("pandapower", "case118", "IEEE 118-bus system, 138 and 345 kV"),
}
# a network file larger than this is not read: the IEEE 8500-node feeder's files are about 5 MB
MAX_FILE_BYTES = 64 * 2**20
SUFFIXES = {".dss": "opendss", ".json": "pandapower"}


def shipped_networks() -> dict[str, str]:
    """The shipped networks' names and what each is."""
    return {name: s.about for name, s in SHIPPED.items()}


def load_network(source: str | Path) -> Network:
    """A network to attach sites to and solve.

    Parameters
    ----------
    source : str or path
        A shipped name (:func:`shipped_networks`: ``ieee13``, ``ieee34``, ``ieee123`` for
        OpenDSS; ``cigre-mv``, ``ieee39``, ``ieee118`` for pandapower), or the path of the user's
        own OpenDSS master file (``.dss``, with the files it redirects to beside it) or
        pandapower network (``.json``, as ``pandapower.to_json`` writes it).

    Returns
    -------
    Network
        An :class:`~powermodel.network.opendss.OpenDSSNetwork` or a
        :class:`~powermodel.network.panda.PandapowerNetwork`, with no site attached.
    """
    key = str(source).strip().lower()
    if not isinstance(source, Path) and key in SHIPPED:
        return _shipped(key)
    path = _user_file(source)
    if SUFFIXES[path.suffix.lower()] == "opendss":
        return OpenDSSNetwork(path, path.name, str(path))
    return _pandapower_file(path)


def rebuild(source: str, attached: tuple[tuple[str, str, float | None], ...]) -> Network:
    """A network loaded again from its source with the same sites (how one is unpickled)."""
    network = load_network(source)
    for name, bus, kv in attached:
        network.attach(name, bus, kv)
    return network


def _reduce(network) -> tuple:
    """A network pickles as its source and its sites, not as its engine's state: a worker
    (a dask task's, say) loads it again."""
    return rebuild, (network.source, tuple(network._attached))


copyreg.pickle(OpenDSSNetwork, _reduce)
copyreg.pickle(PandapowerNetwork, _reduce)


def _shipped(name: str) -> Network:
    shipped = SHIPPED[name]
    if shipped.engine == "opendss":
        return OpenDSSNetwork(data_dir() / "networks" / shipped.where, name, name)
    pandapower()  # the clear message first, when it is missing
    from pandapower import networks

    return PandapowerNetwork(getattr(networks, shipped.where)(), name, name)


def _user_file(source: str | Path) -> Path:
    """The user's network file, resolved and checked: it exists, is a regular file of a known
    suffix and of at most :data:`MAX_FILE_BYTES`."""
    names = ", ".join(SHIPPED)
    try:
        path = Path(source).expanduser().resolve(strict=True)
    except (OSError, ValueError, RuntimeError):
        raise PowerModelError(
            f"network {str(source)!r} is neither a shipped network ({names}) nor an existing file"
        ) from None
    if not path.is_file():
        raise PowerModelError(f"network {str(source)!r} is not a file")
    if path.suffix.lower() not in SUFFIXES:
        raise PowerModelError(
            f"network file {path.name!r}: give an OpenDSS master file (.dss) or a pandapower "
            f"network (.json), or a shipped name ({names})"
        )
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PowerModelError(
            f"network file {path.name} is {size / 2**20:.0f} MiB, over the "
            f"{MAX_FILE_BYTES // 2**20} MiB a network file may be"
        )
    return path


def _pandapower_file(path: Path) -> Network:
    pp = pandapower()
    try:
        net = pp.from_json(str(path))
    except Exception as error:  # pandapower raises what its JSON reader and pandas raise
        raise PowerModelError(
            f"{path.name} is not a pandapower network ({type(error).__name__}: {error}); "
            "write one with pandapower.to_json(net, path)"
        ) from None
    if not isinstance(net, pp.pandapowerNet):
        raise PowerModelError(f"{path.name} is JSON but not a pandapower network")
    return PandapowerNetwork(net, path.name, str(path))
