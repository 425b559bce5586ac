"""Outputs whole or absent: every file powermodel writes for a user is made under a hidden
temporary name in the folder it is for (``.out.csv.k3j9x2.part``), flushed to the disk, and
renamed to its own name only once complete. A write that fails, a Ctrl-C or a SIGTERM removes
the temporary file and leaves an earlier file of the same name as it was.

A crash that no handler sees (SIGKILL, a power cut) can leave a hidden ``.part`` file, never a
partial file under the name asked for: the rename is the file's one appearance.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from powermodel.errors import PowerModelError

if TYPE_CHECKING:  # the command line's entry point imports this module: no xarray for it
    import xarray as xr

__all__ = [
    "check_directory",
    "check_folder",
    "DirectFile",
    "Interrupted",
    "interruptible",
    "netcdf",
    "recorded",
    "staged",
    "staged_folder",
    "write_text",
]

PART = ".part"  # the suffix of a file still being written
FULL = {errno.ENOSPC, errno.EDQUOT}  # the disk (or the user's share of it) is full
LOCKED = {errno.EROFS, errno.EACCES, errno.EPERM}  # the folder takes no new file
# where the outputs renamed into place are counted, while a caller asks (:func:`recorded`)
_RECORD: ContextVar[list[Path] | None] = ContextVar("powermodel_outputs", default=None)


def check_folder(path: str | Path) -> Path:
    """``path``, once a file can be made there: not a folder, in a folder that exists and can be
    written (a temporary file is made there and removed). Nothing is created: a missing folder
    is refused, with the fix. Checked before any work, so that no run's (or sweep's) results are
    lost at the end for want of a place to put them.

    Raises
    ------
    PowerModelError
        ``path`` is a folder; its folder is missing, is a file, or takes no new file.
    """
    path = Path(path)
    if path.is_dir():
        raise PowerModelError(f"cannot write {str(path)!r}: it is a folder: name a file in it")
    _writable(path.parent, path)
    return path


def check_directory(directory: str | Path) -> Path:
    """``directory``, once an output folder can be there: a folder that can be written, or a
    name that can be made one (in a folder that exists and can be written). Nothing is made
    here: :func:`staged_folder` makes the folder itself (never its parents) when its files are
    written.

    Raises
    ------
    PowerModelError
        ``directory`` is a file; it or its parent cannot be written; its parent is missing.
    """
    directory = Path(directory)
    if directory.is_dir():
        _writable(directory, directory)
    elif directory.exists():
        raise PowerModelError(
            f"cannot write into {str(directory)!r}: it is a file: give a folder's name"
        )
    else:
        _writable(directory.parent, directory)
    return directory


def _writable(folder: Path, path: Path) -> None:
    """Refuse, naming ``path``, a ``folder`` that is missing, is a file, or takes no new file."""
    if not folder.is_dir():
        found = next(p for p in (folder, *folder.parents) if p.exists())  # "." or "/" at last
        if not found.is_dir():
            raise PowerModelError(
                f"cannot write {str(path)!r}: {str(found)!r} is a file, not a folder: give an "
                "output in a folder"
            )
        raise PowerModelError(
            f"cannot write {str(path)!r}: the folder {str(folder)!r} does not exist: create it "
            "first or choose another path"
        )
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise PowerModelError(
            f"cannot write {str(path)!r}: no file can be made in {str(folder)!r} "
            f"({exc.strerror or exc}): give an output in a folder you can write"
        ) from None


@contextmanager
def staged(path: str | Path) -> Iterator[Path]:
    """A temporary file beside ``path`` for the block to write; renamed to ``path`` once the
    block completes, with the permissions a file opened for writing gets (the umask's).

    Any exception (a failed write, a full disk, :class:`KeyboardInterrupt`) removes the
    temporary file and leaves ``path`` as it was; an :class:`OSError` comes out as a
    :class:`PowerModelError` naming ``path``, the cause and the fix.
    """
    path = Path(path)
    try:
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=PART)
    except OSError as exc:
        raise _failed(exc, path) from None
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        _commit(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise _failed(exc, path) from exc
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextmanager
def staged_folder(directory: str | Path) -> Iterator[Path]:
    """A hidden folder inside ``directory`` for the block to write a set of files into; once
    the block completes, each file is flushed, then each is renamed into ``directory``.
    ``directory`` is made if missing (itself only: a missing parent is refused).

    Any exception removes the hidden folder, and ``directory`` if it was made here: no file of
    the set appears unless all were written. A name of the set taken by a folder is refused
    before any rename. A crash between two of the renames (SIGKILL, a power cut: a handled
    signal waits for them), or a rename the system refuses midway, leaves the files renamed so
    far, each whole, and the rest in the hidden folder.
    """
    directory = check_directory(directory)
    made = not directory.exists()
    try:
        if made:
            directory.mkdir()
        stage = Path(tempfile.mkdtemp(dir=directory, prefix=".powermodel-", suffix=PART))
    except OSError as exc:
        if made:
            shutil.rmtree(directory, ignore_errors=True)
        raise _failed(exc, directory) from None
    try:
        yield stage
        files = sorted(stage.iterdir())
        taken = [directory / f.name for f in files if (directory / f.name).is_dir()]
        if taken:  # found before any rename: the set's files would come in some, not all
            raise PowerModelError(
                f"cannot write {str(taken[0])!r}: a folder has that name: move it or choose "
                "another folder"
            )
        for file in files:
            _sync(file)
        with _deferred():  # every rename, or none; a signal comes after, the set counted made
            for file in files:
                os.replace(file, directory / file.name)
            _made(*(directory / file.name for file in files), directory)
        stage.rmdir()
        _sync_folder(directory)
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if made and not any(directory.iterdir()):
            directory.rmdir()
        if isinstance(exc, OSError):
            raise _failed(exc, directory) from exc
        raise


class DirectFile:
    """A file written in order past the page cache where the system allows (``O_DIRECT``),
    the writes whole aligned blocks from a buffer of :attr:`BUFFER` bytes: a long output (a CSV
    of weeks at 1 s is most of a gigabyte) then costs the disk's own write, made while the rest
    is computed, not the kernel's copy into cache pages it must first find (on a virtual
    machine whose free memory the host takes back, 2.1 s of 839 MB against 0.1 s direct),
    and :func:`staged` syncs it before its rename all the same. Where ``O_DIRECT`` is refused
    (tmpfs, some network file systems), at the open or at a write, the file is written
    through the cache as any other; its last partial block always is."""

    ALIGN = 4096  # a multiple of every disk's logical block
    BUFFER = 8 << 20

    def __init__(self, path: str | Path) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self.fd = None
        if hasattr(os, "O_DIRECT"):
            with suppress(OSError):
                self.fd = os.open(path, flags | os.O_DIRECT)
        self.direct = self.fd is not None
        if self.fd is None:
            self.fd = os.open(path, flags)
        self.buffer = mmap.mmap(-1, self.BUFFER)  # anonymous: aligned to a page
        self.held = 0

    def write(self, data: bytes | memoryview) -> None:
        """Append ``data``."""
        data = memoryview(data).cast("B")
        if not self.direct:  # what the buffer holds first (from before a write refused it)
            self._write(memoryview(self.buffer)[: self.held])
            self.held = 0
            self._write(data)
            return
        at = 0
        while at < len(data):
            take = min(self.BUFFER - self.held, len(data) - at)
            self.buffer[self.held : self.held + take] = data[at : at + take]
            self.held, at = self.held + take, at + take
            if self.held == self.BUFFER:
                self._write(memoryview(self.buffer))
                self.held = 0

    def close(self) -> None:
        """Write what the buffer holds and close the file."""
        try:
            if self.held:
                whole = self.held // self.ALIGN * self.ALIGN
                self._write(memoryview(self.buffer)[:whole])
                self._cached()
                self._write(memoryview(self.buffer)[whole : self.held])
                self.held = 0
        finally:
            os.close(self.fd)
            self.buffer = None  # freed with the last view of it (a failed write's traceback)

    def _write(self, data: memoryview) -> None:
        while len(data):
            try:
                data = data[os.write(self.fd, data) :]
            except OSError as exc:
                if not (self.direct and exc.errno == errno.EINVAL):
                    raise
                self._cached()  # a block size past ALIGN, or a file system that refuses it

    def _cached(self) -> None:
        """Write through the page cache from here on."""
        if self.direct:
            import fcntl  # noqa: PLC0415 - POSIX alone, where O_DIRECT is: not at start-up

            flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
            fcntl.fcntl(self.fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)
            self.direct = False


def write_text(path: str | Path, text: str) -> Path:
    """``text`` to ``path`` in UTF-8, through :func:`staged`."""
    path = Path(path)
    with staged(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


def netcdf(ds: xr.Dataset, path: str | Path, **options: Any) -> None:
    """``ds.to_netcdf(path, **options)``, a failed write raised as the :class:`OSError` it is:
    the NetCDF library reports one (a full disk among them) as a :class:`RuntimeError`
    ("NetCDF: HDF error"). Give it :func:`staged`'s temporary file."""
    try:
        ds.to_netcdf(path, **options)
    except RuntimeError as exc:
        raise OSError(str(exc)) from exc


