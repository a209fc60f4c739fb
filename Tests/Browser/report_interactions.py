"""Drives Liftoff's HTML report in headless Chromium, as a user would, and checks what each
interaction changes on the page.

    /usr/bin/python3 Tests/Browser/report_interactions.py REPORT.html SEARCH_TERM [EXPECTED_TEXT ...]

Needs Debian's chromium, chromium-driver and python3-selenium (`make test-deps` installs them;
the module lives in Debian's own interpreter, /usr/bin/python3). Each EXPECTED_TEXT must appear in
the page's text once it is drawn. Prints one line per check and exits 0 only when every check held
and the page's console logged no error.
"""

import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)


def wait_for(predicate, seconds=30.0):
    """Polls `predicate` until it returns a true value or `seconds` pass; returns its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def browser(profile_folder):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--window-size=1400,1000",
                     "--user-data-dir=" + profile_folder):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def window_ms(driver):
    """The timeline's visible window (start, end) in ms, read from its readout."""
    text = driver.find_element(By.CSS_SELECTOR, "#timeline .window-readout").text
    numbers = re.findall(r"[\d,]+(?:\.\d+)?", text)
    start, end = (float(n.replace(",", "")) for n in numbers[:2])
    return start, end


def flame_state(driver):
    return driver.execute_script("""
        var svg = document.getElementById('flame-graph');
        var frames = svg.querySelectorAll('rect.fg-frame');
        return {
          width: +svg.getAttribute('width'), frames: frames.length,
          matches: svg.querySelectorAll('rect.fg-match').length,
          note: document.querySelector('#flame .flame-note').textContent,
          labels: Array.from(svg.querySelectorAll('text')).map(function (t) { return t.textContent; })
        };""")


def button(driver, section, label):
    for candidate in driver.find_elements(By.CSS_SELECTOR, "#" + section + " button"):
        if candidate.text.strip() == label:
            return candidate
    raise AssertionError("no button '" + label + "' in #" + section)


