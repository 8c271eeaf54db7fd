"""/console/ (a trailing slash, as people type it) leads to the console, not to a page whose
relative asset paths resolve under /console/console/ and stay on "Loading..." unstyled."""
from __future__ import annotations

import re
from urllib.parse import urljoin

import httpx


def test_console_with_a_trailing_slash_is_sent_to_console(api):
    plain = api.client.http.get("/console")
    assert plain.status_code == 200 and plain.headers["Content-Type"].startswith("text/html")
    slash = api.client.http.get("/console/")
    assert slash.status_code == 301 and slash.body == b""
    assert urljoin("https://example.org/console/", slash.headers["Location"]) == "https://example.org/console"
    # under an API Gateway stage the same relative Location keeps the prefix
    assert urljoin("https://example.org/api/console/", slash.headers["Location"]) == "https://example.org/api/console"
    assert "default-src 'self'" in slash.headers["Content-Security-Policy"]


def test_the_embedded_server_serves_the_page_and_its_assets_from_console_slash(api):
    import app as app_module
    from local.wsgi import make_wsgi_app

    app = make_wsgi_app(app_module.app, 1_048_576)
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://hs", follow_redirects=True) as c:
        page = c.get("/console/")
        assert page.status_code == 200 and str(page.url) == "http://hs/console"
        for asset in re.findall(r'(?:src|href)="(console/[^"]+)"', page.text):
            resp = c.get(urljoin(str(page.url), asset))
            assert resp.status_code == 200 and resp.headers["content-type"].startswith(("text/css", "text/javascript")), asset
