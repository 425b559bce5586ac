"""The package's version: one place, read by the build (pyproject.toml), the package and the
files it writes (``powermodel_version`` in every Dataset)."""

__version__ = "0.1.0"
