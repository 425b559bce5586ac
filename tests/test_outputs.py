"""Outputs whole or absent, and the ways out (issue 26, items 4 and 10).

Every command that writes is run here to the point of its write and made to fail there: a full
disk, SIGINT and SIGTERM while its file is on the disk under its temporary name, a read-only
folder, a missing one. Each must leave nothing under its output's name (an earlier file of that
name as it was, byte for byte, and no temporary file), say so in one line, and exit with the
shell's code (1 for an error, 130 for SIGINT, 143 for SIGTERM).

The full disk is an 8-MiB tmpfs mounted on the output folder and filled, where this process may
mount one (root with CAP_SYS_ADMIN), else a flush to the disk failing with ENOSPC (as one does on
a full disk) in the shared writer. The read-only folder is that tmpfs remounted read-only, else
a folder of mode 0o555 (as a user other than root), else (root without mounts) file creation
there failing with EROFS.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
import pyarrow.csv as pacsv
import pytest
from synthetic_telemetry import write as write_trace

from powermodel import cli, output, reproduce
from powermodel.errors import PowerModelError
from powermodel.iotools.telemetry import TelemetryWarning
from powermodel.reproduce.anchor import PREDICTION

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "llama3-405b-16k-h100"
HOUR = ["--set", "simulation.duration=1h"]
# 3,600 steps need about 2 MB (simulate.BYTES_PER_STEP), over a 1-MB budget: the run streams,
# in chunks of 4,096 steps at the least (stream.MIN_CHUNK_STEPS)
STREAMED = [*HOUR, "--memory-gb", "0.001"]
EARLIER = b"an earlier output, complete\n"
SWEEP = """base = "llama3-405b-16k-h100"
seeds = 1

[set]
simulation.duration = "1h"
simulation.dt = "10s"

[grid]
"cluster.n_gpus" = [8192]
"""
# a disturbed run (tests/test_disturbance_fuzz.py's): the fitted model's .dyr and .aux
RIDE_THROUGH = [
    "ride-through",
    REFERENCE,
    "--set",
    "simulation.duration=10min",
    "--set",
    "disturbance.start=2024-07-01T00:05",
    "--set",
    "disturbance.sequence=nerc-2025-02-single-fault",
]


class Command(NamedTuple):
    """A command that writes: its argv (given the output folder and the inputs' folder), the
    files it writes (relative to the output folder), and whether they are new (no earlier file
    of their names: then their folder, if the command makes it, must not appear either)."""

    argv: Callable[[Path, Path], list[str]]
    files: tuple[str, ...]
    fresh: bool = False


COMMANDS = {
    "run -o csv": Command(lambda o, i: ["run", REFERENCE, *HOUR, "-o", f"{o}/a.csv"], ("a.csv",)),
    "run -o parquet": Command(
        lambda o, i: ["run", REFERENCE, *HOUR, "-o", f"{o}/a.parquet"], ("a.parquet",)
    ),
    "run -o nc": Command(lambda o, i: ["run", REFERENCE, *HOUR, "-o", f"{o}/a.nc"], ("a.nc",)),
    "run -o parquet, streamed": Command(
        lambda o, i: ["run", REFERENCE, *STREAMED, "-o", f"{o}/s.parquet"], ("s.parquet",)
    ),
    "run -o csv, streamed": Command(
        lambda o, i: ["run", REFERENCE, *STREAMED, "-o", f"{o}/s.csv"], ("s.csv",)
    ),
    "export --to opendss": Command(
        lambda o, i: ["export", REFERENCE, *HOUR, "--to", "opendss", "-o", f"{o}/dss"],
        ("dss/datacenter_p.csv", "dss/datacenter_q.csv", "dss/loadshape.dss", "dss/example.dss"),
    ),
    "export --to netcdf, a new folder": Command(
        lambda o, i: ["export", REFERENCE, *HOUR, "--to", "netcdf", "-o", f"{o}/nc"],
        ("nc/profile.nc",),
        fresh=True,
    ),
    "check --violations": Command(
        lambda o, i: [
            "check",
            REFERENCE,
            *HOUR,
            "--rules",
            "ieso-15s",
            "--violations",
            f"{o}/v.csv",
        ],
        ("v.csv",),
    ),
    "sweep -o nc": Command(
        lambda o, i: ["sweep", f"{i}/sweep.toml", "-o", f"{o}/r.nc", "--workers", "0"], ("r.nc",)
    ),
    "sweep -o csv, new": Command(
        lambda o, i: ["sweep", f"{i}/sweep.toml", "-o", f"{o}/r.csv", "--workers", "0"],
        ("r.csv",),
        fresh=True,
    ),
    "fit -o --report": Command(
        lambda o, i: [
            "fit",
            f"{i}/smi.csv",
            "--period",
            "100ms",
            "-o",
            f"{o}/fitted.toml",
            "--report",
            f"{o}/fit.html",
        ],
        ("fitted.toml", "fit.html"),
    ),
    "predict --report": Command(
        lambda o, i: ["predict", REFERENCE, f"{i}/smi.csv", "--report", f"{o}/predicted.html"],
        ("predicted.html",),
    ),
    "ride-through --model": Command(
        lambda o, i: [*RIDE_THROUGH, "--model", f"{o}/m"], ("m.dyr", "m.aux")
    ),
    "reproduce -o": Command(lambda o, i: ["reproduce", "-o", f"{o}/r.html"], ("r.html",)),
}


def _can_mount() -> bool:
    with tempfile.TemporaryDirectory() as folder:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder], capture_output=True
        )
        if mounted.returncode != 0:
            return False
        subprocess.run(["umount", folder], check=True)
    return True


MOUNTS = os.name == "posix" and _can_mount()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """The inputs' folder: a one-point sweep file and an nvidia-smi trace to fit
    (tests/test_fit.py's)."""
    from test_fit import _trace

    folder = tmp_path_factory.mktemp("in")
    (folder / "sweep.toml").write_text(SWEEP)
    write_trace(_trace(6.0, 0.1), folder / "smi.csv", "nvidia-smi")
    return folder


@pytest.fixture
def out(tmp_path) -> Iterator[Path]:
    """The output folder: an 8-MiB tmpfs of its own where mounts are allowed (the largest
    output here, reproduce's report, is 4.9 MB)."""
    folder = tmp_path / "out"
    folder.mkdir()
    if MOUNTS:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)], check=True)
    yield folder
    if MOUNTS:  # lazily: a file a failed command left open would keep it busy
        subprocess.run(["umount", "-l", str(folder)], check=True)
    else:
        folder.chmod(0o755)  # a read-only folder, made writable for pytest to remove


