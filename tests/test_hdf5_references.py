"""A results file that asks HDF5 to read another file is refused before any byte is read
(issue 26, item 1). NetCDF-4 is HDF5, and HDF5 follows what a file names: a dataset's bytes in
another file (external storage), a link into another file, a virtual dataset's sources, a filter
loaded from a plugin. On the landed code a 10-kB ``results.nc`` whose ``error`` text was stored
in any file of the server's returned that file in the failed-runs table.

Each kind is crafted with h5py into the results of a real sweep (written by
:func:`powermodel.sweep.write`) and given to every entry point that opens a results file from a
user: :func:`powermodel.sweep.open_results` and the dashboard's sweep upload over HTTP (no
command of the CLI reads results back). The expected answer is a refusal naming the problem, a
secret never shown, and the secret's file never opened (seen by ``strace``)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from crafted_hdf5 import replace_variable
from test_dashboard_hostile import call

from powermodel import sweep as sweeping
from powermodel.cli import main
from powermodel.errors import DataFileError
from powermodel.webapp import create_dashboard

BASE = "llama3-405b-16k-h100"
FIXED = {"simulation.duration": "30min", "simulation.dt": "1s"}
GRID = {"workload.trough_depth": [0.3, 1.5]}  # 1.5 is out of range: those runs fail, recorded
SEEDS = 2
CELLS = 4  # runs of the sweep: 2 points x 2 seeds
CHARS = 60  # characters of a crafted text variable's each value


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """A real sweep's results, with a rule and a series: every kind of variable it writes."""
    ds = sweeping.sweep(
        BASE, GRID, SEEDS, overrides=FIXED, rules="ercot-5s", series="1min", workers=0,
        progress=False,
    )  # fmt: skip
    return sweeping.write(ds, tmp_path_factory.mktemp("real") / "results.nc")


