"""Files uploaded to the dashboard: checked on arrival, kept on the server under names it makes.

A browser never names a file on the server: an uploaded weather file is stored under a token
made from its content and a safe version of its name, and the page holds only the token; the
server keeps the latest :data:`KEPT` and deletes the older ones. An uploaded telemetry trace is
read from a file of the server's naming and deleted once read (:func:`read_trace`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import tempfile
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import pandas as pd

from powermodel.errors import PowerModelError
from powermodel.iotools import TelemetryWarning, read_telemetry, read_weather
from powermodel.scenario import Scenario
from powermodel.sweep import open_results

KEPT = 32  # uploaded weather files kept on disk (1.6 MB each)
TOKEN = "uploaded:"  # the weather control's value for an uploaded file starts so


class UploadError(PowerModelError):
    """An upload the dashboard refuses (too large, not text, not the right kind of file)."""


def safe_name(text: object, fallback: str = "scenario") -> str:
    """A file name from user text: letters, digits, ``-``, ``_`` and ``.`` only, at most 80
    characters, never empty, never a path (``../x`` gives ``x``); ``fallback`` for anything
    else (no name, or not text: an upload's name as a forged request sends it)."""
    text = text if isinstance(text, str) else ""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80].strip("-.")
    return slug or fallback


def upload_size(contents: object) -> int:
    """The size of a ``dcc.Upload`` data URL's file, from its length (base64: 3 bytes in 4),
    before decoding it; 0 for anything else. [B]"""
    return len(contents.partition(",")[2]) * 3 // 4 if isinstance(contents, str) else 0


def decode_upload(contents: object, filename: str, limit: int) -> bytes:
    """The bytes of a ``dcc.Upload`` data URL, refused over ``limit`` bytes."""
    if not isinstance(contents, str):
        raise UploadError(f"{filename} did not arrive whole: upload it again")
    data = contents.partition(",")[2]
    size = upload_size(contents)
    if size > limit:
        raise UploadError(
            f"{filename} is {size / 1e6:.1f} MB; the dashboard takes files up to {limit / 1e6:g} MB"
        )
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UploadError(f"{filename} did not arrive whole: upload it again") from None


def read_trace(
    contents: object,
    filename: object,
    limit: int,
    folder: Path,
    period: float | None = None,
    gpus_per_node: int | None = None,
    gpus: int | None = None,
) -> tuple[pd.DataFrame, dict, bytes]:
    """An uploaded telemetry trace, read by :func:`powermodel.iotools.read_telemetry` (format
    detected) from a file of the server's naming in ``folder``, deleted once read. Returns the
    tidy frame, its ``meta`` (``source`` the name it came with, the repairs in ``warnings``) and
    the bytes (their hash keys the fit).

    Raises
    ------
    UploadError, PowerModelError
        Over ``limit`` bytes, or not a trace the reader takes (its reason, naming the file as
        it came).
    """
    label = safe_name(filename, "trace.csv")
    data = decode_upload(contents, label, limit)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".trace", delete=False) as f:
        f.write(data)
    staged = Path(f.name)
    try:
        with warnings.catch_warnings():  # the repairs are in meta["warnings"]: the page says them
            warnings.simplefilter("ignore", TelemetryWarning)
            frame, meta = read_telemetry(staged, None, period, gpus_per_node, gpus=gpus)
    except PowerModelError as exc:
        text = str(exc).replace(str(staged), label).replace(staged.name, label)
        raise type(exc)(text) from None
    finally:
        staged.unlink(missing_ok=True)
    meta["source"] = label
    meta["warnings"] = [str(w).replace(staged.name, label) for w in meta.get("warnings", ())]
    return frame, meta, data


def read_sweep_results(contents: object, filename: object, limit: int, folder: Path) -> tuple:
    """An uploaded sweep's results, read by :func:`powermodel.sweep.open_results` from a file
    of the server's naming in ``folder``, deleted once read. Returns the Dataset, the name it
    came with and its bytes (their hash keys it).

    Raises
    ------
    UploadError, PowerModelError
        Over ``limit`` bytes, or not a sweep's results (the reason, naming the file as it came).
    """
    label = safe_name(filename, "results.nc")
    data = decode_upload(contents, label, limit)
    if not label.lower().endswith(".nc"):
        raise UploadError(f"{label} is not a NetCDF file (.nc): give powermodel sweep's results")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".nc", delete=False) as f:
        f.write(data)
    staged = Path(f.name)
    try:
        results = open_results(staged, label)
    finally:
        staged.unlink(missing_ok=True)
    return results, label, data


class WeatherUploads:
    """The EPW files uploaded to this server, by token, in ``folder``; thread-safe."""

    def __init__(self, folder: Path, limit: int, kept: int = KEPT) -> None:
        self.folder = folder
        self.limit = limit
        self.kept = kept
        folder.mkdir(parents=True, exist_ok=True)
        self._paths: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        # the path of a file stored here (its token's), with the name it came with
        self._stored = re.compile(
            re.escape(str(folder)) + r"/[0-9a-f]{16}-(?P<label>[A-Za-z0-9._-]+)"
        )

    def paths(self) -> dict[str, str]:
        """Token -> path of each file kept: a copy, as other requests may upload meanwhile."""
        with self._lock:
            return dict(self._paths)

    def add(self, contents: object, filename: object) -> tuple[str, str, dict]:
        """Store an uploaded EPW file if it reads as one: its token, label and the reader's
        ``meta``.

        Raises
        ------
        UploadError, PowerModelError
            Too large, not an EPW file, or not one the reader takes (with its reason).
        """
        label = safe_name(filename, "weather.epw")
        data = decode_upload(contents, label, self.limit)
        if not label.lower().endswith(".epw"):
            raise UploadError(f"{label} is not an EPW file (.epw)")
        token = f"{TOKEN}{hashlib.sha256(data).hexdigest()[:16]}-{label}"
        path = self.folder / token.removeprefix(TOKEN)
        # read under a name of its own, then put in place and registered in one step: a run
        # reading the same file meanwhile sees it whole, and no eviction falls in between
        with tempfile.NamedTemporaryFile(dir=self.folder, suffix=".epw", delete=False) as f:
            f.write(data)
        staged = Path(f.name)
        try:
            _, meta = read_weather(staged)
        except PowerModelError as exc:
            staged.unlink()
            raise type(exc)(str(exc).replace(str(staged), label)) from None
        with self._lock:
            os.replace(staged, path)
            self._paths[token] = str(path)
            self._paths.move_to_end(token)
            while len(self._paths) > self.kept:
                _, old = self._paths.popitem(last=False)
                Path(old).unlink(missing_ok=True)
        return token, label, meta

    def label_of(self, weather: str) -> str | None:
        """The name an uploaded file came with, for its path here; None for any other path."""
        match = self._stored.fullmatch(weather)
        return match["label"] if match else None

    def portable(self, scenario: Scenario) -> Scenario:
        """``scenario`` as it can leave the server: an uploaded weather file named as it came
        (the name resolves beside the scenario file it is saved in), not by its path here."""
        label = self.label_of(scenario.site.weather)
        if label is None:
            return scenario
        site = scenario.site.model_copy(update={"weather": label})
        return scenario.model_copy(update={"site": site})

    def public(self, message: str) -> str:
        """A message as the page may show it: an uploaded file's path here becomes its name."""
        return self._stored.sub(lambda m: f"{m['label']} (uploaded)", message)
