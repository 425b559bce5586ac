"""Shared pytest configuration: the scenarios several test files start from, the headless
Chromium that dash.testing's browser fixtures drive, and the hypothesis profiles of the
hostile-input suite (tests/test_hostile.py)."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase
from selenium.webdriver.chrome.options import Options

REFERENCE = "llama3-405b-16k-h100"
QUIET = {"reliability.rate_scale": 0.0}  # no failures, so no checkpoints (Young/Daly)
# Two days of the reference, checkpoints a day apart (failures then interrupt long running
# stretches) and server fans at nominal speed (the weather reaches the GPUs only through the
# plant): what tests of the timeline and of the facility's response to a failure start from.
TWO_DAYS = {
    "simulation.duration": "2d",
    "simulation.seed": 3,
    "checkpoint.interval": "1d",
    "cluster.fans.slope": 0.0,
}

# Examples per property: "ci" (the default) keeps tests/test_hostile.py to a few minutes on two
# cores; "deep" (HYPOTHESIS_PROFILE=deep) runs 1,300 per property, over 20,000 in all. Failing
# examples are kept beside pytest's own cache, which git ignores, and replayed first.
_EXAMPLES = DirectoryBasedExampleDatabase(
    os.path.join(os.path.dirname(__file__), os.pardir, ".pytest_cache", "hypothesis")
)
settings.register_profile("ci", max_examples=60, database=_EXAMPLES, print_blob=True)
settings.register_profile("deep", max_examples=1300, database=_EXAMPLES, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CHROMIUM = os.environ.get("DASH_TEST_CHROMEPATH", "/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1440,900",
    # WebGL (plotly Scattergl) on the CPU: Chromium deprecated the silent fallback.
    "--enable-unsafe-swiftshader",
)


def pytest_setup_options() -> Options:
    """dash.testing hook: the ChromeOptions for ``dash_duo``; called only by browser fixtures.

    dash.testing retries a failing browser start for 30 s and then reports only a timeout, so a
    missing browser or driver fails here first, with its name.
    """
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"browser tests need Chromium at {CHROMIUM} (or set DASH_TEST_CHROMEPATH)")
    if shutil.which("chromedriver") is None:
        pytest.fail("browser tests need chromedriver on PATH (Debian: apt install chromium-driver)")
    options = Options()
    options.binary_location = CHROMIUM
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    return options