def flame_graph(driver, term):
    start = flame_state(driver)
    check(start["frames"] > 1 and "Zoomed into" not in start["note"], "the flame graph draws unzoomed")
    # Zoom into the widest frame narrower than most of the graph, so that zooming visibly widens it.
    target = driver.execute_script("""
        var full = +document.getElementById('flame-graph').getAttribute('width');
        var best = null;
        document.querySelectorAll('#flame-graph rect.fg-frame').forEach(function (r) {
          var w = +r.getAttribute('width');
          if (r.getAttribute('data-i') === '0' || w > full * 0.8 || w < 20) return;
          if (!best || w > +best.getAttribute('width')) best = r;
        });
        return best ? best.getAttribute('data-i') : null;""")
    check(target is not None, "a frame below the root exists")
    # Every redraw replaces the frames' elements: look a frame up again before each use.
    def frame(index):
        return driver.find_element(By.CSS_SELECTOR, "#flame-graph rect[data-i='%s']" % index)

    def click(element):
        ActionChains(driver).move_to_element(element).click().perform()

    ActionChains(driver).move_to_element(frame(target)).perform()
    tooltip = wait_for(lambda: driver.execute_script(
        "var t = document.querySelector('.tooltip'); return t && !t.hidden ? t.textContent : '';"))
    check("sample" in tooltip, "hovering a frame shows its samples in a tooltip")
    click(frame(target))
    zoomed = wait_for(lambda: "Zoomed into" in flame_state(driver)["note"] and flame_state(driver))
    check(bool(zoomed), "clicking a frame zooms into it")
    if zoomed:
        width = float(frame(target).get_attribute("width"))
        check(abs(width - zoomed["width"]) < 1, "the zoomed frame fills the graph's width")
    click(frame(0))
    check(wait_for(lambda: "Zoomed into" not in flame_state(driver)["note"]), "clicking the root zooms back out")
    click(frame(target))
    check(wait_for(lambda: "Zoomed into" in flame_state(driver)["note"]), "a frame zooms in again")
    button(driver, "flame", "Reset zoom").click()
    check(wait_for(lambda: "Zoomed into" not in flame_state(driver)["note"]), "Reset zoom zooms back out")

    search = driver.find_element(By.CSS_SELECTOR, "#flame input[type=search]")
    search.send_keys(term)
    matched = wait_for(lambda: flame_state(driver)["matches"])
    check(matched > 0, "searching '%s' highlights %d frames" % (term, matched))
    info = driver.find_element(By.CSS_SELECTOR, "#flame .match-info").text
    check(info.startswith("matched: ") and info.endswith(" of samples"), "the search says how much it matched: " + info)
    search.send_keys("zzzz-no-such-frame")
    check(wait_for(lambda: flame_state(driver)["matches"] == 0), "a search that matches nothing highlights nothing")
    search.clear()
    search.send_keys(" ")  # `clear` sends no input event; a blank query clears the search
    check(wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#flame .match-info").text == ""),
          "clearing the search removes its summary")

    merged = flame_state(driver)
    button(driver, "flame", "Per thread").click()
    threads = driver.execute_script("return JSON.parse(document.getElementById('liftoff-data').textContent)"
                                    ".threads.map(function (t) { return t.label; });")
    per_thread = wait_for(lambda: button(driver, "flame", "Per thread").get_attribute("aria-pressed") == "true"
                          and flame_state(driver))
    check(bool(per_thread), "Per thread is pressed after a click")
    if per_thread:
        named = [label for label in per_thread["labels"] if any(label.startswith(t[:8]) for t in threads)]
        check(len(named) > 0, "the per-thread graph has a frame per thread (%s)" % ", ".join(named[:3]))
        check(per_thread["frames"] != merged["frames"], "the per-thread graph differs from the merged one")
    button(driver, "flame", "Merged").click()
    check(wait_for(lambda: flame_state(driver)["frames"] == merged["frames"]), "Merged draws the merged graph again")

    button(driver, "flame", "Wall clock").click()
    wall = wait_for(lambda: driver.find_element(By.ID, "samples-wall").get_attribute("aria-pressed") == "true"
                    and flame_state(driver))
    check(bool(wall) and "waiting" in wall["note"], "Wall clock counts waiting samples too")
    button(driver, "flame", "CPU").click()
    check(wait_for(lambda: driver.find_element(By.ID, "samples-cpu").get_attribute("aria-pressed") == "true"
                   and flame_state(driver)["frames"] == merged["frames"]), "CPU draws the running samples again")


def timeline(driver):
    full = window_ms(driver)
    check(full[1] > full[0], "the timeline shows %.1f–%.1f ms" % full)
    button(driver, "timeline", "+").click()
    halved = wait_for(lambda: window_ms(driver) != full and window_ms(driver))
    check(bool(halved) and abs((halved[1] - halved[0]) - (full[1] - full[0]) / 2) <= (full[1] - full[0]) * 0.02,
          "Zoom in halves the window: %s" % (halved,))
    button(driver, "timeline", "Reset").click()
    check(wait_for(lambda: window_ms(driver) == full), "Reset shows the whole launch again")

    axis = driver.find_element(By.CSS_SELECTOR, "#timeline svg.fc-axis")
    ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(axis), 0, -400).perform()
    wheeled = wait_for(lambda: window_ms(driver) != full and window_ms(driver))
    check(bool(wheeled) and (wheeled[1] - wheeled[0]) < (full[1] - full[0]) * 0.8,
          "scrolling the wheel up over the axis zooms in: %s" % (wheeled,))
    if wheeled:
        before = window_ms(driver)
        ActionChains(driver).move_to_element(axis).click_and_hold().move_by_offset(-300, 0).release().perform()
        panned = wait_for(lambda: window_ms(driver) != before and window_ms(driver))
        check(bool(panned) and panned[0] > before[0]
              and abs((panned[1] - panned[0]) - (before[1] - before[0])) <= (before[1] - before[0]) * 0.02,
              "dragging the axis to the left pans later in time, keeping the width: %s → %s" % (before, panned))


