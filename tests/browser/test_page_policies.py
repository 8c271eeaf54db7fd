"""The HTML pages under their Content-Security-Policy in Chromium: the API page still renders (its
inline script runs, its style applies, no violation is reported), and no page can be framed."""
from __future__ import annotations

import time


def test_the_api_page_renders_under_its_policy(console):
    url, d = console.server.url, console.driver
    d.get(f"{url}/v1/docs")
    console.wait(lambda drv: int(drv.find_element("css selector", "body").get_attribute("data-rendered") or 0) > 10, 20, "the API page")
    # the inline style applied: the body is at most 60rem wide
    assert d.execute_script("return getComputedStyle(document.body).maxWidth") == "960px"
    assert d.execute_script("return document.getElementById('error').textContent") == ""
    assert [e for e in console.browser_errors() if "favicon.ico" not in e] == []  # no violation reported


def test_no_page_can_be_framed_even_by_its_own_origin(console):
    url, d = console.server.url, console.driver
    d.get(f"{url}/v1/health")  # a page of the same origin that may frame others
    for path in ("/v1/docs", "/console"):
        d.execute_script(
            "const f = document.createElement('iframe'); f.id = arguments[1]; f.src = arguments[0]; document.body.append(f)",
            f"{url}{path}", path.replace("/", "_"))
    deadline, errors = time.monotonic() + 10, []
    while time.monotonic() < deadline:
        errors += console.browser_errors()  # each read takes the entries from the browser's log
        if sum("frame-ancestors" in e for e in errors) >= 2:
            break
        time.sleep(0.1)
    assert sum("frame-ancestors" in e for e in errors) >= 2, errors
    for path in ("/v1/docs", "/console"):
        # a framed page that loaded would be readable here (same origin); a refused one is an error page
        title = d.execute_script("const doc = document.getElementById(arguments[0]).contentDocument; return doc ? doc.title : null",
                                 path.replace("/", "_"))
        assert title in (None, ""), (path, title)
