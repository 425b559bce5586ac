"""A NetCDF file from a user (a sweep's results uploaded to the dashboard or given to the
library), opened only after its metadata is checked whole, and decoded inside the checks.

NetCDF-4 is HDF5, and HDF5 reads other files wherever a file asks it to: a dataset whose bytes
lie in another file at a path the file names (external storage), a link into another file
(external link), a dataset mapped from datasets of other files (virtual dataset), a filter whose
code HDF5 loads from a plugin library. A file from a browser may name any file of the server's,
so :func:`open_netcdf` inspects the file with h5py, from its metadata alone, and refuses each of
these before netCDF4 opens it. NetCDF-3 files (classic, 64-bit offset, CDF-5) refer to nothing
outside themselves.
"""

from __future__ import annotations

import math
import re
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xarray as xr
from h5py import h5a, h5d, h5ds, h5i, h5l, h5o, h5t, h5z
from xarray.backends.locks import HDF5_LOCK, NETCDFC_LOCK, combine_locks

from powermodel import deadline
from powermodel.errors import DataFileError

# netCDF-C and HDF5 are not safe for threads: one file opened here at a time (two uploads
# read at once, one was "not a NetCDF file" in bench/load_dashboard.py), and netCDF4 used
# directly under the locks xarray takes for it
_OPENING = threading.Lock()
NETCDF_LOCK = combine_locks([HDF5_LOCK, NETCDFC_LOCK])

__all__ = ["VARIABLE_ITEMS", "open_netcdf"]

HDF5 = b"\x89HDF\r\n\x1a\n"
NETCDF3 = (b"CDF\x01", b"CDF\x02", b"CDF\x05")  # classic, 64-bit offset, CDF-5
# The filters netCDF-4 writes when asked to compress (to_netcdf's zlib, shuffle, fletcher32).
# HDF5 has these others built in, and looks for any other in a plugin library: code the file
# would choose
FILTERS = {
    h5z.FILTER_DEFLATE: "deflate",
    h5z.FILTER_SHUFFLE: "shuffle",
    h5z.FILTER_FLETCHER32: "fletcher32",
}
BUILT_IN = {  # named in a refusal
    h5z.FILTER_SZIP: "szip",
    h5z.FILTER_NBIT: "n-bit",
    h5z.FILTER_SCALEOFFSET: "scale-offset",
}
LAYOUTS = (h5d.COMPACT, h5d.CONTIGUOUS, h5d.CHUNKED)  # all but VIRTUAL: data in this file
VALUES = (h5t.INTEGER, h5t.FLOAT, h5t.STRING)  # the classes of a NetCDF variable's values
# a dimension without a coordinate variable: netCDF-4 keeps it as a dataset never read
PHONY = b"This is a netCDF dimension but not a netCDF variable"
NAMED = 60  # characters of a name from the file that a message quotes
# the attributes by which a variable's stored values become its values (CF decoding); a
# time's units too (``units`` of any other variable only name it)
DECODING = ("_Encoding", "_FillValue", "missing_value", "_Unsigned", "scale_factor", "add_offset")
SELF_CONTAINED = "powermodel reads only self-contained NetCDF files"
# Items of one variable-length attribute read (each a copy of one heap object, at most the
# file, so reading one attribute takes at most this many times the file): netCDF writes a text
# attribute as one item and a variable's DIMENSION_LIST with one item a dimension; a sweep's
# results have its keys, seed, rule and elapsed time as dimensions
VARIABLE_ITEMS = 16
# Characters and items of all the variable-length attributes read (a results file's: its
# DIMENSION_LIST references and the non-ASCII texts netCDF4 writes so, a few thousand)
ATTRIBUTE_VALUES = 1_000_000


