"""xarray without ``dask.array`` until something uses it.

xarray asks, of every array it wraps, whether it is a dask array, and answers by importing
``dask.array`` once dask is installed (it is: sweeps run on dask.distributed). That import costs
0.2 s and 7 MB in every command that never touches dask. Until ``dask.array`` is imported, no
array can be a dask array, so :func:`defer_dask` gives xarray's record of the dask module no
array types until then, and the real record from then on (the first question after the import
reads it). Likewise, making an index of an array asks whether it is a dask collection, which
imports ``dask.base`` (0.13 s, a sweep's results gathered in turn): nothing is one before dask
is imported, so the question is answered "no" until then. It only reads and replaces xarray's
private names where they are as in xarray 2024–2026; elsewhere xarray is left as it is
(``tests/test_imports.py`` checks both the saving and dask arrays).

:func:`defer_dask_on_import` runs it the moment xarray is imported, by whichever module imports
it first: the package's face imports no xarray (issue 30: ``powermodel --version`` stays free of
the numeric stack), yet the record must be in place before any Dataset is made.
"""

from __future__ import annotations

import sys
from typing import Any


def defer_dask_on_import() -> None:
    """:func:`defer_dask` now when xarray is imported, else right after xarray's own import."""
    if "xarray" in sys.modules:
        defer_dask()
    elif not any(isinstance(finder, _XarrayFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _XarrayFinder())


class _XarrayFinder:
    """Finds xarray as the other finders do (then leaves ``sys.meta_path``), its loader wrapped
    so that :func:`defer_dask` runs once xarray's module has run. (A finder and a loader by
    their methods: ``importlib.abc`` would cost ``--version`` 10 ms.)"""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "xarray":
            return None
        import importlib.util  # noqa: PLC0415 - when xarray is imported

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenDefer(spec.loader)
        return spec


class _ThenDefer:
    """xarray's own loader, and :func:`defer_dask` after it; the module keeps the own loader."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__spec__.loader = module.__loader__ = self._loader
        self._loader.exec_module(module)
        defer_dask()


def defer_dask() -> None:
    """Install the deferred record of the dask module in xarray's cache (once)."""
    try:
        from xarray.namedarray import pycompat
    except ImportError:  # an xarray without it: nothing deferred
        return
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    record = getattr(pycompat, "DuckArrayModule", None)
    if isinstance(cache, dict) and record is not None and "dask" not in cache:
        cache["dask"] = _Deferred(cache, record)
    try:
        from xarray.namedarray import utils
    except ImportError:
        return
    asked = getattr(utils, "is_dask_collection", None)
    if callable(asked) and not getattr(asked, "deferred", False):
        utils.is_dask_collection = _before_dask(asked)


def _before_dask(asked: Any) -> Any:
    """xarray's ``is_dask_collection``, False without asking while dask is not imported."""

    def is_dask_collection(x: object) -> bool:
        return "dask" in sys.modules and asked(x)

    is_dask_collection.deferred = True  # type: ignore[attr-defined]
    return is_dask_collection


class _Deferred:
    """xarray's ``DuckArrayModule("dask")``, made only when ``dask.array`` has been imported:
    before, its array types are none."""

    def __init__(self, cache: dict, record: type) -> None:
        self._cache, self._record = cache, record

    def _real(self) -> Any:
        real = self._record("dask")
        self._cache["dask"] = real
        return real

    @property
    def type(self) -> tuple[type, ...]:
        return self._real().type if "dask.array" in sys.modules else ()

    def __getattr__(self, name: str) -> Any:  # module, version, available: the real record's
        return getattr(self._real(), name)
