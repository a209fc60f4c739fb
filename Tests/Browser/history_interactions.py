"""Drives Liftoff's launch history page in headless Chromium: hovering names a point's commit,
clicking two points compares their commits.

    /usr/bin/python3 Tests/Browser/history_interactions.py HISTORY.html COMMIT_A COMMIT_B FUNCTION

Clicks the first chart's points of COMMIT_A and COMMIT_B and expects the comparison to show both
commits, every metric, and FUNCTION among the functions that moved. Prints one line per check and
exits 0 only when every check held and the console logged no error.
"""

import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)


def main():
    page, first, second, function = sys.argv[1:5]
    profile = tempfile.mkdtemp(prefix="liftoff-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--window-size=1200,1000", "--user-data-dir=" + profile):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get("file://" + page)
        charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
        check(len(charts) >= 1, f"the page draws charts ({len(charts)})")
        points = charts[0].find_elements(By.CSS_SELECTOR, ".point")
        titles = [p.find_element(By.TAG_NAME, "title").get_attribute("textContent") for p in points]
        check(any(t.startswith(first + " · ") for t in titles), f"a point's title names its commit ({titles[:2]})")
        check(len(charts[0].find_elements(By.CSS_SELECTOR, ".change")) >= 1, "the first chart marks a change point")

        def point(commit):
            return next(p for p in points if p.get_attribute("data-commit") == commit)

        driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", point(first))
        panel = driver.find_element(By.ID, "comparison")
        check(first in panel.text and "click another" in panel.text, "one click picks a commit")
        driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", point(second))
        deadline = time.monotonic() + 10
        while "Metric" not in panel.text and time.monotonic() < deadline:
            time.sleep(0.05)
        text = panel.text
        check(f"{first}" in text and f"{second}" in text, "the comparison names both commits")
        check("time to ready" in text, "the comparison lists the metrics")
        check(function in text, f"the comparison lists {function} among the functions that moved")
        picked = driver.find_elements(By.CSS_SELECTOR, ".point.picked")
        check(len(picked) >= 2, f"both points are marked ({len(picked)})")
        errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        check(not errors, "the console logged no error" + "".join("\n      " + e for e in errors))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