@pytest.fixture
def secret(tmp_path) -> tuple[Path, str]:
    """A file of the server's, outside any upload's folder, that no request may read."""
    text = f"SECRET-{uuid.uuid4().hex}"
    path = tmp_path / "server" / "secret.txt"
    path.parent.mkdir()
    path.write_text((text + "\n") * (CELLS * CHARS // len(text) + 1))
    with h5py.File(path.with_suffix(".h5"), "w") as f:  # a server HDF5 file, as much a secret
        f["secret"] = np.array([[text.encode()] * SEEDS] * 2, dtype=f"S{CHARS}")
        f["numbers"] = np.full((2, SEEDS), 271828.0)
    return path, text


def _external_storage(path: Path, secret: Path) -> None:
    replace_variable(path, "error", dtype=f"S{CHARS}", external=[(str(secret), 0, CELLS * CHARS)])


def _external_storage_absolute(path: Path, secret: Path) -> None:
    replace_variable(path, "error", dtype=f"S{CHARS}", external=[("/etc/passwd", 0, CELLS * CHARS)])


def _external_link(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["leak"] = h5py.ExternalLink(str(secret.with_suffix(".h5")), "/secret")


def _virtual(path: Path, secret: Path) -> None:
    source = h5py.VirtualSource(str(secret.with_suffix(".h5")), "numbers", shape=(2, SEEDS))
    layout = h5py.VirtualLayout(shape=(2, SEEDS), dtype="f8")
    layout[:] = source
    replace_variable(path, "grid_peak_mw", layout)


def _soft_link(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["alias"] = h5py.SoftLink("/grid_peak_mw")


def _lzf(path: Path, secret: Path) -> None:
    replace_variable(path, "grid_peak_mw", data=np.ones((2, SEEDS)), compression="lzf")


def _scaleoffset(path: Path, secret: Path) -> None:
    replace_variable(path, "grid_peak_mw", data=np.ones((2, SEEDS)), scaleoffset=3)


def _named_datatype(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["kind"] = np.dtype("f8")


def _compound(path: Path, secret: Path) -> None:
    replace_variable(path, "grid_peak_mw", dtype=np.dtype([("a", "f8"), ("b", "i4")]))


def _user_block(path: Path, secret: Path) -> None:
    """External storage in a file whose HDF5 data starts after a 512-byte user block (netCDF
    finds it there too): the signature is looked for where HDF5 looks."""
    path.unlink()
    with h5py.File(path, "w", userblock_size=512) as f:
        f["seed"] = np.arange(SEEDS)
        f["seed"].make_scale("seed")
        error = f.create_dataset(
            "error", shape=(SEEDS,), dtype=f"S{CHARS}", external=[(str(secret), 0, SEEDS * CHARS)]
        )
        error.dims[0].attach_scale(f["seed"])


def _family(path: Path, secret: Path) -> None:
    """A file of HDF5's family driver, its data in member files beside it: netCDF and h5py
    open only the first member, which they refuse."""
    path.unlink()
    with h5py.File(path.parent / "member%d.nc", "w", driver="family", memb_size=2048) as f:
        f["secret"] = np.array([secret.read_text()[:CHARS].encode()] * 64, dtype=f"S{CHARS}")
    (path.parent / "member0.nc").rename(path)


def _split(path: Path, secret: Path) -> None:
    """A file of HDF5's split driver: its metadata here, its data in ``<name>-r.h5``."""
    path.unlink()
    with h5py.File(path, "w", driver="split") as f:
        f["secret"] = np.array([secret.read_text()[:CHARS].encode()] * 4, dtype=f"S{CHARS}")
    Path(f"{path}-m.h5").rename(path)


SELF_CONTAINED = "powermodel reads only self-contained NetCDF files"
CRAFTED = {
    "external storage": (_external_storage, "stores the bytes of variable 'error' in another "
                         "file (external storage)"),
    "external storage at an absolute path": (_external_storage_absolute, "(external storage)"),
    "external link": (_external_link, "links 'leak' to another file (an external link)"),
    "virtual dataset": (_virtual, "maps variable 'grid_peak_mw' from other files (a virtual "
                        "dataset)"),
    "soft link": (_soft_link, "names 'alias' by a soft link, which NetCDF never writes"),
    "lzf filter": (_lzf, "passes variable 'grid_peak_mw' through HDF5 filter 32000, whose code "
                   "HDF5 would load from a plugin (powermodel reads deflate, shuffle, fletcher32 "
                   "only)"),
    "scale-offset filter": (_scaleoffset, "passes variable 'grid_peak_mw' through "
                            "HDF5's scale-offset filter (powermodel reads deflate"),
    "named datatype": (_named_datatype, "holds 'kind', an HDF5 object NetCDF never writes"),
    "compound variable": (_compound, "holds variable 'grid_peak_mw' of an HDF5 class NetCDF "
                          "never writes"),
    "user block": (_user_block, "stores the bytes of variable 'error' in another file"),
    "family driver": (_family, "is not a NetCDF file"),
    "split driver": (_split, "is not a NetCDF file"),
}  # fmt: skip


def _crafted(kind: str, real: Path, secret: Path, folder: Path) -> Path:
    path = folder / "upload" / "results.nc"
    path.parent.mkdir(exist_ok=True)
    shutil.copy(real, path)
    CRAFTED[kind][0](path, secret)
    return path


# the kinds that have HDF5 read another file or load code, refused as not self-contained (the
# others NetCDF never writes, and the drivers' files HDF5 itself will not open alone)
FOREIGN = {"external storage", "external storage at an absolute path", "external link",
           "virtual dataset", "lzf filter", "user block"}  # fmt: skip


def _refuses(kind: str, message: str) -> bool:
    """Whether ``message`` says what is wrong with a file of this kind."""
    return CRAFTED[kind][1] in message and (kind not in FOREIGN or SELF_CONTAINED in message)


@pytest.mark.parametrize("kind", CRAFTED)
def test_open_results_refuses_a_file_that_reads_another(kind, real, secret, tmp_path):
    path, text = secret
    crafted = _crafted(kind, real, path, tmp_path)
    with pytest.raises(DataFileError) as refused:
        sweeping.open_results(crafted, "results.nc")
    message = str(refused.value)
    assert message.startswith("results.nc ")
    assert _refuses(kind, message)
    assert message.endswith("give the results of `powermodel sweep -o results.nc`")
    assert text not in message and str(path.parent) not in message


@pytest.mark.parametrize(
    "argv", [["validate"], ["run"], ["check", "--rules", "ercot-5s"], ["ride-through"]]
)
def test_no_command_reads_a_results_file_as_hdf5(argv, real, secret, tmp_path, capsys):
    """No command of the CLI reads results back: a file it is given is a scenario (TOML text)
    or a CSV trace, so a crafted results file is refused as text, its references never
    followed. Holds on the landed code too: it keeps any new reader to open_netcdf."""
    path, text = secret
    crafted = _crafted("external storage", real, path, tmp_path)
    assert main([argv[0], str(crafted), *argv[1:]]) == 1
    said = capsys.readouterr()
    # one line naming the file: a scenario that is not text, or check's "is a NetCDF file"
    assert said.err.startswith("powermodel: error: ") and said.err.count("\n") == 1
    assert str(crafted) in said.err
    assert text not in said.out + said.err


SWEEP_UPLOAD = "..sweep-results.data"


@pytest.fixture(scope="module")
def board():
    board = create_dashboard(overrides={"simulation.duration": "1h"})
    yield board
    board.workdir.cleanup()


def _upload(board, data: bytes, filename: str = "results.nc") -> tuple[int, str]:
    """The sweep view's upload as the page posts it: the status and the whole answer."""
    output = next(k for k in board.app.callback_map if k.startswith(SWEEP_UPLOAD))
    url = "data:application/x-netcdf;base64," + base64.b64encode(data).decode()
    status, body = call(
        board, output, [("upload-sweep", "contents", url)], [("upload-sweep", "filename", filename)]
    )
    return status, json.dumps(body)


@pytest.mark.parametrize("kind", CRAFTED)
def test_the_dashboard_refuses_an_upload_that_reads_another_file(
    kind, board, real, secret, tmp_path
):
    path, text = secret
    status, body = _upload(board, _crafted(kind, real, path, tmp_path).read_bytes())
    assert status == 200
    message = json.loads(body)["response"]["sweep-message"]["children"]
    assert _refuses(kind, message) and message.endswith("— the sweep shown is unchanged")
    assert text not in body and "root:" not in body and str(path.parent) not in body
    assert not list(board.traces.glob("*.nc"))  # the staged upload is gone


def test_no_crafted_file_opens_the_file_it_names(real, secret, tmp_path):
    """Every kind through open_results in one process under ``strace -f``: the secret files
    (the text, the HDF5 file, a family's members, a split file's data) are never opened, nor
    looked at, by h5py, netCDF4 or a plugin search."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    path, text = secret
    crafted = []
    for i, kind in enumerate(CRAFTED):
        folder = tmp_path / f"kind{i}"
        folder.mkdir()
        crafted.append(str(_crafted(kind, real, path, folder)))
    members = [str(p) for p in tmp_path.glob("kind*/upload/*") if p.name != "results.nc"]
    assert any(m.endswith("-r.h5") for m in members) and any("member1" in m for m in members)
    script = (
        "import sys\nfrom powermodel.sweep import open_results\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n        open_results(p)\n    except ValueError as e:\n        print(e)\n"
    )
    trace = tmp_path / "strace.txt"
    run = subprocess.run(
        ["strace", "-f", "-e", "trace=file", "-o", str(trace), sys.executable, "-c", script,
         *crafted],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(CRAFTED)  # each refused, in one line
    assert text not in run.stdout and "root:" not in run.stdout
    seen = trace.read_text()
    for secret_file in (str(path), str(path.with_suffix(".h5")), *members):
        assert secret_file not in seen, secret_file


@pytest.mark.parametrize(
    "encoding",
    [
        None,
        {"zlib": True, "complevel": 4},
        {"zlib": True, "shuffle": True, "fletcher32": True},
    ],
    ids=["as written", "deflate", "deflate, shuffle and fletcher32"],
)
def test_real_results_still_open(encoding, real, tmp_path, board):
    """No false refusal: a sweep's results as written, compressed as netCDF-4 compresses, and
    in NetCDF-3, read back as xarray reads them, and drawn by the dashboard."""
    path = real
    if encoding is not None:
        path = tmp_path / "compressed.nc"
        ds = xr.load_dataset(real)
        ds.to_netcdf(path, encoding={name: encoding for name in ds.data_vars})
    xr.testing.assert_identical(sweeping.open_results(path), xr.load_dataset(path))
    status, body = _upload(board, path.read_bytes())
    assert status == 200
    # 4 runs, the 2 at depth 1.5 out of the scenario's range
    assert json.loads(body)["response"]["sweep-message"]["children"] == (
        "results.nc: 4 runs (2 seeds a point) over workload.trough_depth; 2 failed"
    )


def test_netcdf3_results_still_open(real, tmp_path):
    # NetCDF-3 holds no references: accepted after its signature, counted from its header
    path = tmp_path / "classic.nc"
    xr.load_dataset(real).to_netcdf(path, format="NETCDF3_64BIT")
    opened = sweeping.open_results(path)
    xr.testing.assert_identical(opened, xr.load_dataset(path))
    assert opened["error"].values[1, 0].startswith("workload.trough_depth: Input should be")


def test_a_file_of_neither_signature_is_not_netcdf(tmp_path):
    for name, data in (
        ("hdf4.nc", b"\x0e\x03\x13\x01" + bytes(2000)),  # HDF4, which netCDF may be built for
        ("text.nc", b"CDF but not really\n" * 100),
        ("empty.nc", b""),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DataFileError, match=f"^{name} is not a NetCDF file: give the results"):
            sweeping.open_results(path, name)


SHARED = 100_000  # characters of the one text every value of a crafted error shares


def _shared_text(path: Path, compressed: bool) -> None:
    """``error`` as variable-length text whose four values all point at one 100-kB heap
    object: reading copies it once for each (netCDF writes each value's own)."""
    options = {"chunks": (2, SEEDS), "compression": "gzip", "shuffle": True} if compressed else {}
    replace_variable(path, "error", dtype=h5py.string_dtype(), **options)
    with h5py.File(path, "r+") as f:
        error = f["error"]
        error[0, 0] = "A" * SHARED
        item = 16  # a length, a heap address, an index in the heap
        if compressed:
            mask, stored = error.id.read_direct_chunk((0, 0))
            raw = np.frombuffer(zlib.decompress(stored), np.uint8)
            # HDF5 writes a chunk of variable-length values past the shuffle (bit 0 of the
            # mask set); shuffled where it does not
            values = raw.reshape(-1, item) if mask & 1 else raw.reshape(item, -1).T
            shared = np.repeat(values[:1], CELLS, axis=0)  # every value the first
            shared = shared if mask & 1 else shared.T
            error.id.write_direct_chunk((0, 0), zlib.compress(shared.tobytes()), mask)
            return
        offset = error.id.get_offset()
    with path.open("r+b") as f:
        f.seek(offset)
        first = f.read(item)
        f.write(first * (CELLS - 1))


@pytest.mark.parametrize("compressed", [False, True], ids=["contiguous", "deflate and shuffle"])
def test_a_text_shared_by_many_values_counts_for_each(compressed, real, tmp_path, monkeypatch):
    path = tmp_path / "results.nc"
    shutil.copy(real, path)
    _shared_text(path, compressed)
    assert path.stat().st_size < 2 * SHARED  # the text is in the file once
    with h5py.File(path) as f:  # as netCDF4 would read it: once for each value
        assert sum(len(t) for t in f["error"][...].flat) == CELLS * SHARED
    monkeypatch.setattr("powermodel.sweep.saved.MAX_RESULT_CELLS", 3 * SHARED)
    with pytest.raises(
        DataFileError, match=r"^results.nc holds (\d|,)+ values; at most 300,000"
    ) as e:
        sweeping.open_results(path, "results.nc")
    held = int(str(e.value).split()[2].replace(",", ""))
    assert CELLS * SHARED < held < CELLS * SHARED + 1000  # the characters, and the few numbers


def _shared_attribute(path: Path, items: int, attributes: int) -> None:
    """A file of ``attributes`` text attributes of ``items`` variable-length items each,
    every item pointing at one 100-kB heap object: reading copies it once for each (netCDF
    writes each item's own). Crafted as h5py writes them (the first item the long text, the
    others a filler), then each filler's record (a length, a heap address, an index) made the
    long text's."""
    import struct

    # HDF5 of the earliest format, whose object headers carry no checksum to mend after the
    # edit; netCDF4 opens it as NetCDF-4 (the refusal comes before anything of a sweep's)
    with h5py.File(path, "w", libver="earliest") as f:
        f["error"] = np.array([[""] * SEEDS] * 2, dtype=h5py.string_dtype())
        for a in range(attributes):
            texts = ["A" * SHARED if a == i == 0 else "B" * FILLER for i in range(items)]
            f.attrs.create(f"shared_{a}", np.array(texts, dtype=object), dtype=h5py.string_dtype())
    data = bytearray(path.read_bytes())

    def records(length: int) -> list[int]:
        # a record's address follows its length (a heap object's header has the length's
        # upper 4 bytes there, zero); the file is under 4 GB
        found, at = [], data.find(struct.pack("<I", length))
        while at >= 0:
            if data[at + 4 : at + 8] != bytes(4):
                found.append(at)
            at = data.find(struct.pack("<I", length), at + 1)
        return found

    (long,) = records(SHARED)
    fillers = records(FILLER)
    assert len(fillers) == items * attributes - 1
    for at in fillers:
        data[at : at + 16] = data[long : long + 16]
    path.write_bytes(bytes(data))


FILLER = 4242  # characters of each item the crafting points at the shared text


@pytest.mark.parametrize(
    ("items", "attributes"), [(16, 1), (1, 40)], ids=["one list of 16", "40 of one item"]
)
def test_a_text_shared_by_many_attributes_is_refused_before_it_is_copied(
    items, attributes, tmp_path
):
    # review of issue 26: as a variable's values (above), a variable-length attribute's items
    # may all point at one heap object; netCDF4 reads every attribute as it opens the file,
    # copying the object once an item (1.6-4 MB read from a file of 0.3 MB here; the upload
    # limit's 5 MB, shared 16 times in 1,000 attributes, would be 80 GB)
    path = tmp_path / "results.nc"
    _shared_attribute(path, items, attributes)
    assert path.stat().st_size < 2 * SHARED + items * attributes * FILLER
    with h5py.File(path) as f:  # the crafted file reads as netCDF4 would: a copy an item
        read = sum(len(t) for a in f.attrs if a.startswith("shared_") for t in f.attrs[a].flat)
        assert read == items * attributes * SHARED
    with pytest.raises(
        DataFileError,
        match=r"^results.nc: its attributes' texts and lists hold more than 1,000,000 characters",
    ):
        sweeping.open_results(path, "results.nc")


def _fake_dimension(f: h5py.File) -> None:
    """20,000,000 never-written values named as a netCDF dimension without a variable, but no
    dimension scale: netCDF reads it as a variable (160 MB from a file of 1.4 kB)."""
    from powermodel.iotools.netcdf import PHONY

    f.create_dataset("x", (20_000_000,), "f8", chunks=(1000,), fillvalue=1.0)
    f["x"].attrs["NAME"] = np.bytes_(PHONY + b" 20000000")


def _filled_text(f: h5py.File) -> None:
    """100,000 never-written texts whose fill value is 1,000 characters: each reads as it."""
    f.create_dataset("error", (100_000,), h5py.string_dtype(), chunks=(1000,), fillvalue="x" * 1000)


def _nested_lists(f: h5py.File) -> None:
    """An attribute of lists of texts: its items' items were read, never counted."""
    kind = h5py.vlen_dtype(h5py.string_dtype())
    value = np.empty(2, dtype=object)
    value[0], value[1] = np.array(["a"] * 3, dtype=object), np.array(["b"], dtype=object)
    f.attrs.create("nested", value, dtype=kind)


@pytest.mark.parametrize(
    ("craft", "said"),
    [
        (_fake_dimension, r"holds 20,000,000 values; at most 4,000,000"),
        (_filled_text, r"holds 100,100,000 values; at most 4,000,000"),
        (_nested_lists, r"gives the file an attribute 'nested' of an HDF5 type NetCDF never"),
    ],
    ids=["a variable named as a dimension", "a text's fill value", "lists of lists"],
)
def test_what_a_file_reads_as_is_counted_before_it_is_read(craft, said, tmp_path):
    # review of issue 26: three files read far more than the count saw (a 1.4-kB file read as
    # 160 MB, a 6-kB one as 400 MB, an 864-kB one held 1 GB while its attribute was checked)
    path = tmp_path / "results.nc"
    with h5py.File(path, "w") as f:
        craft(f)
    assert path.stat().st_size < 100_000
    with pytest.raises(DataFileError, match=f"^results.nc:? {said}"):
        sweeping.open_results(path, "results.nc")


def test_an_attribute_of_more_items_than_netcdf_writes_is_refused_unread(tmp_path):
    # each item of a variable-length attribute may be a copy of the file: at most 16 are read
    path = tmp_path / "results.nc"
    with h5py.File(path, "w") as f:
        f.attrs.create("many", np.array(["x"] * 17, dtype=object), dtype=h5py.string_dtype())
    with pytest.raises(DataFileError, match="an attribute 'many' of 17 variable-length items"):
        sweeping.open_results(path, "results.nc")


def test_a_request_waiting_to_open_a_results_file_keeps_its_deadline(real):
    # found in review: one file is opened at a time, and a request waiting for another's read
    # held its slot past its deadline; it stops at it, in words
    from powermodel import deadline
    from powermodel.iotools import netcdf

    with netcdf._OPENING:  # another request reads a file
        with pytest.raises(deadline.PastDeadline, match="^reading took too long$"):
            with deadline.within(0.3, "reading took too long"):
                sweeping.open_results(real, "results.nc")
    assert sweeping.open_results(real, "results.nc")["error"].size == CELLS  # free again