@pytest.fixture(autouse=True)
def cheap_anchors(monkeypatch):
    """``reproduce`` with one anchor: its report (plotly.js embedded, 4.6 MB) is written as
    every run's is, without the minutes the published anchors take."""
    anchor = reproduce.Anchor("a", "b", "1", "1", "±0", PREDICTION, "-", True, go.Figure(), 0.1)
    monkeypatch.setattr(reproduce, "run_anchors", lambda progress=None: [anchor])


def _earlier(out: Path, command: Command) -> dict[str, bytes]:
    """Earlier outputs of the command's names, unless its outputs are new; what the folder
    holds."""
    for name in () if command.fresh else command.files:
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_bytes(EARLIER)
    return _held(out)


def _held(out: Path) -> dict[str, bytes | None]:
    """Every file under ``out`` (hidden ones too) and its bytes, every folder (None)."""
    return {
        str(p.relative_to(out)): p.read_bytes() if p.is_file() else None
        for p in sorted(out.rglob("*"))
    }


def _main(argv: list[str], capsys) -> tuple[int, str]:
    """``powermodel argv`` in this process: its exit code and its standard error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        code = cli.main(argv)
    return code, capsys.readouterr().err


def _fill(out: Path, monkeypatch) -> None:
    """The disk under ``out`` full: the tmpfs filled to its last byte, else every flush to the
    disk failing as a full disk's does."""
    if not MOUNTS:

        def full(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(output, "_sync", full)
        return
    with open(out / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    assert os.statvfs(out).f_bavail == 0


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_full_disk_leaves_no_output_and_the_earlier_one_whole(
    name, out, inputs, capsys, monkeypatch
):
    command = COMMANDS[name]
    before = _earlier(out, command)
    _fill(out, monkeypatch)
    code, err = _main(command.argv(out, inputs), capsys)
    (line,) = err.splitlines()[-1:]
    assert code == 1, err
    assert line.startswith(f"powermodel: error: cannot write '{out}") and "disk is full" in line
    assert "free some space or choose another folder" in line
    held = _held(out)
    held.pop("filler", None)
    assert held == before  # the earlier files byte for byte, and nothing else


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_signal_while_writing_leaves_no_output_and_the_earlier_one_whole(
    name, stop, out, inputs, capsys, monkeypatch
):
    # the signal comes as the finished file is flushed under its temporary name: the moment
    # a rename too early or a cleanup missed would leave it (or a part of it) behind
    command = COMMANDS[name]
    before = _earlier(out, command)
    flush, seen = output._sync, []

    def signalled(path):
        if not seen:
            seen.append(path)
            assert signal.getsignal(stop) not in (signal.SIG_DFL, signal.default_int_handler), (
                "the command takes no handler for the signal: it would die where it stands"
            )
            os.kill(os.getpid(), stop)  # delivered in this thread at once, as a kill would be
        flush(path)

    monkeypatch.setattr(output, "_sync", signalled)
    handler = signal.getsignal(stop)
    code, err = _main(command.argv(out, inputs), capsys)
    (flushed,) = seen  # the file under its temporary name, or in a set's hidden folder
    assert output.PART in (flushed.suffix, flushed.parent.suffix)
    assert code == 128 + stop, err
    # the outputs as the command line named them; an export's, its folder
    said = " and ".join(str(out / name) for name in command.files if "/" not in name)
    said = said or str(out / command.files[0].split("/")[0])
    verb = "were" if " and " in said else "was"
    assert err.splitlines()[-1] == f"powermodel: interrupted: {said} {verb} not written"
    assert _held(out) == before
    assert signal.getsignal(stop) == handler  # the command's handler is gone with it


@pytest.mark.parametrize("name", ["export --to opendss", "ride-through --model"])
def test_a_signal_among_a_sets_renames_comes_after_the_last(name, out, inputs, capsys, monkeypatch):
    # a grid tool's files, or the .dyr and .aux, are renamed into place together: a signal
    # during the first rename is held until the last is done, and the set is whole and new
    command = COMMANDS[name]
    _earlier(out, command)
    rename = os.replace

    def signalled(source, target):
        if Path(source).parent.suffix == output.PART and not signalled.sent:
            signalled.sent = True
            os.kill(os.getpid(), signal.SIGTERM)
        rename(source, target)

    signalled.sent = False
    monkeypatch.setattr(os, "replace", signalled)
    code, err = _main(command.argv(out, inputs), capsys)
    assert signalled.sent and code == 143, err
    assert err.splitlines()[-1] == "powermodel: interrupted"  # nothing was lost
    held = _held(out)
    assert sorted(n for n in held if held[n] is not None) == sorted(command.files)
    assert all(held[n] != EARLIER for n in command.files)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_read_only_folder_is_refused_before_any_work(name, out, inputs, capsys, monkeypatch):
    command = COMMANDS[name]
    before = _earlier(out, command)
    if MOUNTS:
        subprocess.run(["mount", "-o", "remount,ro", str(out)], check=True)
    elif os.geteuid() != 0:
        out.chmod(0o555)
    else:
        made = tempfile.TemporaryFile

        def read_only(*args, dir=None, **kwargs):
            if dir is not None and Path(dir).resolve().is_relative_to(out.resolve()):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return made(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    _no_work(monkeypatch)
    code, err = _main(command.argv(out, inputs), capsys)
    assert code == 1, err
    (line,) = err.splitlines()
    assert line.startswith(f"powermodel: error: cannot write '{out}")
    assert line.endswith("give an output in a folder you can write")
    assert _held(out) == before


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_missing_folder_is_refused_before_any_work_and_not_made(
    name, tmp_path, inputs, capsys, monkeypatch
):
    # `run -o /nonexistent/dir/out.csv` made /nonexistent/dir: only what is asked for is made
    # (an export's folder itself, never its parents)
    missing = tmp_path / "nowhere" / "dir"
    _no_work(monkeypatch)
    code, err = _main(COMMANDS[name].argv(missing, inputs), capsys)
    assert code == 1, err
    (line,) = err.splitlines()
    assert line.endswith(
        f"the folder '{missing}' does not exist: create it first or choose another path"
    )
    assert not (tmp_path / "nowhere").exists()


def _no_work(monkeypatch) -> None:
    """Fail the test if a command starts its work: a run, a check's runs, a sweep, reading a
    trace to fit, the anchors."""
    for target in (
        "powermodel.cli.common.simulate",
        "powermodel.cli.study_commands.check_seeds",
        "powermodel.stream.prepare",
        "powermodel.sweep.sweep",
        "powermodel.fit_report.read_telemetry",
        "powermodel.reproduce.run_anchors",
    ):
        monkeypatch.setattr(target, lambda *a, _t=target, **k: pytest.fail(f"{_t} ran"))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_streamed_run_killed_mid_stream_leaves_no_part_of_itself(tmp_path, stop, suffix):
    # the case: Ctrl-C during a streamed Parquet write left a valid Parquet of a third
    # of the rows. A real process, signalled once its temporary file holds a chunk (polled)
    final = tmp_path / f"run{suffix}"
    final.write_bytes(EARLIER)
    day = ["--set", "simulation.duration=1d", "--set", "cooling.dt=16min"]
    process = subprocess.Popen(
        [sys.executable, "-m", "powermodel.cli", "run", REFERENCE, *day, "-o", str(final)]
        + ["--memory-gb", "0.01"],  # 86,400 steps over 10 MB: five chunks of 5.4 h
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
    )
    started = time.monotonic()
    while not any(p.stat().st_size for p in tmp_path.glob(f".{final.name}.*{output.PART}")):
        assert process.poll() is None, "the run ended before its file had a chunk"
        assert time.monotonic() - started < 120
        time.sleep(0.005)
    process.send_signal(stop)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + stop, err
    assert err.splitlines()[-1] == f"powermodel: interrupted: {final} was not written"
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    assert final.read_bytes() == EARLIER


def test_an_interrupt_after_the_write_does_not_say_it_was_lost(tmp_path, capsys, monkeypatch):
    # the file is written, then the sensitivity runs are interrupted: the file stays, whole
    out = tmp_path / "a.csv"
    monkeypatch.setattr(
        "powermodel.cli.run_commands.sensitivity",
        lambda *a, **k: os.kill(os.getpid(), signal.SIGINT),
    )
    code, err = _main(["run", REFERENCE, *HOUR, "-o", str(out), "--sensitivity"], capsys)
    assert code == 130 and err.splitlines()[-1] == "powermodel: interrupted"
    assert pacsv.read_csv(out).num_rows == 3600  # an hour at the preset's 1 s


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_output_takes_the_permissions_a_plain_open_gives(tmp_path, umask):
    before = os.umask(umask)
    try:
        output.write_text(tmp_path / "a.toml", "x = 1\n")
        with open(tmp_path / "b.toml", "w") as plain:
            plain.write("x = 1\n")
    finally:
        os.umask(before)
    mode = (tmp_path / "a.toml").stat().st_mode & 0o777
    assert mode == (tmp_path / "b.toml").stat().st_mode & 0o777 == 0o666 & ~umask


def test_an_output_written_over_a_file_keeps_that_files_permissions(tmp_path):
    # review of issue 26: a file put in place is a new file; over one kept private (0600) it
    # came back readable by all (0644 under umask 022), which writing in place never did
    path = tmp_path / "private.toml"
    output.write_text(path, "x = 1\n")
    path.chmod(0o600)
    output.write_text(path, "x = 2\n")
    assert path.stat().st_mode & 0o777 == 0o600 and path.read_text() == "x = 2\n"


def test_a_signal_during_a_files_rename_comes_after_it_is_counted(tmp_path, monkeypatch):
    # review of issue 26: a SIGTERM between a file's rename and its count said "out.csv was
    # not written" of a file put in place; the signal now waits for both
    path, rename = tmp_path / "out.csv", os.replace

    def signalled(source, target):
        rename(source, target)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "replace", signalled)
    with output.recorded() as written, output.interruptible() as received:
        with pytest.raises(output.Interrupted):
            output.write_text(path, "whole\n")
    assert received == [signal.SIGTERM] and written == [path]
    assert path.read_text() == "whole\n"


def test_a_set_whose_name_a_folder_holds_is_refused_before_any_rename(tmp_path):
    # review of issue 26: a rename failing midway (a folder of one file's name) left the files
    # renamed before it among the earlier set's; the names are checked before any rename
    (tmp_path / "b.csv").mkdir()
    (tmp_path / "a.csv").write_bytes(EARLIER)
    with pytest.raises(PowerModelError, match="b.csv'?: a folder has that name"):
        with output.staged_folder(tmp_path) as stage:
            (stage / "a.csv").write_text("new\n")
            (stage / "b.csv").write_text("new\n")
    assert (tmp_path / "a.csv").read_bytes() == EARLIER and (tmp_path / "b.csv").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv"]


@pytest.mark.parametrize(
    "name, what",
    [
        ("trace.csv.gz", "compressed: decompress it to .csv first (gunzip)"),
        ("trace.zip", "an archive: extract the .csv from it first"),
        ("profile.parquet", "a Parquet file: write the profile as .csv"),
        ("profile.nc", "a NetCDF file: write the profile as .csv"),
    ],
)
def test_check_says_what_it_takes_when_given_a_file_it_cannot_read(
    tmp_path, capsys, monkeypatch, name, what
):
    # `check trace.csv.gz` called the trace a scenario file (not UTF-8: "save the scenario
    # file as UTF-8")
    monkeypatch.chdir(tmp_path)
    Path(name).write_bytes(b"\x1f\x8b\x08\x00")
    code, err = _main(["check", name, "--rules", "ercot-5s"], capsys)
    assert code == 1
    (line,) = err.splitlines()
    assert "check takes a preset name, a .toml scenario or a measured trace as a .csv" in line
    assert f"'{name}' is {what}" in line and "scenario file" not in line


# --- the dashboard's working folder --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dashboard(tmp_path: Path, port: int) -> subprocess.Popen:
    """``python app.py`` on ``port``, its temporary folders in ``tmp_path``."""
    return subprocess.Popen(
        [sys.executable, str(ROOT / "app.py"), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)},
    )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_dashboard_removes_its_working_folder_when_stopped(tmp_path, stop):
    port = _free_port()
    server = _dashboard(tmp_path, port)
    started = time.monotonic()
    while True:  # serving: the port answers
        assert server.poll() is None, server.communicate()[1]
        assert time.monotonic() - started < 120
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    (workdir,) = tmp_path.glob("powermodel-dashboard-*")
    assert (workdir / "downloads").is_dir()
    server.send_signal(stop)
    _, err = server.communicate(timeout=60)
    assert server.returncode == 128 + stop, err  # stopped as asked, not killed
    assert "Traceback" not in err
    assert not workdir.exists()


def test_the_dashboard_removes_its_working_folder_when_it_cannot_start(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = _dashboard(tmp_path, taken.getsockname()[1])
        _, err = server.communicate(timeout=120)
    assert server.returncode == 1
    assert err.splitlines()[-1].startswith("powermodel: cannot serve on 127.0.0.1:")
    assert "Traceback" not in err
    assert list(tmp_path.glob("powermodel-dashboard-*")) == []


@pytest.mark.parametrize("refused", [None, "open", "write"])
def test_a_direct_file_holds_every_byte_written(tmp_path, monkeypatch, refused):
    # DirectFile writes whole aligned blocks past the page cache (O_DIRECT) and its last
    # partial block through it; where O_DIRECT is refused, at the open (tmpfs) or at a write
    # (EINVAL: a larger block), it writes through the cache from there: the same bytes
    monkeypatch.setattr(output.DirectFile, "BUFFER", 3 * output.DirectFile.ALIGN)
    opened, written = os.open, os.write

    def refusing_open(path, flags, *args):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return opened(path, flags, *args)

    def refusing_write(fd, data):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0):
            refusing_write.refused += 1
            raise OSError(errno.EINVAL, "Invalid argument")
        return written(fd, data)

    refusing_write.refused = 0
    if refused == "open":
        monkeypatch.setattr(os, "open", refusing_open)
    elif refused == "write":
        monkeypatch.setattr(os, "write", refusing_write)
    rng = np.random.default_rng(5)
    pieces = [rng.bytes(int(n)) for n in rng.integers(0, 20_000, 40)] + [b"", b"tail"]
    file = output.DirectFile(tmp_path / "out.bin")
    direct = file.direct
    for piece in pieces:
        file.write(piece)
    file.close()
    assert (tmp_path / "out.bin").read_bytes() == b"".join(pieces)  # 40 pieces, 12-KiB blocks
    if refused == "open":
        assert not direct
    if refused == "write" and direct:  # where this file system takes O_DIRECT at all
        assert refusing_write.refused == 1  # refused once, then written through the cache
