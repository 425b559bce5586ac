"""Errors the user can act on. Every one is a ``ValueError`` so that callers can catch bad input."""

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "DataFileError",
    "PowerModelError",
    "ScenarioError",
]


class PowerModelError(ValueError):
    """Bad input to powermodel: the message names the problem and the fix, on one line (a line
    break from the input, a file name or a label, is shown as ``\\n``)."""

    def __str__(self) -> str:
        return super().__str__().replace("\r", "\\r").replace("\n", "\\n")


class ScenarioError(PowerModelError):
    """A scenario that cannot be loaded or does not validate."""


class DataFileError(PowerModelError):
    """A data file (weather, chiller curves, a measured trace) that cannot be read as its format."""
