"""The package as a user installs it (issue 11): a wheel, not the checkout, runs every preset from
any folder. It once failed on the reference preset: "shipped weather 'sterling' not found ...
powermodel runs from its repository checkout"."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import sysconfig
import time
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
def wheel(tmp_path_factory) -> Path:
    """The wheel built from this checkout."""
    work = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(work / "dist")], check=True, timeout=300)
    (built,) = (work / "dist").glob("powermodel-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel) -> Path:
    """The wheel installed into a folder of its own."""
    work = wheel.parents[1]
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


def _bench(name: str):
    """A script of ``bench/`` as a module: the load test's client speaks Dash's protocol as the
    page does (as tests/test_forged_round.py uses it)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wheel_in_a_fresh_venv_serves_the_dashboard(wheel, tmp_path):
    # issue 28: a wheel installs no app.py; `pip install` of the wheel into a fresh venv, then
    # `powermodel dashboard`, from a folder outside the checkout, serves the reference
    from powermodel.webapp import REFERENCE_SCENARIO, ids

    # nothing of the checkout on the path (the tests may run with PYTHONPATH on it, and pip
    # then finds the wheel's package there, installed)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TMPDIR": str(tmp_path)}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    subprocess.run([*install, "--no-index", "-q", str(wheel)], env=env, check=True, timeout=300)
    # its dependencies from this environment, after the venv's own site-packages (a .pth line:
    # the folder is appended, and its own .pth files, this checkout's editable install among
    # them, are not run), so that the powermodel imported is the wheel's
    found = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    own = Path(found.stdout.strip())
    deps = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    (own / "zz_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [python, "-c", "import powermodel; print(powermodel.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(own / "powermodel" / "__init__.py")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [venv / "bin" / "powermodel", "dashboard", "--port", str(port)],
            cwd=elsewhere,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        protocol = _bench("load_dashboard")
        started = time.monotonic()
        while True:  # importing and warming: the port answers within the minute
            assert server.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() - started < 60, log.read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        page = protocol.Page(url, protocol.Record())
        assert page.open(), page.record.errors  # /, its layout and its callbacks
        assert page.session.get(url + "/", timeout=10).headers["Server"] == "waitress"
        assert page.props[(ids.PRESET, "value")] == REFERENCE_SCENARIO
        assert protocol.load(page), page.record.errors
        # the first summary: the reference's opening week (APP_OVERRIDES), simulated
        assert page.record.errors == []
        summary = page.props[(ids.SUMMARY, "children")]
        assert isinstance(summary, str) and summary.startswith("7d"), summary
        assert REFERENCE_SCENARIO in str(page.props[(ids.SCENARIO_NAME, "children")])
    finally:
        server.terminate()  # SIGTERM: stopped as Ctrl-C stops it
        server.wait(30)
    assert server.returncode == 143, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()
    assert f"powermodel dashboard on {url}/" in log.read_text()
    assert list(tmp_path.glob("powermodel-dashboard-*")) == []  # its working folder removed


def test_every_package_of_the_source_is_in_the_wheels_list():
    # pyproject.toml names its packages: a new sub-package left out is missing from the wheel
    # (the fit and rules packages were, until this test)
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "powermodel").rglob("__init__.py")
    }
    assert found - listed == set()
