"""The real server process for the end-to-end tests (see ``start_server`` in tests/conftest.py)."""
from __future__ import annotations

import pytest

from devtools.server_process import ServerProcess


@pytest.fixture()
def server(start_server) -> ServerProcess:
    """``make run``'s server with its default settings, on a free port and a fresh data directory."""
    return start_server()
