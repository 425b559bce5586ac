"""Results files changed with h5py as an attacker would, for the tests that show them refused
(tests/test_hdf5_references.py, tests/test_forged_round.py): ``from crafted_hdf5 import
replace_variable``.

Not a test module: pytest puts ``tests/`` on ``sys.path`` (as for ``conftest``).
"""

from __future__ import annotations

from pathlib import Path

import h5py


def replace_variable(
    path: Path,
    name: str,
    layout: h5py.VirtualLayout | None = None,
    link: h5py.ExternalLink | None = None,
    **create,
) -> None:
    """Recreate the variable ``name`` of a results file with h5py: as ``create_dataset`` takes
    ``create``, as a virtual dataset of ``layout``, on the same dimensions (as netCDF-4 reads
    them), or as a ``link`` to another file in its place."""
    with h5py.File(path, "r+") as f:
        old = f[name]
        shape, scales = old.shape, [old.dims[i][0] for i in range(old.ndim)]
        for i, scale in enumerate(scales):
            old.dims[i].detach_scale(scale)
        del f[name]
        if link is not None:
            f[name] = link
            return
        if layout is None:
            new = f.create_dataset(name, shape=shape, **create)
        else:
            new = f.create_virtual_dataset(name, layout)
        for i, scale in enumerate(scales):
            new.dims[i].attach_scale(scale)