def open_netcdf(
    path: str | Path, label: str, *, max_values: int, fix: str, smaller: str
) -> xr.Dataset:
    """A NetCDF file, checked and read whole, CF-decoded, text as ``str``.

    Parameters
    ----------
    path
        The file.
    label
        Its name in messages (an upload's own name, never the server's path).
    max_values
        The most values read: every variable's shape counted from the metadata before
        anything is read, a text's characters each a value besides, as read: every value as
        wide as the longest (a variable-length text's longest from the lengths stored with its
        values, its characters never read).
    fix
        What to give instead, ending every refusal (``give the results of ...``).
    smaller
        How to make a file of fewer values, ending the refusal of a larger one.

    Raises
    ------
    DataFileError
        Not NetCDF (neither an HDF5 signature, at the start or after a user block, nor a
        NetCDF-3 one); an HDF5 file asking to read another file or to run code (external
        storage, a virtual dataset, an external, soft or user-defined link, a filter other than
        :data:`FILTERS`) or holding what NetCDF never writes (a named datatype, a variable of
        another HDF5 class, an attribute referring by a new-style reference, a variable-length
        text stored compact); more than ``max_values`` values; or values that cannot be read or
        decoded (the variable named).
    """
    path = Path(path)
    while not _OPENING.acquire(timeout=0.1):  # a request's deadline holds while it waits
        deadline.check()
    try:
        if _is_hdf5(path, label, fix):
            values = _hdf5_values(path, label, fix, max_values)
        else:
            values = _netcdf3_values(path, label, fix)
        if values > max_values:
            raise DataFileError(
                f"{label} holds {values:,} values; at most {max_values:,} are read back: {smaller}"
            )
        return _read(path, label, fix)
    finally:
        _OPENING.release()


def _not_netcdf(label: str, fix: str) -> DataFileError:
    return DataFileError(f"{label} is not a NetCDF file: {fix}")


def _is_hdf5(path: Path, label: str, fix: str) -> bool:
    """Whether the file is HDF5 (NetCDF-4), else NetCDF-3; refused if neither. HDF5 looks for
    its signature at 0 and after a user block of 512, 1024, 2048 … bytes, as netCDF does."""
    try:
        with path.open("rb") as f:
            if f.read(4) in NETCDF3:
                return False
            size, offset = path.stat().st_size, 0
            while offset + len(HDF5) <= size:
                f.seek(offset)
                if f.read(len(HDF5)) == HDF5:
                    return True
                offset = max(512, 2 * offset)
    except OSError:
        pass
    raise _not_netcdf(label, fix)


def _named(name: bytes | str) -> str:
    text = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
    text = repr(text.lstrip("/"))
    return text if len(text) <= NAMED else text[: NAMED - 1] + "…"


def _foreign(label: str, what: str, fix: str) -> DataFileError:
    """A refusal of what has HDF5 read another file or load code."""
    return DataFileError(f"{label} {what}: {SELF_CONTAINED}; {fix}")


def _unwritten(label: str, what: str, fix: str) -> DataFileError:
    """A refusal of what NetCDF does not write, which powermodel does not inspect further."""
    return DataFileError(f"{label} {what}: {fix}")


def _hdf5_values(path: Path, label: str, fix: str, limit: int) -> int:
    """The values an HDF5 file's variables hold, from its metadata; refused as
    :func:`open_netcdf` says. h5py opens the superblock and the root group; the walk reads
    links, object headers and attributes' types, and of a variable's data only the lengths
    of its variable-length texts (:func:`_longest_text`), where it holds at most ``limit``
    values."""
    try:
        with h5py.File(path, "r") as f:
            links: list[tuple[bytes, int]] = []
            f.id.links.visit(lambda name, info: links.append((name, info.type)), info=True)
            stored = _Stored(path, f.id.get_create_plist().get_sizes()[0], limit)
            _check_attributes(f.id, b"/", label, fix, stored)
            return sum(_object_values(f.id, n, kind, label, fix, stored) for n, kind in links)
    except (DataFileError, deadline.DeadlineExceeded):
        raise
    except Exception:  # noqa: BLE001  h5py's errors on a damaged file are many: it is not one
        raise _not_netcdf(label, fix) from None


@dataclass
class _Stored:
    """Where a file's values lie, as :func:`_longest_text` reads their lengths: the file,
    the size of its addresses [B] and the most values read; and the characters and items of
    its variable-length attributes read so far (:func:`_check_attributes`)."""

    path: Path
    address: int
    limit: int
    attributes: int = 0


