"""What starting powermodel imports (issue 30, acceptance 1): ``import powermodel`` and the
command line's ``--version`` and ``--help`` import none of the numeric stack, ``keys`` and
``presets`` none of the data stack (numpy stays: the scenario's models compute with it), a run
no web stack; the package's face still gives every name it lists, and ``powermodel.simulate``
is the function whatever order its module is imported in. Each case runs in a fresh
interpreter (a module imported by another test would hide an import). The times are the bench's
(bench/bench_startup.py), not a test's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

NUMERIC = ("numpy", "pandas", "xarray", "scipy", "pyarrow", "dash", "plotly")
WEB = ("dash", "plotly", "powermodel.webapp")


def _loaded_after(code: str) -> list[str]:
    """The top packages of ``NUMERIC`` (and the dashboard's) that ``code`` leaves imported."""
    shown = f"print(sorted(m for m in {NUMERIC + WEB!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + textwrap.dedent(code) + "\n" + shown],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


def _command(*argv: str) -> str:
    """The command line run in this interpreter's process, as the console script runs it."""
    return f"""
import contextlib, io
from powermodel.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({list(argv)!r})
    except SystemExit as exc:
        assert exc.code == 0, exc.code
"""


def test_importing_the_package_imports_no_numeric_stack():
    assert _loaded_after("import powermodel") == []


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_numeric_stack(argv):
    assert _loaded_after(_command(*argv)) == []


@pytest.mark.parametrize("argv", [["keys"], ["keys", "cooling"], ["presets"]])
def test_keys_and_presets_import_no_data_stack(argv):
    # numpy stays: the scenario's models (its validators, derived levels) compute with it
    assert _loaded_after(_command(*argv)) == ["numpy"]


def test_a_run_and_its_metrics_import_no_web_stack():
    loaded = _loaded_after(
        """
from powermodel import load_scenario, metrics, simulate
metrics(simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "1h"})))
"""
    )
    assert [m for m in loaded if m in WEB] == []


def test_every_name_of_the_face_resolves_to_its_modules():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
import importlib
import powermodel
for name, module in powermodel._FACE.items():
    assert getattr(powermodel, name) is getattr(importlib.import_module(module), name), name
assert set(powermodel.__all__) <= set(dir(powermodel))
assert callable(powermodel.rules.load_rules)  # a module read off the package is imported
assert not hasattr(powermodel, "no_such_name")
from powermodel import *  # noqa: F403
print(sorted(powermodel.__all__))
"""
            ),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == sorted(
        [
            "PowerModelError",
            "Scenario",
            "ScenarioError",
            "__version__",
            "load_scenario",
            "metrics",
            "presets",
            "sensitivity",
            "simulate",
        ]
    )


# each imports the modules that share a name of the face in another order, then reads the face
ORDERS = [
    "import powermodel.simulate",
    "from powermodel.simulate import SENSORS\nfrom powermodel import simulate as f",
    "from powermodel import simulate as f\nimport powermodel.simulate",
    "import powermodel.stream\nimport powermodel.sensitivity",
    "import powermodel.sensitivity\nfrom powermodel import sensitivity as g\n"
    "import powermodel.simulate",
    "from powermodel.rules import load_rules\nload_rules('ercot-5s')\nimport powermodel.presets",
    "import powermodel.cli.common",
]


@pytest.mark.parametrize("order", ORDERS)
def test_the_face_keeps_its_functions_whatever_imports_first(order):
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            order
            + textwrap.dedent(
                """
import sys, types
import powermodel
from powermodel import presets, sensitivity, simulate
assert simulate is powermodel.simulate is sys.modules["powermodel.simulate"].simulate
assert sensitivity is powermodel.sensitivity
assert sensitivity is sys.modules["powermodel.sensitivity"].sensitivity
assert presets is powermodel.presets and callable(presets)
assert isinstance(sys.modules["powermodel.simulate"], types.ModuleType)
ds = powermodel.simulate(powermodel.load_scenario("llama3-405b-16k-h100",
                                                  {"simulation.duration": "1h"}))
print(type(ds).__name__)
"""
            ),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Dataset"


def test_xarray_imported_before_powermodel_still_defers_dask():
    # the face defers dask's record at once when xarray is already imported (else on its import)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
import sys
import xarray
from powermodel import load_scenario, simulate
simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "1h"}))
print(sorted(m for m in sys.modules if m.split(".")[0] == "dask"))
"""
            ),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
