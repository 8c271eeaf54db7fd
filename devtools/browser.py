"""Debian's headless Chromium driven through chromedriver (Selenium), for the console's browser tests
and bench/console_pages.py. devtools/install-browser.sh installs both programs."""
from __future__ import annotations

import shutil
from pathlib import Path

# No network beyond 127.0.0.1 on these machines: the flags keep Chromium from trying (updates, sync,
# field trials), and a fresh profile per driver keeps runs independent.
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1360,1000")


def programs() -> tuple[str | None, str | None]:
    return shutil.which("chromium"), shutil.which("chromedriver")


def make_driver(profile: Path, extra: tuple[str, ...] = ()):
    chromium, chromedriver = programs()
    if not (chromium and chromedriver):
        raise RuntimeError("chromium and chromedriver are missing: run devtools/install-browser.sh (make test does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*FLAGS, *extra):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    driver.set_page_load_timeout(60)
    return driver
