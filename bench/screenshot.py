"""Screenshot of the dashboard in headless Chromium: ``python bench/screenshot.py OUT.png``.

Serves ``create_app()`` from a thread, loads it in a viewport of the size asked for, waits until
plotly has drawn the figure, saves the screenshot and prints the console's warnings and errors.
"""

from __future__ import annotations

import argparse
import logging
import threading

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.wait import WebDriverWait
from werkzeug.serving import make_server

from powermodel.webapp import create_app, ids

CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--enable-unsafe-swiftshader",
    "--hide-scrollbars",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Screenshot of the powermodel dashboard.")
    parser.add_argument("out", help="PNG file to write")
    parser.add_argument("--size", default="1440x900", help="viewport WIDTHxHEIGHT [px]")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="scenario override, e.g. simulation.duration=2d",
    )
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="browser binary")
    args = parser.parse_args(argv)
    width, height = (int(n) for n in args.size.split("x"))

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 0, create_app(overrides=args.set).server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    options = webdriver.ChromeOptions()
    options.binary_location = args.chromium
    for arg in (*CHROMIUM_ARGS, f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options)
    try:
        # Headless windows keep room for browser chrome they do not draw: set the viewport itself.
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        driver.get(f"http://127.0.0.1:{server.server_port}/")
        WebDriverWait(driver, 60).until(
            EC.presence_of_element_located((By.CSS_SELECTOR, f"#{ids.POWER_GRAPH} .legend"))
        )
        driver.save_screenshot(args.out)
        for entry in driver.get_log("browser"):
            if entry["level"] != "INFO":
                print(entry["level"], entry["message"])
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