def _object_values(root: Any, name: bytes, kind: int, label: str, fix: str, stored: _Stored) -> int:
    """The values of the object a link names; refused unless a hard link to a group or to a
    dataset of data in this file. The walk recurses through hard links only, so the object is
    reached through hard links."""
    if kind == h5l.TYPE_EXTERNAL:
        raise _foreign(label, f"links {_named(name)} to another file (an external link)", fix)
    if kind == h5l.TYPE_SOFT:
        raise _unwritten(
            label, f"names {_named(name)} by a soft link, which NetCDF never writes", fix
        )
    if kind != h5l.TYPE_HARD:  # resolved by code of a link class registered, maybe another file
        raise _foreign(label, f"names {_named(name)} by a user-defined link", fix)
    deadline.check()  # a request's work stops at its deadline (powermodel.deadline)
    obj = h5o.open(root, name)
    _check_attributes(obj, name, label, fix, stored)
    if h5i.get_type(obj) == h5i.GROUP:
        return 0
    if h5i.get_type(obj) != h5i.DATASET:
        raise _unwritten(label, f"holds {_named(name)}, an HDF5 object NetCDF never writes", fix)
    return _dataset_values(obj, name, label, fix, stored)


def _dataset_values(dataset: Any, name: bytes, label: str, fix: str, stored: _Stored) -> int:
    """A dataset's values (a text's characters each one besides the value itself, each value
    as wide as the longest; a netCDF dimension without a variable none, as it is never read),
    refused where its data lies
    elsewhere or passes through a filter netCDF does not write."""
    variable = f"variable {_named(name)}"
    plist = dataset.get_create_plist()
    if plist.get_external_count():
        raise _foreign(
            label, f"stores the bytes of {variable} in another file (external storage)", fix
        )
    layout = plist.get_layout()
    if layout == h5d.VIRTUAL:
        raise _foreign(label, f"maps {variable} from other files (a virtual dataset)", fix)
    if layout not in LAYOUTS:
        raise _unwritten(label, f"stores {variable} in HDF5 layout {layout}, unknown here", fix)
    for i in range(plist.get_nfilters()):
        code = plist.get_filter(i)[0]
        if code not in FILTERS:
            read = f"powermodel reads {', '.join(FILTERS.values())} only"
            if code in BUILT_IN:
                what = f"passes {variable} through HDF5's {BUILT_IN[code]} filter ({read})"
                raise _unwritten(label, what, fix)
            what = f"passes {variable} through HDF5 filter {code}, whose code HDF5 would load "
            raise _foreign(label, f"{what}from a plugin ({read})", fix)
    kind = dataset.get_type()
    if kind.get_class() not in VALUES:
        raise _unwritten(label, f"holds {variable} of an HDF5 class NetCDF never writes", fix)
    if _is_phony(dataset):
        return 0
    cells = math.prod(dataset.shape)
    if kind.get_class() != h5t.STRING:
        return cells
    if not kind.is_variable_str():
        return cells * kind.get_size()
    if layout == h5d.COMPACT:
        what = f"keeps the text of {variable} in its header (compact storage), which NetCDF "
        raise _unwritten(label, f"{what}writes only when asked and powermodel does not read", fix)
    if cells > stored.limit:
        return cells
    # read as fixed-width text (xarray's), every value as wide as the longest
    return cells + cells * _longest_text(dataset, plist, stored)


def _longest_text(dataset: Any, plist: Any, stored: _Stored) -> int:
    """The longest value of a variable-length text [B of UTF-8, at least its characters],
    from the length each value keeps beside the address of its characters in the file's
    heap, never following the address: values may share one heap object, and reading copies
    it once for each (a 100-kB text under 1,000 values reads as 100 MB from a file of 118 kB);
    and xarray reads the text as fixed-width, each value as long as the longest (one error of
    1,000,000 characters among 2,000 runs, a 1-MB file, read as 8 GB). The stored values are
    read raw, a chunk at a time, through the filters netCDF writes; a value never written reads
    as the fill value, which counts too."""
    value = np.dtype([("length", "<u4"), ("heap", f"V{stored.address + 4}")])
    if plist.get_layout() == h5d.CONTIGUOUS:
        offset = dataset.get_offset()  # None: never written, every value the fill
        spans = [] if offset is None else [(offset, dataset.get_storage_size(), 0)]
    else:
        spans = []
        dataset.chunk_iter(lambda c: spans.append((c.byte_offset, c.size, c.filter_mask)))
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]  # none if contiguous
    # a chunk inflates to no more than it holds, nor than the dataset holds (an unlimited one)
    chunk = math.prod(plist.get_chunk()) if plist.get_layout() == h5d.CHUNKED else 1
    most = max(1, min(chunk, math.prod(dataset.shape))) * value.itemsize
    longest = 0
    if plist.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED:  # what unwritten values read
        fill = np.empty(1, dtype=h5py.string_dtype())  # one copy of one heap object
        plist.get_fill_value(fill)
        longest = len(fill[0] or b"")
    with stored.path.open("rb") as f:
        for offset, size, skipped in spans:
            f.seek(offset)
            raw = _unfiltered(f.read(size), filters, skipped, value.itemsize, most)
            whole = len(raw) // value.itemsize * value.itemsize
            lengths = np.frombuffer(raw[:whole], value)["length"]
            longest = max(longest, int(lengths.max(initial=0)))
    return longest


