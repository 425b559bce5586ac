"""The package as a user installs it (issue 11): a wheel, not the checkout, runs every preset from
any folder. It once failed on the reference preset: "shipped weather 'sterling' not found ...
powermodel runs from its repository checkout"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
# every preset, ten minutes, from the installed package only: the shipped weather and chiller
# curves must come with it
RUN_EVERY_PRESET = """
import sys
import powermodel
from powermodel import load_scenario, presets, simulate
from powermodel.iotools import data_dir

assert powermodel.__file__.startswith(sys.argv[1]), powermodel.__file__
assert str(data_dir()).startswith(sys.argv[1]), data_dir()
for name in presets():
    ds = simulate(load_scenario(name, {"simulation.duration": "10min"}))
    print(name, round(float(ds["facility_power"].mean()), 3))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel built from this checkout, installed into a folder of its own."""
    work = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(work / "dist")], check=True, timeout=300)
    (wheel,) = (work / "dist").glob("powermodel-*.whl")
    target = work / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q"]
    subprocess.run([*install, "--target", str(target), str(wheel)], check=True, timeout=300)
    return target


def _run(installed: Path, *argv: str) -> subprocess.CompletedProcess:
    """``python argv`` in a folder outside the checkout, importing the installed package first
    (its dependencies from this environment)."""
    elsewhere = installed.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, *argv], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_installed_package_runs_every_preset_from_any_folder(installed):
    done = _run(installed, "-c", RUN_EVERY_PRESET, str(installed))
    assert done.returncode == 0, done.stderr[-2000:]
    ran = dict(line.split() for line in done.stdout.splitlines())
    assert "llama3-405b-16k-h100" in ran and len(ran) >= 2
    assert all(float(mw) > 0 for mw in ran.values())


def test_the_installed_command_line_checks_a_preset(installed):
    argv = ["-m", "powermodel.cli", "check", "llama3-405b-16k-h100", "--rules", "ercot-5s"]
    done = _run(installed, *argv, "--set", "simulation.duration=1h")
    assert done.returncode in (0, 3), done.stderr[-2000:]  # 3: the rule is violated
    assert "ercot-5s" in done.stdout and "Traceback" not in done.stderr


def test_the_version_is_one_everywhere(capsys):
    # issue 11: no --version; pyproject, the package and CITATION.cff each said it apart
    import importlib.metadata

    import powermodel
    from powermodel import cli

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"powermodel {powermodel.__version__}"
    assert importlib.metadata.version("powermodel") == powermodel.__version__
    citation = (ROOT / "CITATION.cff").read_text()
    assert f'version: "{powermodel.__version__}"' in citation
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("BSD 3-Clause License") and "license: BSD-3-Clause" in citation
