"""Screenshots of every view of the dashboard in headless Chromium, with a layout check.

``python bench/screenshot.py OUT_DIR [--size 1440x900] [--set KEY=VALUE ...]`` serves
``create_app()`` from a thread, opens each tab in a viewport of the size asked for, waits until
its figures are drawn, saves ``OUT_DIR/<view>.png`` (and ``controls.png``, the sidebar scrolled
to its end) and checks that no two controls overlap and
that none is cut off at the edge of the sidebar, the header or the window. It prints what it
found, the browser console's warnings and errors, and exits 1 if there were any.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from pathlib import Path

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
# what each view has drawn when it is ready
READY = {
    "power": ".js-plotly-plot .legend",
    "thermal": f"#{ids.THERMAL_DIURNAL} .bars",
    "grid": f"#{ids.COMPLIANCE} .ag-cell",
    "mitigation": f"#{ids.MITIGATION_COSTS} .ag-cell",
    "compare": f"#{ids.COMPARE_TABLE} .ag-cell",
    "campus": f"#{ids.CAMPUS_NOTE}",
    "grid events": f"#{ids.GRID_EVENTS_NOTE}",
    "sweep": f"#{ids.SWEEP_GRAPH} .scatterlayer .trace",
    "export": f"#{ids.EXPORT_LINK}[href*='download']",
}
MITIGATION_CAP = 550  # W on 700 W H100s: what the mitigation view shows
# Boxes that must neither overlap one another nor stick out of their container.
CHECKED = ".header > *, .sidebar .control, .sidebar .upload, .sidebar summary, .view .control"
OVERLAP_SCRIPT = """
const problems = [];
const text = (el) => (el.innerText || el.id || el.className).slice(0, 30).replace(/\\n/g, ' ');
// each box as far as it shows: clipped to the scrolling panel that holds it
const shown = (el) => {
  const r = el.getBoundingClientRect();
  const h = (el.closest('.sidebar, .header, main') || document.body).getBoundingClientRect();
  return {el, r, h, top: Math.max(r.top, h.top), bottom: Math.min(r.bottom, h.bottom)};
};
const boxes = [...document.querySelectorAll(arguments[0])].map(shown)
  .filter((b) => b.r.width > 0 && b.bottom > b.top);
for (const b of boxes) {
  if (b.r.left < b.h.left - 1 || b.r.right > b.h.right + 1 || b.r.right > window.innerWidth + 1) {
    problems.push('cut off: ' + text(b.el));
  }
}
for (let i = 0; i < boxes.length; i++) {
  for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
    const apart = a.r.right <= b.r.left + 1 || b.r.right <= a.r.left + 1
      || a.bottom <= b.top + 1 || b.bottom <= a.top + 1;
    if (!apart) problems.push('overlap: ' + text(a.el) + ' / ' + text(b.el));
  }
}
return problems;
"""


def browser(width: int, height: int, chromium: str) -> webdriver.Chrome:
    """Headless Chromium whose viewport (not window) is ``width`` × ``height``."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (*CHROMIUM_ARGS, f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options)
    # Headless windows keep room for browser chrome they do not draw: set the viewport itself.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    return driver


def sweep_results(out: Path) -> Path:
    """Results of a small sweep for the sweep view: trough depth and checkpoint interval, three
    seeds, two hours each at 50 times the failure rate (seeds that differ)."""
    from powermodel.sweep import sweep, write

    grid = {"workload.trough_depth": [0.2, 0.3, 0.4, 0.5], "checkpoint.interval": ["20min", "1h"]}
    fixed = {"simulation.duration": "2h", "reliability.rate_scale": 50.0}
    ds = sweep("llama3-405b-16k-h100", grid, 3, overrides=fixed, workers=0, progress=False)
    return write(ds, out.resolve() / "sweep-results.nc")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Screenshots of every dashboard view.")
    parser.add_argument("out", help="folder for the PNG files")
    parser.add_argument("--size", default="1440x900", help="viewport WIDTHxHEIGHT [px]")
    parser.add_argument(
        "--set", action="append", default=None, metavar="KEY=VALUE", help="app override"
    )
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="browser binary")
    parser.add_argument("--preset", default="llama3-405b-16k-h100", help="the preset opened")
    args = parser.parse_args(argv)
    width, height = (int(n) for n in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = create_app(args.preset, overrides=args.set)
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = browser(width, height, args.chromium)
    problems: list[str] = []
    try:
        page = f"http://127.0.0.1:{server.server_port}/?preset={args.preset}"
        driver.get(page)
        WebDriverWait(driver, 90).until(
            EC.presence_of_element_located((By.CSS_SELECTOR, READY["power"]))
        )
        for view in ids.VIEWS:
            if view == "mitigation":  # a link that sets a mitigation, as a user would share it
                driver.get(f"{page}&mitigation.power_cap={MITIGATION_CAP}&tab=mitigation")
            else:
                tab = ids.VIEWS.index(view) + 1
                driver.find_element(By.CSS_SELECTOR, f".tab:nth-child({tab})").click()
            if view == "compare":
                driver.find_element(By.ID, ids.PIN).click()
            if view == "sweep":  # a small sweep's results, uploaded as a user would
                upload = f"#{ids.UPLOAD_SWEEP} input[type=file]"
                driver.find_element(By.CSS_SELECTOR, upload).send_keys(str(sweep_results(out)))
            ready = READY[view]
            WebDriverWait(driver, 90).until(
                EC.presence_of_element_located((By.CSS_SELECTOR, ready))
            )
            WebDriverWait(driver, 90).until(
                lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-dash-is-loading='true']")
            )
            path = out / f"{view}.png"
            driver.save_screenshot(str(path))
            found = driver.execute_script(OVERLAP_SCRIPT, CHECKED)
            problems += [f"{view}: {p}" for p in found]
            print(f"{path}: {'; '.join(found) or 'no overlapping or cut-off controls'}")
        # the controls below the fold: the sidebar scrolled to its end
        driver.execute_script("document.querySelector('.sidebar').scrollTop = 1e6")
        path = out / "controls.png"
        driver.save_screenshot(str(path))
        found = driver.execute_script(OVERLAP_SCRIPT, CHECKED)
        problems += [f"controls: {p}" for p in found]
        print(f"{path}: {'; '.join(found) or 'no overlapping or cut-off controls'}")
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                problems.append(f"console error: {entry['message']}")
            elif entry["level"] != "INFO":  # swiftshader's WebGL notes, for instance
                print(f"console {entry['level']}: {entry['message']}")
    finally:
        driver.quit()
        server.shutdown()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