def _unfiltered(raw: bytes, filters: list[int], skipped: int, item: int, most: int) -> bytes:
    """A chunk's stored bytes through its filters backwards (bit ``i`` of ``skipped`` set:
    filter ``i`` passed it by), inflated to at most ``most`` bytes."""
    for i in reversed(range(len(filters))):
        if skipped >> i & 1:
            continue
        if filters[i] == h5z.FILTER_FLETCHER32:
            raw = raw[:-4]  # the checksum
        elif filters[i] == h5z.FILTER_DEFLATE:
            raw = zlib.decompressobj().decompress(raw, most)
        elif filters[i] == h5z.FILTER_SHUFFLE:  # the values' first bytes, their second, ...
            whole = len(raw) // item * item
            raw = np.frombuffer(raw[:whole], np.uint8).reshape(item, -1).T.tobytes()
    return raw


def _is_phony(dataset: Any) -> bool:
    """Whether a dataset is a netCDF dimension without a variable: a dimension scale whose
    ``NAME`` attribute (a short fixed-length text, read only if so) says it (netCDF reads any
    other dataset as a variable, whatever its ``NAME``)."""
    if not h5ds.is_scale(dataset) or not h5a.exists(dataset, b"NAME"):
        return False
    attribute = h5a.open(dataset, b"NAME")
    kind = attribute.get_type()
    if kind.get_class() != h5t.STRING or kind.is_variable_str() or attribute.shape != ():
        return False
    if kind.get_size() > 2 * len(PHONY):
        return False
    value = np.empty((), dtype=f"S{kind.get_size()}")
    attribute.read(value)
    return bytes(value).startswith(PHONY)


def _check_attributes(obj: Any, name: bytes, label: str, fix: str, stored: _Stored) -> None:
    """Refuse an attribute whose type NetCDF never writes: only numbers and text, and the
    dimension scales' lists (``DIMENSION_LIST``, ``REFERENCE_LIST``) of references to objects
    of this file (a new-style reference may name another file). A variable-length attribute
    (a text, a list) is read here, one at a time and at most :data:`VARIABLE_ITEMS` items
    each, its characters and items counted against :data:`ATTRIBUTE_VALUES`: its items may
    all point at one heap object, which reading copies once for each, as it does a
    variable's (:func:`_longest_text`), so no walk reads more than that bound (and one
    attribute) before the file is refused."""
    where = "the file" if name == b"/" else _named(name)
    for i in range(h5a.get_num_attrs(obj)):
        attribute = h5a.open(obj, index=i)
        kind = attribute.get_type()
        said = f"gives {where} an attribute {_named(attribute.name)}"
        if not _plain(kind):
            raise _foreign(label, f"{said} of an HDF5 type NetCDF never writes", fix)
        if not _variable(kind):
            continue
        items = math.prod(attribute.shape)
        if items > VARIABLE_ITEMS:
            what = f"{said} of {items:,} variable-length items (NetCDF writes a few)"
            raise _unwritten(label, what, fix)
        value = np.empty(attribute.shape, dtype=kind.dtype)
        attribute.read(value)
        stored.attributes += items + sum(len(v) for v in value.flat)
        if stored.attributes > ATTRIBUTE_VALUES:
            raise DataFileError(
                f"{label}: its attributes' texts and lists hold more than "
                f"{ATTRIBUTE_VALUES:,} characters and items, more than powermodel reads: {fix}"
            )


