"""Shared pytest configuration: the headless Chromium that dash.testing's browser fixtures drive."""

from __future__ import annotations

import os
import shutil

import pytest
from selenium.webdriver.chrome.options import Options

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