def insights(driver):
    """The first insight's link shows its moment on the timeline, in wall-clock time."""
    links = driver.find_elements(By.CSS_SELECTOR, "#insights .insight-link")
    if not links:
        check("No insight fired" in driver.find_element(By.ID, "insights").text, "the Insights card says none fired")
        return
    href = links[0].get_attribute("href")
    match = re.search(r"#t=([0-9.]+)-([0-9.]+)$", href or "")
    check(bool(match), "an insight links to its moment: %s" % href)
    if not match:
        return
    start, end = float(match.group(1)), float(match.group(2))
    links[0].click()
    # The readout rounds to 0.1 ms; the window adds a margin of 15 % on each side.
    shown = wait_for(lambda: window_ms(driver) if window_ms(driver)[0] <= start + 0.1 and window_ms(driver)[1] >= end - 0.1
                     and (window_ms(driver)[1] - window_ms(driver)[0]) <= (end - start) * 1.6 + 1 else None)
    check(bool(shown), "the timeline shows %.1f–%.1f ms after the click: %s" % (start, end, shown or window_ms(driver)))
    check(driver.find_element(By.ID, "samples-wall").get_attribute("aria-pressed") == "true",
          "the link switches to wall-clock time, where waits show")
    driver.find_element(By.CSS_SELECTOR, "#timeline .controls button:last-child").click()
    driver.find_element(By.ID, "samples-cpu").click()


def duration_ms(text):
    text = text.strip().replace(",", "")
    return float(text) if re.fullmatch(r"-?\d+(\.\d+)?", text) else None


def task_table(driver):
    headers = driver.find_elements(By.CSS_SELECTOR, "#tasks th")
    names = [header.text.strip() for header in headers]
    check("Duration" in names, "the task table has a Duration column")
    if "Duration" not in names:
        return
    column = names.index("Duration")

    def durations():
        cells = driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr td:nth-child(%d)" % (column + 1))
        return [duration_ms(cell.text) for cell in cells]

    sort_button = headers[column].find_element(By.TAG_NAME, "button")
    sort_button.click()
    check(wait_for(lambda: headers[column].get_attribute("aria-sort") == "ascending"), "a first click sorts ascending")
    ascending = [value for value in durations() if value is not None]
    check(len(ascending) > 1 and ascending == sorted(ascending), "durations ascend: %s" % ascending[:6])
    sort_button.click()
    check(wait_for(lambda: headers[column].get_attribute("aria-sort") == "descending"), "a second click sorts descending")
    descending = [value for value in durations() if value is not None]
    check(len(descending) == len(ascending) and descending == sorted(descending, reverse=True),
          "durations descend: %s" % descending[:6])
    start_header = headers[names.index("Start (ms)")]
    check(start_header.get_attribute("aria-sort") == "none", "only the sorted column is marked")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: report_interactions.py REPORT.html SEARCH_TERM [EXPECTED_TEXT ...]")
    page = Path(sys.argv[1]).resolve()
    if not page.is_file():
        sys.exit("%s does not exist." % page)
    profile_folder = tempfile.mkdtemp(prefix="liftoff-selenium-")
    driver = browser(profile_folder)
    try:
        driver.get(page.as_uri())
        ready = wait_for(lambda: driver.execute_script("return document.body.dataset.ready"), seconds=120)
        check(ready == "true", "the page's script finished drawing (data-ready=%s)" % ready)
        if ready == "true":
            text = driver.execute_script("return document.body.innerText")
            for expected in sys.argv[3:]:
                check(expected in text, "the page says '%s'" % expected)
            for step in (lambda: insights(driver), lambda: flame_graph(driver, sys.argv[2]), lambda: timeline(driver),
                         lambda: task_table(driver)):
                try:
                    step()
                except Exception as error:  # one broken step must not hide the others' results
                    check(False, "%s: %s" % (type(error).__name__, str(error).splitlines()[0] if str(error) else ""))
        errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        check(not errors, "the console logged no error" + ("".join("\n      " + e for e in errors)))
    finally:
        driver.quit()
        shutil.rmtree(profile_folder, ignore_errors=True)
    if failures:
        print("%d of the checks failed." % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