def _variable(kind: Any) -> bool:
    """Whether values of this type are variable-length (a list, or a text of its own
    length), their items in the file's heap."""
    cls = kind.get_class()
    return cls == h5t.VLEN or (cls == h5t.STRING and kind.is_variable_str())


def _plain(kind: Any) -> bool:
    """Numbers, text, references to objects of this file, and lists or records of them."""
    cls = kind.get_class()
    if cls in VALUES:
        return True
    if cls == h5t.REFERENCE:
        return kind.equal(h5t.STD_REF_OBJ)
    if cls == h5t.VLEN:  # of fixed-size items: a list of lists would read uncounted
        return _plain(kind.get_super()) and not _variable(kind.get_super())
    if cls == h5t.COMPOUND:  # of fixed-size members: a record's lists would go uncounted
        members = [kind.get_member_type(i) for i in range(kind.get_nmembers())]
        return all(_plain(m) and not _variable(m) for m in members)
    return False


def _netcdf3_values(path: Path, label: str, fix: str) -> int:
    """The values a NetCDF-3 file's variables hold, from its header (netCDF4 reads no data to
    give a shape; xarray would read every dimension's coordinate to index it); a character
    array counts each character, as its last dimension holds them."""
    import netCDF4

    try:  # under xarray's locks of the C libraries: a thread may be writing with xarray
        with NETCDF_LOCK, netCDF4.Dataset(path) as nc:
            return sum(math.prod(v.shape) for v in nc.variables.values())
    except Exception:  # noqa: BLE001  as in _hdf5_values
        raise _not_netcdf(label, fix) from None


def _read(path: Path, label: str, fix: str) -> xr.Dataset:
    """The file read whole and decoded; a variable that cannot be is named."""
    try:
        raw = xr.open_dataset(path, engine="netcdf4", decode_cf=False, cache=False)
    except Exception as exc:  # noqa: BLE001  the C library's errors are many
        # xarray decodes text as it opens, and notes the variable that failed
        noted = re.search(r"decoding variable '(.+?)'", "\n".join(getattr(exc, "__notes__", ())))
        if noted is None:
            raise _not_netcdf(label, fix) from None
        raise DataFileError(
            f"{label}: variable {_named(noted[1])} cannot be decoded (its attributes do not fit "
            f"its values): {fix}"
        ) from None
    with raw:
        for name, variable in raw.variables.items():
            try:
                variable.load()  # netCDF4 decodes text by its _Encoding as it reads
            except Exception:  # noqa: BLE001  as above
                raise _undecodable(label, name, variable, fix) from None
    try:
        return _decoded(raw)
    except Exception:  # noqa: BLE001  xarray's decoders raise what numpy raises
        name = next((n for n in raw.variables if not _decodes(raw, n)), None)
        if name is None:  # each decodes alone: what ties them does not
            raise DataFileError(f"{label}: its variables cannot be decoded: {fix}") from None
        raise _undecodable(label, name, raw.variables[name], fix) from None


def _decoded(raw: xr.Dataset) -> xr.Dataset:
    """CF-decoded (masks, scales, times, characters joined into text) and loaded, text as
    ``str``: bytes (characters without ``_Encoding``) decoded as UTF-8, as xarray writes
    text."""
    ds = xr.decode_cf(raw).load()
    text = {
        name: variable.copy(data=np.char.decode(variable.values, "utf-8"))
        for name, variable in ds.variables.items()
        if variable.dtype.kind == "S"
    }
    coords = {n: v for n, v in text.items() if n in ds.coords}
    return ds.assign_coords(coords).assign({n: v for n, v in text.items() if n not in coords})


def _decodes(raw: xr.Dataset, name: Any) -> bool:
    try:
        _decoded(xr.Dataset({name: raw.variables[name]}))
    except Exception:  # noqa: BLE001  as in _read
        return False
    return True


def _undecodable(label: str, name: Any, variable: xr.Variable, fix: str) -> DataFileError:
    said = [a for a in DECODING if a in variable.attrs]
    if " since " in str(variable.attrs.get("units", "")):
        said += [a for a in ("units", "calendar") if a in variable.attrs]
    if said:
        why = f"its {', '.join(said)} do not fit its values"
    else:
        why = "its text is not UTF-8" if variable.dtype.kind in "SUO" else "its values are damaged"
    return DataFileError(f"{label}: variable {_named(str(name))} cannot be decoded ({why}): {fix}")