def _commit(temporary: Path, path: Path) -> None:
    """The finished ``temporary`` on disk, then under its name: the rename comes after the
    data, so a crash leaves the old file or the new one. The file keeps the permissions of the
    one it replaces, or gets those a file opened for writing would (the umask's); a signal
    waits for the rename and its count, so that an interrupted command never calls a file it
    put in place not written."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    os.chmod(temporary, mode)
    _sync(temporary)
    with _deferred():
        os.replace(temporary, path)
        _made(path)
    _sync_folder(path.parent)


@contextmanager
def recorded() -> Iterator[list[Path]]:
    """The outputs renamed into place while the block runs (in its context), in order: a
    command that is interrupted says which of its outputs it had not made."""
    written: list[Path] = []
    token = _RECORD.set(written)
    try:
        yield written
    finally:
        _RECORD.reset(token)


def _made(*paths: Path) -> None:
    record = _RECORD.get()
    if record is not None:
        record.extend(paths)


def _sync(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename) to the disk, where its file system can: some (SMB,
    some FUSE mounts) refuse to sync a folder, and the file's data are synced already."""
    with suppress(OSError):
        _sync(folder)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _failed(exc: OSError, path: Path) -> PowerModelError:
    """A failed write as one line: the output, what the system said, and the fix. The disk's
    free space decides as much as the error's code: a full disk reaches NetCDF's writer as
    "HDF error" (or, creating a file, "Permission denied"), and numpy's without its code."""
    said = exc.strerror or str(exc)
    try:
        free = shutil.disk_usage(path if path.is_dir() else path.parent).free
    except OSError:
        free = None
    if exc.errno in FULL or free == 0:
        fix = "the disk is full: free some space or choose another folder"
    elif exc.errno in LOCKED:
        return PowerModelError(
            f"cannot write {str(path)!r}: {said}: give an output in a folder you can write"
        )
    else:
        fix = "if the disk is full, free some space or choose another folder; else write again"
    space = "unknown" if free is None else f"{free / 1e6:,.1f} MB"
    return PowerModelError(f"cannot write {str(path)!r}: {said} (free there: {space}): {fix}")


class Interrupted(KeyboardInterrupt):
    """A signal that stops the process (SIGINT, SIGTERM), raised in the main thread so that a
    ``kill`` unwinds as Ctrl-C does: every temporary file removed, every ``finally`` run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def code(self) -> int:
        """The exit code a shell gives a command the signal stopped: 128 + its number."""
        return 128 + self.signum


STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interruptible() -> Iterator[list[int]]:
    """While the block runs in the main thread, SIGINT and SIGTERM raise :class:`Interrupted`
    there; yields the signals received, in order (a server's loop may catch the exception to
    shut down: the list still says why). Elsewhere than the main thread, signals are left as
    they are. The handlers before are restored after."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def interrupt(signum: int, _frame: object) -> None:
        received.append(signum)
        raise Interrupted(signum)

    before = {s: signal.signal(s, interrupt) for s in STOPPING}
    try:
        yield received
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


@contextmanager
def _deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs (a few renames), then deliver the first
    to the handler before: a signal does not fall between two renames of a set. (Python runs
    signal handlers in the main thread whichever thread the signal reached, so holding them
    there holds them all.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    before = {s: signal.signal(s, lambda signum, _frame: held.append(signum)) for s in STOPPING}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        if held:
            signal.raise_signal(held[0])
