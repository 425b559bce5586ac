"""Readers of external data files. Each returns ``(data, meta)`` with columns renamed to the
project's vocabulary (after pvlib's ``iotools``); a bad file raises :class:`DataFileError`
naming the file and the problem."""

import importlib
from functools import cache
from pathlib import Path
from typing import Any


@cache
def data_dir() -> Path:
    """The shipped data (weather, chiller curves, published tables): ``powermodel/data`` in an
    installed package, the repository's ``data/`` in a checkout (the one copy the wheel maps).
    Found once a process: every scenario loaded asks (its weather, its site), and resolving the
    path was a tenth of a sweep point's loading."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "data"
    return installed if installed.is_dir() else package.parent / "data"


def is_file(path: str | Path) -> bool:
    """Whether ``path`` is an existing file; False also for a name the system cannot take
    (longer than it allows, or holding a NUL byte), which no file can have."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def exists(path: str | Path) -> bool:
    """Whether ``path`` exists; False for a name the system cannot take (as :func:`is_file`)."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


MAX_TEXT_BYTES = 1 << 20  # a scenario, rule or sweep file: a few hundred lines at the most


def read_text(
    path: Path,
    what: str,
    error: type[Exception] = ValueError,
    limit: int = MAX_TEXT_BYTES,
) -> str:
    """A small text file of the user's (a scenario, rule or sweep file), refused with one
    ``error`` naming ``path`` and the fix when it is missing, not a file, over ``limit`` bytes
    (checked before reading), not UTF-8 or unreadable; ``what`` names the kind of file."""
    try:
        path = Path(path)
        if not path.is_file():
            if not path.exists():
                raise FileNotFoundError
            raise error(f"{path}: not a file: give a {what}")
        size = path.stat().st_size
        if size > limit:
            raise error(f"{path}: {size:,} bytes, more than the {limit:,} a {what} needs")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file in UTF-8: save the {what} as UTF-8") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, error):
            raise
        why = getattr(exc, "strerror", None) or str(exc)
        raise error(f"{path}: cannot read the {what} ({why})") from None


# The readers and the shipped weather, each imported from its module when first read (:pep:`562`:
# a scenario's keys need no reader of telemetry, nor pandas): the public surface (the dashboard
# calls only the public API; tests/test_layers.py checks it)
_READERS = {
    "FORMATS": "powermodel.iotools.telemetry",
    "NVIDIA_SMI_QUERY": "powermodel.iotools.telemetry",
    "SHIPPED": "powermodel.iotools.weather",
    "TelemetryWarning": "powermodel.iotools.telemetry",
    "read_epw": "powermodel.iotools.weather",
    "read_telemetry": "powermodel.iotools.telemetry",
    "read_tmy3": "powermodel.iotools.weather",
    "read_weather": "powermodel.iotools.weather",
    "shipped_weather": "powermodel.iotools.weather",
    "to_grid": "powermodel.iotools.telemetry",
}

__all__ = list(_READERS)


def __getattr__(name: str) -> Any:
    """A reader (or the shipped weather), imported from its module on first use and kept."""
    if name not in _READERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_READERS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
