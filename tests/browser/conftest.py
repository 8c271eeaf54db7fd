"""Browser tests: the console in Debian's headless Chromium (through chromedriver), against the real
embedded server process. devtools/install-browser.sh installs the browser; screenshots go to
$HINDSIGHT_TEST_ARTIFACTS (default: <tmp>/hindsight-browser-artifacts)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import httpx
import pytest

from devtools.browser import make_driver
from devtools.server_process import ServerProcess

ARTIFACTS = Path(os.environ.get("HINDSIGHT_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "hindsight-browser-artifacts")


class Console:
    """The console in one browser, and the server behind it."""

    def __init__(self, driver, server: ServerProcess) -> None:
        self.driver, self.server = driver, server
        self.admin_key = server.admin_key

    # --- API side (what agents do) ---
    def tenant(self, name: str) -> str:
        resp = httpx.post(f"{self.server.url}/v1/tenants", json={"name": name}, headers={"Authorization": f"Bearer {self.admin_key}"})
        assert resp.status_code == 201, resp.text
        return resp.json()["api_key"]

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    # --- browser side ---
    def open(self, hash_: str = "") -> None:
        self.driver.get(f"{self.server.url}/console{hash_}")

    def go(self, hash_: str, ready: str) -> None:
        self.driver.execute_script("location.hash = arguments[0]", hash_)
        self.wait_ready(ready)

    def wait_ready(self, page: str, timeout: float = 20) -> None:
        self.wait(lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == page, timeout, f"page {page}")

    def wait(self, condition, timeout: float = 20, what: str = "condition"):
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(condition, f"timed out waiting for {what}")

    def text(self, selector: str) -> str:
        """The element's text now ('' if absent), read in the page: safe while a page draws itself again."""
        return self.driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", selector)

    def css(self, selector: str):
        return self.driver.find_element("css selector", selector)

    def all(self, selector: str):
        return self.driver.find_elements("css selector", selector)

    def sign_in(self, key: str, kind: str = "tenant") -> None:
        form = self.css(f"#signin-{kind}")
        form.find_element("css selector", "input").send_keys(key)
        form.find_element("css selector", "button[type=submit]").click()

    def sign_out(self) -> None:
        self.driver.execute_script("sessionStorage.clear()")

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        height = self.driver.execute_script("return Math.min(4000, document.documentElement.scrollHeight)")
        self.driver.set_window_size(1360, max(800, height))
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(1360, 1000)
        assert path.stat().st_size > 10_000  # a rendered page, not a blank one
        return path

    def browser_errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


@pytest.fixture(scope="session")
def console_server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("console") / "data") as srv:
        yield srv


@pytest.fixture()
def console(console_server, tmp_path):
    driver = make_driver(tmp_path / "profile")
    try:
        yield Console(driver, console_server)
    finally:
        driver.quit()

